// Command relay publishes the Outbox table's stream to EventBridge; its logic is
// internal/relay. The event source mapping reports batch item failures and bisects on error.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	h, err := app.LambdaRelay(context.Background())
	if err != nil {
		app.ExitColdStart("relay", err)
	}
	lambda.Start(h.Handle)
}
