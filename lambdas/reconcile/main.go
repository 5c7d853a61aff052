// Command reconcile is the saga's reconcile step (statemachine/reservation.asl.json); its logic is
// internal/saga's Reconcile.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	steps, err := wiring.LambdaSteps(context.Background())
	if err != nil {
		wiring.ExitColdStart("reconcile", err)
	}
	lambda.Start(steps.ReconcileHandler)
}
