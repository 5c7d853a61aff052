package saga

import (
	"context"
	"errors"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Reconcile retrieves the provider's truth before any further consequential action and
// decides (DESIGN.md §1, §4):
//
//   - authorized while the hold is live: confirm, then capture;
//   - authorized after the hold lapsed (late success): policy reacquire takes the seats back
//     if they are still ours or free, else voids and notifies the customer; policy void voids
//     and notifies;
//   - captured: record it (or refund it if the seats are gone);
//   - not authorized and the hold lapsed: cancel the PaymentIntent and release the seats; a
//     payment still processing cannot be canceled, so the seats go back and the loop waits for
//     its late outcome;
//   - the provider cannot answer: record UNKNOWN_NEEDS_RECONCILIATION (seats protected: they
//     cannot be released in that state) and ask again later;
//   - the customer canceled (recorded by the compensate step, so the sweeper knows it too):
//     whatever the provider reports, void the authorization or refund the capture, release
//     the seats and route "canceled"; never confirm, capture or reacquire.
//
// The ASL loops through "retry" at most ReconcileAttempts times; the last attempt leaves the
// reservation in UNKNOWN_NEEDS_RECONCILIATION ("unresolved") for the sweeper. The loop through
// "Capture payment" is bounded separately, by the captures handed out (ReconcileResult.Captures),
// so an authorization found on the last attempt is still captured. Only unanswered provider
// calls end an attempt as unknown; a hold that lapses mid-step is read again, never routed.
func (s *Steps) Reconcile(ctx context.Context, st State) (ReconcileResult, error) {
	in := st.Input
	id := in.ReservationID
	res := ReconcileResult{Attempt: 1}
	if st.Reconcile != nil {
		res.Attempt = st.Reconcile.Attempt + 1
		res.Captures = st.Reconcile.Captures
	}
	finish := func(outcome, detail string) (ReconcileResult, error) {
		res.Outcome, res.Detail = outcome, detail
		s.outcome(ctx, "reconcile", in, outcome, nil, "attempt", res.Attempt, "providerStatus", res.ProviderStatus, "detail", detail)
		return res, nil
	}
	fail := func(err error) (ReconcileResult, error) {
		s.outcome(ctx, "reconcile", in, outcomeName(err), err, "attempt", res.Attempt)
		return ReconcileResult{}, err
	}
	for round := 0; round < maxRounds; round++ {
		r, err := s.get(ctx, id)
		if err != nil {
			return fail(err)
		}
		now := s.now()
		live := r.HoldActive() && r.HoldLive(now)

		// Settled: report it (also on a re-run, which finds the work done).
		if done, outcome := settled(r); done {
			return finish(outcome, "")
		}

		if r.PaymentIntentID == "" {
			// No payment was ever started, so nothing can be charged: give the seats back.
			if r.HoldActive() {
				if err := s.release(ctx, in, r, !r.HoldLive(now), "hold_expired", false); err != nil {
					if retryable(err) {
						continue
					}
					return fail(err)
				}
				continue
			}
			return finish(OutcomeExpired, "no payment was started")
		}

		auth, perr := s.Payments.Retrieve(ctx, r.PaymentIntentID)
		if perr != nil {
			return s.unknown(ctx, in, r, &res, "the provider could not answer: "+perr.Error())
		}
		res.ProviderStatus = auth.ProviderStatus

		var step error
		switch auth.State {
		case payment.StatePaid:
			if abandoned(r) {
				// Captured although the saga recorded it failed or canceled: the seats are
				// not being sold, so the money goes back. The next round finds the intent
				// refunded (and records it where the table allows).
				if err := s.refund(ctx, r); err != nil {
					return s.unknown(ctx, in, r, &res, err.Error())
				}
				s.compensation("reconcile", "refund_requested")
				continue
			}
			step = s.recordCaptured(ctx, r, auth)
			if step == nil && r.Payment == reservation.Paid && r.Inventory != reservation.Confirmed {
				step = s.lateSuccess(ctx, in, r, auth)
			}
			if step == nil && r.Payment == reservation.Paid && r.Inventory == reservation.Confirmed {
				return finish(OutcomePaid, "")
			}

		case payment.StateAuthorized:
			switch {
			case abandoned(r):
				// A late authorization of a payment already recorded failed or canceled, or
				// of a reservation the customer canceled, is voided, not sold; the next round
				// records the canceled intent. Until the void lands the seats stay where they
				// are.
				truth, err := s.void(ctx, r, "abandoned")
				if err != nil {
					return s.unknown(ctx, in, r, &res, err.Error())
				}
				s.compensation("reconcile", "late_authorization_voided")
				res.ProviderStatus = truth.ProviderStatus
				continue
			case r.Inventory == reservation.Confirmed && (r.Payment == reservation.Authorized ||
				r.Payment == reservation.CapturePending || r.Payment == reservation.UnknownNeedsReconciliation):
				// The bound is for the ASL's capture/reconcile loop, so it counts the captures
				// this execution was sent to, not the reconcile attempts: attempts spent
				// waiting for a late authorization say nothing about capturing it. A first
				// capture (the sweeper's Resolve, ReconcileAttempts 1, or an authorization
				// found on the last attempt) always goes ahead.
				if res.Captures > 0 && res.Captures >= max(s.attempts()-1, 1) {
					return s.unknown(ctx, in, r, &res, "capture kept failing")
				}
				res.Captures++
				return finish(OutcomeCapture, "")
			case r.Payment != reservation.Authorized:
				step = s.recordPayment(ctx, r, reservation.AuthorizationOK, auth, "")
			case live:
				_, err := s.Store.Confirm(ctx, id, reservation.GuardOf(r))
				step = storeError(id, err)
				var lapsed *HoldExpired
				switch {
				case step == nil:
					step = &TransactionConflict{Detail: "confirmed; read again"}
				case errors.As(step, &lapsed):
					// The hold ran out between the read and the write: the next round sees
					// it lapsed and applies the late-success policy. HoldExpired is not a
					// name the reconcile state routes on.
					step = &TransactionConflict{Detail: "the hold lapsed while confirming; read again"}
				}
			default:
				step = s.lateSuccess(ctx, in, r, auth)
			}

		case payment.StateAuthorizing:
			switch {
			case live && !r.CustomerCanceled:
				return s.retry(ctx, in, r, &res, "the buyer has not finished paying")
			case auth.ProviderStatus == "processing":
				// It cannot be canceled; let the hold go and wait for the late outcome. (Once
				// the payment is UNKNOWN the seats stay protected until its outcome is known.)
				if r.HoldActive() && r.Payment == reservation.Authorizing {
					expired := !r.HoldLive(now)
					reason := "hold_expired"
					if !expired {
						reason = "customer_canceled"
					}
					step = s.release(ctx, in, r, expired, reason, !expired)
					break
				}
				return s.retry(ctx, in, r, &res, "the payment is still processing")
			default:
				truth, err := s.void(ctx, r, "abandoned")
				if err != nil {
					return s.unknown(ctx, in, r, &res, err.Error())
				}
				switch {
				case truth.State != payment.StateCanceled:
					continue // It moved meanwhile (e.g. authorized): decide again.
				case r.Payment == reservation.Canceled:
					step = s.release(ctx, in, r, !r.HoldLive(now), "hold_expired", false)
				default:
					step = s.recordPayment(ctx, r, reservation.VoidPayment, truth, "hold_expired")
				}
			}

		case payment.StateFailed:
			// Declined, but the intent still waits for another payment method: void it so
			// nothing can authorize it later, and act on the answer. Only a canceled intent
			// lets the seats go; one that moved meanwhile (authorized, captured) is decided
			// again from the truth; an unanswered void is unknown, never FAILED.
			truth, err := s.void(ctx, r, "abandoned")
			if err != nil {
				return s.unknown(ctx, in, r, &res, err.Error())
			}
			switch {
			case truth.State != payment.StateCanceled:
				res.ProviderStatus = truth.ProviderStatus
				continue
			case r.Payment != reservation.Canceled:
				step = s.settleDeclined(ctx, in, r, truth)
			case r.Inventory != reservation.Released:
				step = s.release(ctx, in, r, !r.HoldLive(now), "payment_declined", true)
			default:
				return finish(OutcomeFailed, "")
			}

		case payment.StateCanceled:
			switch {
			case r.Inventory == reservation.Confirmed:
				// The authorization lapsed or was voided before capture: the capture-failure
				// policy applies (record the failure, release the seats, notify).
				if r.Payment == reservation.Failed || r.Payment == reservation.Canceled {
					step = s.release(ctx, in, r, false, "capture_failed", true)
				} else {
					step = s.recordPayment(ctx, r, reservation.PaymentDeclined, auth, "authorization canceled before capture")
				}
			case r.Payment != reservation.Canceled:
				step = s.recordPayment(ctx, r, reservation.VoidPayment, auth, "canceled")
			case r.Inventory != reservation.Released:
				step = s.release(ctx, in, r, !r.HoldLive(now), "payment_canceled", true)
			default:
				return finish(OutcomeExpired, "")
			}

		case payment.StateRefunded:
			if r.Payment != reservation.Refunded && r.Payment != reservation.Canceled {
				step = s.recordPayment(ctx, r, reservation.RefundPayment, auth, "refunded")
			} else if r.Inventory != reservation.Released {
				step = s.release(ctx, in, r, false, "payment_refunded", true)
			} else {
				return finish(OutcomeVoided, "")
			}

		default:
			return s.unknown(ctx, in, r, &res, "the provider reports "+auth.ProviderStatus)
		}
		var uncertain *PaymentUncertain
		if errors.As(step, &uncertain) {
			// A void or refund the provider did not answer (lateSuccess): record the unknown
			// and ask again after the backoff, as for any other unanswered call, rather than
			// leaving the loop with an error no Retry lists.
			if cur, err := s.get(ctx, id); err == nil {
				r = cur
			}
			return s.unknown(ctx, in, r, &res, uncertain.Detail)
		}
		if step != nil && !retryable(step) {
			return fail(step)
		}
	}
	return fail(&TransactionConflict{Detail: "reservation " + id + " kept changing under the reconcile step"})
}

// settled reports a reservation whose saga has nothing left to do, and the outcome to route.
// It reads the outcome from the stored states alone, so a re-run after a crash routes as the
// first run did: a recorded capture deadline means the payment was authorized at some point.
func settled(r reservation.Reservation) (bool, string) {
	wasAuthorized := !r.CaptureBefore.IsZero()
	switch {
	case r.Payment == reservation.Paid && r.Inventory == reservation.Confirmed:
		return true, OutcomePaid
	case r.Inventory != reservation.Released:
		return false, ""
	case r.CustomerCanceled && !r.Payment.MoneyMayBeHeld() && r.Payment != reservation.Authorizing &&
		r.Payment != reservation.Authorized:
		return true, OutcomeCanceled
	case r.Payment == reservation.Failed && wasAuthorized:
		return true, OutcomeCaptureFailed
	case r.Payment == reservation.Failed:
		return true, OutcomeFailed
	case r.Payment == reservation.Refunded:
		return true, OutcomeVoided
	case r.Payment == reservation.Canceled && wasAuthorized:
		return true, OutcomeVoided
	case r.Payment == reservation.Canceled && r.Outcome == reservation.OutcomeExpired:
		return true, OutcomeExpired
	case r.Payment == reservation.Canceled:
		return true, OutcomeFailed
	case r.Payment == reservation.NotStarted:
		return true, OutcomeExpired
	}
	return false, ""
}

// lateSuccess applies the late-success policy to an authorization (or capture) whose hold
// lapsed: reacquire the seats if the policy allows and they are still ours or free, else void
// (or refund) and notify the customer.
func (s *Steps) lateSuccess(ctx context.Context, in Input, r reservation.Reservation, auth payment.Authorization) error {
	if s.policy() == reservation.LateSuccessReacquire {
		_, err := s.Store.Reacquire(ctx, r.ID, reservation.GuardOf(r))
		var seat *reservation.SeatUnavailable
		switch {
		case err == nil:
			s.compensation("reconcile", "reacquired")
			return &TransactionConflict{Detail: "reacquired; read again"}
		case !errors.As(err, &seat):
			return storeError(r.ID, err)
		}
		s.log().InfoContext(ctx, "late payment: seats taken by another buyer", "reservationId", r.ID, "correlationId", in.CorrelationID)
	}
	// Void (or refund) and tell the customer; the seats go back if they are still ours.
	// The void's answer decides: an intent captured meanwhile is refunded, never recorded
	// voided.
	truth := auth
	if truth.State != payment.StatePaid {
		var err error
		if truth, err = s.void(ctx, r, "abandoned"); err != nil {
			return err
		}
	}
	if truth.State == payment.StatePaid {
		if err := s.refund(ctx, r); err != nil {
			return err
		}
		truth.State = payment.StateRefunded
	}
	event := reservation.VoidPayment
	if truth.State == payment.StateRefunded {
		event = reservation.RefundPayment
	}
	if _, ok := reservation.NextPayment(r.Payment, event); !ok {
		// E.g. AUTHORIZED -> REFUNDED: recorded through UNKNOWN, and the next round
		// records the refund the provider reports.
		return s.recordPayment(ctx, r, event, auth, "late_payment")
	}
	_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		Event: event, From: r.Payment, CaptureBefore: auth.CaptureBefore, Reason: "late_payment", NotifyCustomer: true})
	if err != nil {
		return storeError(r.ID, err)
	}
	s.compensation("reconcile", "late_payment_voided")
	id := r.ID
	if r, err = s.Store.Get(ctx, id); err != nil {
		return storeError(id, err)
	}
	if r.HoldActive() {
		return s.release(ctx, in, r, false, "late_payment", true)
	}
	return &TransactionConflict{Detail: "voided; read again"}
}

