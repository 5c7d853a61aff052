package asl_test

import (
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// OnFinish is called once per execution, with its final status and stop time already
// observable, before Done is closed: a waiter that wakes on Done finds the report made.
func TestOnFinishReportsEachClosedExecutionBeforeDone(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	type report struct{ status, arn string }
	reports := make(chan report, 4)
	eng := asl.NewEngine(asl.Options{Clock: clk, OnFinish: func(x *asl.Execution) {
		s := x.Snapshot()
		if s.Stop.IsZero() {
			t.Errorf("%s reported without its stop time", x.ARN)
		}
		reports <- report{s.Status, x.ARN}
	}})
	for _, c := range []struct{ def, want string }{
		{`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`, asl.StatusSucceeded},
		{`{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"E"}}}`, asl.StatusFailed},
	} {
		sm, err := asl.Parse([]byte(c.def))
		if err != nil {
			t.Fatal(err)
		}
		x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:" + c.want, Name: c.want})
		if err != nil {
			t.Fatal(err)
		}
		<-x.Done()
		select {
		case r := <-reports:
			if r.status != c.want || r.arn != x.ARN {
				t.Fatalf("reported %+v, want %s of %s", r, c.want, x.ARN)
			}
		default:
			t.Fatalf("%s was done before it was reported", x.ARN)
		}
	}
	if len(reports) != 0 {
		t.Fatalf("%d more reports", len(reports))
	}
}
