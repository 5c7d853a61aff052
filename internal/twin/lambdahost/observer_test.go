package lambdahost_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// The observer sees what Lambda's metrics count: a run is an invocation whether it succeeds or
// fails; a handler's error, a timeout and an injected crash are errors; a request a concurrency
// limit refuses is a throttle and no invocation; a service error before the handler is neither.
func TestObserverReportsWhatLambdaMetricsCount(t *testing.T) {
	var mu sync.Mutex
	var reports []lambdahost.Report
	h, c := start(t, lambdahost.Options{Timeout: 200 * time.Millisecond, Observer: func(r lambdahost.Report) {
		mu.Lock()
		reports = append(reports, r)
		mu.Unlock()
	}})
	taken := func() []lambdahost.Report {
		mu.Lock()
		defer mu.Unlock()
		out := reports
		reports = nil
		return out
	}
	h.Register("ok", func(context.Context) (string, error) { time.Sleep(5 * time.Millisecond); return "ok", nil })
	h.Register("fails", func(context.Context) (string, error) { return "", errors.New("boom") })
	h.Register("hangs", func(ctx context.Context) (string, error) {
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond)
		return "", nil
	})
	b := newBlocker()
	h.RegisterWith("one", b.handle, lambdahost.FunctionConfig{ReservedConcurrency: 1})

	_, _ = invoke(t, c, "ok", `{}`)
	if got := taken(); len(got) != 1 || got[0] != (lambdahost.Report{Function: "ok", Invoked: true, Duration: got[0].Duration}) || got[0].Duration < 5*time.Millisecond {
		t.Fatalf("a successful run: %+v", got)
	}
	_, _ = invoke(t, c, "fails", `{}`)
	_, _ = invoke(t, c, "hangs", `{}`)
	if err := h.FailAfter("ok", 1, lambdahost.Crash()); err != nil {
		t.Fatal(err)
	}
	_, _ = invoke(t, c, "ok", `{}`)
	for _, r := range taken() {
		if !r.Invoked || !r.Error || r.Throttled {
			t.Errorf("a failed run: %+v", r)
		}
	}

	if err := h.FailBefore("ok", 1, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	_, _ = invoke(t, c, "ok", `{}`)
	if err := h.FailBefore("ok", 1, lambdahost.TooManyRequests()); err != nil {
		t.Fatal(err)
	}
	_, _ = invoke(t, c, "ok", `{}`)
	if got := taken(); len(got) != 2 || got[0].Invoked || got[0].Error || got[0].Throttled || !got[1].Throttled || got[1].Invoked {
		t.Fatalf("service errors before the handler: %+v", got)
	}

	done := make(chan struct{})
	go func() { defer close(done); _, _ = invoke(t, c, "one", `{}`) }()
	<-b.entered
	_, _ = invoke(t, c, "one", `{}`)
	close(b.release)
	<-done
	got := taken()
	var throttles, invocations int
	for _, r := range got {
		if r.Throttled {
			throttles++
		}
		if r.Invoked {
			invocations++
		}
	}
	if throttles != 1 || invocations != 1 {
		t.Fatalf("a reserved slot taken: %+v", got)
	}
}
