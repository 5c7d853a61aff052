package asl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// TokenStateMachine names the machine of a token while its task waits and after it finished
// (the resource AWS authorizes a late SendTask* on), and nothing for a token it never issued.
func TestTokenStateMachineKnowsOpenAndFinishedTokensOnly(t *testing.T) {
	const machineARN = "arn:aws:states:us-east-1:000000000000:stateMachine:reservation"
	ts := tokenSink{ch: make(chan string, 1)}
	sm, err := asl.Parse([]byte(`{"StartAt":"Wait","States":{"Wait":` + tokenTask + `,"Late":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	eng := asl.NewEngine(asl.Options{Clock: clk, Invoker: ts.invoker()})
	x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:x", Name: "x", StateMachineARN: machineARN, StateMachineName: "reservation",
		Input: []byte(`{"hb":60,"limit":600}`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var token string
	select {
	case token = <-ts.ch:
	case <-ctx.Done():
		t.Fatal("the task was not invoked")
	}

	if arn, ok := eng.TokenStateMachine(token); !ok || arn != machineARN {
		t.Fatalf("open token: TokenStateMachine = %q, %v; want %q", arn, ok, machineARN)
	}

	if err := eng.SendTaskSuccess(token, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eng.SendTaskSuccess(token, []byte(`{}`)); !errors.Is(err, asl.ErrTaskDoesNotExist) {
		t.Fatalf("a second SendTaskSuccess = %v, want ErrTaskDoesNotExist", err)
	}
	if arn, ok := eng.TokenStateMachine(token); !ok || arn != machineARN {
		t.Fatalf("finished token: TokenStateMachine = %q, %v; want %q", arn, ok, machineARN)
	}

	// A token of the engine's shape that it never issued: the issued one, one character changed.
	other := token[:len(token)-2] + "A" + token[len(token)-1:]
	if other == token {
		other = token[:len(token)-2] + "B" + token[len(token)-1:]
	}
	for _, unknown := range []string{"", "garbage", other} {
		if arn, ok := eng.TokenStateMachine(unknown); ok || arn != "" {
			t.Fatalf("unknown token %q: TokenStateMachine = %q, %v; want nothing", unknown, arn, ok)
		}
	}
}
