// Command fail is a test function whose handler returns a typed error, or panics when the
// event says so.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

// SeatUnavailable is returned by pointer, as the saga's named errors are; the Go runtime
// reports its errorType as "SeatUnavailable".
type SeatUnavailable struct{ Seat string }

func (e *SeatUnavailable) Error() string { return "seat " + e.Seat + " is unavailable" }

type event struct {
	Seat  string `json:"seat"`
	Panic bool   `json:"panic"`
}

func main() {
	lambda.Start(func(ctx context.Context, ev event) (string, error) {
		if ev.Panic {
			panic("boom")
		}
		return "", &SeatUnavailable{Seat: ev.Seat}
	})
}
