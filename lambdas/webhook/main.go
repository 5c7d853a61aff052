// Command webhook receives Stripe's webhooks behind API Gateway; its logic is
// internal/webhook.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	h, err := app.LambdaWebhook(context.Background())
	if err != nil {
		app.ExitColdStart("webhook", err)
	}
	lambda.Start(h.Handle)
}
