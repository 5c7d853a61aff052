// Command sweeper runs on a schedule and settles what the saga dropped: orphaned expired holds
// and payments needing reconciliation; its logic is internal/sweeper.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	h, err := app.LambdaSweeper(context.Background())
	if err != nil {
		app.ExitColdStart("sweeper", err)
	}
	lambda.Start(h.Handle)
}
