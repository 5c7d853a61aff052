package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// MetricSettlementEscalated counts reservations the settlement decision hands to a person
// (dimension reason); they stay on the reconciliation index.
const MetricSettlementEscalated = "SettlementEscalated"

// settleRounds bounds one settlement run: each round carries out one action. An unwind needs
// at most about five (record the unknown, void, record the void with the release, read back),
// a refund that goes pending a few more; a run that keeps losing races stops here and the
// caller's retry or the sweeper goes on.
const settleRounds = 12

// settlement is what one run of the settlement decision ended with.
type settlement struct {
	// Last is the decision the run stopped at: ActDone, ActWait, ActEscalate, or ActCapture
	// when the caller captures itself.
	Last reservation.Decision
	R    reservation.Reservation
	// ProviderStatus is the provider's last answer, for logs and results.
	ProviderStatus string
	// What this run did.
	Voided, Refunded, Released, Reacquired, Confirmed, Captured bool
}

// settleOptions says which actions the caller leaves to someone else.
type settleOptions struct {
	// stopAtCapture returns at ActCapture instead of capturing: the reconcile state hands
	// the capture to the ASL's "Capture payment" state, whose retries own it.
	stopAtCapture bool
	// reason names why this run unwinds, for the outbox and the provider.
	reason string
}

// settle carries out reservation.Decide, one action a round, reading the reservation (and the
// provider, when the decision asks) again after each, until the decision is done, waits or
// escalates. It decides nothing itself. A provider call that goes unanswered records
// UNKNOWN_NEEDS_RECONCILIATION where the table allows and returns *PaymentUncertain; a store
// failure is returned routed.
func (s *Steps) settle(ctx context.Context, in Input, step string, opt settleOptions) (settlement, error) {
	id := in.ReservationID
	var (
		out       settlement
		seatsLost bool
		// known is the provider's answer to this run's last call; it stands for the truth in
		// the next round, so a capture or void is not followed by a second request.
		known *providerTruth
	)
	for round := 0; round < settleRounds; round++ {
		r, err := s.get(ctx, id)
		if err != nil {
			return out, err
		}
		out.R = r
		now := s.now()
		f := reservation.FactsOf(r, reservation.TruthNotAsked, s.policy(), now)
		f.SeatsLost = seatsLost
		var truth providerTruth
		if known != nil && known.version == r.Version {
			truth = *known
			f.Truth = truth.truth
		}
		known = nil
		d := reservation.Decide(f)
		if d.Action == reservation.ActAsk {
			truth = s.providerTruth(ctx, r)
			f.Truth = truth.truth
			d = reservation.Decide(f)
		}
		if truth.status != "" {
			out.ProviderStatus = truth.status
		}
		s.log().DebugContext(ctx, "settlement decided", "step", step, "reservationId", id, "inventory", string(r.Inventory),
			"payment", string(r.Payment), "truth", string(f.Truth), "action", string(d.Action), "event", string(d.Event))
		out.Last = d
		switch d.Action {
		case reservation.ActDone, reservation.ActWait:
			return out, nil
		case reservation.ActEscalate:
			s.metrics().Count(MetricSettlementEscalated, 1, metrics.Dim{Name: "step", Value: step})
			s.log().ErrorContext(ctx, "settlement needs a person", "step", step, "reservationId", id, "correlationId", in.CorrelationID,
				"inventory", string(r.Inventory), "payment", string(r.Payment), "truth", string(f.Truth), "reason", d.Reason)
			return out, nil
		case reservation.ActCapture:
			if opt.stopAtCapture {
				return out, nil
			}
			auth, err := s.Payments.Capture(ctx, payment.CaptureRequest{ReservationID: id, PaymentIntentID: r.PaymentIntentID})
			if err != nil {
				if payment.IsUncertain(err) {
					return out, s.recordUncertain(ctx, r, &PaymentUncertain{ReservationID: id, Detail: "capture: " + err.Error()})
				}
				// A refusal is answered by the provider's truth next round: captured under
				// the same key earlier, or the authorization is gone. Still capturable after
				// a refusal means the refusal was about the request: let the caller retry.
				truth := s.providerTruth(ctx, r)
				if truth.truth == reservation.TruthAuthorized {
					return out, &PaymentUncertain{ReservationID: id, Detail: "capture refused but still capturable: " + err.Error()}
				}
				continue
			}
			out.Captured = true
			known = truthOf(r, auth, nil)
			continue
		case reservation.ActVoid:
			auth, err := s.void(ctx, r, cancelReason(opt.reason, r))
			if err != nil {
				return out, s.recordUncertain(ctx, r, err)
			}
			out.Voided = true
			s.compensation(step, "voided")
			known = truthOf(r, auth, nil)
			continue
		case reservation.ActRefund:
			if err := s.refund(ctx, r); err != nil {
				return out, s.recordUncertain(ctx, r, err)
			}
			out.Refunded = true
			s.compensation(step, "refund_requested")
			continue
		case reservation.ActConfirm:
			_, err = s.Store.Confirm(ctx, id, reservation.GuardOf(r))
			if err == nil {
				out.Confirmed = true
			}
		case reservation.ActReacquire:
			_, err = s.Store.Reacquire(ctx, id, reservation.GuardOf(r))
			var seat *reservation.SeatUnavailable
			switch {
			case err == nil:
				out.Reacquired = true
				s.compensation(step, "reacquired")
			case errors.As(err, &seat):
				s.log().InfoContext(ctx, "late payment: the seats were taken by another buyer", "reservationId", id, "correlationId", in.CorrelationID)
				seatsLost, err = true, nil
			}
		case reservation.ActRelease:
			_, err = s.Store.Release(ctx, ReleaseRequest{ReservationID: id, Guard: reservation.GuardOf(r), Expired: d.Expired,
				Reason: releaseReason(opt.reason, d), NotifyCustomer: !d.Expired})
			if err == nil {
				out.Released = true
				s.compensation(step, "seats_released")
			}
		case reservation.ActRecord:
			u := PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r), Event: d.Event, From: r.Payment,
				CaptureBefore: truth.captureBefore, ReleaseSeats: d.ReleaseSeats, Expired: d.Expired,
				Reason: recordReason(opt.reason, d), NotifyCustomer: notifies(d)}
			if d.Event == reservation.RefundFailed {
				u.RefundAttempts = r.RefundAttempts + 1
			}
			_, err = s.Store.UpdatePayment(ctx, u)
			if err == nil && d.ReleaseSeats {
				out.Released = true
				s.compensation(step, "seats_released")
			}
		}
		if err == nil && truth.truth != "" {
			// Our own write moved the version by one and no money: the answer still holds.
			next := truth
			next.version = r.Version + 1
			known = &next
		}
		if err = s.afterWrite(ctx, step, in, err); err != nil {
			return out, err
		}
	}
	return out, &TransactionConflict{Detail: "reservation " + id + " kept changing under the " + step + " step"}
}

