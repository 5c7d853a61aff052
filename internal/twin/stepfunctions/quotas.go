package stepfunctions

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// Quotas are the throttles of one account's Step Functions in one Region: a token bucket per
// API action, and one for the state transitions of every Standard execution. An action the API
// map does not name is not throttled; a zero StateTransition does not throttle transitions.
type Quotas struct {
	API             map[string]throttle.Limit
	StateTransition throttle.Limit
	// OpenExecutions bounds the Standard executions running at once (0: unbounded); a start
	// past it is refused ExecutionLimitExceeded. A redriven execution runs uncounted.
	OpenExecutions int
}

// StateTransitionQuota is the name Step Functions gives the state-transition bucket (its
// ServiceMetric dimension); Throttles counts under it the transitions that had to wait.
const StateTransitionQuota = "StateTransition"

// DefaultQuotas are AWS's published default quotas for Standard workflows in US East
// (N. Virginia), US West (Oregon) and Europe (Ireland), the Regions with the largest ones, from
// "Step Functions service quotas" (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html,
// read in the developer guide's source, github.com/awsdocs/aws-step-functions-developer-guide,
// doc_source/limits-overview.md: "Quotas related to state throttling", "Quotas related to API
// action throttling" and "Other quotas"). AWS notes that it may raise both bucket size and
// refill rate at any time, and that new accounts start with reduced state-transition quotas.
//
// Every bucket refills on the server's clock. Under a clock scaled N times a bucket admits N
// times its rate per wall second, as the ASL's Retry intervals shrink N times: throttling and
// the waits the state machine retries with scale together. The SDK's own retry backoff does not
// (it sleeps on the wall clock), so a throttled SDK call waits N times longer in the stack's
// time than it would on AWS. And a bucket whose scaled rate exceeds what the twin can serve on
// one machine no longer binds: at N = 20 the state-transition bucket refills 30,000 per wall
// second and StartExecution 6,000, more than a local sale reaches, so only the bursts (the
// bucket sizes) can still throttle, and then only if that many calls arrive within a second of
// stack time (1/N of a wall second). Throttling is faithful at scale 1 and fades as N grows.
func DefaultQuotas() Quotas {
	return Quotas{
		API: map[string]throttle.Limit{
			"StartExecution":                   {Size: 1300, RefillPerSecond: 300},
			"DescribeExecution":                {Size: 300, RefillPerSecond: 15},
			"DescribeStateMachine":             {Size: 200, RefillPerSecond: 20},
			"DescribeStateMachineForExecution": {Size: 200, RefillPerSecond: 1},
			"ListExecutions":                   {Size: 200, RefillPerSecond: 5},
			"ListStateMachines":                {Size: 100, RefillPerSecond: 5},
			"GetExecutionHistory":              {Size: 400, RefillPerSecond: 20},
			"StopExecution":                    {Size: 1000, RefillPerSecond: 200},
			"SendTaskSuccess":                  {Size: 3000, RefillPerSecond: 500},
			"SendTaskFailure":                  {Size: 3000, RefillPerSecond: 500},
			"SendTaskHeartbeat":                {Size: 3000, RefillPerSecond: 500},
			"CreateStateMachine":               {Size: 100, RefillPerSecond: 1},
			"DeleteStateMachine":               {Size: 100, RefillPerSecond: 1},
		},
		StateTransition: throttle.Limit{Size: 5000, RefillPerSecond: 1500},
		// "Maximum open executions per account: 1,000,000 per AWS account per Region"
		// (Standard workflows; Express ones are not counted).
		OpenExecutions: 1_000_000,
	}
}

// throttles holds a server's buckets and counts what they throttled. The API buckets are
// swapped whole (SetAPIQuotas) while calls take tokens.
type throttles struct {
	clock      clock.Clock
	api        atomic.Pointer[map[string]*throttle.Bucket]
	transition *throttle.Bucket

	mu      sync.Mutex
	counted map[string]*atomic.Int64
}

func newThrottles(c clock.Clock, q *Quotas) *throttles {
	t := &throttles{clock: c, counted: map[string]*atomic.Int64{}}
	if q == nil {
		t.setAPI(nil)
		return t
	}
	t.setAPI(q.API)
	if q.StateTransition.Size > 0 {
		t.transition = throttle.New(c, q.StateTransition)
	}
	return t
}

// setAPI gives every action of limits a full bucket of its limit; the others are not throttled.
func (t *throttles) setAPI(limits map[string]throttle.Limit) {
	api := make(map[string]*throttle.Bucket, len(limits))
	for op, l := range limits {
		api[op] = throttle.New(t.clock, l)
	}
	t.api.Store(&api)
}

func (t *throttles) count(name string) {
	t.mu.Lock()
	n, ok := t.counted[name]
	if !ok {
		n = &atomic.Int64{}
		t.counted[name] = n
	}
	t.mu.Unlock()
	n.Add(1)
}

// admit takes a token for one call of op, or answers it as Step Functions answers a throttled
// call: HTTP 400, ThrottlingException, "Rate exceeded". The SDK's retryer treats that code as
// a throttle and retries it with backoff, as it does on AWS.
func (t *throttles) admit(op string) *apiError {
	b, ok := (*t.api.Load())[op]
	if !ok || b.Take() {
		return nil
	}
	t.count(op)
	return &apiError{status: http.StatusBadRequest, code: "ThrottlingException", msg: "Rate exceeded"}
}

// beforeTransition delays a state transition until the state-transition bucket has a token, as
// Step Functions throttles transitions: the execution slows down, it does not fail. It is the
// engine's hook only when the bucket exists.
func (t *throttles) beforeTransition(ctx context.Context) error {
	if t.transition.Take() {
		return nil
	}
	t.count(StateTransitionQuota)
	return t.transition.Wait(ctx)
}

// Throttles returns how many calls of each API action the server refused with
// ThrottlingException, and under StateTransitionQuota how many state transitions waited for
// the state-transition bucket: what Step Functions publishes as ThrottledEvents and
// ExecutionThrottled. An action never throttled is absent.
func (s *Server) Throttles() map[string]int64 {
	s.throttles.mu.Lock()
	defer s.throttles.mu.Unlock()
	out := make(map[string]int64, len(s.throttles.counted))
	for name, n := range s.throttles.counted {
		out[name] = n.Load()
	}
	return out
}

// Quotas returns the limits the server throttles with (none when Options.Quotas was nil).
func (s *Server) Quotas() Quotas {
	q := Quotas{API: map[string]throttle.Limit{}}
	for op, b := range *s.throttles.api.Load() {
		q.API[op] = b.Limit()
	}
	if s.throttles.transition != nil {
		q.StateTransition = s.throttles.transition.Limit()
	}
	return q
}

// SetAPIQuotas replaces the API actions' quotas with limits, each bucket full; an action limits
// does not name is no longer throttled, and the state-transition bucket is left as it is. A
// run that tightened a quota for a while gives it back with it.
func (s *Server) SetAPIQuotas(limits map[string]throttle.Limit) { s.throttles.setAPI(limits) }
