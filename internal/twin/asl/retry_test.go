package asl_test

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

func TestRetrierDelayFormula(t *testing.T) {
	cases := []struct {
		name string
		r    asl.Retrier
		want []float64 // seconds for retries 0..n
	}{
		{"doubling", asl.Retrier{IntervalSeconds: 1, BackoffRate: 2}, []float64{1, 2, 4, 8, 16}},
		{"rate one", asl.Retrier{IntervalSeconds: 3, BackoffRate: 1}, []float64{3, 3, 3}},
		{"fractional rate", asl.Retrier{IntervalSeconds: 2, BackoffRate: 1.5}, []float64{2, 3, 4.5, 6.75}},
		{"capped", asl.Retrier{IntervalSeconds: 1, BackoffRate: 3, MaxDelaySeconds: 10}, []float64{1, 3, 9, 10, 10, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for n, want := range tc.want {
				if got := tc.r.Delay(n).Seconds(); math.Abs(got-want) > 1e-9 {
					t.Fatalf("Delay(%d) = %v, want %v", n, got, want)
				}
			}
		})
	}
}

// retryRun runs a task that always fails under the given retrier on a fake
// clock, stepping time from timer to timer, and returns the gaps between calls.
func retryRun(t *testing.T, retrier string, jitter func() float64) []time.Duration {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var calls []time.Time
	inv := asl.NewFuncInvoker(map[string]asl.Func{"boom": func(context.Context, []byte) ([]byte, error) {
		mu.Lock()
		calls = append(calls, clk.Now())
		mu.Unlock()
		return nil, &asl.FunctionError{Type: "Transient", Message: "again"}
	}})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:boom","Retry":[` + retrier + `],"End":true}}}`
	sm, err := asl.Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	eng := asl.NewEngine(asl.Options{Clock: clk, Invoker: inv, Jitter: jitter})
	x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "x", Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		select {
		case <-x.Done():
			snap := x.Snapshot()
			if snap.Status != asl.StatusFailed || snap.Error != "Transient" {
				t.Fatalf("status %s error %s", snap.Status, snap.Error)
			}
			var gaps []time.Duration
			for i := 1; i < len(calls); i++ {
				gaps = append(gaps, calls[i].Sub(calls[i-1]))
			}
			return gaps
		default:
		}
		// Either the execution parks on a retry timer or it finishes.
		waitCtx, wcancel := context.WithTimeout(ctx, 20*time.Millisecond)
		if clk.BlockUntilContext(waitCtx, 1) == nil {
			clk.AdvanceToNext()
		}
		wcancel()
		if ctx.Err() != nil {
			t.Fatal("execution did not finish")
		}
	}
}

func TestRetryTimingOnFakeClock(t *testing.T) {
	gaps := retryRun(t, `{"ErrorEquals":["Transient"],"IntervalSeconds":2,"MaxAttempts":5,"BackoffRate":3,"MaxDelaySeconds":30}`, nil)
	want := []time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second, 30 * time.Second, 30 * time.Second}
	if len(gaps) != len(want) {
		t.Fatalf("gaps %v, want %v", gaps, want)
	}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("retry %d waited %v, want %v (all: %v)", i, gaps[i], want[i], gaps)
		}
	}
}

func TestRetryFullJitterStaysInBounds(t *testing.T) {
	r := asl.Retrier{IntervalSeconds: 1, BackoffRate: 2, MaxDelaySeconds: 5}
	// Fixed jitter draws show the scaling exactly.
	gaps := retryRun(t, `{"ErrorEquals":["States.ALL"],"IntervalSeconds":1,"MaxAttempts":4,"BackoffRate":2,"MaxDelaySeconds":5,"JitterStrategy":"FULL"}`, func() float64 { return 0.5 })
	for i, g := range gaps {
		if want := r.Delay(i) / 2; g != want {
			t.Fatalf("retry %d waited %v, want %v", i, g, want)
		}
	}
	// Random draws stay within [0, capped delay).
	for run := 0; run < 5; run++ {
		gaps := retryRun(t, `{"ErrorEquals":["States.ALL"],"IntervalSeconds":1,"MaxAttempts":4,"BackoffRate":2,"MaxDelaySeconds":5,"JitterStrategy":"FULL"}`, nil)
		if len(gaps) != 4 {
			t.Fatalf("gaps %v", gaps)
		}
		for i, g := range gaps {
			if g < 0 || g >= r.Delay(i) {
				t.Fatalf("retry %d waited %v, outside [0, %v)", i, g, r.Delay(i))
			}
		}
	}
}

func TestSubstitute(t *testing.T) {
	def := []byte(`{"Resource":"${ClaimFunctionArn}","TimeoutSeconds":${HoldSeconds},"Other":"${Missing}","Again":"${Missing}"}`)
	out, missing := asl.Substitute(def, map[string]string{"ClaimFunctionArn": "arn:aws:lambda:us-east-1:1:function:claim", "HoldSeconds": "900"})
	want := `{"Resource":"arn:aws:lambda:us-east-1:1:function:claim","TimeoutSeconds":900,"Other":"${Missing}","Again":"${Missing}"}`
	if string(out) != want || len(missing) != 1 || missing[0] != "Missing" {
		t.Fatalf("Substitute = %s, missing %v", out, missing)
	}
}

func TestValidationNamesStateAndProblem(t *testing.T) {
	_, err := asl.Parse([]byte(`{"StartAt":"Claim","States":{"Claim":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:1:function:c","Next":"Authorise"},"Authorize":{"Type":"Succeed"}}}`))
	ve, ok := err.(*asl.ValidationError)
	if !ok {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	found := map[string]string{}
	for _, p := range ve.Problems {
		found[p.Code] = p.Location + " " + p.Message
	}
	if found["MISSING_TRANSITION_TARGET"] != "/States/Claim Missing 'Next' target: Authorise" {
		t.Fatalf("problems: %v", ve.Problems)
	}
	if found["UNREACHABLE_STATE"] == "" {
		t.Fatalf("unreachable Authorize not reported: %v", ve.Problems)
	}
}

func TestContextObjectAndWaitForTokenHistory(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tokens := make(chan string, 1)
	inv := asl.NewFuncInvoker(map[string]asl.Func{"cb": func(_ context.Context, p []byte) ([]byte, error) {
		var in map[string]string
		_ = json.Unmarshal(p, &in)
		tokens <- in["token"]
		return []byte(`null`), nil
	}})
	sm, err := asl.Parse([]byte(`{"StartAt":"Wait","States":{"Wait":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"cb","Payload":{"token.$":"$$.Task.Token"}},
	  "ResultSelector":{"got.$":"$.v","exec.$":"$$.Execution.Name","state.$":"$$.State.Name","sm.$":"$$.StateMachine.Name"},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	eng := asl.NewEngine(asl.Options{Clock: clk, Invoker: inv})
	x, _ := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:x", Name: "exec-1", StateMachineName: "sm-1"})
	tok := <-tokens
	if eng.WaitingTasks() != 1 {
		t.Fatalf("waiting = %d", eng.WaitingTasks())
	}
	if err := eng.SendTaskSuccess(tok, []byte(`{"v":42}`)); err != nil {
		t.Fatal(err)
	}
	<-x.Done()
	if got := string(x.Snapshot().Output); got != `{"exec":"exec-1","got":42,"sm":"sm-1","state":"Wait"}` {
		t.Fatalf("output %s", got)
	}
	if err := eng.SendTaskSuccess(tok, []byte(`{}`)); err != asl.ErrTaskDoesNotExist {
		t.Fatalf("second SendTaskSuccess: %v", err)
	}
}