// afterWrite turns a settlement write's error into nil (done, or the reservation moved: the
// next round reads it and decides anew) or the routed error to return.
func (s *Steps) afterWrite(ctx context.Context, step string, in Input, err error) error {
	if err == nil {
		return nil
	}
	var (
		expired *reservation.HoldExpired
		guard   *reservation.GuardFailed
	)
	if errors.As(err, &expired) || errors.As(err, &guard) {
		// The facts moved between the read and the write (the hold lapsed, the customer
		// cancelled): the next round decides from the new ones.
		s.log().DebugContext(ctx, "settlement write refused; deciding again", "step", step, "reservationId", in.ReservationID, "error", err.Error())
		return nil
	}
	routed := storeError(in.ReservationID, err)
	if retryable(routed) {
		s.log().DebugContext(ctx, "lost a race; reading again", "step", step, "reservationId", in.ReservationID, "error", err.Error())
		return nil
	}
	return routed
}

// recordUncertain records UNKNOWN_NEEDS_RECONCILIATION where the stored state may move there
// (the seats stay protected and the reservation joins the reconciliation index) and returns
// cause, the *PaymentUncertain the caller reports.
func (s *Steps) recordUncertain(ctx context.Context, r reservation.Reservation, cause error) error {
	if err := s.markUnknown(ctx, r, cause.Error()); err != nil && !retryable(err) {
		return errors.Join(cause, err)
	}
	return cause
}

// markUnknown records UNKNOWN_NEEDS_RECONCILIATION when the stored payment state may move
// there and is not there yet.
func (s *Steps) markUnknown(ctx context.Context, r reservation.Reservation, detail string) error {
	if r.Payment == reservation.UnknownNeedsReconciliation {
		return nil
	}
	if _, ok := reservation.NextPayment(r.Payment, reservation.OutcomeUnknown); !ok {
		return nil
	}
	_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		Event: reservation.OutcomeUnknown, From: r.Payment, Reason: detail})
	return storeError(r.ID, err)
}

