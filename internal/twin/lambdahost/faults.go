package lambdahost

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Failure is what a caller receives instead of a function's own result when a fault is
// injected. It is either a Lambda service error (StatusCode and ErrorCode, e.g. 500
// ServiceException, which Step Functions reports as Lambda.ServiceException) or, when
// FunctionErrorType is set, a function error (HTTP 200, X-Amz-Function-Error: Unhandled).
type Failure struct {
	StatusCode        int
	ErrorCode         string
	FunctionErrorType string
	Message           string
	// KillAfter, for a failure armed with FailAfter, kills the invocation that long after its
	// handler started, if it is still running then: the handler's context ends (its calls in
	// flight are abandoned, as a killed process's are) and the caller gets the failure, a
	// Crash for a process killed mid-batch. A handler done sooner is answered with the
	// failure as FailAfter does. Function processes (RegisterProcess) are not killed early.
	KillAfter time.Duration
	// OnInjected, when set, is called each time the failure is handed to an invocation, so
	// that a chaos run counts the faults that really hit, not the ones it armed.
	OnInjected func()
	// OnKilled, when set, is called when KillAfter found the handler still running and ended
	// it: a kill that comes after the handler returned is the failure of a run that did its
	// work, which a chaos run must not count as a run killed mid-way.
	OnKilled func()
}

// ServiceException is Lambda's internal service error (HTTP 500).
func ServiceException() Failure {
	return Failure{StatusCode: http.StatusInternalServerError, ErrorCode: "ServiceException",
		Message: "An internal service error occurred (injected by lambdahost)."}
}

// TooManyRequests is Lambda's throttling error (HTTP 429). The SDK's default retryer retries it.
func TooManyRequests() Failure {
	return Failure{StatusCode: http.StatusTooManyRequests, ErrorCode: "TooManyRequestsException",
		Message: "Rate Exceeded."}
}

// Timeout is the function error Lambda returns when a function exceeds its timeout.
func Timeout(d time.Duration) Failure {
	return Failure{FunctionErrorType: "Sandbox.Timedout",
		Message: fmt.Sprintf("Task timed out after %.2f seconds", d.Seconds())}
}

// Crash is the function error Lambda returns when the runtime process dies mid-invocation
// (out of memory, os.Exit, SIGKILL): errorType Runtime.ExitError.
func Crash() Failure {
	return Failure{FunctionErrorType: "Runtime.ExitError", Message: "Runtime exited with error: signal: killed"}
}

// FunctionError is a function error with the given errorType, as if the handler returned it.
func FunctionError(errorType, message string) Failure {
	return Failure{FunctionErrorType: errorType, Message: message}
}

func (f Failure) name() string {
	if f.FunctionErrorType != "" {
		return f.FunctionErrorType
	}
	return f.ErrorCode
}

func (f Failure) result(requestID string) result {
	if f.FunctionErrorType != "" {
		msg := f.Message
		if f.FunctionErrorType == "Sandbox.Timedout" || f.FunctionErrorType == "Runtime.ExitError" {
			msg = "RequestId: " + requestID + " Error: " + msg
		}
		return result{status: http.StatusOK, functionError: true, body: errorPayload(&messages.InvokeResponse_Error{
			Type: f.FunctionErrorType, Message: msg,
		})}
	}
	status := f.StatusCode
	if status == 0 {
		status = http.StatusInternalServerError
	}
	code := f.ErrorCode
	if code == "" {
		code = "ServiceException"
	}
	body := map[string]string{"Type": "Service", "Message": f.Message}
	if status == http.StatusTooManyRequests {
		body = map[string]string{"Type": "User", "message": f.Message, "Reason": "CallerRateLimitExceeded"}
	}
	return result{status: status, errorCode: code, body: mustJSON(body)}
}

// FailBefore makes the next times invocations of name fail with f before the handler runs: the
// function has no effect and the caller gets f.
func (h *Host) FailBefore(name string, times int, f Failure) error {
	fn := h.lookup(name)
	if fn == nil {
		return fmt.Errorf("lambdahost: no function %q", name)
	}
	fn.faultMu.Lock()
	fn.before = append(fn.before, countedFailure{failure: f, left: times})
	fn.faultMu.Unlock()
	return nil
}

// FailAfter makes the next times invocations of name run the handler to completion — its
// effects happen — and then answer the caller with f instead of the handler's result: the crash
// after a write but before the return that idempotent handlers must survive.
func (h *Host) FailAfter(name string, times int, f Failure) error {
	fn := h.lookup(name)
	if fn == nil {
		return fmt.Errorf("lambdahost: no function %q", name)
	}
	fn.faultMu.Lock()
	fn.after = append(fn.after, countedFailure{failure: f, left: times})
	fn.faultMu.Unlock()
	return nil
}

