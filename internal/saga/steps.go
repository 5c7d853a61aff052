package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/statemachine"
)

// Metric names the steps count. StepOutcome and CompensationOutcome have the dimensions step
// and outcome, CompensationFailed and StepRetryableError step only; EMF publishes each with
// the empty dimension set too, which the alarms read.
const (
	MetricStepOutcome = "StepOutcome"
	// MetricCompensationOutcome counts what compensations did (voided, refund_requested,
	// seats_released, reacquired): volume, which says nothing about whether they work.
	MetricCompensationOutcome = "CompensationOutcome"
	// MetricCompensationFailed counts failed compensations only (dimension step): every
	// attempt of the compensate step, which voids, refunds and releases, that returns an
	// error other than its hand-off to reconciliation (a decision that does not unwind, such
	// as a late payment the policy keeps). An attempt the state machine then retries counts
	// too: its void, refund or release did not happen. An escalation ends in that hand-off as
	// well, so it is not seen here; MetricSettlementEscalated counts it where it is decided.
	MetricCompensationFailed = "CompensationFailed"
	// MetricStepRetryableError counts step attempts that end in an error the state machine
	// retries for that step (dimension step), as statemachine/reservation.asl.json's Retry
	// blocks say. The attempt that exhausts a retrier counts too, since a step cannot see
	// its attempt number; a rate far above the rate of executions means retries are doing
	// the work.
	MetricStepRetryableError = "StepRetryableError"
	// MetricProviderRefusals counts the provider's refusals of the system's own requests
	// (dimension category); a burst means a configuration problem, not declining buyers.
	MetricProviderRefusals = "ProviderRefusals"
	// MetricUnknownPaymentMethods counts declines of payment methods the provider does not
	// know. One is a buyer's mistake (a warning); a rate of them means every buyer's method is
	// unknown, as with a publishable key of another account.
	MetricUnknownPaymentMethods = "UnknownPaymentMethods"
)

// stepCompensate is the step that compensates, and outcomeHandedToReconcile its outcome when
// the settlement decision goes on in reconciliation rather than unwinding.
const (
	stepCompensate           = "compensate"
	outcomeHandedToReconcile = "handed_to_reconcile"
)

// Defaults for Steps' optional settings.
const (
	DefaultReconcileAttempts = 5
	DefaultReconcileBackoff  = 30 * time.Second
	MaxReconcileBackoff      = 10 * time.Minute
)

// maxRounds bounds a step's read-decide-write loop: each round moves the reservation one
// transition forward, and a step needs at most three (or loses a race to a concurrent writer
// and reads again).
const maxRounds = 8

// Deps is what Steps runs on. Store and Payments are required; the rest have defaults.
type Deps struct {
	Store    Store
	Payments Payments
	// Now is the clock; every deadline check uses it.
	Now     func() time.Time
	Log     *slog.Logger
	Metrics metrics.Recorder
	// Policy says what a late authorization does: reacquire the seats or void.
	Policy reservation.LateSuccessPolicy
	// Hold is the hold duration of a new claim; Limits bound a claim request.
	Hold   time.Duration
	Limits reservation.Limits
	// ReconcileAttempts bounds the reconcile loop of one execution; ReconcileBackoff is the
	// first wait between attempts, doubled each time.
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
}

// Steps runs the saga's steps. Build it once per cold start with New and share it between
// invocations. It is defined over Deps so the field list exists once and tests can still
// write a literal.
type Steps Deps

// New validates d and returns the steps over it.
func New(d Deps) (*Steps, error) {
	var missing []string
	if d.Store == nil {
		missing = append(missing, "Store")
	}
	if d.Payments == nil {
		missing = append(missing, "Payments")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("saga: %s required", strings.Join(missing, " and "))
	}
	if d.Hold < 0 || d.ReconcileAttempts < 0 || d.ReconcileBackoff < 0 {
		return nil, errors.New("saga: Hold, ReconcileAttempts and ReconcileBackoff must not be negative")
	}
	// Parsed rather than compared so a hand-built value in another case still means what it says.
	policy, err := reservation.ParseLateSuccessPolicy(string(d.Policy))
	if err != nil {
		return nil, fmt.Errorf("saga: %w", err)
	}
	d.Policy = policy
	s := Steps(d)
	return &s, nil
}

