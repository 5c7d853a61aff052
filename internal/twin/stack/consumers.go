package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/seatsaga/seatsaga/internal/deploy"
)

// subscribeConsumers attaches the example consumer to the bus as an EventBridge rule target
// does: each event is handed to Lambda's asynchronous queue of the consumer function, which
// invokes it through the Lambda host and retries it as Lambda does (asyncQueue).
//
// On AWS the rule target's own retry policy (deploy.Delivery's ConsumerRule settings) covers
// EventBridge's Invoke call, which only puts the event on that queue; locally that hand-over
// is an in-process call that cannot fail, so the policy is deployed but has nothing to retry
// here.
func (st *Stack) subscribeConsumers() {
	q := &asyncQueue{st: st, function: FnConsumer, dlq: deploy.ConsumerDLQ, delivery: deploy.DefaultDelivery()}
	consumerQueues.Store(st, q)
	st.onClose(func() error { q.stop(); consumerQueues.Delete(st); return nil })
	st.Bus.Subscribe(func(ctx context.Context, ev events.EventBridgeEvent) error {
		payload, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		return q.enqueue(payload)
	})
}

// consumerQueues maps each running stack to its consumer's queue, so that a sale can wait for
// the events still queued or awaiting a retry (ConsumerPending) before it checks the consumer.
// It lives here rather than on Stack so that the queue stays this file's business.
var consumerQueues sync.Map // *Stack → *asyncQueue

// ConsumerPending is how many events the consumer's queue holds: accepted and neither
// processed nor given up (an attempt in flight, or a retry waiting on the stack's clock).
func (st *Stack) ConsumerPending() int64 {
	if q, ok := consumerQueues.Load(st); ok {
		return q.(*asyncQueue).pending.Load()
	}
	return 0
}

// Lambda's back-off for asynchronous invocations, which no setting changes: one minute before
// the first retry of a function error and two before the second (EventInvokeConfig allows no
// more), and for throttles and Lambda's own errors one second, doubling, up to five minutes.
const (
	asyncFunctionErrorBackoff = time.Minute
	asyncThrottleBackoff      = time.Second
	asyncThrottleBackoffMax   = 5 * time.Minute
)

// Conditions of an asynchronous invocation record.
const (
	conditionRetriesExhausted = "RetriesExhausted"
	conditionEventAgeExceeded = "EventAgeExceeded"
)

// asyncResult is what one attempt of an asynchronous event came to.
type asyncResult int

const (
	asyncSucceeded asyncResult = iota
	// asyncFunctionError: the function ran and failed (its error, a timeout, a crash).
	asyncFunctionError
	// asyncThrottled: Lambda did not run it (429 throttle, 5xx service error).
	asyncThrottled
)

// asyncVerdict is what Lambda's queue does with an event after an attempt.
type asyncVerdict struct {
	// done: the event is finished (it succeeded).
	done bool
	// wait is how long from now until the next attempt, or, with condition, until the event
	// is given up.
	wait time.Duration
	// condition, when set, gives the event up to the on-failure destination after wait.
	condition string
}

// nextAsyncAttempt decides, as Lambda's asynchronous queue does, what follows an attempt that
// came to r, when the event has had functionErrors function errors and throttles throttles in
// all (this attempt included) and is age old. Function errors spend the retries (RetryAttempts
// of them, after 1 then 2 minutes); throttles spend none and back off from 1 second, doubling,
// to 5 minutes. Either way an event whose next attempt would come after MaxEventAge is given
// up, as EventAgeExceeded, when it reaches that age.
func nextAsyncAttempt(r asyncResult, functionErrors, throttles int, age time.Duration, d deploy.Delivery) asyncVerdict {
	var wait time.Duration
	switch r {
	case asyncSucceeded:
		return asyncVerdict{done: true}
	case asyncFunctionError:
		if functionErrors > d.ConsumerRetryAttempts {
			return asyncVerdict{condition: conditionRetriesExhausted}
		}
		wait = time.Duration(functionErrors) * asyncFunctionErrorBackoff
	case asyncThrottled:
		wait = asyncThrottleBackoffMax
		if throttles <= 9 { // 1 s << 9 is past the cap already
			wait = min(asyncThrottleBackoff<<(throttles-1), asyncThrottleBackoffMax)
		}
	}
	if age+wait > d.ConsumerMaxEventAge {
		return asyncVerdict{wait: max(0, d.ConsumerMaxEventAge-age), condition: conditionEventAgeExceeded}
	}
	return asyncVerdict{wait: wait}
}

// asyncQueue plays Lambda's asynchronous event queue of one function: an event is accepted at
// once, then invoked (synchronously, through the Lambda host, so throttles and injected faults
// are seen), retried on the stack's clock per nextAsyncAttempt, and when it is given up sent to
// the function's on-failure destination with the record Lambda sends there.
type asyncQueue struct {
	st       *Stack
	function string
	dlq      string
	delivery deploy.Delivery

	mu     sync.Mutex
	closed bool
	// pending counts the events accepted and not yet finished or given up.
	pending atomic.Int64
}

// asyncEvent is one event in the queue and what its attempts came to.
type asyncEvent struct {
	requestID      string
	payload        []byte
	queuedAt       time.Time
	attempts       int
	functionErrors int
	throttles      int
	// last is the last attempt's answer, for the on-failure record.
	last asyncResponse
}

