package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sale/bill"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// FaultPlan says how much goes wrong during a sale. Counts are absolute numbers of injected
// failures; each is armed before the buyers arrive and hits the next calls.
type FaultPlan struct {
	// ProviderFailBefore makes that many calls to each of the provider's confirm, capture,
	// cancel and retrieve endpoints answer 500 without acting.
	ProviderFailBefore int
	// ProviderLoseResponse makes that many calls to each of confirm and capture act and then
	// lose their response (the client times out; the state changed).
	ProviderLoseResponse int
	// LambdaFailBefore makes that many invocations of each saga function fail with a Lambda
	// service error before the handler runs; LambdaFailAfter lets the handler run (its writes
	// happen) and then fails the invocation, the crash-after-write each step must survive.
	LambdaFailBefore int
	LambdaFailAfter  int
	// Spread arms each fault on its own at a random moment within this much wall time, so
	// faults hit calls across the sale instead of the first few in a row (zero: all at once).
	Spread time.Duration
	// Seed makes the moments reproducible.
	Seed int64
}

// Any reports whether the plan injects anything.
func (f FaultPlan) Any() bool {
	return f.ProviderFailBefore+f.ProviderLoseResponse+f.LambdaFailBefore+f.LambdaFailAfter > 0
}

// Arm injects the plan into the simulator and the Lambda host.
func (st *Stack) Arm(f FaultPlan) error {
	var arms []func() error
	repeat := func(n int, arm func() error) {
		for i := 0; i < n; i++ {
			arms = append(arms, arm)
		}
	}
	for _, ep := range []stripesim.Endpoint{stripesim.EndpointConfirmIntent, stripesim.EndpointCaptureIntent,
		stripesim.EndpointCancelIntent, stripesim.EndpointRetrieveIntent} {
		repeat(f.ProviderFailBefore, func() error { st.Payments.FailNext(ep, 1); return nil })
	}
	for _, ep := range []stripesim.Endpoint{stripesim.EndpointConfirmIntent, stripesim.EndpointCaptureIntent} {
		repeat(f.ProviderLoseResponse, func() error { st.Payments.LoseResponseNext(ep, 1); return nil })
	}
	for _, fn := range SagaFunctions {
		repeat(f.LambdaFailBefore, func() error { return st.Lambdas.FailBefore(fn, 1, lambdahost.ServiceException()) })
		repeat(f.LambdaFailAfter, func() error { return st.Lambdas.FailAfter(fn, 1, lambdahost.ServiceException()) })
	}
	if f.Spread <= 0 {
		for _, arm := range arms {
			if err := arm(); err != nil {
				return err
			}
		}
		return nil
	}
	rng := rand.New(rand.NewSource(f.Seed))
	for _, arm := range arms {
		at := time.Duration(rng.Int63n(int64(f.Spread)))
		timer := time.AfterFunc(at, func() {
			if st.ctx.Err() == nil {
				if err := arm(); err != nil {
					st.log.Warn("stack: arm fault", "error", err.Error())
				}
			}
		})
		st.onClose(func() error { timer.Stop(); return nil })
	}
	return nil
}

// SaleOptions describe a flash sale.
type SaleOptions struct {
	EventID       string
	Seats         int
	Buyers        int
	SeatsPerBuyer int
	Mix           load.Mix
	// Pricing prices the sale's seats; nil uses the stack's Config.Pricing. Buyers send no
	// amount: the API charges the seats' prices.
	Pricing *Pricing
	Seed    int64
	Faults  FaultPlan
	// Concurrency bounds buyers in flight (a burst profile raises it: load.Profile.Concurrency);
	// PollInterval is how often a buyer reads its status.
	Concurrency  int
	PollInterval time.Duration
	// Profile is how the buyers arrive and which seats they want (empty: load.Uniform);
	// HotShare is the hot profile's share of first choices on the best tenth of the seats
	// (0: load.DefaultHotShare).
	Profile  load.Profile
	HotShare float64
	// BuyerTimeout bounds one buyer's wait for a final status (wall clock); SettleTimeout the
	// wait for the whole stack to go quiet after the last buyer (wall clock).
	BuyerTimeout  time.Duration
	SettleTimeout time.Duration
	// SampleInterval is how often seats are counted by state for the timeline (0: 500 ms).
	SampleInterval time.Duration
	// ClockScale is how many times faster the stack's clock runs than the wall clock (a
	// clock.Scaled factor; 0 means 1); it turns the engine's timestamps into wall time.
	ClockScale float64
	// Progress is called after each buyer finishes.
	Progress func(done, total int)
	// Settling is called while waiting for the stack to go quiet, with the reason it is not.
	Settling func(reason string)
	// AwaitAlarms keeps the stack running after it settled until the alarm period in
	// progress has ended and been evaluated, so what the sale's last minutes published is
	// judged too (up to alarms.Period plus a minute of stack time).
	AwaitAlarms bool
	// ObserveAfter keeps the stack running this much longer (stack time) after it settled,
	// before the alarms are awaited: for alarms that need several periods.
	ObserveAfter time.Duration
}

// SaleResult is everything a sale produced.
type SaleResult struct {
	Options  SaleOptions
	Run      *load.Run
	Summary  load.Summary
	Settled  bool
	Verdict  invariants.Verdict
	Snapshot invariants.Snapshot
	Traces   []ExecutionTrace
	Samples  []SeatSample
	// Invocations counts handler runs per function; Lambda errors per function.
	Invocations map[string]int64
	Errors      map[string]int64
	// Calls are the AWS calls every caller made through the gate during the sale, by role,
	// service and operation (awsgate.Gate.Calls), and APIRuns the api handler's runs per route
	// (RouteCreate, RouteStatus, ...): both from the sale's start to when Invocations were
	// counted, after the stack settled, as Invocations are.
	Calls   []awsgate.Call
	APIRuns map[string]int64
	// SettleTime is how long the stack took to go quiet after the last buyer.
	SettleTime time.Duration
	// Start is when the sale began on the stack's clock; Alarms are the alarm state changes
	// since then, in order.
	Start  time.Time
	Alarms []cloudwatch.Transition
	// Usage is what the sale used in the units AWS bills (bill.Usage), over the same window as
	// Calls; Figures prices it.
	Usage bill.Usage
	// Faults counts the faults the chaos (WithChaos) injected, by class; nil without chaos.
	Faults map[load.FaultClass]int

	stateTypes map[string]string
}