// SetLatency delays every invocation of name by d before the handler runs (0 removes it).
func (h *Host) SetLatency(name string, d time.Duration) error {
	fn := h.lookup(name)
	if fn == nil {
		return fmt.Errorf("lambdahost: no function %q", name)
	}
	fn.faultMu.Lock()
	fn.latency = d
	fn.faultMu.Unlock()
	return nil
}

// Gate holds every invocation of name before its handler runs until the returned open is
// called (or the invocation's context ends), and reports through waiting how many are held.
// Tests use it to stop a step at an exact point and make another actor move first; a gate
// counts toward the function's concurrency, as a slow handler would.
func (h *Host) Gate(name string) (open func(), waiting func() int, err error) {
	fn := h.lookup(name)
	if fn == nil {
		return nil, nil, fmt.Errorf("lambdahost: no function %q", name)
	}
	g := &gate{opened: make(chan struct{})}
	fn.faultMu.Lock()
	fn.gate = g
	fn.faultMu.Unlock()
	var once sync.Once
	open = func() {
		once.Do(func() {
			fn.faultMu.Lock()
			if fn.gate == g {
				fn.gate = nil
			}
			fn.faultMu.Unlock()
			close(g.opened)
		})
	}
	return open, func() int { return int(g.waiting.Load()) }, nil
}

// gate is a closed door in front of a function's handler.
type gate struct {
	opened  chan struct{}
	waiting atomic.Int64
}

// wait blocks while the function's gate is closed.
func (f *function) waitAtGate(ctx context.Context) {
	f.faultMu.Lock()
	g := f.gate
	f.faultMu.Unlock()
	if g == nil {
		return
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.opened:
	case <-ctx.Done():
	}
}

// ClearFaults removes every pending fault and the latency of name.
func (h *Host) ClearFaults(name string) {
	fn := h.lookup(name)
	if fn == nil {
		return
	}
	fn.faultMu.Lock()
	fn.before, fn.after, fn.latency = nil, nil, 0
	fn.faultMu.Unlock()
}

// takeFaults consumes one use of the first pending fault of each kind.
func (f *function) takeFaults() (before, after *Failure, latency time.Duration) {
	f.faultMu.Lock()
	defer f.faultMu.Unlock()
	take := func(queue *[]countedFailure) *Failure {
		for len(*queue) > 0 && (*queue)[0].left <= 0 {
			*queue = (*queue)[1:]
		}
		if len(*queue) == 0 {
			return nil
		}
		(*queue)[0].left--
		failure := (*queue)[0].failure
		if failure.OnInjected != nil {
			failure.OnInjected()
		}
		return &failure
	}
	before = take(&f.before)
	if before == nil {
		after = take(&f.after)
	}
	return before, after, f.latency
}

// Stats are one function's counters since it was registered.
type Stats struct {
	// Requests counts Invoke calls accepted for the function (throttled ones included).
	Requests int64
	// Invocations counts handler runs: what AWS bills, and what the demo reports per booking.
	Invocations int64
	// Errors counts handler runs that ended in a function error or panic.
	Errors int64
	// Throttles counts requests refused by a concurrency limit.
	Throttles int64
	// FaultsInjected counts failures returned by FailBefore and FailAfter.
	FaultsInjected int64
}

// Stats returns the counters of name (zero for an unknown name).
func (h *Host) Stats(name string) Stats {
	fn := h.lookup(name)
	if fn == nil {
		return Stats{}
	}
	return Stats{
		Requests:       fn.requests.Load(),
		Invocations:    fn.invocations.Load(),
		Errors:         fn.errors.Load(),
		Throttles:      fn.throttles.Load(),
		FaultsInjected: fn.injected.Load(),
	}
}

// Invocations returns how many times name's handler ran.
func (h *Host) Invocations(name string) int64 { return h.Stats(name).Invocations }

// TotalInvocations returns handler runs summed over every function.
func (h *Host) TotalInvocations() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var n int64
	for _, f := range h.functions {
		n += f.invocations.Load()
	}
	return n
}

// ResetStats zeroes every function's counters, e.g. between phases of a demo.
func (h *Host) ResetStats() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, f := range h.functions {
		f.requests.Store(0)
		f.invocations.Store(0)
		f.errors.Store(0)
		f.throttles.Store(0)
		f.injected.Store(0)
	}
}
