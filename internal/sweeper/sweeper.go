// Package sweeper is the scheduled safety net behind the saga. It finds holds whose deadline
// passed more than a grace period ago while their execution is gone, ended or stuck, and
// unresolved payments (internal/inventory's reconciliation index: payments unknown, and
// authorized or capture-pending payments whose seats are already confirmed or given back) that
// have been so for more than the grace period, and settles them with the same guarded,
// version-fenced writes the saga uses: a hold without a payment is expired directly, anything
// with a PaymentIntent goes through the saga's own reconcile logic (provider truth first, never
// a release on a guess; confirmed seats with an authorized payment are captured with the saga's
// idempotency key {reservationId}:capture). Racing a live saga is harmless: whoever writes first
// wins, the other's conditional write changes nothing, and the provider dedupes the capture.
//
// Every run publishes the backlog an operator alarms on (metrics.Recorder) and returns it,
// with the age of the oldest execution of the state machine still running, which catches a
// saga stuck in a loop before any hold or payment of it shows up in the backlog.
package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// Metric names the sweeper publishes each run. All but MetricSweepActions are gauges (levels,
// not increments: one data point per run, never summed): the counts of things in Unit Count,
// the ...AgeSeconds in Unit Seconds.
const (
	MetricExpiredHoldsUnreleased            = "ExpiredHoldsUnreleased"
	MetricExpiredHoldOldestAgeSeconds       = "ExpiredHoldOldestAgeSeconds"
	MetricUnresolvedPayments                = "UnresolvedPayments"
	MetricUnresolvedPaymentOldestAgeSeconds = "UnresolvedPaymentOldestAgeSeconds"
	MetricReconciliationBacklog             = "ReconciliationBacklog"
	MetricAuthorizationsNearCaptureDeadline = "AuthorizationsNearCaptureDeadline"
	// MetricOldestRunningExecutionAgeSeconds is how long ago the oldest RUNNING execution of
	// the reservation state machine started, 0 when none runs. A run that could not list the
	// executions leaves it out rather than publish a 0 that would clear the alarm.
	MetricOldestRunningExecutionAgeSeconds = "OldestRunningExecutionAgeSeconds"
	// MetricSweepActions counts what the sweeper did, dimension "action".
	MetricSweepActions = "SweepActions"
)

// Backlog lists the reservations the sweeper looks at (internal/inventory's sparse indexes).
type Backlog interface {
	// ExpiredHolds lists HELD or PAYMENT_PENDING reservations whose deadline is before before.
	ExpiredHolds(ctx context.Context, before time.Time, limit int) ([]reservation.Reservation, error)
	// NeedingReconciliation lists reservations whose payment is unresolved outside a live hold
	// (unknown; authorized or capture pending with the seats confirmed or given back; captured
	// for seats not confirmed) since before, oldest first; ReconcileSince says since when.
	NeedingReconciliation(ctx context.Context, before time.Time, limit int) ([]reservation.Reservation, error)
}

// Expirer gives back the seats of a lapsed hold that has no payment, fenced by state, owner
// and version (internal/inventory's Store.Expire).
type Expirer interface {
	Expire(ctx context.Context, id string, from reservation.InventoryState, g reservation.Guard) (reservation.Reservation, error)
}

// Reconciler settles a reservation from the provider's truth: the saga's reconcile step run
// outside the state machine (*saga.Steps satisfies it). It returns a saga.Outcome* value;
// saga.OutcomeRetry and saga.OutcomeUnresolved mean the payment is still unknown.
type Reconciler interface {
	Resolve(ctx context.Context, in saga.Input) (string, error)
}

// Executions is the part of the Step Functions API the sweeper uses; *sfn.Client satisfies it.
type Executions interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, optFns ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// RunningExecutions lists the RUNNING executions of a state machine one page at a time
// (internal/sweeper/sfnadapter does it with Step Functions' ListExecutions). The port speaks in
// start times and page tokens only, so the paging policy stays here and is tested here.
type RunningExecutions interface {
	// RunningExecutions returns the page of stateMachineARN's RUNNING executions that
	// pageToken names ("" for the first).
	RunningExecutions(ctx context.Context, stateMachineARN, pageToken string) (RunningPage, error)
}

// RunningPage is one page of RUNNING executions.
type RunningPage struct {
	// Started holds when each execution on the page started.
	Started []time.Time
	// Next is the token of the following page; "" on the last.
	Next string
}

