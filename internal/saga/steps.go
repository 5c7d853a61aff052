package saga

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Metric names the steps count, with dimensions step and outcome.
const (
	MetricStepOutcome         = "StepOutcome"
	MetricCompensationOutcome = "CompensationOutcome"
	// MetricProviderRefusals counts the provider's refusals of the system's own requests
	// (dimension category); a burst means a configuration problem, not declining buyers.
	MetricProviderRefusals = "ProviderRefusals"
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

// outcome counts and logs how a step ended. err, when set, is the step error it returns.
func (s *Steps) outcome(ctx context.Context, step string, in Input, outcome string, err error, attrs ...any) {
	var refused *ProviderRefused
	if errors.As(err, &refused) {
		s.metrics().Count(MetricProviderRefusals, 1, metrics.Dim{Name: "category", Value: refused.Category})
	}
	s.metrics().Count(MetricStepOutcome, 1, metrics.Dim{Name: "step", Value: step}, metrics.Dim{Name: "outcome", Value: outcome})
	args := append([]any{"step", step, "reservationId", in.ReservationID, "correlationId", in.CorrelationID, "outcome", outcome}, attrs...)
	if err != nil {
		args = append(args, "error", err.Error())
	}
	level := slog.LevelInfo
	if err != nil && (outcome == outcomeError || refused != nil) {
		level = slog.LevelError
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