// RunSale seeds the event, arms the faults, drives the buyers through the HTTP API, waits for
// the stack to settle and checks every invariant. A non-nil error means the sale could not be
// run or checked; broken invariants are in Verdict.
func (st *Stack) RunSale(ctx context.Context, o SaleOptions) (*SaleResult, error) {
	if o.EventID == "" {
		o.EventID = "flash-sale"
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 3 * time.Minute
	}
	if o.SampleInterval <= 0 {
		o.SampleInterval = 500 * time.Millisecond
	}
	pricing := st.cfg.Pricing
	if o.Pricing != nil {
		pricing = *o.Pricing
	}
	seats, err := st.SeedEventPriced(ctx, o.EventID, o.Seats, pricing)
	if err != nil {
		return nil, err
	}
	buyers, err := load.Plan(load.PlanOptions{
		Buyers: o.Buyers, Seats: seats, SeatsPerBuyer: o.SeatsPerBuyer, Mix: o.Mix, Seed: o.Seed,
		Profile: o.Profile, HotShare: o.HotShare,
	})
	if err != nil {
		return nil, err
	}
	if err := st.Arm(o.Faults); err != nil {
		return nil, err
	}
	var chaos *load.Injector
	stopChaos, chaosDone := make(chan struct{}), make(chan struct{})
	var sfnThrottledBefore int64
	if b := st.cfg.chaos; b != nil {
		chaos = b.injector
		b.stack.Store(st)
		sfnThrottledBefore = st.sfnThrottles()
		go func() {
			defer close(chaosDone)
			st.runChaos(chaos, stopChaos)
		}()
	} else {
		close(chaosDone)
	}
	// The chaos stops once the stack settled, so that the checker judges a stack at rest.
	var stopOnce atomic.Bool
	endChaos := func() {
		if stopOnce.CompareAndSwap(false, true) {
			close(stopChaos)
			<-chaosDone
		}
	}
	defer endChaos()
	st.Lambdas.ResetStats()
	callsBefore, runsBefore := st.Gate.Calls(), st.apiRuns()
	usageBefore := st.usageMark()
	sampler := st.SampleSeats(o.SampleInterval)
	res := &SaleResult{Options: o, Start: st.Clock.Now()}
	res.Run, err = load.Drive(ctx, load.Options{
		BaseURL: st.Endpoints.API, EventID: o.EventID, Buyers: buyers, Profile: o.Profile,
		Concurrency: o.Concurrency, Token: st.Token,
		PollInterval: o.PollInterval, SettleTimeout: o.BuyerTimeout,
		Progress: o.Progress,
		// A customer cancels within their hold, in wall time.
		Chaos: chaos, CancelWindow: time.Duration(float64(st.AppConfig.Hold) / st.clockScale()),
	})
	if err != nil {
		sampler.Stop()
		return nil, fmt.Errorf("stack: drive buyers: %w", err)
	}
	res.Summary = res.Run.Summarize()
	settleStart := time.Now()
	settleCtx, cancel := context.WithTimeout(ctx, o.SettleTimeout)
	res.Settled = st.settleReporting(settleCtx, o.Settling) == nil
	cancel()
	if chaos != nil {
		endChaos()
		st.clearChaos()
		chaos.Add(load.StepFunctionsThrottle, int(st.sfnThrottles()-sfnThrottledBefore))
		res.Faults = chaos.Injected()
		settleCtx, cancel := context.WithTimeout(ctx, o.SettleTimeout)
		res.Settled = st.settleReporting(settleCtx, o.Settling) == nil
		cancel()
	}
	res.SettleTime = time.Since(settleStart)
	// The stack's quiet does not wait for the consumer's queue: an event whose delivery failed
	// waits a minute or two of stack time for Lambda's retry. The consumer is judged after it.
	if err := st.awaitConsumer(ctx, o.SettleTimeout); err != nil {
		res.Settled = false
	}
	if o.ObserveAfter > 0 {
		if err := clock.Sleep(ctx, st.Clock, o.ObserveAfter); err != nil {
			sampler.Stop()
			return nil, fmt.Errorf("stack: observe after the sale: %w", err)
		}
	}
	if o.AwaitAlarms {
		if err := st.AwaitAlarmPeriod(ctx); err != nil {
			sampler.Stop()
			return nil, err
		}
	}
	res.Alarms = st.AlarmChangesSince(res.Start)
	res.Samples = sampler.Stop()
	if res.Snapshot, err = invariants.Collect(ctx, st.Sources()); err != nil {
		return nil, err
	}
	res.Verdict = invariants.Check(res.Snapshot)
	if res.Traces, err = st.Traces(ctx, 8); err != nil {
		return nil, err
	}
	res.markClaimFailures()
	if res.stateTypes, err = stateTypes(st.Definition); err != nil {
		return nil, err
	}
	res.Invocations, res.Errors = map[string]int64{}, map[string]int64{}
	for _, fn := range st.Lambdas.Functions() {
		s := st.Lambdas.Stats(fn)
		res.Invocations[fn] = s.Invocations
		res.Errors[fn] = s.Errors
	}
	res.Calls = callsSince(callsBefore, st.Gate.Calls())
	res.APIRuns = map[string]int64{}
	for route, n := range st.apiRuns() {
		if n -= runsBefore[route]; n > 0 {
			res.APIRuns[route] = n
		}
	}
	if res.Usage, err = st.usageSince(ctx, usageBefore, res); err != nil {
		return nil, err
	}
	return res, nil
}

// markClaimFailures tells apart, among the buyers who read REJECTED, those whose execution
// failed its claim (or ended in another incident) from those who lost the race: only an
// execution that ended SeatUnavailable lost one. The buyers cannot see the difference; the
// executions' endings can. The summary is counted again with them apart.
func (r *SaleResult) markClaimFailures() {
	endings := make(map[string]saga.Ending, len(r.Traces))
	for _, t := range r.Traces {
		endings[t.Name] = t.Ending
	}
	r.Run.MarkClaimFailures(func(reservationID string) bool {
		e, ok := endings[reservationID]
		return ok && e.Finished && e.Outcome != saga.EndSeatUnavailable
	})
	r.Summary = r.Run.Summarize()
}

// callsSince is what after counts beyond before: the calls made between two readings of
// awsgate.Gate.Calls, which only grow.
func callsSince(before, after []awsgate.Call) []awsgate.Call {
	type key struct{ role, service, operation string }
	prior := make(map[key]int64, len(before))
	for _, c := range before {
		prior[key{c.Role, c.Service, c.Operation}] = c.Count
	}
	var out []awsgate.Call
	for _, c := range after {
		if c.Count -= prior[key{c.Role, c.Service, c.Operation}]; c.Count > 0 {
			out = append(out, c)
		}
	}
	return out
}

// The api's routes, as its counts name them.
var (
	RouteCreate = "POST " + api.ResourceCreate
	RouteStatus = "GET " + api.ResourceReservation
	RouteCancel = "DELETE " + api.ResourceReservation
)