// settleDeclined records a declined payment whose intent is now known canceled as CANCELED,
// then gives the seats back as a decline (a Release, not an expiry, whatever the clock says,
// so the saga routes "failed"). A crash between the two writes leaves CANCELED with the seats
// held, which the next round releases. Success reads as "read again".
func (s *Steps) settleDeclined(ctx context.Context, in Input, r reservation.Reservation, truth payment.Authorization) error {
	if _, ok := reservation.NextPayment(r.Payment, reservation.VoidPayment); !ok {
		// E.g. CAPTURE_PENDING: recorded through UNKNOWN; the next round records the void.
		return s.recordPayment(ctx, r, reservation.VoidPayment, truth, "declined")
	}
	_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		Event: reservation.VoidPayment, From: r.Payment, Reason: "declined", NotifyCustomer: true})
	if err != nil {
		return storeError(r.ID, err)
	}
	s.compensation("reconcile", "voided")
	id := r.ID
	if r, err = s.Store.Get(ctx, id); err != nil {
		return storeError(id, err)
	}
	if r.HoldActive() {
		return s.release(ctx, in, r, false, "payment_declined", true)
	}
	return &TransactionConflict{Detail: "voided; read again"}
}

// givenUp reports a payment the saga recorded as failed or canceled, so a later provider truth
// (a late authorization or capture) is answered by voiding or refunding, never by selling the
// seats. FAILED then records the void or refund; CANCELED has no way out and stays.
func givenUp(r reservation.Reservation) bool {
	return r.Payment == reservation.Failed || r.Payment == reservation.Canceled
}