// Defaults for the optional settings.
const (
	DefaultBatch          = 200
	DefaultConcurrency    = 8
	DefaultStuckAfter     = time.Hour
	DefaultCaptureWarning = 24 * time.Hour
	// DefaultRunningPages bounds the pages of RUNNING executions one run reads. Step Functions
	// lists them newest first, so the oldest is on the last page and a run has to page to the
	// end; the bound keeps one run within its timeout and within ListExecutions' request
	// rate when a flood of executions runs (at the adapter's 1000 a page, 20 pages is 20,000
	// running executions, far beyond a sale's). A run that reaches it logs a warning and
	// publishes the oldest it saw, which then understates the true age.
	DefaultRunningPages = 20
)

// Deps is what the sweeper needs. Backlog, Expirer, Reconciler, SFN and Running are required.
type Deps struct {
	Backlog    Backlog
	Expirer    Expirer
	Reconciler Reconciler
	SFN        Executions
	// Running lists the state machine's RUNNING executions, for the age of the oldest.
	Running RunningExecutions
	// StateMachineARN names executions of reservations that have not stored their ARN
	// (executions are named by reservation id).
	StateMachineARN string
	// Grace is how long past its deadline a hold, and how long after it became unresolved a
	// payment, is left to the saga before the sweeper looks at it (config SweepGrace).
	Grace time.Duration
	// StuckAfter: an execution still RUNNING this long past the hold's deadline (or since the
	// payment became unresolved) is treated as stuck and the sweeper acts anyway (its writes
	// are fenced, so the race is harmless).
	StuckAfter time.Duration
	// CaptureWarning: an authorization that lapses within this is near its capture deadline.
	CaptureWarning time.Duration
	// Batch bounds how many reservations of each kind one run looks at; Concurrency how many
	// it settles at a time (default DefaultConcurrency).
	Batch       int
	Concurrency int
	// RunningPages bounds the pages of RUNNING executions a run reads (default
	// DefaultRunningPages).
	RunningPages int
	Now          func() time.Time
	Logger       *slog.Logger
	Metrics      metrics.Recorder
}

// Sweeper runs sweeps.
type Sweeper struct {
	d Deps
}

// New checks deps and returns a Sweeper.
func New(d Deps) (*Sweeper, error) {
	switch {
	case d.Backlog == nil:
		return nil, errors.New("sweeper: Backlog is required")
	case d.Expirer == nil:
		return nil, errors.New("sweeper: Expirer is required")
	case d.Reconciler == nil:
		return nil, errors.New("sweeper: Reconciler is required")
	case d.SFN == nil:
		return nil, errors.New("sweeper: SFN is required")
	case d.Running == nil:
		return nil, errors.New("sweeper: Running is required")
	}
	if d.Grace < 0 {
		d.Grace = 0
	}
	if d.StuckAfter <= 0 {
		d.StuckAfter = DefaultStuckAfter
	}
	if d.CaptureWarning <= 0 {
		d.CaptureWarning = DefaultCaptureWarning
	}
	if d.Batch <= 0 {
		d.Batch = DefaultBatch
	}
	if d.Concurrency <= 0 {
		d.Concurrency = DefaultConcurrency
	}
	if d.RunningPages <= 0 {
		d.RunningPages = DefaultRunningPages
	}
	d.Now, d.Logger, d.Metrics = obs.Defaults(d.Now, d.Logger, d.Metrics)
	return &Sweeper{d: d}, nil
}

// Result is what one sweep did and the backlog it left, as published.
type Result struct {
	// What the run did.
	HoldsExamined    int `json:"holdsExamined"`
	PaymentsExamined int `json:"paymentsExamined"`
	Released         int `json:"released"`
	Reconciled       int `json:"reconciled"`
	// Captured counts reconciled payments that ended PAID for CONFIRMED seats after the run
	// found them authorized or capture pending (captured now, or found captured).
	Captured int `json:"captured"`
	// LeftToSaga counts reservations whose execution is still running and not stuck.
	LeftToSaga int `json:"leftToSaga"`
	// LostRaces counts fenced writes that found the reservation already moved (harmless).
	LostRaces int `json:"lostRaces"`
	Errors    int `json:"errors"`

	// The backlog after the run.
	ExpiredHoldsUnreleased            int   `json:"expiredHoldsUnreleased"`
	ExpiredHoldOldestAgeSeconds       int64 `json:"expiredHoldOldestAgeSeconds"`
	UnresolvedPayments                int   `json:"unresolvedPayments"`
	UnresolvedPaymentOldestAgeSeconds int64 `json:"unresolvedPaymentOldestAgeSeconds"`
	// ReconciliationBacklog is everything the sweeper still has to settle: unreleased expired
	// holds plus unresolved payments, but not those whose running execution is still settling
	// them within its bounded retries, which are part of every sale.
	ReconciliationBacklog             int `json:"reconciliationBacklog"`
	AuthorizationsNearCaptureDeadline int `json:"authorizationsNearCaptureDeadline"`
	// OldestRunningExecutionAgeSeconds is the age of the oldest RUNNING execution of the
	// state machine, 0 when none runs. RunningExecutionsUnknown says the executions could not
	// be listed: the age is then 0 here but was not published.
	OldestRunningExecutionAgeSeconds int64 `json:"oldestRunningExecutionAgeSeconds"`
	RunningExecutionsUnknown         bool  `json:"runningExecutionsUnknown,omitempty"`
}