// apiResponsesMetric is the count the api's handler adds once for every request it answers,
// by route and status class: what tells its runs on one route from its runs on another.
const apiResponsesMetric = "ApiResponses"

// apiRuns counts the api handler's runs per route so far. A request the gateway or Lambda
// refused never ran the handler, so it is not in them.
func (st *Stack) apiRuns() map[string]int64 {
	out := map[string]int64{}
	for _, route := range []string{RouteCreate, RouteStatus, RouteCancel} {
		for class := 1; class <= 5; class++ {
			out[route] += st.Metrics.Get(apiResponsesMetric, metrics.Dim{Name: "route", Value: route},
				metrics.Dim{Name: "status", Value: fmt.Sprintf("%dxx", class)})
		}
	}
	return out
}

// AwaitAlarmPeriod waits on the stack's clock until the alarm period in progress has ended and
// the evaluation after it ran, and evaluates then: the sale's last metrics (a DLQ message, a
// late gauge) have reached the store and been judged by a window past them, whatever the
// machine's load delayed.
func (st *Stack) AwaitAlarmPeriod(ctx context.Context) error {
	now := st.Clock.Now()
	end := now.Truncate(alarms.Period).Add(alarms.Period + cloudwatch.DefaultEvaluationInterval)
	if err := clock.Sleep(ctx, st.Clock, end.Sub(now)); err != nil {
		return fmt.Errorf("stack: wait for the alarm period to end: %w", err)
	}
	st.Alarms.EvaluateNow()
	return nil
}

// AlarmChangesSince lists the alarm state changes from t on, in order.
func (st *Stack) AlarmChangesSince(t time.Time) []cloudwatch.Transition {
	var out []cloudwatch.Transition
	for _, tr := range st.Alarms.History() {
		if !tr.Time.Before(t) {
			out = append(out, tr)
		}
	}
	return out
}

// FiredAlarms names the alarms that went into ALARM during the sale, sorted, each once.
func (r *SaleResult) FiredAlarms() []string {
	seen := map[string]bool{}
	var out []string
	for _, tr := range r.Alarms {
		if tr.To == cloudwatch.StateAlarm && !seen[tr.Alarm] {
			seen[tr.Alarm] = true
			out = append(out, tr.Alarm)
		}
	}
	sort.Strings(out)
	return out
}

// stateTypes maps the definition's top-level state names to their types.
func stateTypes(definition []byte) (map[string]string, error) {
	var def struct {
		States map[string]struct {
			Type string `json:"Type"`
		} `json:"States"`
	}
	if err := json.Unmarshal(definition, &def); err != nil {
		return nil, fmt.Errorf("stack: read the state machine: %w", err)
	}
	out := make(map[string]string, len(def.States))
	for name, s := range def.States {
		out[name] = s.Type
	}
	return out, nil
}

