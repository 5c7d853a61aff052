// Command authorize is the saga's authorize step (statemachine/reservation.asl.json); its logic is
// internal/saga's Authorize.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	steps, err := wiring.LambdaSteps(context.Background())
	if err != nil {
		wiring.ExitColdStart("authorize", err)
	}
	lambda.Start(steps.AuthorizeHandler)
}