// Handle is the Lambda entry point for the schedule's event (its content is not used).
func (s *Sweeper) Handle(ctx context.Context, _ json.RawMessage) (Result, error) {
	return s.Run(ctx)
}

// Run performs one sweep. It fails only when it cannot list the backlog; a reservation it
// cannot settle is logged, counted in Errors and left for the next run. Reservations are
// settled Concurrency at a time; each one's writes are fenced, so their order does not matter.
func (s *Sweeper) Run(ctx context.Context) (Result, error) {
	var res Result
	now := s.d.Now().UTC()
	holds, err := s.d.Backlog.ExpiredHolds(ctx, now.Add(-s.d.Grace), s.d.Batch)
	if err != nil {
		return res, fmt.Errorf("sweeper: list expired holds: %w", err)
	}
	unresolved, err := s.d.Backlog.NeedingReconciliation(ctx, now.Add(-s.d.Grace), s.d.Batch)
	if err != nil {
		return res, fmt.Errorf("sweeper: list payments needing reconciliation: %w", err)
	}
	res.HoldsExamined, res.PaymentsExamined = len(holds), len(unresolved)

	// An expired hold whose payment is also unknown is on both lists: sweep it once, as a hold.
	jobs := make([]job, 0, len(holds)+len(unresolved))
	seen := make(map[string]bool, len(holds))
	for _, r := range holds {
		seen[r.ID] = true
		jobs = append(jobs, job{r: r})
	}
	for _, r := range unresolved {
		if !seen[r.ID] {
			jobs = append(jobs, job{r: r, payment: true})
		}
	}
	outcomes := make([]outcome, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.d.Concurrency)
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outcomes[i] = s.sweep(ctx, j, now)
		}()
	}
	wg.Wait()

	var oldestHold, oldestPayment time.Time
	// inSaga counts the unresolved payments and unreleased holds whose execution is still
	// running and not stuck: the saga's own bounded retries are still on them (a late
	// authorization, a release after the hold's timeout).
	inSaga := 0
	for i, j := range jobs {
		r, o := j.r, outcomes[i]
		res.Released += b2i(o.released)
		res.Reconciled += b2i(o.reconciled)
		res.Captured += b2i(o.captured)
		res.LeftToSaga += b2i(o.leftToSaga)
		res.LostRaces += b2i(o.lostRace)
		res.Errors += b2i(o.failed)
		switch {
		case o.settled:
			continue
		case o.stillUnknown:
			res.UnresolvedPayments++
			inSaga += b2i(o.leftToSaga)
			oldestPayment = earliest(oldestPayment, since(r))
		default:
			res.ExpiredHoldsUnreleased++
			inSaga += b2i(o.leftToSaga)
			oldestHold = earliest(oldestHold, r.HoldExpiresAt)
		}
		if nearCaptureDeadline(r, now, s.d.CaptureWarning) {
			res.AuthorizationsNearCaptureDeadline++
		}
	}
	res.ExpiredHoldOldestAgeSeconds = ageSeconds(now, oldestHold)
	res.UnresolvedPaymentOldestAgeSeconds = ageSeconds(now, oldestPayment)
	res.ReconciliationBacklog = res.ExpiredHoldsUnreleased + res.UnresolvedPayments - inSaga
	if age, ok := s.oldestRunning(ctx, now); ok {
		res.OldestRunningExecutionAgeSeconds = age
	} else {
		res.RunningExecutionsUnknown = true
	}
	s.publish(res)
	s.d.Logger.InfoContext(ctx, "sweeper: run finished",
		"holdsExamined", res.HoldsExamined, "paymentsExamined", res.PaymentsExamined,
		"released", res.Released, "reconciled", res.Reconciled, "captured", res.Captured, "leftToSaga", res.LeftToSaga,
		"lostRaces", res.LostRaces, "errors", res.Errors,
		"expiredHoldsUnreleased", res.ExpiredHoldsUnreleased, "unresolvedPayments", res.UnresolvedPayments,
		"reconciliationBacklog", res.ReconciliationBacklog,
		"oldestRunningExecutionAgeSeconds", res.OldestRunningExecutionAgeSeconds, "runningExecutionsUnknown", res.RunningExecutionsUnknown)
	return res, nil
}