func (st *Stack) settleReporting(ctx context.Context, report func(string)) error {
	for {
		quiet, why, err := st.Quiet(ctx)
		if err != nil {
			return err
		}
		if quiet {
			return nil
		}
		if report != nil {
			report(why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Figures are the numbers a sale is judged by.
type Figures struct {
	// AlarmsFired names the alarms that went into ALARM during the sale.
	AlarmsFired     []string `json:"alarmsFired"`
	Buyers          int      `json:"buyers"`
	Seats           int      `json:"seats"`
	SeatsSold       int      `json:"seatsSold"`
	DurationSeconds float64  `json:"durationSeconds"`
	BuyersPerSecond float64  `json:"buyersPerSecond"`
	// AdmissionSeconds is how long the API took to answer every buyer's POST;
	// AdmissionsPerSecond the POSTs answered per second over that window; BookingsPerSecond
	// the confirmed bookings per second over the whole run.
	AdmissionSeconds    float64 `json:"admissionSeconds"`
	AdmissionsPerSecond float64 `json:"admissionsPerSecond"`
	BookingsPerSecond   float64 `json:"bookingsPerSecond"`
	// StatusPolls are the status GETs the buyers sent, retries included: attempts, some of
	// which a throttle answered without invoking anything. APIPosts and APIPolls are the
	// reservation POSTs and status GETs the api's handler ran: what reached the function.
	StatusPolls int            `json:"statusPolls"`
	APIPosts    int64          `json:"apiPostsRun"`
	APIPolls    int64          `json:"apiPollsRun"`
	Outcomes    map[string]int `json:"buyerOutcomes"`
	// FaultsInjected counts the chaos's faults by class (absent without chaos).
	FaultsInjected map[string]int `json:"faultsInjected,omitempty"`
	// Refunded counts the reservations the provider refunded money to; Backlog those in the
	// reconciliation backlog at the check; RulesPassed the invariant rules that held.
	RefundedReservations int `json:"refundedReservations"`
	Backlog              int `json:"backlog"`
	RulesPassed          int `json:"rulesPassed"`
	RulesTotal           int `json:"rulesTotal"`
	// AdmissionRejected are losers turned away before StartExecution; SagaRejected lost the
	// race inside the saga (the claim's conditional write: the execution ended
	// SeatUnavailable); LosersTurnedAwayEarly is the former's share of these losers.
	// ClaimFailed buyers read REJECTED too, but their execution ended in an incident ("Claim
	// failed", mostly): they lost no race, so they are in neither.
	AdmissionRejected     int     `json:"admissionRejected"`
	SagaRejected          int     `json:"sagaRejected"`
	ClaimFailed           int     `json:"claimFailed"`
	LosersTurnedAwayEarly float64 `json:"losersTurnedAwayEarly"`
	// ByBehaviour counts, per payment behaviour, how the buyers who held seats ended
	// (behaviour → buyer outcome → count).
	ByBehaviour map[string]map[string]int `json:"heldByBehaviour"`
	// TerminalStates counts executions by the last state they entered (RUNNING ones apart).
	TerminalStates map[string]int `json:"terminalStates"`
	// ExecutionOutcomes counts finished executions by how they ended (saga.EndingOf):
	// Confirmed, the business outcomes, and the incidents by their error.
	ExecutionOutcomes map[string]int `json:"executionOutcomes"`
	// ExecutionsFailed counts the finished executions that did not succeed (FAILED, TIMED_OUT,
	// ABORTED: what CloudWatch's ExecutionsFailed, ExecutionsTimedOut and ExecutionsAborted
	// count); ExecutionsNeedingPerson those saga.EndingOf says a person must look at. Business
	// endings succeed, so the two are equal.
	ExecutionsFailed        int `json:"executionsFailed"`
	ExecutionsNeedingPerson int `json:"executionsNeedingPerson"`
	Executions              int `json:"executions"`
	// Payments counts PaymentIntents by provider status; Refunds the refunded ones.
	Payments map[string]int `json:"payments"`
	Refunds  int            `json:"refunds"`
	// Latencies in milliseconds (wall clock, as buyers saw them by polling).
	HoldP50    float64 `json:"holdP50Ms"`
	HoldP95    float64 `json:"holdP95Ms"`
	HoldP99    float64 `json:"holdP99Ms"`
	ConfirmP50 float64 `json:"confirmP50Ms"`
	ConfirmP95 float64 `json:"confirmP95Ms"`
	ConfirmP99 float64 `json:"confirmP99Ms"`
	PostP50    float64 `json:"postP50Ms"`
	PostP95    float64 `json:"postP95Ms"`
	PostP99    float64 `json:"postP99Ms"`
	// EngineHold* is from StartExecution to the claim's success, EngineConfirm* to the
	// Succeed state, as the execution histories time them (wall-clock milliseconds): what the
	// saga takes, without the buyers' polling.
	EngineHoldP50    float64 `json:"engineHoldP50Ms"`
	EngineHoldP95    float64 `json:"engineHoldP95Ms"`
	EngineHoldP99    float64 `json:"engineHoldP99Ms"`
	EngineConfirmP50 float64 `json:"engineConfirmP50Ms"`
	EngineConfirmP95 float64 `json:"engineConfirmP95Ms"`
	EngineConfirmP99 float64 `json:"engineConfirmP99Ms"`
	// PostService* are the POST requests' own latency, without waiting for a client slot.
	PostServiceP50 float64 `json:"postServiceP50Ms"`
	PostServiceP95 float64 `json:"postServiceP95Ms"`
	PostServiceP99 float64 `json:"postServiceP99Ms"`
	// Transitions and invocations: totals, per confirmed booking and per execution.
	Transitions             int     `json:"stateTransitions"`
	TransitionsPerBooking   float64 `json:"stateTransitionsPerBooking"`
	TransitionsPerExecution float64 `json:"stateTransitionsPerExecution"`
	HappyPathTransitions    float64 `json:"happyPathTransitions"`
	Invocations             int64   `json:"lambdaInvocations"`
	// InvocationsPerBooking leaves out the api's runs of the status route (APIPolls), which
	// depend only on how often a client asks; a poll a throttle refused ran nothing, so it is
	// not left out of anything.
	InvocationsPerBooking     float64 `json:"lambdaInvocationsPerBookingWithoutPolls"`
	SagaInvocationsPerBooking float64 `json:"sagaLambdaInvocationsPerBooking"`
	// APICalls counts the AWS calls each function's role made during the sale (role, as
	// RoleName names it → operation → calls): one per HTTP call, so a TransactWriteItems of
	// three items is one, whatever the service answered (a failed condition, a throttle); a
	// call the gate denied is not in it. The stack's own clients (seeding, checks) are left
	// out: they are no part of the system.
	APICalls map[string]map[string]int64 `json:"awsCalls"`
	// StartExecutions counts the StartExecution calls of every role, accepted or not (an
	// ExecutionAlreadyExists, a throttle); StartExecutionsPerSeatSold divides them by
	// SeatsSold.
	StartExecutions            int64   `json:"startExecutions"`
	StartExecutionsPerSeatSold float64 `json:"startExecutionsPerSeatSold"`
	// StepFunctionsCallsPerPost is every Step Functions call of the api's role
	// (StartExecution, DescribeExecution, SendTaskFailure, ...) divided by the reservation
	// POSTs its handler ran (APIPosts). The gate cannot tell which route made a call, so the
	// status route's and the cancel route's calls are in it too: the hot path is allowed one
	// start per POST and nothing else.
	StepFunctionsCallsPerPost float64 `json:"stepFunctionsCallsPerPost"`
	// DynamoDBRequestsPerBooking is every DynamoDB call of every function (the table API;
	// stream reads are apart, as AWS bills them) divided by the confirmed bookings: the saga's
	// steps, the webhook, sweeper, relay and consumer, and the api, status polls included,
	// since the gate cannot tell a poll's calls from a POST's.
	// SagaDynamoDBRequestsPerBooking is the same without the api's calls: every function but
	// the api, per booking. APIDynamoDBRequestsPerRequest is the api's DynamoDB calls divided
	// by its handler's runs (every route: the POSTs, polls and cancels that reached it): the
	// gate cannot attribute a call to a route, so this and APIPolls are what shows how much
	// of DynamoDBRequestsPerBooking the polls are.
	DynamoDBRequestsPerBooking     float64 `json:"dynamoDBRequestsPerBooking"`
	SagaDynamoDBRequestsPerBooking float64 `json:"sagaDynamoDBRequestsPerBooking"`
	APIDynamoDBRequestsPerRequest  float64 `json:"apiDynamoDBRequestsPerRequest"`

	// TransitionRetries are the task attempts retried within a state, billed as transitions
	// beyond Transitions (which counts states entered). AWSUsage is what the sale used in the
	// units AWS bills; AWSBill prices it at the list prices of bill.Prices.
	TransitionRetries int        `json:"stateTransitionRetries"`
	AWSUsage          bill.Usage `json:"awsUsage"`
	AWSBill           bill.Bill  `json:"awsBill"`

	InvariantsPass bool    `json:"invariantsPass"`
	Violations     int     `json:"violations"`
	Settled        bool    `json:"settled"`
	SettleSeconds  float64 `json:"settleSeconds"`

	// Profile is the arrival profile the buyers were planned and driven with (load.Profile),
	// HotShare the hot profile's share of first choices on the best tenth of the seats (zero
	// for the others). Concurrency is the bound on POSTs in flight the client applied, after
	// the profile raised it; PeakPostsInFlight the most that were sent and unanswered at once;
	// ArrivalSeconds the time from the start to the last buyer's arrival, and
	// ClientLagSeconds the most the client was late to an arrival (a busy machine's, which
	// the POST latencies include).
	Profile           string  `json:"profile"`
	HotShare          float64 `json:"hotShare,omitempty"`
	Concurrency       int     `json:"concurrency"`
	PeakPostsInFlight int     `json:"peakPostsInFlight"`
	ArrivalSeconds    float64 `json:"arrivalSeconds"`
	ClientLagSeconds  float64 `json:"clientLagSeconds"`
	// Posts5xx, Posts429 and PostsUnanswered count the buyers' POST attempts answered 5xx,
	// answered 429, and not answered at all, retried ones included; PostsNeverAnswered the
	// buyers whose POST got no final answer however often they retried (load.Summary).
	Posts5xx           int `json:"postsAnswered5xx"`
	Posts429           int `json:"postsAnswered429"`
	PostsUnanswered    int `json:"postsUnanswered"`
	PostsNeverAnswered int `json:"postsNeverAnswered"`
}

// Figures computes the sale's numbers.
func (r *SaleResult) Figures() Figures {
	f := r.figures()
	if r.Faults != nil {
		f.FaultsInjected = map[string]int{}
		for c, n := range r.Faults {
			f.FaultsInjected[string(c)] = n
		}
	}
	refunded := map[string]bool{}
	for _, p := range r.Snapshot.Payments {
		if p.Refunded > 0 {
			refunded[p.ReservationID] = true
		}
	}
	f.RefundedReservations, f.Backlog = len(refunded), r.Verdict.Backlog
	f.RulesTotal = len(invariants.Rules)
	for _, n := range r.Verdict.ByRule() {
		if n == 0 {
			f.RulesPassed++
		}
	}
	return f
}

func (r *SaleResult) figures() Figures {
	s := r.Summary
	f := Figures{
		Buyers: s.Buyers, Seats: r.Options.Seats, DurationSeconds: s.Duration.Seconds(),
		BuyersPerSecond: s.Throughput(), Outcomes: map[string]int{}, AlarmsFired: r.FiredAlarms(),
		AdmissionRejected: s.ByOutcome[load.AdmissionRejected], SagaRejected: s.ByOutcome[load.SagaRejected],
		ClaimFailed:           s.ByOutcome[load.ClaimFailed],
		LosersTurnedAwayEarly: s.TurnedAwayEarly(),
		TerminalStates:        map[string]int{}, ExecutionOutcomes: map[string]int{}, Executions: len(r.Traces), Payments: map[string]int{},
		InvariantsPass: r.Verdict.OK(), Violations: len(r.Verdict.Violations),
		Settled: r.Settled, SettleSeconds: r.SettleTime.Seconds(),
		AdmissionSeconds: s.AdmissionWindow.Seconds(), AdmissionsPerSecond: s.AdmissionThroughput(),
		StatusPolls: s.Polls, APIPosts: r.APIRuns[RouteCreate], APIPolls: r.APIRuns[RouteStatus],
	}
	f.Profile, f.Concurrency, f.PeakPostsInFlight = string(s.Profile), s.Concurrency, s.PeakPostsInFlight
	f.ArrivalSeconds, f.ClientLagSeconds = s.ArrivalSpread.Seconds(), s.ClientLag.Seconds()
	f.Posts5xx, f.Posts429, f.PostsUnanswered, f.PostsNeverAnswered = s.Post5xx, s.Post429, s.PostUnanswered, s.PostsNeverAnswered
	if s.Profile == load.Hot {
		f.HotShare = r.Options.HotShare
		if f.HotShare == 0 {
			f.HotShare = load.DefaultHotShare
		}
	}
	for k, v := range s.ByOutcome {
		f.Outcomes[string(k)] = v
	}
	f.ByBehaviour = map[string]map[string]int{}
	for _, res := range r.Run.Results {
		if res.HoldLatency == 0 {
			continue
		}
		b := string(res.Buyer.Behaviour)
		if f.ByBehaviour[b] == nil {
			f.ByBehaviour[b] = map[string]int{}
		}
		f.ByBehaviour[b][string(res.Outcome)]++
	}
	for _, seat := range r.Snapshot.Seats {
		if seat.State == invariants.Confirmed {
			f.SeatsSold++
		}
	}
	for _, p := range r.Snapshot.Payments {
		f.Payments[p.Status]++
		if p.Refunded > 0 {
			f.Refunds++
		}
	}
	happy, happyN := 0, 0
	for _, t := range r.Traces {
		f.Transitions += t.Transitions
		if t.Status == invariants.ExecRunning {
			f.TerminalStates["(running)"]++
			continue
		}
		last := "(none)"
		if len(t.States) > 0 {
			last = t.States[len(t.States)-1]
		}
		f.TerminalStates[last]++
		if !t.Ending.Finished {
			continue
		}
		f.ExecutionOutcomes[t.Ending.Outcome]++
		if t.Ending.NeedsPerson {
			f.ExecutionsNeedingPerson++
		}
		if t.Status != string(sfntypes.ExecutionStatusSucceeded) {
			f.ExecutionsFailed++
		}
		if t.Ending.Outcome == saga.EndConfirmed {
			happy += t.Transitions
			happyN++
		}
	}
	pct := func(v []float64) (float64, float64, float64) {
		return percentile(v, 50), percentile(v, 95), percentile(v, 99)
	}
	f.HoldP50, f.HoldP95, f.HoldP99 = pct(s.HoldMs)
	f.ConfirmP50, f.ConfirmP95, f.ConfirmP99 = pct(s.ConfirmMs)
	f.PostP50, f.PostP95, f.PostP99 = pct(s.PostMs)
	f.PostServiceP50, f.PostServiceP95, f.PostServiceP99 = pct(s.PostServiceMs)
	holdMs, confirmMs := r.EngineLatencies()
	f.EngineHoldP50, f.EngineHoldP95, f.EngineHoldP99 = pct(holdMs)
	f.EngineConfirmP50, f.EngineConfirmP95, f.EngineConfirmP99 = pct(confirmMs)
	bookings := s.ByOutcome[load.Confirmed]
	var saga int64
	for fn, n := range r.Invocations {
		f.Invocations += n
		for _, sf := range SagaFunctions {
			if fn == sf {
				saga += n
			}
		}
	}
	apiSFN, apiDynamo, otherDynamo := f.countCalls(r.Calls)
	if s.Duration > 0 {
		f.BookingsPerSecond = float64(bookings) / s.Duration.Seconds()
	}
	if bookings > 0 {
		f.TransitionsPerBooking = float64(f.Transitions) / float64(bookings)
		f.InvocationsPerBooking = float64(f.Invocations-f.APIPolls) / float64(bookings)
		f.SagaInvocationsPerBooking = float64(saga) / float64(bookings)
		f.DynamoDBRequestsPerBooking = float64(apiDynamo+otherDynamo) / float64(bookings)
		f.SagaDynamoDBRequestsPerBooking = float64(otherDynamo) / float64(bookings)
	}
	if f.SeatsSold > 0 {
		f.StartExecutionsPerSeatSold = float64(f.StartExecutions) / float64(f.SeatsSold)
	}
	if f.APIPosts > 0 {
		f.StepFunctionsCallsPerPost = float64(apiSFN) / float64(f.APIPosts)
	}
	if runs := r.Invocations[FnAPI]; runs > 0 {
		f.APIDynamoDBRequestsPerRequest = float64(apiDynamo) / float64(runs)
	}
	if len(r.Traces) > 0 {
		f.TransitionsPerExecution = float64(f.Transitions) / float64(len(r.Traces))
	}
	if happyN > 0 {
		f.HappyPathTransitions = float64(happy) / float64(happyN)
	}
	f.TransitionRetries = int(r.Usage.TransitionRetries)
	f.AWSUsage = r.Usage
	f.AWSBill = bill.Compute(r.Usage, bookings, s.Buyers)
	return f
}

// countCalls fills APICalls and StartExecutions from the gate's counts and returns the api
// role's Step Functions and DynamoDB calls and the other roles' DynamoDB calls. The root's
// calls are the stack's own clients, not the system's, and are left out.
func (f *Figures) countCalls(calls []awsgate.Call) (apiSFN, apiDynamo, otherDynamo int64) {
	apiRole := RoleName(FnAPI)
	f.APICalls = map[string]map[string]int64{}
	for _, c := range calls {
		if c.Role == "" {
			continue
		}
		if f.APICalls[c.Role] == nil {
			f.APICalls[c.Role] = map[string]int64{}
		}
		f.APICalls[c.Role][c.Operation] += c.Count
		switch {
		case c.Service == awsgate.ServiceStepFunctions:
			if c.Operation == "StartExecution" {
				f.StartExecutions += c.Count
			}
			if c.Role == apiRole {
				apiSFN += c.Count
			}
		case c.Service == awsgate.ServiceDynamoDB && c.Role == apiRole:
			apiDynamo += c.Count
		case c.Service == awsgate.ServiceDynamoDB:
			otherDynamo += c.Count
		}
	}
	return apiSFN, apiDynamo, otherDynamo
}

// EngineLatencies reads from the execution histories, in wall-clock milliseconds, how long
// each execution took from its start to leaving the state machine's first state towards a
// state that is not an ending (the seats are held), and, for the executions that ended
// Confirmed, to entering that state. Business endings are Succeed states too, so a Succeed
// state alone says nothing about a sale.
func (r *SaleResult) EngineLatencies() (holdMs, confirmMs []float64) {
	scale := r.Options.ClockScale
	if scale <= 0 {
		scale = 1
	}
	wall := func(d time.Duration) float64 { return float64(d) / scale / float64(time.Millisecond) }
	for _, t := range r.Traces {
		if len(t.States) < 2 || t.Start.IsZero() {
			continue
		}
		if next := r.stateTypes[t.States[1]]; next != "Fail" && next != "Succeed" && !t.Exited[0].IsZero() {
			holdMs = append(holdMs, wall(t.Exited[0].Sub(t.Start)))
		}
		if t.Ending.Outcome == saga.EndConfirmed {
			confirmMs = append(confirmMs, wall(t.Entered[len(t.Entered)-1].Sub(t.Start)))
		}
	}
	sort.Float64s(holdMs)
	sort.Float64s(confirmMs)
	return holdMs, confirmMs
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	v := append([]float64(nil), sorted...)
	sort.Float64s(v)
	rank := int(float64(len(v))*p/100+0.999999) - 1
	return v[min(max(rank, 0), len(v)-1)]
}

// clearChaos takes away, once the chaos stopped, what it left in place, so that the stack
// settles again without it: faults armed and not yet taken would hit the settling stack's next
// calls, and the Step Functions quotas it tightened would go on throttling them uncounted.
func (st *Stack) clearChaos() {
	st.Payments.ClearFaults()
	for _, fn := range append([]string{FnSweeper}, SagaFunctions...) {
		st.Lambdas.ClearFaults(fn)
	}
	b := st.cfg.chaos
	b.stack.Store(nil)
	if b.injector.On(load.StepFunctionsThrottle) && st.sfnServer != nil {
		q, defaults := st.sfnServer.Quotas().API, stepfunctions.DefaultQuotas().API
		for _, action := range chaosThrottledActions {
			if _, throttled := q[action]; throttled {
				q[action] = defaults[action]
			}
		}
		st.sfnServer.SetAPIQuotas(q)
	}
}

// chaosBinding lets a Config's DynamoDB fault hook reach the stack it configures, which does
// not exist yet when the hook is made: RunSale binds it.
type chaosBinding struct {
	injector *load.Injector
	stack    atomic.Pointer[Stack]
}

// WithChaos makes cfg inject the DynamoDB fault classes of in on every function's DynamoDB
// calls (Config.DynamoDBFault) while RunSale's chaos runs, and remembers in for RunSale, which
// injects the other classes (Lambda, provider) while its buyers run, and whose buyers
// misbehave as in says.
//
// The hook runs at the SDK's initialize step, before its retries: a throttle or an internal
// error reaches the function as if the SDK's retries had run out. A lost response commits the
// write first, with the stack's own client, and then either lets the call go on, which is
// what the SDK's retry of the same request would do (a conditional write then fails its
// condition against its own first attempt), or fails it as the last retry's timeout would.
func WithChaos(cfg *Config, in *load.Injector) {
	b := &chaosBinding{injector: in}
	cfg.chaos = b
	cfg.DynamoDBFault = b.dynamoDBFault
	if in.On(load.StepFunctionsResponseLost) {
		cfg.StepFunctionsLoseResponse = b.loseStepFunctionsResponse
	}
	if in.On(load.StepFunctionsThrottle) {
		q := stepfunctions.DefaultQuotas()
		for _, action := range chaosThrottledActions {
			q.API[action] = chaosQuota(in.Rate(load.StepFunctionsThrottle))
		}
		cfg.StepFunctionsQuotas = &q
	}
}

// chaosThrottledActions are the Step Functions actions the chaos throttles: the api's start
// and the webhook's answers to the waiting task.
var chaosThrottledActions = []string{"StartExecution", "SendTaskSuccess", "SendTaskFailure"}

// loseStepFunctionsResponse loses the answer of a function's call among the chaos's actions
// while a sale runs (the stack's own calls, made as the account, are left alone).
func (b *chaosBinding) loseStepFunctionsResponse(role, op string) bool {
	if role == "" || b.stack.Load() == nil || !slices.Contains(chaosThrottledActions, op) {
		return false
	}
	return b.injector.Strike(load.StepFunctionsResponseLost)
}

// chaosQuota is a bucket small enough that a sale's bursts overflow it: four calls, refilled
// at two per second of stack time at rate 0, down to a tenth of one at rate 1.
func chaosQuota(rate float64) throttle.Limit {
	return throttle.Limit{Size: 4, RefillPerSecond: 2 * max(0.05, 1-rate)}
}

// sfnThrottles sums what the engine throttled of the chaos's actions.
func (st *Stack) sfnThrottles() int64 {
	var n int64
	counts := st.StepFunctionsThrottles()
	for _, action := range chaosThrottledActions {
		n += counts[action]
	}
	return n
}

func (b *chaosBinding) dynamoDBFault(op string, params any) error {
	in := b.injector
	st := b.stack.Load()
	if st == nil {
		// No sale binds the chaos: before one, and in the settle RunSale runs without it after
		// reading the counts, a fault would be one nobody counted.
		return nil
	}
	if in.Strike(load.DynamoDBThrottle) {
		if in.Draw() < 0.5 {
			return &ddbtypes.ProvisionedThroughputExceededException{Message: aws.String("The level of configured provisioned throughput for the table was exceeded (injected).")}
		}
		return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate of requests exceeds the allowed throughput (injected)."}
	}
	if in.Strike(load.DynamoDBInternalError) {
		return &ddbtypes.InternalServerError{Message: aws.String("Internal server error (injected before the write).")}
	}
	if op == "TransactWriteItems" && in.Strike(load.DynamoDBTransactionConflict) {
		return transactionConflict(params, in.Draw())
	}
	if !isDynamoDBWrite(op) || !in.On(load.DynamoDBResponseLost) {
		return nil
	}
	if !in.Armed(load.DynamoDBResponseLost) {
		return nil
	}
	if err := commitAsIs(st, op, params); err != nil {
		// The first attempt did not commit (its condition failed, say): nothing was lost.
		return nil
	}
	in.Count(load.DynamoDBResponseLost)
	if in.Draw() < 0.5 {
		return nil // the SDK's retry of the same request goes on to the table
	}
	return &ddbtypes.InternalServerError{Message: aws.String("Internal server error (injected: the write committed, its response was lost and the retries ran out).")}
}

// transactionConflict is DynamoDB's answer to a transaction that another transaction's write
// overlapped: cancelled before it wrote, one item's reason TransactionConflict (the one draw
// picks) and the others' None.
func transactionConflict(params any, draw float64) error {
	n := 1
	if in, ok := params.(*dynamodb.TransactWriteItemsInput); ok && len(in.TransactItems) > 0 {
		n = len(in.TransactItems)
	}
	hit := min(int(draw*float64(n)), n-1)
	reasons := make([]ddbtypes.CancellationReason, n)
	codes := make([]string, n)
	for i := range reasons {
		codes[i] = "None"
		if i == hit {
			codes[i] = "TransactionConflict"
			reasons[i].Message = aws.String("Transaction is ongoing for the item")
		}
		reasons[i].Code = aws.String(codes[i])
	}
	return &ddbtypes.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "] (injected)"),
		CancellationReasons: reasons,
	}
}

func isDynamoDBWrite(op string) bool {
	switch op {
	case "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem":
		return true
	}
	return false
}

// commitAsIs sends a function's write with the stack's own client: the first attempt of a
// request whose response is then lost.
func commitAsIs(st *Stack, op string, params any) error {
	ctx, cancel := context.WithTimeout(st.ctx, 10*time.Second)
	defer cancel()
	var err error
	switch in := params.(type) {
	case *dynamodb.TransactWriteItemsInput:
		_, err = st.DynamoDB.TransactWriteItems(ctx, in)
	case *dynamodb.PutItemInput:
		_, err = st.DynamoDB.PutItem(ctx, in)
	case *dynamodb.UpdateItemInput:
		_, err = st.DynamoDB.UpdateItem(ctx, in)
	case *dynamodb.DeleteItemInput:
		_, err = st.DynamoDB.DeleteItem(ctx, in)
	default:
		err = fmt.Errorf("stack: %s input %T is not a write", op, params)
	}
	return err
}

// chaosTick is how often, in wall time, the chaos loop arms Lambda and provider faults.
const chaosTick = 250 * time.Millisecond

// runChaos arms the Lambda and provider fault classes while a sale runs, until stop is
// closed. Each tick it counts the saga invocations since the last one and arms, for each, a
// fault with the class's rate: so a rate is per invocation, as the DynamoDB ones are per
// call, and a fault hits an invocation within a tick of the one it was drawn for. A fault
// counts as injected when it hits (lambdahost.Failure.OnInjected, stripesim.Fault.OnInjected);
// an outage of the provider counts once per window.
func (st *Stack) runChaos(in *load.Injector, stop <-chan struct{}) {
	last := map[string]int64{}
	for _, fn := range SagaFunctions {
		last[fn] = st.Lambdas.Stats(fn).Invocations
	}
	lambdaFaults := []struct {
		class  load.FaultClass
		after  bool
		failed func() lambdahost.Failure
	}{
		{load.LambdaFailBefore, false, lambdahost.ServiceException},
		{load.LambdaFailAfter, true, lambdahost.Crash},
		{load.LambdaTimeout, true, func() lambdahost.Failure { return lambdahost.Timeout(st.lambdaTimeout()) }},
		// A cold start whose init phase runs out of time: Lambda answers Sandbox.Timedout and
		// the handler never ran.
		{load.LambdaColdStart, false, func() lambdahost.Failure {
			f := lambdahost.Timeout(10 * time.Second)
			f.Message = "INIT_REPORT Init Duration: 10000.00 ms Phase: init Status: timeout (injected)"
			return f
		}},
	}
	providerEndpoints := []stripesim.Endpoint{stripesim.EndpointConfirmIntent, stripesim.EndpointCaptureIntent,
		stripesim.EndpointCancelIntent, stripesim.EndpointRetrieveIntent, stripesim.EndpointCreateRefund}
	var downUntil, webhookWindowEnds time.Time
	webhookFaults := []struct {
		class  load.FaultClass
		mutate func(c *stripesim.WebhookConfig)
	}{
		{load.WebhookDuplicated, func(c *stripesim.WebhookConfig) { c.DuplicateRate = 1 }},
		{load.WebhookReordered, func(c *stripesim.WebhookConfig) { c.Reorder = true }},
		{load.WebhookDelayed, func(c *stripesim.WebhookConfig) {
			c.Delay += time.Duration((1 + 2*in.Draw()) * float64(time.Minute))
		}},
		// Port 1 on loopback refuses the connection; one attempt, so the event is lost.
		{load.WebhookNotDelivered, func(c *stripesim.WebhookConfig) { c.URL, c.MaxAttempts = "http://127.0.0.1:1/webhooks/stripe", 1 }},
		{load.WebhookRotatedSecret, func(c *stripesim.WebhookConfig) { c.Secret = "whsec_rotated_by_chaos" }},
	}
	defer func() {
		if !webhookWindowEnds.IsZero() {
			st.Payments.SetWebhook(st.webhookConfig())
		}
	}()
	skewed := map[string]time.Time{}
	defer func() {
		for fn := range skewed {
			st.skews[fn].Store(0)
		}
	}()
	ticker := time.NewTicker(chaosTick)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-st.ctx.Done():
			return
		case <-ticker.C:
		}
		var providerCalls int64
		for _, fn := range SagaFunctions {
			now := st.Lambdas.Stats(fn).Invocations
			n := now - last[fn]
			last[fn] = now
			if fn != FnClaim && fn != FnConfirm {
				providerCalls += n // the steps that call the provider
			}
			for range n {
				for _, lf := range lambdaFaults {
					if !in.Armed(lf.class) {
						continue
					}
					f := lf.failed()
					class := lf.class
					f.OnInjected = func() { in.Count(class) }
					var err error
					if lf.after {
						err = st.Lambdas.FailAfter(fn, 1, f)
					} else {
						err = st.Lambdas.FailBefore(fn, 1, f)
					}
					if err != nil {
						st.log.Warn("stack: arm a Lambda fault", "function", fn, "error", err.Error())
					}
				}
			}
		}
		for range providerCalls {
			ep := providerEndpoints[int(in.Draw()*float64(len(providerEndpoints)))]
			if in.Armed(load.ProviderFailBefore) {
				st.Payments.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, OnInjected: func() { in.Count(load.ProviderFailBefore) }})
			}
			if in.Armed(load.ProviderRateLimited) {
				st.Payments.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultRateLimited, OnInjected: func() { in.Count(load.ProviderRateLimited) }})
			}
			if ep == stripesim.EndpointConfirmIntent || ep == stripesim.EndpointCaptureIntent {
				if in.Armed(load.ProviderLoseResponse) {
					st.Payments.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultLoseResponse, OnInjected: func() { in.Count(load.ProviderLoseResponse) }})
				}
			}
			if in.Armed(load.ProviderSlow) {
				// Slow, not lost: under the client's timeout, so the call succeeds late.
				latency := time.Duration((0.2 + 0.6*in.Draw()) * float64(st.paymentsTimeout()))
				st.Payments.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultLatency, Latency: latency, OnInjected: func() { in.Count(load.ProviderSlow) }})
			}
		}
		st.skewClocks(in, skewed)
		// A webhook window ends by restoring the endpoint's configuration; a new one opens
		// only when none is open, so the windows never overlap.
		if !webhookWindowEnds.IsZero() && time.Now().After(webhookWindowEnds) {
			st.Payments.SetWebhook(st.webhookConfig())
			webhookWindowEnds = time.Time{}
		}
		if providerCalls > 0 && webhookWindowEnds.IsZero() {
			for _, wf := range webhookFaults {
				if !in.Strike(wf.class) {
					continue
				}
				cfg := st.webhookConfig()
				wf.mutate(&cfg)
				st.Payments.SetWebhook(cfg)
				webhookWindowEnds = time.Now().Add(2 * time.Second)
				st.log.Info("stack: chaos opens a webhook window", "class", string(wf.class))
				break
			}
		}
		// The provider goes down for a window of one to three minutes of stack time, drawn
		// once per tick in which the saga called it, and never twice at once.
		if providerCalls > 0 && time.Now().After(downUntil) && in.Strike(load.ProviderDown) {
			window := time.Duration((1 + 2*in.Draw()) * float64(time.Minute) / st.clockScale())
			downUntil = time.Now().Add(window)
			for _, ep := range providerEndpoints {
				st.Payments.FailUntil(ep, downUntil, nil)
			}
			st.log.Info("stack: chaos takes the provider down", "window", window.String())
		}
	}
}

