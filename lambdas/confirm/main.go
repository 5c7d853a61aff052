// Command confirm is the saga's confirm step (statemachine/reservation.asl.json); its logic is
// internal/saga's Confirm.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnConfirm))
}
