package lambdahost_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// A failure reports each invocation it is handed to, before or after the handler, and no
// other: a chaos run counts what hit, not what it armed. The third invocation, with no fault
// left, reports nothing.
func TestFailureReportsEachInvocationItHits(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	h.Register("step", func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	var before, after atomic.Int64
	coldStart := lambdahost.Timeout(10 * time.Second)
	coldStart.OnInjected = func() { before.Add(1) }
	timeout := lambdahost.Timeout(3 * time.Second)
	timeout.OnInjected = func() { after.Add(1) }
	if err := h.FailBefore("step", 1, coldStart); err != nil {
		t.Fatal(err)
	}
	if err := h.FailAfter("step", 1, timeout); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, _ = invoke(t, c, "step", `{}`)
	}
	if before.Load() != 1 || after.Load() != 1 {
		t.Fatalf("reported before %d, after %d; want 1 and 1", before.Load(), after.Load())
	}
	if st := h.Stats("step"); st.FaultsInjected != 2 || st.Invocations != 2 {
		t.Fatalf("stats %+v: want 2 faults and 2 handler runs (the cold start ran none)", st)
	}
}

// A process killed mid-batch has done the work before the kill and none after it: the
// handler's context ends at KillAfter, and the caller gets the crash at once, not the
// handler's answer and not a wait for its timeout.
func TestAnInvocationKilledMidBatchStopsWhereItWasKilled(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	var done, stopped atomic.Int32
	h.Register("sweep", func(ctx context.Context, _ json.RawMessage) (string, error) {
		for range 20 {
			select {
			case <-ctx.Done():
				stopped.Add(1)
				return "", ctx.Err()
			case <-time.After(10 * time.Millisecond):
				done.Add(1)
			}
		}
		return "all done", nil
	})
	crash := lambdahost.Crash()
	crash.KillAfter = 55 * time.Millisecond
	if err := h.FailAfter("sweep", 1, crash); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	body := invokeFunctionError(t, c, "sweep", `{}`)
	if body.ErrorType != "Runtime.ExitError" {
		t.Fatalf("got %+v; want the crash", body)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the killed invocation answered after %s", took)
	}
	for deadline := time.Now().Add(5 * time.Second); stopped.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if stopped.Load() != 1 {
		t.Fatal("the killed handler's context did not end")
	}
	if n := done.Load(); n == 0 || n >= 20 {
		t.Fatalf("%d of 20 items done before the kill; want some, not all", n)
	}
	// The next invocation runs whole.
	if out, err := invoke(t, c, "sweep", `{}`); err != nil || out.FunctionError != nil || !strings.Contains(string(out.Payload), "all done") {
		t.Fatalf("the next invocation: %v, %v", out, err)
	}
}

// OnKilled tells a kill that ended a running handler from one that came after the handler had
// returned: both answer the crash, only the first killed anything.
func TestOnlyAKillThatFindsTheHandlerRunningReportsTheKill(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	var slow atomic.Bool
	h.Register("sweep", func(ctx context.Context, _ json.RawMessage) (string, error) {
		if slow.Load() {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "done", nil
	})
	var kills atomic.Int32
	crash := lambdahost.Crash()
	crash.KillAfter = 100 * time.Millisecond
	crash.OnKilled = func() { kills.Add(1) }
	for _, running := range []bool{false, true} {
		slow.Store(running)
		if err := h.FailAfter("sweep", 1, crash); err != nil {
			t.Fatal(err)
		}
		if body := invokeFunctionError(t, c, "sweep", `{}`); body.ErrorType != "Runtime.ExitError" {
			t.Fatalf("running %v: got %+v; want the crash", running, body)
		}
		want := int32(0)
		if running {
			want = 1
		}
		if kills.Load() != want {
			t.Fatalf("running %v: %d kills reported; want %d", running, kills.Load(), want)
		}
	}
}