// asyncResponse is an attempt's answer as the invocation record reports it.
type asyncResponse struct {
	statusCode    int
	functionError string
	payload       []byte
}

func (q *asyncQueue) enqueue(payload []byte) error {
	e := &asyncEvent{requestID: newRequestUUID(), payload: payload, queuedAt: q.st.Clock.Now()}
	q.pending.Add(1)
	if !q.spawn(func() { q.attempt(e) }) {
		q.pending.Add(-1)
		return errors.New("stack: the consumer's queue is closed")
	}
	return nil
}

// spawn runs f in a goroutine the stack waits for, unless the queue is closed. Attempts never
// run in the clock's goroutine: a fake clock runs due calls in the goroutine that advances it,
// which must not wait on an HTTP round trip.
func (q *asyncQueue) spawn(f func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.st.ctx.Err() != nil {
		return false
	}
	q.st.wg.Add(1)
	go func() {
		defer q.st.wg.Done()
		f()
	}()
	return true
}

func (q *asyncQueue) stop() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// after runs f after d of the stack's clock, in a goroutine of its own.
func (q *asyncQueue) after(d time.Duration, f func()) {
	q.st.Clock.AfterFunc(d, func() { q.spawn(f) })
}

func (q *asyncQueue) attempt(e *asyncEvent) {
	r, resp, ok := q.invoke(e)
	if !ok {
		q.pending.Add(-1)
		return // the stack is closing: the event goes with it, as the queue's memory does
	}
	e.attempts++
	e.last = resp
	switch r {
	case asyncFunctionError:
		e.functionErrors++
	case asyncThrottled:
		e.throttles++
	}
	v := nextAsyncAttempt(r, e.functionErrors, e.throttles, q.st.Clock.Now().Sub(e.queuedAt), q.delivery)
	switch {
	case v.done:
		q.pending.Add(-1)
	case v.condition != "" && v.wait <= 0:
		q.giveUp(e, v.condition)
		q.pending.Add(-1)
	case v.condition != "":
		q.after(v.wait, func() { q.giveUp(e, v.condition); q.pending.Add(-1) })
	default:
		q.after(v.wait, func() { q.attempt(e) })
	}
}

// invoke makes one attempt; it reports false when the stack is closing.
func (q *asyncQueue) invoke(e *asyncEvent) (asyncResult, asyncResponse, bool) {
	out, err := q.st.Lambda.Invoke(q.st.ctx, &lambda.InvokeInput{
		FunctionName: aws.String(q.function), Payload: e.payload,
	})
	if q.st.ctx.Err() != nil {
		return 0, asyncResponse{}, false
	}
	if err != nil {
		status := http.StatusInternalServerError
		var throttled *lambdatypes.TooManyRequestsException
		var re *awshttp.ResponseError
		switch {
		case errors.As(err, &throttled):
			status = http.StatusTooManyRequests
		case errors.As(err, &re):
			status = re.HTTPStatusCode()
		}
		body, _ := json.Marshal(map[string]string{"errorMessage": err.Error()})
		q.st.log.Info("stack: consumer invocation refused; Lambda retries it", "requestId", e.requestID, "status", status, "error", err.Error())
		return asyncThrottled, asyncResponse{statusCode: status, payload: body}, true
	}
	resp := asyncResponse{statusCode: int(out.StatusCode), payload: out.Payload}
	if out.FunctionError != nil {
		resp.functionError = aws.ToString(out.FunctionError)
		q.st.log.Info("stack: consumer invocation failed; Lambda retries it", "requestId", e.requestID, "functionError", resp.functionError)
		return asyncFunctionError, resp, true
	}
	return asyncSucceeded, resp, true
}

// asyncInvocationRecord is what Lambda sends an asynchronous invocation's on-failure
// destination: the event, and what became of its last attempt.
type asyncInvocationRecord struct {
	Version        string    `json:"version"`
	Timestamp      time.Time `json:"timestamp"`
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	RequestPayload  json.RawMessage `json:"requestPayload"`
	ResponseContext struct {
		StatusCode      int    `json:"statusCode"`
		ExecutedVersion string `json:"executedVersion"`
		FunctionError   string `json:"functionError,omitempty"`
	} `json:"responseContext"`
	ResponsePayload json.RawMessage `json:"responsePayload,omitempty"`
}

func (q *asyncQueue) giveUp(e *asyncEvent, condition string) {
	var rec asyncInvocationRecord
	rec.Version = "1.0"
	rec.Timestamp = q.st.Clock.Now().UTC().Truncate(time.Millisecond)
	rec.RequestContext.RequestID = e.requestID
	rec.RequestContext.FunctionARN = FunctionARN(q.function) + ":$LATEST"
	rec.RequestContext.Condition = condition
	rec.RequestContext.ApproximateInvokeCount = e.attempts
	rec.RequestPayload = e.payload
	rec.ResponseContext.StatusCode = e.last.statusCode
	rec.ResponseContext.ExecutedVersion = "$LATEST"
	rec.ResponseContext.FunctionError = e.last.functionError
	if json.Valid(e.last.payload) {
		rec.ResponsePayload = e.last.payload
	}
	if err := q.st.sendOnFailure(q.function, q.dlq, rec); err != nil {
		q.st.log.Error("stack: consumer event given up and lost", "requestId", e.requestID, "condition", condition, "error", err.Error())
	}
}

// newRequestUUID is a request id in the form Lambda gives them.
func newRequestUUID() string {
	h := randomHex(16)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}
