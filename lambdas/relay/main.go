// Command relay publishes the Outbox table's stream to EventBridge; its logic is
// internal/relay. The event source mapping reports batch item failures and bisects on error.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnRelay))
}
