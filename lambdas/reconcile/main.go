// Command reconcile is the saga's reconcile step (statemachine/reservation.asl.json); its logic is
// internal/saga's Reconcile.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	steps, err := app.LambdaSteps(context.Background())
	if err != nil {
		app.ExitColdStart("reconcile", err)
	}
	lambda.Start(steps.ReconcileHandler)
}
