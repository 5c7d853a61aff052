package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// MetricSettlementEscalated counts reservations the settlement decision hands to a person
// (dimension step); they stay on the reconciliation index.
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
	// FirstTruth is what the provider said when this run first asked (TruthNotAsked when it
	// never did): what was already decided before this run acted.
	FirstTruth reservation.Truth
	// What this run did, as compensation reports it.
	Voided, Refunded, Released bool
}

// settleOptions says which actions the caller leaves to someone else.
type settleOptions struct {
	// stopAtCapture returns at ActCapture instead of capturing: the reconcile state hands
	// the capture to the ASL's "Capture payment" state, whose retries own it.
	stopAtCapture bool
	// reason names why this run unwinds, for the outbox and the provider.
	reason string
	// first, when set, is the reservation as the caller just read or wrote it: the first
	// round decides on it instead of reading it again.
	first *reservation.Reservation
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
		// current is the reservation as this run's last write left it, or as the last round
		// decided on it when that round only called the provider, which changes nothing in the
		// store (every write is fenced by its version and revision, so a change by anyone
		// else fails the next write and is read then).
		current = opt.first
	)
	for round := 0; round < settleRounds; round++ {
		var r reservation.Reservation
		var err error
		if current != nil {
			r, current = *current, nil
		} else if r, err = s.get(ctx, id); err != nil {
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
		if out.FirstTruth == "" && truth.truth != "" && truth.truth != reservation.TruthNotAsked {
			out.FirstTruth = truth.truth
		}
		s.log().DebugContext(ctx, "settlement decided", "step", step, "reservationId", id, "inventory", string(r.Inventory),
			"payment", string(r.Payment), "truth", string(f.Truth), "action", string(d.Action), "event", string(d.Event))
		out.Last = d
		var written reservation.Reservation
		wrote := false
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
				known, current = &truth, &r
				continue
			}
			known, current = truthOf(r, auth, nil), &r
			continue
		case reservation.ActVoid:
			auth, err := s.void(ctx, r, cancelReason(opt.reason, r))
			if err != nil {
				return out, s.recordUncertain(ctx, r, err)
			}
			known = truthOf(r, auth, nil)
			if auth.State == payment.StateCanceled {
				out.Voided = true
				s.compensation(step, "voided")
				// Nothing was written: the next round decides on r. After a refusal the void
				// may have recorded it (the next attempt's key), so that round reads.
				current = &r
			}
			// Canceled, or the truth read after a refusal (captured, refunded, still
			// processing): the next round decides from it.
			continue
		case reservation.ActRefund:
			answer, err := s.refund(ctx, r)
			if err != nil {
				return out, s.recordUncertain(ctx, r, err)
			}
			out.Refunded = true
			s.compensation(step, "refund_requested")
			known, current = &answer, &r
			continue
		case reservation.ActConfirm:
			written, err = s.Store.Confirm(ctx, id, reservation.GuardOf(r))
			wrote = err == nil
		case reservation.ActReacquire:
			written, err = s.Store.Reacquire(ctx, id, reservation.GuardOf(r))
			var seat *reservation.SeatUnavailable
			switch {
			case err == nil:
				wrote = true
				s.compensation(step, "reacquired")
			case errors.As(err, &seat):
				s.log().InfoContext(ctx, "late payment: the seats were taken by another buyer", "reservationId", id, "correlationId", in.CorrelationID)
				seatsLost, err = true, nil
			}
		case reservation.ActRelease:
			written, err = s.Store.Release(ctx, ReleaseRequest{ReservationID: id, Guard: reservation.GuardOf(r), Expired: d.Expired,
				Reason: releaseReason(opt.reason, d), NotifyCustomer: !d.Expired})
			if err == nil {
				out.Released, wrote = true, true
				s.compensation(step, "seats_released")
			}
		case reservation.ActRecord:
			u := PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r), Event: d.Event, From: r.Payment,
				CaptureBefore: truth.captureBefore, RefundID: truth.refundID, ReleaseSeats: d.ReleaseSeats, Expired: d.Expired,
				Reason: recordReason(opt.reason, d), NotifyCustomer: d.Event.NotifiesCustomer()}
			written, err = s.Store.UpdatePayment(ctx, u)
			wrote = err == nil
			if wrote && d.ReleaseSeats {
				out.Released = true
				s.compensation(step, "seats_released")
			}
		}
		if wrote {
			current = &written
		}
		if wrote && truth.truth != "" {
			// Our own write moved no money: the answer still holds for what it wrote, except
			// a counted refund failure, after which the money simply shows captured.
			next := truth
			next.version = written.Version
			if d.Event == reservation.RefundFailed {
				next.truth, next.refundID = reservation.TruthCaptured, ""
			}
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

// markUnknown records UNKNOWN_NEEDS_RECONCILIATION where the domain allows it
// (reservation.MayRecordUnknown).
func (s *Steps) markUnknown(ctx context.Context, r reservation.Reservation, detail string) error {
	if !reservation.MayRecordUnknown(r.Payment) {
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
	// refundID is the refund the answer is about, recorded with the next payment record.
	refundID string
	// version is the reservation version the answer was read for.
	version int64
}

// providerTruth asks the provider about r's money: the PaymentIntent, and the refund when one
// was made, because a payment looks refunded at the provider while its refund is still
// pending. A refund whose id was lost (its answer, or the write of its id) is found again by
// repeating the same refund attempt, whose idempotency key returns the same refund.
func (s *Steps) providerTruth(ctx context.Context, r reservation.Reservation) providerTruth {
	if r.PaymentIntentID == "" {
		return providerTruth{truth: reservation.TruthNoPayment, version: r.Version}
	}
	auth, err := s.Payments.Retrieve(ctx, r.PaymentIntentID)
	if err != nil {
		s.log().WarnContext(ctx, "the provider could not answer", "reservationId", r.ID, "paymentIntentId", r.PaymentIntentID, "error", err.Error())
		return providerTruth{truth: reservation.TruthUnavailable, version: r.Version}
	}
	refundID := r.RefundID
	if refundID == "" && r.Payment == reservation.RefundPending {
		replay, err := s.Payments.Refund(ctx, payment.RefundRequest{ReservationID: r.ID, PaymentIntentID: r.PaymentIntentID,
			Attempt: r.RefundAttempts + 1})
		switch {
		case payment.IsUncertain(err):
			return providerTruth{truth: reservation.TruthUnavailable, status: auth.ProviderStatus, version: r.Version}
		case err != nil || replay.RefundID == "":
			// Refused: the money was returned by a refund that is not ours under this key
			// (made in the dashboard, or a key the provider forgot after 24 hours). That is an
			// answer: the attempt counts as failed, so repeated refusals escalate to a person
			// instead of polling forever.
			s.log().WarnContext(ctx, "a pending refund's id could not be found again; counted as a failed attempt",
				"reservationId", r.ID, "attempt", r.RefundAttempts+1, "error", fmt.Sprint(err))
			return providerTruth{truth: reservation.TruthRefundFailed, status: auth.ProviderStatus, version: r.Version}
		}
		refundID = replay.RefundID
		if _, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r), RefundID: refundID}); err != nil {
			// The next round finds it again the same way.
			s.log().WarnContext(ctx, "refund id not recorded", "reservationId", r.ID, "refundId", refundID, "error", err.Error())
		}
	}
	var rf *payment.Refund
	if refundID != "" && (auth.State == payment.StatePaid || auth.State == payment.StateRefunded) {
		got, err := s.Payments.RetrieveRefund(ctx, refundID)
		if err != nil {
			s.log().WarnContext(ctx, "the provider could not answer about the refund", "reservationId", r.ID, "refundId", refundID, "error", err.Error())
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
			// Only the refund itself says it succeeded: a pending one already shows here.
			t.truth = reservation.TruthRefundPending
		}
		if rf != nil {
			*t = refundTruth(r, *rf, t.status, t.captureBefore)
		}
	default:
		t.truth = reservation.TruthUnavailable
	}
	return t
}

