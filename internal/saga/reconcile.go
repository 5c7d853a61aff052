package saga

import (
	"context"
	"errors"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// maxResumes bounds how often one execution goes back to waiting for the buyer after the wait
// state failed (internal/reservation decides; reconcile only carries it out). Past it the
// reconcile loop polls the provider with its backoff instead.
const maxResumes = 3

// Reconcile carries out the settlement decision (reservation.Decide) for the execution: it
// retrieves the provider's truth before any consequential action and performs what the
// decision says until it is settled, waits, escalates or hands the capture to the ASL. It
// routes:
//
//   - paid, canceled, failed, expired, voided, capture_failed: settled that way; all but
//     paid carry the Verdict of their business ending, which the ending's state outputs;
//   - capture: confirmed seats with an authorization; the ASL's "Capture payment" state
//     captures (bounded by ReconcileResult.Captures, so an authorization found on the last
//     attempt still gets captured);
//   - resume: the hold is live and the buyer is still paying after the wait state failed;
//     the ASL waits for the payment again with the time left on the hold (Hold.SecondsLeft),
//     so a failed wait never extends the hold;
//   - retry: the buyer or the provider must move first, or the provider did not answer; the
//     ASL waits RetryAfterSeconds (never past a live hold's deadline) and reconciles again;
//   - unresolved: attempts spent, or the decision needs a person. The reservation stays where
//     the sweeper finds it (reservation.Unsettled, or its hold's deadline).
func (s *Steps) Reconcile(ctx context.Context, st State) (ReconcileResult, error) {
	in := st.Input
	res := ReconcileResult{Attempt: 1}
	if st.Reconcile != nil {
		res.Attempt = st.Reconcile.Attempt + 1
		res.Captures = st.Reconcile.Captures
		res.Resumes = st.Reconcile.Resumes
		res.CompensationFailureCounted = st.Reconcile.CompensationFailureCounted
	}
	finish := func(outcome, detail string) (ReconcileResult, error) {
		res.Outcome, res.Detail, res.Verdict = outcome, detail, reconcileVerdict(outcome)
		s.outcome(ctx, "reconcile", in, outcome, nil, "attempt", res.Attempt, "providerStatus", res.ProviderStatus, "detail", detail)
		return res, nil
	}
	out, err := s.settle(ctx, in, "reconcile", settleOptions{stopAtCapture: true, reason: failureName(st)})
	res.ProviderStatus = out.ProviderStatus
	var unsure *PaymentUncertain
	if err == nil || errors.As(err, &unsure) {
		// Counted by the invocation that answers, so a retried invocation counts once.
		s.countEntry(ctx, st, out, &res)
	}
	switch {
	case errors.As(err, &unsure):
		return s.again(ctx, in, out.R, &res, unsure.Detail)
	case err != nil:
		s.fail(ctx, "reconcile", in, err, "attempt", res.Attempt)
		return ReconcileResult{}, err
	}
	d := out.Last
	switch d.Action {
	case reservation.ActDone:
		return finish(outcomeOfSettled(d.Outcome), "")
	case reservation.ActCapture:
		// The bound is for the ASL's capture/reconcile loop, so it counts the captures this
		// execution was sent to, not the reconcile attempts: attempts spent waiting for a
		// late authorization say nothing about capturing it.
		if res.Captures > 0 && res.Captures >= s.captureHandOffs() {
			return s.again(ctx, in, out.R, &res, "capture kept failing")
		}
		res.Captures++
		return finish(OutcomeCapture, "")
	case reservation.ActEscalate:
		return s.unresolved(ctx, in, &res, d.Reason)
	}
	r := out.R
	// Only a payment the authorize step can take up again (not started, or authorizing) goes
	// back to waiting; any other state would end the resumed wait at once.
	resumable := r.Payment == reservation.NotStarted || r.Payment == reservation.Authorizing
	if d.Waiting == reservation.WaitBuyer && resumable && r.HoldActive() && r.HoldLive(s.now()) && res.Resumes < maxResumes {
		res.Resumes++
		left := secondsLeft(s.now(), r.HoldExpiresAt)
		res.Hold = &Hold{ReservationID: r.ID, Version: r.Version, HoldExpiresAt: r.HoldExpiresAt, SecondsLeft: max(left, 1)}
		return finish(OutcomeResume, d.Reason)
	}
	return s.again(ctx, in, r, &res, d.Reason)
}

// MetricWebhookNeverArrived counts payment waits that ended by the hold's timeout although the
// provider had already decided the payment: the webhook that should have ended the wait never
// reached the API.
const MetricWebhookNeverArrived = "WebhookNeverArrived"

// ErrStatesTimeout is the error Step Functions raises when a task's timeout passes: for the
// payment wait, the hold's deadline.
const ErrStatesTimeout = "States.Timeout"

// webhookWasDue reports whether the provider's answer is one a webhook announces: an
// authorization, a capture or a decline.
func webhookWasDue(t reservation.Truth) bool {
	switch t {
	case reservation.TruthAuthorized, reservation.TruthCaptured, reservation.TruthDeclined:
		return true
	}
	return false
}

// countEntry counts what brought the execution into reconciliation, once per entry: a Catch
// brought it (not the reconcile loop's own wait, whose last outcome is retry). A compensation
// the state machine gave up on is a failed compensation, unless it handed the settlement on
// by design; a payment wait that timed out although the provider had decided is a webhook that
// never arrived.
func (s *Steps) countEntry(ctx context.Context, st State, out settlement, res *ReconcileResult) {
	if st.Reconcile != nil && st.Reconcile.Outcome == OutcomeRetry {
		return
	}
	in := st.Input
	if f := st.CompensationFailure; f != nil && f.Error != ErrSettlementContinues && !res.CompensationFailureCounted {
		res.CompensationFailureCounted = true
		s.compensationFailed(stepCompensate)
		s.log().ErrorContext(ctx, "compensation failed after its retries; reconciling", "reservationId", in.ReservationID,
			"correlationId", in.CorrelationID, "error", f.Error, "cause", f.Cause)
	}
	if failureName(st) == ErrStatesTimeout && webhookWasDue(out.FirstTruth) {
		s.metrics().Count(MetricWebhookNeverArrived, 1)
		s.log().WarnContext(ctx, "payment wait timed out although the provider had decided: its webhook never arrived",
			"reservationId", in.ReservationID, "providerStatus", out.ProviderStatus)
	}
}

// failureName is the error that led the execution here, if any.
func failureName(st State) string {
	if st.Failure != nil {
		return st.Failure.Error
	}
	return ""
}

// captureHandOffs bounds how often one execution is sent back to "Capture payment".
func (s *Steps) captureHandOffs() int { return max(s.attempts()-1, 1) }

func (s *Steps) attempts() int {
	if s.ReconcileAttempts <= 0 {
		return DefaultReconcileAttempts
	}
	return s.ReconcileAttempts
}

// again asks the ASL to wait and reconcile again, or reports unresolved once the attempts are
// spent. A live hold's wait never runs past its deadline, so the hold expires on time.
func (s *Steps) again(ctx context.Context, in Input, r reservation.Reservation, res *ReconcileResult, detail string) (ReconcileResult, error) {
	if res.Attempt >= s.attempts() {
		return s.unresolved(ctx, in, res, detail)
	}
	backoff := s.ReconcileBackoff
	if backoff <= 0 {
		backoff = DefaultReconcileBackoff
	}
	wait := backoff << (res.Attempt - 1)
	if wait > MaxReconcileBackoff || wait <= 0 {
		wait = MaxReconcileBackoff
	}
	now := s.now()
	if r.HoldActive() && r.HoldLive(now) {
		wait = min(wait, r.HoldExpiresAt.Sub(now))
	}
	res.Outcome, res.Detail = OutcomeRetry, detail
	res.RetryAfterSeconds = max(int((wait+time.Second-1)/time.Second), 1)
	s.outcome(ctx, "reconcile", in, OutcomeRetry, nil, "attempt", res.Attempt, "retryAfterSeconds", res.RetryAfterSeconds, "detail", detail)
	return *res, nil
}

// unresolved ends the loop: the sweeper takes over (the reservation is on one of its indexes
// until settled).
func (s *Steps) unresolved(ctx context.Context, in Input, res *ReconcileResult, detail string) (ReconcileResult, error) {
	res.Outcome, res.Detail, res.RetryAfterSeconds = OutcomeUnresolved, detail, 0
	s.outcome(ctx, "reconcile", in, OutcomeUnresolved, nil, "attempt", res.Attempt, "detail", detail)
	return *res, nil
}

// Resolve is one settlement run outside the state machine, for the sweeper: the same decision,
// and it captures itself (with the saga's idempotency key {reservationId}:capture, so racing a
// live capture step charges once). It returns the reconcile outcome; OutcomeRetry when the
// buyer or the provider must move first, OutcomeUnresolved when a person must look.
func (s *Steps) Resolve(ctx context.Context, in Input) (string, error) {
	out, err := s.settle(ctx, in, "sweeper", settleOptions{})
	var unsure *PaymentUncertain
	switch {
	case errors.As(err, &unsure):
		return OutcomeRetry, nil
	case err != nil:
		return "", err
	}
	switch out.Last.Action {
	case reservation.ActDone:
		return outcomeOfSettled(out.Last.Outcome), nil
	case reservation.ActEscalate:
		return OutcomeUnresolved, nil
	}
	return OutcomeRetry, nil
}