// providerTruth is the provider's answer in the decision's terms.
type providerTruth struct {
	truth         reservation.Truth
	status        string
	captureBefore time.Time
	// version is the reservation version the answer was read for.
	version int64
}

// providerTruth asks the provider about r's money: the PaymentIntent, and the refund when one
// was made (a payment looks refunded at the provider while its refund is still pending).
func (s *Steps) providerTruth(ctx context.Context, r reservation.Reservation) providerTruth {
	if r.PaymentIntentID == "" {
		return providerTruth{truth: reservation.TruthNoPayment, version: r.Version}
	}
	auth, err := s.Payments.Retrieve(ctx, r.PaymentIntentID)
	if err != nil {
		s.log().WarnContext(ctx, "the provider could not answer", "reservationId", r.ID, "paymentIntentId", r.PaymentIntentID, "error", err.Error())
		return providerTruth{truth: reservation.TruthUnavailable, version: r.Version}
	}
	var rf *payment.Refund
	if r.RefundID != "" && (auth.State == payment.StatePaid || auth.State == payment.StateRefunded) {
		got, err := s.Payments.RetrieveRefund(ctx, r.RefundID)
		if err != nil {
			s.log().WarnContext(ctx, "the provider could not answer about the refund", "reservationId", r.ID, "refundId", r.RefundID, "error", err.Error())
			return providerTruth{truth: reservation.TruthUnavailable, status: auth.ProviderStatus, version: r.Version}
		}
		rf = &got
	}
	return *truthOf(r, auth, rf)
}

// TruthOf maps the provider's answer about r's PaymentIntent (and its refund, when known) to
// the settlement decision's truth, for callers outside the steps (the webhook).
func TruthOf(r reservation.Reservation, auth payment.Authorization, rf *payment.Refund) reservation.Truth {
	return truthOf(r, auth, rf).truth
}

// truthOf maps a PaymentIntent (and the reservation's refund, when known) to the decision's
// truth.
func truthOf(r reservation.Reservation, auth payment.Authorization, rf *payment.Refund) *providerTruth {
	t := &providerTruth{status: auth.ProviderStatus, captureBefore: auth.CaptureBefore, version: r.Version}
	switch auth.State {
	case payment.StateAuthorizing:
		t.truth = reservation.TruthAwaitingBuyer
		if auth.ProviderStatus == "processing" {
			t.truth = reservation.TruthProcessing
		}
	case payment.StateFailed:
		t.truth = reservation.TruthDeclined
	case payment.StateAuthorized:
		t.truth = reservation.TruthAuthorized
	case payment.StateCanceled:
		t.truth = reservation.TruthCanceled
	case payment.StatePaid, payment.StateRefunded:
		t.truth = reservation.TruthCaptured
		if auth.State == payment.StateRefunded {
			t.truth = reservation.TruthRefunded
		}
		if rf != nil {
			switch rf.Status {
			case payment.RefundSucceeded:
				t.truth = reservation.TruthRefunded
			case payment.RefundPending, payment.RefundRequiresAction:
				t.truth = reservation.TruthRefundPending
			default:
				// Failed or canceled: the money stays captured.
				t.truth = reservation.TruthCaptured
			}
		}
	default:
		t.truth = reservation.TruthUnavailable
	}
	return t
}

// refund returns the captured money, attempt RefundAttempts+1 with its own idempotency key, and
// records the refund's id (a detail, no version bump) so the next round asks the refund itself
// whether it succeeded. A refused refund is answered by the truth next round; an unanswered one
// is a *PaymentUncertain, retried with the same key.
func (s *Steps) refund(ctx context.Context, r reservation.Reservation) error {
	rf, err := s.Payments.Refund(ctx, payment.RefundRequest{ReservationID: r.ID, PaymentIntentID: r.PaymentIntentID,
		Attempt: r.RefundAttempts + 1})
	if payment.IsUncertain(err) {
		return &PaymentUncertain{ReservationID: r.ID, Detail: "refund: " + err.Error()}
	}
	if err != nil {
		s.log().InfoContext(ctx, "refund refused; reading the truth", "reservationId", r.ID, "error", err.Error())
		return nil
	}
	if rf.RefundID != "" && rf.RefundID != r.RefundID {
		if _, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r), RefundID: rf.RefundID}); err != nil {
			// The next round repeats this attempt under the same key and records it then.
			s.log().WarnContext(ctx, "refund id not recorded", "reservationId", r.ID, "refundId", rf.RefundID, "error", err.Error())
		}
	}
	return nil
}

