// Command sweeper runs on a schedule and settles what the saga dropped: orphaned expired holds
// and payments needing reconciliation; its logic is internal/sweeper.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnSweeper))
}
