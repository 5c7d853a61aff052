// Command api is the reservation API behind API Gateway (POST /events/{eventId}/reservations,
// GET and DELETE /reservations/{id}); its logic is internal/api.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	h, err := app.LambdaAPI(context.Background())
	if err != nil {
		app.ExitColdStart("api", err)
	}
	lambda.Start(h.Handle)
}
