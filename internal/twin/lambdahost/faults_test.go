package lambdahost_test

import (
	"context"
	"encoding/json"
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