// lambdaTimeout is every function's timeout (Config.LambdaTimeout or its default).
func (st *Stack) lambdaTimeout() time.Duration {
	if st.cfg.LambdaTimeout > 0 {
		return st.cfg.LambdaTimeout
	}
	return 30 * time.Second
}

// paymentsTimeout is the Stripe client's HTTP timeout (Config.PaymentsTimeout or its default).
func (st *Stack) paymentsTimeout() time.Duration {
	if st.cfg.PaymentsTimeout > 0 {
		return st.cfg.PaymentsTimeout
	}
	return stripeadapter.DefaultHTTPTimeout
}

// clockScale is how much faster the stack's clock runs than the wall clock, measured over one
// second of each: 1 for the wall clock.
func (st *Stack) clockScale() float64 {
	if s, ok := st.Clock.(*clock.Scaled); ok && s.Factor() > 0 {
		return s.Factor()
	}
	return 1
}

// refundLedger is the simulator's books with the refunds it has not settled, which
// refund-settled judges.
type refundLedger struct{ sim *stripesim.Sim }

func (l refundLedger) Payments(ctx context.Context) ([]invariants.Payment, error) {
	books := l.sim.Ledger()
	out := make([]invariants.Payment, 0, len(books.Entries))
	for _, e := range books.Entries {
		out = append(out, invariants.Payment{
			ReservationID: e.ReservationID, PaymentIntentID: e.PaymentIntentID, Status: e.Status,
			Amount: e.Amount, Currency: e.Currency, Captured: e.Captured, Refunded: e.Refunded,
			RefundsPending: e.RefundsPending, RefundsFailed: e.RefundsFailed,
		})
	}
	return out, nil
}

