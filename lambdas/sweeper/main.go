// Command sweeper runs on a schedule and settles what the saga dropped: orphaned expired holds
// and payments needing reconciliation; its logic is internal/sweeper.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	h, err := wiring.LambdaSweeper(context.Background())
	if err != nil {
		wiring.ExitColdStart("sweeper", err)
	}
	lambda.Start(h.Handle)
}
