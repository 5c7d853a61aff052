// Command consumer is the example EventBridge consumer: it notifies customers of their
// reservation's outcome, idempotently by event id; its logic is internal/consumer.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnConsumer))
}
