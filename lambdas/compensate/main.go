// Command compensate is the saga's compensate step (statemachine/reservation.asl.json); its logic is
// internal/saga's Compensate.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seatsaga/seatsaga/internal/app"
)

func main() {
	lambda.Start(app.Lambda(context.Background(), app.FnCompensate))
}
