package stepfunctions_test

import (
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// The observer hears each execution start once (an idempotent repeat of StartExecution is no
// new execution) and close once with its final status and times on the server's clock: what
// the AWS/States metrics ExecutionsStarted, ExecutionsSucceeded, ExecutionsFailed,
// ExecutionsTimedOut, ExecutionsAborted and ExecutionTime are made of.
func TestObserverHearsEveryExecutionStartAndClose(t *testing.T) {
	e := newEnv(t, nil)
	var mu sync.Mutex
	var events []stepfunctions.ExecutionEvent
	e.srv.Observe(func(ev stepfunctions.ExecutionEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	ctx := ctxT(t)
	ok := e.create(t, "ok", `{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}`)
	fails := e.create(t, "fails", `{"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "Nope"}}}`)
	slow := e.create(t, "slow", `{"TimeoutSeconds": 900, "StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}`)

	e.finish(t, e.start(t, ok, "a", `{}`))
	e.finish(t, e.start(t, fails, "b", `{}`))
	timedOut := e.start(t, slow, "c", `{}`)
	if again := e.start(t, slow, "c", `{}`); again != timedOut {
		t.Fatalf("the repeated start gave %s", again)
	}
	if err := e.clock.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(900 * time.Second)
	e.finish(t, timedOut)
	stopped := e.start(t, slow, "d", `{}`)
	e.clock.Advance(time.Minute)
	if _, err := e.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(stopped)}); err != nil {
		t.Fatal(err)
	}
	e.finish(t, stopped)

	mu.Lock()
	defer mu.Unlock()
	byStatus := map[string][]stepfunctions.ExecutionEvent{}
	for _, ev := range events {
		byStatus[ev.Status] = append(byStatus[ev.Status], ev)
	}
	counts := map[string]int{}
	for s, evs := range byStatus {
		counts[s] = len(evs)
	}
	want := map[string]int{asl.StatusRunning: 4, asl.StatusSucceeded: 1, asl.StatusFailed: 1, asl.StatusTimedOut: 1, asl.StatusAborted: 1}
	if len(counts) != len(want) {
		t.Fatalf("events by status %v, want %v", counts, want)
	}
	for s, n := range want {
		if counts[s] != n {
			t.Fatalf("events by status %v, want %v", counts, want)
		}
	}
	for _, ev := range byStatus[asl.StatusRunning] {
		if ev.StateMachineARN == ok && (!ev.Start.Equal(epoch) || !ev.Stop.IsZero()) {
			t.Errorf("start event %+v", ev)
		}
	}
	if to := byStatus[asl.StatusTimedOut][0]; to.ExecutionARN != timedOut || to.StateMachineARN != slow || to.Stop.Sub(to.Start) != 900*time.Second {
		t.Errorf("timed-out event %+v", to)
	}
	if ab := byStatus[asl.StatusAborted][0]; ab.ExecutionARN != stopped || ab.Stop.Sub(ab.Start) != time.Minute {
		t.Errorf("aborted event %+v", ab)
	}
}
