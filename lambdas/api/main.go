// Command api is the reservation API behind API Gateway (POST /events/{eventId}/reservations,
// GET and DELETE /reservations/{id}); its logic is internal/api.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnAPI))
}