func (s *Steps) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Steps) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Steps) metrics() metrics.Recorder {
	if s.Metrics == nil {
		return metrics.Discard{}
	}
	return s.Metrics
}

func (s *Steps) policy() reservation.LateSuccessPolicy {
	if s.Policy == "" {
		return reservation.LateSuccessReacquire
	}
	return s.Policy
}

// outcome counts and logs how a step ended. err, when set, is the step error it returns. Every
// step ends here, so this is where an attempt that failed is counted as a retryable error
// when the state machine retries it. A failed compensation is counted by reconciliation, the
// state the machine hands it to once its retries are spent (a step cannot tell its last
// attempt), and by the settlement decision when it escalates.
func (s *Steps) outcome(ctx context.Context, step string, in Input, outcome string, err error, attrs ...any) {
	var refused *ProviderRefused
	if errors.As(err, &refused) {
		s.metrics().Count(MetricProviderRefusals, 1, metrics.Dim{Name: "category", Value: refused.Category})
	}
	s.metrics().Count(MetricStepOutcome, 1, metrics.Dim{Name: "step", Value: step}, metrics.Dim{Name: "outcome", Value: outcome})
	if err != nil && retriedAfter(step, err) {
		s.metrics().Count(MetricStepRetryableError, 1, metrics.Dim{Name: "step", Value: step})
	}
	args := append([]any{"step", step, "reservationId", in.ReservationID, "correlationId", in.CorrelationID, "outcome", outcome}, attrs...)
	if err != nil {
		args = append(args, "error", err.Error())
	}
	level := slog.LevelInfo
	if err != nil && (outcome == outcomeError || refused != nil) {
		level = slog.LevelError
	}
	var declined *PaymentDeclined
	if errors.As(err, &declined) && declined.Code == payment.CodeUnknownPaymentMethod {
		s.metrics().Count(MetricUnknownPaymentMethods, 1)
		level = slog.LevelWarn
	}
	s.log().Log(ctx, level, "saga step finished", args...)
}

// fail counts and logs a step that returns err, under the outcome stepErrors gives it.
func (s *Steps) fail(ctx context.Context, step string, in Input, err error, attrs ...any) {
	s.outcome(ctx, step, in, outcomeOf(err), err, attrs...)
}

func (s *Steps) compensation(step, outcome string) {
	s.metrics().Count(MetricCompensationOutcome, 1, metrics.Dim{Name: "step", Value: step}, metrics.Dim{Name: "outcome", Value: outcome})
}

// compensationFailed counts a compensation that did not give back what it should have.
func (s *Steps) compensationFailed(step string) {
	s.metrics().Count(MetricCompensationFailed, 1, metrics.Dim{Name: "step", Value: step})
}

// reportedName is the name Step Functions matches a step's error by: the Lambda Go runtime
// reports the routed error (Routable) under its Go type name, the element's for a pointer.
func reportedName(err error) string {
	t := reflect.TypeOf(Routable(err))
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// retriedAfter reports whether the state machine retries step after it returns err.
func retriedAfter(step string, err error) bool {
	return retriedIn(stepRetries[step], reportedName(err))
}

// retriedIn reports whether every state that invokes a step (its Retry in states) retries the
// error named name: a step does not know which state invoked it, so it counts a retry only
// when any of them would make one.
func retriedIn(states [][]retrier, name string) bool {
	if len(states) == 0 {
		return false
	}
	for _, retriers := range states {
		if !retries(retriers, name) {
			return false
		}
	}
	return true
}

// retrier is one entry of a Task state's Retry.
type retrier struct {
	ErrorEquals []string
	MaxAttempts *int
}

// retries applies a state's Retry as Step Functions does: the first retrier whose ErrorEquals
// matches the error decides, and retries unless its MaxAttempts is 0 (the default is 3).
// States.ALL matches every error, States.TaskFailed every error but a timeout, which a step's
// own error never is.
func retries(retriers []retrier, name string) bool {
	for _, r := range retriers {
		if slices.Contains(r.ErrorEquals, name) || slices.Contains(r.ErrorEquals, "States.ALL") ||
			slices.Contains(r.ErrorEquals, "States.TaskFailed") {
			return r.MaxAttempts == nil || *r.MaxAttempts > 0
		}
	}
	return false
}

// stepRetries is the state machine's Retry of every Task state, by the step function the state
// invokes: the definition is the one place that says which errors are retried, so the steps
// read it rather than keep a list of their own.
var stepRetries = retriesOf(statemachine.Definition())

// retriesOf reads each Task state's Retry from def, keyed by the step whose function the state
// invokes: its Resource, or for a service integration its Parameters.FunctionName, is that
// step's placeholder. A definition that does not parse panics: the embedded one is parsed by
// statemachine's tests, so only a broken build could get here.
func retriesOf(def []byte) map[string][][]retrier {
	var parsed struct {
		States map[string]struct {
			Type       string
			Resource   string
			Parameters map[string]json.RawMessage
			Retry      []retrier
		}
	}
	if err := json.Unmarshal(def, &parsed); err != nil {
		panic(fmt.Sprintf("saga: %s: %v", statemachine.File, err))
	}
	out := map[string][][]retrier{}
	for _, st := range parsed.States {
		if st.Type != "Task" {
			continue
		}
		target := st.Resource
		if _, integration := statemachine.IntegrationFor(placeholderName(target)); integration {
			target = ""
			_ = json.Unmarshal(st.Parameters["FunctionName"], &target)
		}
		step, ok := statemachine.StepFor(placeholderName(target))
		if !ok {
			continue
		}
		out[step.Name] = append(out[step.Name], st.Retry)
	}
	return out
}

// placeholderName is the name inside a whole-value placeholder ${Name}, or "".
func placeholderName(v string) string {
	if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
		return v[2 : len(v)-1]
	}
	return ""
}

