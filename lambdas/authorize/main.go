// Command authorize is the saga's authorize step (statemachine/reservation.asl.json); its logic is
// internal/saga's Authorize.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	steps, err := app.LambdaSteps(context.Background())
	if err != nil {
		app.ExitColdStart("authorize", err)
	}
	lambda.Start(steps.AuthorizeHandler)
}