// abandoned reports a reservation nobody may sell any more: its payment was given up, or the
// customer canceled it (whatever the payment state, UNKNOWN included). A late authorization
// is voided and a capture refunded; its seats are never confirmed or reacquired.
func abandoned(r reservation.Reservation) bool {
	return givenUp(r) || r.CustomerCanceled
}

// recordCaptured brings the stored payment state to PAID along the legal transitions.
func (s *Steps) recordCaptured(ctx context.Context, r reservation.Reservation, auth payment.Authorization) error {
	switch r.Payment {
	case reservation.Paid:
		return nil
	case reservation.Authorized:
		if r.Inventory == reservation.Confirmed {
			return s.recordPayment(ctx, r, reservation.RequestCapture, auth, "")
		}
		return s.recordPayment(ctx, r, reservation.OutcomeUnknown, auth, "captured without confirmed seats")
	case reservation.CapturePending, reservation.UnknownNeedsReconciliation:
		return s.recordPayment(ctx, r, reservation.CaptureOK, auth, "")
	case reservation.Authorizing:
		return s.recordPayment(ctx, r, reservation.OutcomeUnknown, auth, "captured while authorizing")
	}
	return &ConflictError{ReservationID: r.ID, Detail: "the provider captured a payment recorded as " + string(r.Payment)}
}