// oldestRunning pages through the state machine's RUNNING executions, up to RunningPages, and
// returns the age in seconds of the oldest one it saw (0 when none runs). It reports false
// when they could not be listed: a failed page leaves nothing worth publishing, since the
// pages read before it hold the newest executions and would understate the age. The sweep's
// other work does not depend on it.
func (s *Sweeper) oldestRunning(ctx context.Context, now time.Time) (int64, bool) {
	if s.d.StateMachineARN == "" {
		s.d.Logger.ErrorContext(ctx, "sweeper: no state machine ARN to list running executions of")
		return 0, false
	}
	var oldest time.Time
	seen, token := 0, ""
	for page := 0; ; page++ {
		if page == s.d.RunningPages {
			s.d.Logger.WarnContext(ctx, "sweeper: stopped listing running executions at the page bound; older ones may run",
				"pages", page, "executionsSeen", seen, "oldestSeen", oldest)
			break
		}
		p, err := s.d.Running.RunningExecutions(ctx, s.d.StateMachineARN, token)
		if err != nil {
			s.d.Logger.ErrorContext(ctx, "sweeper: list running executions", "error", err.Error(), "pagesRead", page)
			return 0, false
		}
		for _, started := range p.Started {
			seen++
			oldest = earliest(oldest, started)
		}
		if p.Next == "" {
			break
		}
		token = p.Next
	}
	return ageSeconds(now, oldest), true
}

// job is one reservation to sweep; payment marks one found on the reconciliation index only
// (not through an expired hold).
type job struct {
	r       reservation.Reservation
	payment bool
}

// outcome is what sweeping one reservation did. settled: it left the backlog; stillUnknown:
// its payment is still unresolved after this run.
type outcome struct {
	settled, stillUnknown                                        bool
	released, reconciled, captured, leftToSaga, lostRace, failed bool
}

