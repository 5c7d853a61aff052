// Command confirm is the saga's confirm step (statemachine/reservation.asl.json); its logic is
// internal/saga's Confirm.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	steps, err := wiring.LambdaSteps(context.Background())
	if err != nil {
		wiring.ExitColdStart("confirm", err)
	}
	lambda.Start(steps.ConfirmHandler)
}