// recordPayment performs one payment transition; success reads as "read again". Where the
// table has no direct transition (e.g. AUTHORIZED -> REFUNDED), it records the truth the way
// the table allows: through UNKNOWN_NEEDS_RECONCILIATION, whose exits take any outcome.
func (s *Steps) recordPayment(ctx context.Context, r reservation.Reservation, ev reservation.PaymentEvent, auth payment.Authorization, reason string) error {
	if _, ok := reservation.NextPayment(r.Payment, ev); !ok {
		_, toUnknown := reservation.NextPayment(r.Payment, reservation.OutcomeUnknown)
		if _, fromUnknown := reservation.NextPayment(reservation.UnknownNeedsReconciliation, ev); toUnknown && fromUnknown {
			ev, reason = reservation.OutcomeUnknown, "recording the provider's truth: "+reason
		}
	}
	_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		Event: ev, From: r.Payment, CaptureBefore: auth.CaptureBefore, Reason: reason,
		NotifyCustomer: ev == reservation.VoidPayment || ev == reservation.PaymentDeclined || ev == reservation.RefundPayment})
	if err != nil {
		return storeError(r.ID, err)
	}
	return &TransactionConflict{Detail: "recorded " + string(ev) + "; read again"}
}

// release gives the seats back; success reads as "read again".
func (s *Steps) release(ctx context.Context, in Input, r reservation.Reservation, expired bool, reason string, notify bool) error {
	_, err := s.Store.Release(ctx, ReleaseRequest{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		Expired: expired, Reason: reason, NotifyCustomer: notify})
	if err != nil {
		return storeError(r.ID, err)
	}
	s.compensation("reconcile", "seats_released")
	return &TransactionConflict{Detail: "released; read again"}
}

