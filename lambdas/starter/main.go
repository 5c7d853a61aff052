// Command starter starts the executions Step Functions throttled at the api, from the
// Admissions table's stream; its logic is internal/starter.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnStarter))
}