// awaitConsumer waits, up to timeout of wall time, until the consumer's queue holds nothing.
func (st *Stack) awaitConsumer(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for st.ConsumerPending() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("stack: %d consumer events still queued after %s", st.ConsumerPending(), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// skewWindow is how long, in wall time, one function's clock stays skewed.
const skewWindow = 2 * time.Second

// skewClocks ends the clock skews whose window is over and draws, for each function whose
// clock is true, a skew of one to five seconds of stack time ahead or behind.
func (st *Stack) skewClocks(in *load.Injector, skewed map[string]time.Time) {
	if !in.On(load.ClockSkew) {
		return
	}
	now := time.Now()
	for _, fn := range slices.Sorted(maps.Keys(st.skews)) {
		if ends, ok := skewed[fn]; ok {
			if now.After(ends) {
				st.skews[fn].Store(0)
				delete(skewed, fn)
			}
			continue
		}
		if !in.Strike(load.ClockSkew) {
			continue
		}
		d := time.Duration((1 + 4*in.Draw()) * float64(time.Second))
		if in.Draw() < 0.5 {
			d = -d
		}
		st.skews[fn].Store(int64(d))
		skewed[fn] = now.Add(skewWindow)
		st.log.Info("stack: chaos skews a function's clock", "function", fn, "skew", d.String())
	}
}
