package saga

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
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

// Steps runs the saga's steps. Build it once per cold start and share it between invocations.
type Steps struct {
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

// outcome counts and logs how a step ended. err, when set, is the routed error it returns.
func (s *Steps) outcome(ctx context.Context, step string, in Input, outcome string, err error, attrs ...any) {
	var refused *ProviderRefused
	if errors.As(err, &refused) {
		s.metrics().Count(MetricProviderRefusals, 1, metrics.Dim{Name: "category", Value: refused.Category})
		outcome = "provider_refused"
	}
	s.metrics().Count(MetricStepOutcome, 1, metrics.Dim{Name: "step", Value: step}, metrics.Dim{Name: "outcome", Value: outcome})
	args := append([]any{"step", step, "reservationId", in.ReservationID, "correlationId", in.CorrelationID, "outcome", outcome}, attrs...)
	if err != nil {
		args = append(args, "error", err.Error())
	}
	level := slog.LevelInfo
	if err != nil && (outcome == "error" || outcome == "provider_refused") {
		level = slog.LevelError
	}
	s.log().Log(ctx, level, "saga step finished", args...)
}

func (s *Steps) compensation(step, outcome string) {
	s.metrics().Count(MetricCompensationOutcome, 1, metrics.Dim{Name: "step", Value: step}, metrics.Dim{Name: "outcome", Value: outcome})
}

// storeError turns an inventory error into the routed error a step returns: definitive
// business outcomes keep their names, races and store failures become retryable ones.
func storeError(id string, err error) error {
	var (
		seat     *reservation.SeatUnavailable
		expired  *reservation.HoldExpired
		invalid  *reservation.ValidationError
		idem     *reservation.IdempotencyConflict
		notFound *reservation.NotFound
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &seat):
		return &SeatUnavailable{ReservationID: id, SeatIDs: seat.SeatIDs}
	case errors.As(err, &expired):
		return &HoldExpired{ReservationID: id, Detail: expired.Error()}
	case errors.As(err, &invalid):
		return &InvalidRequest{Field: "request", Problem: invalid.Error()}
	case errors.As(err, &idem):
		return &InvalidRequest{Field: "idempotencyKey", Problem: idem.Error()}
	case errors.As(err, &notFound):
		return &ConflictError{ReservationID: id, Detail: notFound.Error()}
	case isRace(err):
		return &TransactionConflict{Detail: err.Error()}
	case isTransactionConflict(err):
		return &TransactionConflict{Detail: err.Error()}
	}
	return &TransientError{Detail: err.Error()}
}

// isRace reports errors that mean another writer moved the reservation first: the step reads
// again and decides anew.
func isRace(err error) bool {
	var (
		stale *reservation.StaleVersion
		state *reservation.UnexpectedState
	)
	return errors.As(err, &stale) || errors.As(err, &state)
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
	if err := req.Validate(s.Limits); err != nil {
		routed := storeError(in.ReservationID, err)
		s.outcome(ctx, "claim", in, "invalid", routed)
		return Hold{}, routed
	}
	r, err := s.Store.Claim(ctx, req)
	if err != nil {
		routed := storeError(in.ReservationID, err)
		var seat *SeatUnavailable
		switch {
		case errors.As(routed, &seat):
			s.outcome(ctx, "claim", in, "seat_unavailable", routed)
		default:
			s.outcome(ctx, "claim", in, "error", routed)
		}
		return Hold{}, routed
	}
	now := s.now()
	if r.Inventory == reservation.Held && !r.HoldLive(now) {
		// A replay long after the claim: the hold is gone, so there is nothing to pay for.
		err := &HoldExpired{ReservationID: r.ID, Detail: "the hold lapsed before payment started"}
		s.outcome(ctx, "claim", in, "hold_expired", err)
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