// void cancels the reservation's PaymentIntent with the key {reservationId}:cancel:{attempt}
// and returns the provider's answer: the canceled intent, or the truth read after a refusal
// (captured, refunded, still open). Every unanswered call is a *PaymentUncertain.
//
// The attempt is the stored count of refused cancels plus one, so it is deterministic: a
// redelivered step, and a retry after an unanswered cancel, reuse the key. A refusal while
// the authorization is still open is recorded (without bumping the version) before the step
// reports it, because the provider replays a refusal stored under a key for 24 hours and
// would otherwise refuse the void that can succeed once the payment stops processing.
func (s *Steps) void(ctx context.Context, r reservation.Reservation, why string) (payment.Authorization, error) {
	attempt := r.CancelAttempts + 1
	auth, err := s.Payments.Cancel(ctx, payment.CancelRequest{ReservationID: r.ID, PaymentIntentID: r.PaymentIntentID,
		Attempt: attempt, Reason: why})
	if err == nil && auth.State == payment.StateCanceled {
		return auth, nil
	}
	if payment.IsUncertain(err) {
		return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: "void: " + err.Error()}
	}
	refusal := "cancel answered " + string(auth.State)
	if err != nil {
		refusal = "cancel refused (" + err.Error() + ")"
	}
	truth, rerr := s.Payments.Retrieve(ctx, r.PaymentIntentID)
	if rerr != nil {
		return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: refusal + "; truth unknown: " + rerr.Error()}
	}
	switch truth.State {
	case payment.StateCanceled, payment.StatePaid, payment.StateRefunded:
		return truth, nil
	}
	detail := refusal + "; the authorization is still open, provider status " + truth.ProviderStatus
	if _, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		CancelAttempts: attempt}); err != nil {
		// Not recorded: the next run repeats this attempt, meets the same stored refusal
		// and records it then.
		detail += "; refusal not recorded: " + err.Error()
	} else {
		s.log().InfoContext(ctx, "cancel refused while the authorization is open; the next void uses a new attempt",
			"reservationId", r.ID, "correlationId", r.CorrelationID, "refusedAttempt", attempt, "providerStatus", truth.ProviderStatus)
	}
	return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: detail}
}

// cancelReason maps why the saga unwinds to Stripe's cancellation_reason vocabulary.
func cancelReason(reason string, r reservation.Reservation) string {
	if reason == ErrCustomerCanceled || r.CustomerCanceled {
		return "requested_by_customer"
	}
	return "abandoned"
}

// releaseReason names a release in the outbox.
func releaseReason(reason string, d reservation.Decision) string {
	switch {
	case reason == ErrPaymentDeclined:
		return "payment_declined"
	case reason == ErrCustomerCanceled:
		return "customer_canceled"
	case d.Expired || reason == ErrHoldExpired:
		return "hold_expired"
	case reason != "":
		return reason
	}
	return "settlement"
}

func recordReason(reason string, d reservation.Decision) string {
	r := "settlement: " + string(d.Event)
	if reason != "" {
		r += " (" + reason + ")"
	}
	return r
}

// notifies reports records the customer must hear about: money voided, declined or refunded.
func notifies(d reservation.Decision) bool {
	switch d.Event {
	case reservation.VoidPayment, reservation.PaymentDeclined, reservation.RefundPayment:
		return true
	}
	return false
}

// outcomeOfSettled maps the decision's settled outcome to the reconcile outcome the ASL
// routes on.
func outcomeOfSettled(s reservation.Settled) string {
	switch s {
	case reservation.SettledSold:
		return OutcomePaid
	case reservation.SettledCanceled:
		return OutcomeCanceled
	case reservation.SettledDeclined:
		return OutcomeFailed
	case reservation.SettledVoided:
		return OutcomeVoided
	case reservation.SettledCaptureFailed:
		return OutcomeCaptureFailed
	}
	return OutcomeExpired
}

func (st settlement) describe() string {
	return fmt.Sprintf("%s/%s: %s %s", st.R.Inventory, st.R.Payment, st.Last.Action, st.Last.Reason)
}
