// Command webhook receives Stripe's webhooks behind API Gateway; its logic is
// internal/webhookhandler.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	h, err := wiring.LambdaWebhook(context.Background())
	if err != nil {
		wiring.ExitColdStart("webhook", err)
	}
	lambda.Start(h.Handle)
}
