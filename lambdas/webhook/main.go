// Command webhook receives Stripe's webhooks behind API Gateway; its logic is
// internal/webhook.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnWebhook))
}
