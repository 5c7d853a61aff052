package lambdahost_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// holding invokes name n times in the background and returns once every run holds its slot;
// done waits for them all to finish after the blocker releases them.
func holding(t *testing.T, c *lambda.Client, b *blocker, name string, n int) (done func()) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := invoke(t, c, name, `{}`); err != nil {
				t.Errorf("invoke %s while holding: %v", name, err)
			}
		}()
		<-b.entered
	}
	return wg.Wait
}

// throttledFor asserts that invoking name now is refused as Lambda refuses it, for reason.
func throttledFor(t *testing.T, c *lambda.Client, name, reason string) {
	t.Helper()
	_, err := invoke(t, c, name, `{}`)
	var tm *types.TooManyRequestsException
	if !errors.As(err, &tm) {
		t.Fatalf("invoke %s: err = %v, want TooManyRequestsException", name, err)
	}
	if string(tm.Reason) != reason || tm.ErrorMessage() != "Rate Exceeded." {
		t.Fatalf("invoke %s: reason %q message %q, want %q \"Rate Exceeded.\"", name, tm.Reason, tm.ErrorMessage(), reason)
	}
}

// A function at its reserved concurrency is throttled with Lambda's reason for it while a
// function in the unreserved pool still runs, and every refusal reaches the observer as a
// throttle, as the Throttles metric counts it.
func TestAFunctionAtItsReservedConcurrencyThrottlesWhileAnotherStillRuns(t *testing.T) {
	var mu sync.Mutex
	throttles := map[string]int{}
	h, c := start(t, lambdahost.Options{MaxConcurrency: 10, Observer: func(r lambdahost.Report) {
		if r.Throttled {
			mu.Lock()
			throttles[r.Function]++
			mu.Unlock()
		}
	}})
	reserved, other := newBlocker(), newBlocker()
	h.RegisterWith("reserved", reserved.handle, lambdahost.FunctionConfig{ReservedConcurrency: 2})
	h.Register("other", other.handle)

	doneReserved := holding(t, c, reserved, "reserved", 2)
	throttledFor(t, c, "reserved", lambdahost.ReasonReserved)
	doneOther := holding(t, c, other, "other", 3)

	close(reserved.release)
	close(other.release)
	doneReserved()
	doneOther()
	if st := h.Stats("reserved"); st.Throttles != 1 || st.Invocations != 2 {
		t.Fatalf("reserved function: %+v, want 1 throttle and 2 invocations", st)
	}
	if st := h.Stats("other"); st.Throttles != 0 || st.Invocations != 3 {
		t.Fatalf("other function: %+v, want 3 invocations and no throttle", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if throttles["reserved"] != 1 || throttles["other"] != 0 {
		t.Fatalf("observer saw throttles %v, want reserved:1", throttles)
	}
}

// Reserved concurrency is carved out of the account's limit: the functions without a
// reservation share the limit less every reservation, even while the reserved functions are
// idle, and a reserved function still runs when that shared pool is full.
func TestReservedConcurrencyIsCarvedOutOfTheAccountLimit(t *testing.T) {
	if got := lambdahost.New(lambdahost.Options{}).UnreservedConcurrency(); got != 1000 {
		t.Fatalf("default account limit %d, want AWS's 1000", got)
	}
	h, c := start(t, lambdahost.Options{MaxConcurrency: 5})
	reserved, shared := newBlocker(), newBlocker()
	h.RegisterWith("reserved", reserved.handle, lambdahost.FunctionConfig{ReservedConcurrency: 2})
	h.Register("shared", shared.handle)
	if got := h.UnreservedConcurrency(); got != 3 {
		t.Fatalf("unreserved pool %d, want 5 - 2 = 3", got)
	}

	doneShared := holding(t, c, shared, "shared", 3)
	throttledFor(t, c, "shared", lambdahost.ReasonUnreserved)
	doneReserved := holding(t, c, reserved, "reserved", 2)

	// Taking the reservation away gives its slots back to the shared pool.
	h.Register("reserved", reserved.handle)
	if got := h.UnreservedConcurrency(); got != 5 {
		t.Fatalf("unreserved pool %d after the reservation went, want 5", got)
	}
	close(shared.release)
	close(reserved.release)
	doneShared()
	doneReserved()
	if st := h.Stats("shared"); st.Throttles != 1 || st.Invocations != 3 {
		t.Fatalf("shared function: %+v, want 1 throttle and 3 invocations", st)
	}
}