// isTransactionConflict recognises a cancelled transaction without importing the adapter: any
// error in the chain that calls itself a transaction conflict.
func isTransactionConflict(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if tc, ok := e.(interface{ TransactionConflict() bool }); ok && tc.TransactionConflict() {
			return true
		}
	}
	return false
}

// secondsLeft is the whole seconds from now to deadline, rounded up.
func secondsLeft(now, deadline time.Time) int64 {
	return int64(math.Ceil(deadline.Sub(now).Seconds()))
}

// Claim validates the request and holds the seats: reservation, seats and outbox record in
// one transaction. A replay (redelivery, or a crash after the write) returns the same hold.
func (s *Steps) Claim(ctx context.Context, st State) (Hold, error) {
	in := st.Input
	req := reservation.ClaimRequest{
		ReservationID:  in.ReservationID,
		CustomerID:     in.CustomerID,
		EventID:        in.EventID,
		SeatIDs:        in.SeatIDs,
		Amount:         in.Amount,
		Currency:       in.Currency,
		HoldDuration:   s.Hold,
		IdempotencyKey: in.IdempotencyKey,
		CorrelationID:  in.CorrelationID,
		SlotKey:        in.SlotKey,
	}
	err := req.Validate(s.Limits)
	var r reservation.Reservation
	if err == nil {
		r, err = s.Store.Claim(ctx, req)
	}
	if err != nil {
		routed := storeError(in.ReservationID, err)
		s.fail(ctx, "claim", in, routed)
		return Hold{}, routed
	}
	now := s.now()
	if r.Inventory == reservation.Held && !r.HoldLive(now) {
		// A replay long after the claim: the hold is gone, so there is nothing to pay for.
		err := &reservation.HoldExpired{ReservationID: r.ID, ExpiredAt: r.HoldExpiresAt, Now: now, Reason: "before payment started"}
		s.fail(ctx, "claim", in, err)
		return Hold{}, err
	}
	left := max(secondsLeft(now, r.HoldExpiresAt), 1)
	s.outcome(ctx, "claim", in, "held", nil, "version", r.Version, "holdExpiresAt", r.HoldExpiresAt, "secondsLeft", left)
	return Hold{ReservationID: r.ID, Version: r.Version, HoldExpiresAt: r.HoldExpiresAt, SecondsLeft: left}, nil
}

// get reads the reservation and maps a store failure to a routed error.
func (s *Steps) get(ctx context.Context, id string) (reservation.Reservation, error) {
	r, err := s.Store.Get(ctx, id)
	if err != nil {
		return reservation.Reservation{}, storeError(id, fmt.Errorf("read reservation %s: %w", id, err))
	}
	return r, nil
}

// retryable reports whether a store error means "read again and decide anew".
func retryable(err error) bool {
	var tc *TransactionConflict
	return errors.As(err, &tc)
}