// refund returns the captured money, attempt RefundAttempts+1 with its own idempotency key,
// and answers with the truth the refund's answer gives: pending (or succeeded, or failed) with
// its id, which the next record stores. A refused refund is a failed attempt (counted, so the
// next uses a new key and repeated refusals escalate); an unanswered one is a
// *PaymentUncertain, repeated with the same key.
func (s *Steps) refund(ctx context.Context, r reservation.Reservation) (providerTruth, error) {
	rf, err := s.Payments.Refund(ctx, payment.RefundRequest{ReservationID: r.ID, PaymentIntentID: r.PaymentIntentID,
		Attempt: r.RefundAttempts + 1})
	if payment.IsUncertain(err) {
		return providerTruth{}, &PaymentUncertain{ReservationID: r.ID, Detail: "refund: " + err.Error()}
	}
	if err != nil {
		s.log().WarnContext(ctx, "refund refused; counted as a failed attempt", "reservationId", r.ID, "attempt", r.RefundAttempts+1, "error", err.Error())
		return providerTruth{truth: reservation.TruthRefundFailed, version: r.Version}, nil
	}
	return refundTruth(r, rf, "", time.Time{}), nil
}

// refundTruth is the truth a refund of r shows.
func refundTruth(r reservation.Reservation, rf payment.Refund, status string, captureBefore time.Time) providerTruth {
	t := providerTruth{status: status, captureBefore: captureBefore, refundID: rf.RefundID, version: r.Version}
	switch rf.Status {
	case payment.RefundSucceeded:
		t.truth = reservation.TruthRefunded
	case payment.RefundPending, payment.RefundRequiresAction:
		t.truth = reservation.TruthRefundPending
	default:
		// Failed or canceled: the money stays captured, and the attempt is counted.
		t.truth = reservation.TruthRefundFailed
	}
	return t
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
	switch {
	case truth.State == payment.StateCanceled, truth.State == payment.StatePaid, truth.State == payment.StateRefunded:
		return truth, nil
	case truth.State == payment.StateAuthorizing && truth.ProviderStatus == "processing":
		// Answered: it cannot be voided while processing. The decision reads that truth
		// (seats back if they may go, then wait), so nothing is unknown here; the refusal is
		// recorded so the next void uses a new key.
		s.recordRefusedCancel(ctx, r, attempt, truth.ProviderStatus)
		return truth, nil
	}
	detail := refusal + "; the authorization is still open, provider status " + truth.ProviderStatus
	if !s.recordRefusedCancel(ctx, r, attempt, truth.ProviderStatus) {
		detail += "; refusal not recorded"
	}
	return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: detail}
}

// recordRefusedCancel records a cancel the provider refused (without bumping the version), so
// the next void is a new attempt with its own key. Not recorded, the next run repeats this
// attempt, meets the same stored refusal and records it then.
func (s *Steps) recordRefusedCancel(ctx context.Context, r reservation.Reservation, attempt int, status string) bool {
	if _, err := s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
		CancelAttempts: attempt}); err != nil {
		s.log().WarnContext(ctx, "refused cancel not recorded", "reservationId", r.ID, "refusedAttempt", attempt, "error", err.Error())
		return false
	}
	s.log().InfoContext(ctx, "cancel refused while the authorization is open; the next void uses a new attempt",
		"reservationId", r.ID, "correlationId", r.CorrelationID, "refusedAttempt", attempt, "providerStatus", status)
	return true
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
		return outbox.ReasonHoldExpired
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