func (s *Steps) attempts() int {
	if s.ReconcileAttempts <= 0 {
		return DefaultReconcileAttempts
	}
	return s.ReconcileAttempts
}

// retry asks the ASL to wait and reconcile again, or gives up once the attempts are spent.
func (s *Steps) retry(ctx context.Context, in Input, r reservation.Reservation, res *ReconcileResult, detail string) (ReconcileResult, error) {
	if res.Attempt >= s.attempts() {
		return s.unknown(ctx, in, r, res, detail)
	}
	backoff := s.ReconcileBackoff
	if backoff <= 0 {
		backoff = DefaultReconcileBackoff
	}
	wait := backoff << (res.Attempt - 1)
	if wait > MaxReconcileBackoff || wait <= 0 {
		wait = MaxReconcileBackoff
	}
	res.Outcome, res.Detail = OutcomeRetry, detail
	res.RetryAfterSeconds = max(int(wait/time.Second), 1)
	s.outcome(ctx, "reconcile", in, OutcomeRetry, nil, "attempt", res.Attempt, "retryAfterSeconds", res.RetryAfterSeconds, "detail", detail)
	return *res, nil
}

// unknown records UNKNOWN_NEEDS_RECONCILIATION (which protects the seats) and asks for
// another attempt, or reports unresolved once the attempts are spent.
func (s *Steps) unknown(ctx context.Context, in Input, r reservation.Reservation, res *ReconcileResult, detail string) (ReconcileResult, error) {
	if r.Payment != reservation.UnknownNeedsReconciliation {
		if _, ok := reservation.NextPayment(r.Payment, reservation.OutcomeUnknown); ok {
			_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
				Event: reservation.OutcomeUnknown, From: r.Payment, Reason: detail})
			if err != nil && !retryable(storeError(r.ID, err)) {
				routed := storeError(r.ID, err)
				s.outcome(ctx, "reconcile", in, "error", routed)
				return ReconcileResult{}, routed
			}
		}
	}
	if res.Attempt < s.attempts() {
		return s.retry(ctx, in, r, res, detail)
	}
	res.Outcome, res.Detail, res.RetryAfterSeconds = OutcomeUnresolved, detail, 0
	s.outcome(ctx, "reconcile", in, OutcomeUnresolved, nil, "attempt", res.Attempt, "detail", detail)
	return *res, nil
}

// Resolve is one reconciliation pass outside the state machine, for the sweeper: it reconciles
// from the provider's truth and, when the seats are confirmed and the payment authorized,
// capture pending or unknown but still capturable, captures with the saga's idempotency key
// {reservationId}:capture (so racing a live capture step charges once). It returns the outcome
// (OutcomeRetry when the provider still cannot answer).
func (s *Steps) Resolve(ctx context.Context, in Input) (string, error) {
	res, err := s.Reconcile(ctx, State{Input: in, Reconcile: &ReconcileResult{Attempt: 0}})
	if err != nil {
		return "", err
	}
	if res.Outcome != OutcomeCapture {
		return res.Outcome, nil
	}
	if _, err := s.Capture(ctx, State{Input: in}); err != nil {
		var failed *CaptureFailed
		if errors.As(err, &failed) {
			return OutcomeCaptureFailed, nil
		}
		var unsure *PaymentUncertain
		if errors.As(err, &unsure) {
			return OutcomeRetry, nil
		}
		return "", err
	}
	return OutcomePaid, nil
}