// sweep settles one reservation if its saga no longer does.
func (s *Sweeper) sweep(ctx context.Context, j job, now time.Time) outcome {
	r := j.r
	log := s.d.Logger.With("reservationId", r.ID, "correlationId", r.CorrelationID,
		"inventory", string(r.Inventory), "payment", string(r.Payment))
	unresolved := j.payment || r.Payment == reservation.UnknownNeedsReconciliation
	running, err := s.running(ctx, r)
	if err != nil {
		log.ErrorContext(ctx, "sweeper: describe execution", "error", err.Error())
		return outcome{failed: true, stillUnknown: unresolved}
	}
	reference := r.HoldExpiresAt
	if unresolved && !r.ReconcileSince.IsZero() {
		reference = r.ReconcileSince
	}
	if running && now.Sub(reference) < s.d.StuckAfter {
		// The saga still owns it (e.g. its reconcile loop is waiting between attempts).
		return outcome{leftToSaga: true, stillUnknown: unresolved}
	}

	if r.PaymentIntentID == "" && r.HoldActive() && !unresolved {
		// No payment was ever started: nothing can be charged, the seats can simply go back.
		_, err := s.d.Expirer.Expire(ctx, r.ID, r.Inventory, reservation.GuardOf(r))
		switch {
		case err == nil:
			s.count("expired")
			log.InfoContext(ctx, "sweeper: released an orphaned hold", "holdExpiresAt", r.HoldExpiresAt)
			return outcome{settled: true, released: true}
		case lostRace(err):
			// Someone (the saga, a late confirm) moved it first; that write stands.
			s.count("lost_race")
			log.InfoContext(ctx, "sweeper: the reservation moved first", "error", err.Error())
			return outcome{settled: true, lostRace: true}
		}
		var guard *reservation.GuardFailed
		if !errors.As(err, &guard) {
			log.ErrorContext(ctx, "sweeper: expire", "error", err.Error())
			return outcome{failed: true}
		}
		// The payment moved meanwhile: reconcile below.
	}

	result, err := s.d.Reconciler.Resolve(ctx, inputOf(r))
	if err != nil {
		if lostRace(err) {
			s.count("lost_race")
			return outcome{lostRace: true, stillUnknown: unresolved}
		}
		log.ErrorContext(ctx, "sweeper: reconcile", "error", err.Error())
		return outcome{failed: true, stillUnknown: unresolved}
	}
	s.count("reconcile_" + result)
	captured := result == saga.OutcomePaid && r.Inventory == reservation.Confirmed &&
		(r.Payment == reservation.Authorized || r.Payment == reservation.CapturePending)
	if captured {
		s.count("captured")
	}
	log.InfoContext(ctx, "sweeper: reconciled", "outcome", result, "captured", captured)
	if result == saga.OutcomeRetry || result == saga.OutcomeUnresolved {
		return outcome{stillUnknown: true}
	}
	return outcome{settled: true, reconciled: true, captured: captured}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// running reports whether the reservation's execution is still RUNNING. An execution that
// does not exist (never started, or aged out of history) is not running.
func (s *Sweeper) running(ctx context.Context, r reservation.Reservation) (bool, error) {
	arn := r.ExecutionARN
	if arn == "" {
		if !strings.Contains(s.d.StateMachineARN, ":stateMachine:") {
			return false, nil
		}
		arn = strings.Replace(s.d.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + r.ID
	}
	out, err := s.d.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	var missing *sfntypes.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return out.Status == sfntypes.ExecutionStatusRunning, nil
}

// publish publishes the run's backlog figures as gauges: each is a level measured now, which
// a buffered recorder must not add to another run's.
func (s *Sweeper) publish(res Result) {
	m := s.d.Metrics
	m.Gauge(MetricExpiredHoldsUnreleased, float64(res.ExpiredHoldsUnreleased), metrics.UnitCount)
	m.Gauge(MetricExpiredHoldOldestAgeSeconds, float64(res.ExpiredHoldOldestAgeSeconds), metrics.UnitSeconds)
	m.Gauge(MetricUnresolvedPayments, float64(res.UnresolvedPayments), metrics.UnitCount)
	m.Gauge(MetricUnresolvedPaymentOldestAgeSeconds, float64(res.UnresolvedPaymentOldestAgeSeconds), metrics.UnitSeconds)
	m.Gauge(MetricReconciliationBacklog, float64(res.ReconciliationBacklog), metrics.UnitCount)
	m.Gauge(MetricAuthorizationsNearCaptureDeadline, float64(res.AuthorizationsNearCaptureDeadline), metrics.UnitCount)
	if !res.RunningExecutionsUnknown {
		// Left out when unknown: a missing data point breaches the alarm, a 0 would clear it.
		m.Gauge(MetricOldestRunningExecutionAgeSeconds, float64(res.OldestRunningExecutionAgeSeconds), metrics.UnitSeconds)
	}
}

func (s *Sweeper) count(action string) {
	s.d.Metrics.Count(MetricSweepActions, 1, metrics.Dim{Name: "action", Value: action})
}

// inputOf rebuilds the execution input the saga's steps expect from the stored reservation.
func inputOf(r reservation.Reservation) saga.Input {
	return saga.Input{
		ReservationID:  r.ID,
		EventID:        r.EventID,
		SeatIDs:        r.SeatIDs,
		CustomerID:     r.CustomerID,
		Amount:         r.Amount,
		Currency:       strings.ToLower(r.Currency),
		IdempotencyKey: r.IdempotencyKey,
		RequestHash:    r.RequestHash,
		CorrelationID:  r.CorrelationID,
	}
}

func lostRace(err error) bool {
	var (
		stale *reservation.StaleVersion
		state *reservation.UnexpectedState
		live  *reservation.HoldStillLive
		owner *reservation.NotOwner
		tc    *saga.TransactionConflict
	)
	return errors.As(err, &stale) || errors.As(err, &state) || errors.As(err, &live) || errors.As(err, &owner) || errors.As(err, &tc)
}

func nearCaptureDeadline(r reservation.Reservation, now time.Time, warn time.Duration) bool {
	if r.CaptureBefore.IsZero() {
		return false
	}
	switch r.Payment {
	case reservation.Authorized, reservation.CapturePending, reservation.UnknownNeedsReconciliation:
		return r.CaptureBefore.Sub(now) < warn
	}
	return false
}

func since(r reservation.Reservation) time.Time {
	if !r.ReconcileSince.IsZero() {
		return r.ReconcileSince
	}
	return r.HoldExpiresAt
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func ageSeconds(now, t time.Time) int64 {
	if t.IsZero() || t.After(now) {
		return 0
	}
	return int64(now.Sub(t) / time.Second)
}
