package saga

import (
	"context"
	"errors"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Compensate undoes a reservation that will not be sold, as new recorded operations rather
// than a rollback: it voids the authorization (or refunds a capture), records that, and then
// releases the seats conditionally. The reason is the error that led here ($.failure.Error).
// Re-running it finds each operation already recorded and moves on.
func (s *Steps) Compensate(ctx context.Context, st State) (CompensationResult, error) {
	in := st.Input
	id := in.ReservationID
	reason := "unknown"
	if st.Failure != nil && st.Failure.Error != "" {
		reason = st.Failure.Error
	}
	res := CompensationResult{Reason: reason, Payment: "none"}
	for round := 0; round < maxRounds; round++ {
		r, err := s.Store.Get(ctx, id)
		var nf *reservation.NotFound
		if errors.As(err, &nf) {
			// The claim never landed: nothing to give back.
			s.outcome(ctx, "compensate", in, "nothing_to_do", nil)
			return res, nil
		}
		if err != nil {
			routed := storeError(id, err)
			s.outcome(ctx, "compensate", in, "error", routed)
			return res, routed
		}
		res.Version = r.Version

		if reason == ErrCustomerCanceled && !r.CustomerCanceled {
			// Recorded before any money moves: if this step cannot void the authorization,
			// reconciliation (here or in the sweeper) must void it too, never confirm and
			// capture what the customer canceled. The record keeps the version.
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
				CustomerCanceled: true, Reason: "customer_canceled"})
			if err = s.storeStep(ctx, "compensate", in, err); err != nil {
				return res, err
			}
			continue
		}

		// Money first: seats may not go back while money may be held.
		switch r.Payment {
		case reservation.Authorizing, reservation.Authorized, reservation.UnknownNeedsReconciliation:
			truth, err := s.void(ctx, r, cancelReason(reason))
			if err != nil {
				return res, s.compensateUnknown(ctx, in, r, err)
			}
			from := r.Payment
			switch truth.State {
			case payment.StatePaid:
				// The money was captured after all: refund it. The next round's void finds
				// the intent refunded and records that.
				if err := s.refund(ctx, r); err != nil {
					return res, s.compensateUnknown(ctx, in, r, err)
				}
				s.compensation("compensate", "refund_requested")
				if from == reservation.UnknownNeedsReconciliation {
					continue
				}
				// Only the reconciliation state records a refund straight from an
				// authorization; going there first also keeps the seats protected.
				_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
					Event: reservation.OutcomeUnknown, From: from, Reason: "captured before compensation"})
				if err = s.storeStep(ctx, "compensate", in, err); err != nil {
					return res, err
				}
				continue
			case payment.StateRefunded:
				if from != reservation.UnknownNeedsReconciliation {
					_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
						Event: reservation.OutcomeUnknown, From: from, Reason: "refunded before compensation"})
					if err = s.storeStep(ctx, "compensate", in, err); err != nil {
						return res, err
					}
					continue
				}
				_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
					Event: reservation.RefundPayment, From: from, Reason: reason, NotifyCustomer: true})
				if err = s.storeStep(ctx, "compensate", in, err); err != nil {
					return res, err
				}
				res.Payment = "refunded"
				s.compensation("compensate", "refunded")
				continue
			}
			// void returns no other state without an error: the intent is canceled.
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
				Event: reservation.VoidPayment, From: from, Reason: reason, NotifyCustomer: true})
			if err = s.storeStep(ctx, "compensate", in, err); err != nil {
				return res, err
			}
			res.Payment = "voided"
			s.compensation("compensate", "voided")
			continue

		case reservation.Paid:
			if err := s.refund(ctx, r); err != nil {
				return res, s.compensateUnknown(ctx, in, r, err)
			}
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
				Event: reservation.RefundPayment, From: reservation.Paid, Reason: reason, NotifyCustomer: true})
			if err = s.storeStep(ctx, "compensate", in, err); err != nil {
				return res, err
			}
			res.Payment = "refunded"
			s.compensation("compensate", "refunded")
			continue

		case reservation.CapturePending:
			// A capture may be in flight; only reconciliation can say what happened.
			err := &PaymentUncertain{ReservationID: id, Detail: "a capture is pending; reconcile first"}
			s.outcome(ctx, "compensate", in, "uncertain", err)
			return res, err

		case reservation.Failed:
			// A declined PaymentIntent waits for another payment method; cancel it so that
			// nothing can authorize it later, and record the provider's answer: CANCELED,
			// REFUNDED (after refunding a capture), or UNKNOWN when the void is not answered,
			// which keeps the seats protected until reconciliation knows.
			if r.PaymentIntentID == "" {
				break
			}
			truth, err := s.void(ctx, r, cancelReason(reason))
			if err != nil {
				return res, s.compensateUnknown(ctx, in, r, err)
			}
			event, notify := reservation.VoidPayment, false
			switch truth.State {
			case payment.StatePaid:
				// Captured although the saga gave up on it: the seats are not being sold,
				// so the money goes back. The next round's void finds it refunded.
				if err := s.refund(ctx, r); err != nil {
					return res, s.compensateUnknown(ctx, in, r, err)
				}
				s.compensation("compensate", "refund_requested")
				continue
			case payment.StateRefunded:
				// The customer was charged and has the money back: tell them.
				event, notify = reservation.RefundPayment, true
			}
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
				Event: event, From: reservation.Failed, Reason: reason, NotifyCustomer: notify})
			if err = s.storeStep(ctx, "compensate", in, err); err != nil {
				return res, err
			}
			res.Payment = "voided"
			if event == reservation.RefundPayment {
				res.Payment = "refunded"
			}
			s.compensation("compensate", res.Payment)
			continue
		case reservation.Canceled:
			if res.Payment == "none" {
				res.Payment = "voided"
			}
		case reservation.Refunded:
			if res.Payment == "none" {
				res.Payment = "refunded"
			}
		}

		// Then the seats.
		if r.Inventory == reservation.Released {
			s.outcome(ctx, "compensate", in, "compensated", nil, "payment", res.Payment, "seatsReleased", res.SeatsReleased)
			return res, nil
		}
		_, err = s.Store.Release(ctx, ReleaseRequest{
			ReservationID: id, Guard: reservation.GuardOf(r),
			Expired: reason == ErrHoldExpired && !r.HoldLive(s.now()),
			Reason:  releaseReason(reason), NotifyCustomer: reason != ErrHoldExpired,
		})
		if err = s.storeStep(ctx, "compensate", in, err); err != nil {
			return res, err
		}
		res.SeatsReleased = true
		s.compensation("compensate", "seats_released")
	}
	err := &TransactionConflict{Detail: "reservation " + id + " kept changing under the compensate step"}
	s.outcome(ctx, "compensate", in, "error", err)
	return res, err
}

// void cancels the reservation's PaymentIntent with the key {reservationId}:cancel:{attempt}
// and returns the provider's truth afterwards. Without an error the truth is CANCELED, PAID
// (captured: refund it) or REFUNDED; nothing else. A cancel the provider refuses (already
// canceled, captured, or in a state that cannot be canceled) is answered by retrieving the
// truth. Every other answer is a *PaymentUncertain: an unanswered cancel, and an
// authorization that is still open (AUTHORIZED after a late authorization, or still
// processing), which the void must reach later; the seats may not go back on either.
//
// The attempt is the stored count of refused cancels plus one, so it is deterministic: a
// redelivered step, and a retry after an unanswered cancel, reuse the key. A refusal while
// the authorization is still open is recorded (without bumping the version) before the step
// reports it, because the provider replays a refusal stored under a key for 24 hours and
// would otherwise refuse the void that can succeed once the payment stops processing.
func (s *Steps) void(ctx context.Context, r reservation.Reservation, why string) (payment.Authorization, error) {
	if r.PaymentIntentID == "" {
		return payment.Authorization{State: payment.StateCanceled}, nil
	}
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
		CancelAttempts: attempt, Reason: "cancel attempt refused"}); err != nil {
		// Not recorded: the next run repeats this attempt, meets the same stored refusal
		// and records it then.
		detail += "; refusal not recorded: " + err.Error()
	} else {
		s.log().InfoContext(ctx, "cancel refused while the authorization is open; the next void uses a new attempt",
			"reservationId", r.ID, "correlationId", r.CorrelationID, "refusedAttempt", attempt, "providerStatus", truth.ProviderStatus)
	}
	return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: detail}
}

// refund returns a captured payment with the key {reservationId}:refund. It returns nil once
// the provider accepted the refund (or the truth shows the payment refunded already); an
// unanswered refund, a refused one whose payment is not refunded, and a refund the provider
// reports failed or canceled are a *PaymentUncertain: the money may still be held. Every
// caller sends the same request, so the key never meets other parameters.
func (s *Steps) refund(ctx context.Context, r reservation.Reservation) error {
	rf, err := s.Payments.Refund(ctx, payment.RefundRequest{ReservationID: r.ID, PaymentIntentID: r.PaymentIntentID})
	if err == nil {
		if rf.Status == "failed" || rf.Status == "canceled" {
			return &PaymentUncertain{ReservationID: r.ID, Detail: "refund " + rf.RefundID + " ended " + rf.Status + "; the money is still held"}
		}
		return nil
	}
	if payment.IsUncertain(err) {
		return &PaymentUncertain{ReservationID: r.ID, Detail: "refund: " + err.Error()}
	}
	truth, rerr := s.Payments.Retrieve(ctx, r.PaymentIntentID)
	switch {
	case rerr != nil:
		return &PaymentUncertain{ReservationID: r.ID, Detail: "refund refused (" + err.Error() + "); truth unknown: " + rerr.Error()}
	case truth.State == payment.StateRefunded:
		return nil
	}
	return &PaymentUncertain{ReservationID: r.ID, Detail: "refund refused (" + err.Error() + "); provider status " + truth.ProviderStatus}
}

// compensateUnknown ends a compensate attempt whose void or refund has no known outcome: it
// records UNKNOWN_NEEDS_RECONCILIATION where the table allows it (the seats stay protected
// and the reservation joins the reconciliation index) and returns the routed error, so the
// ASL retries the step with the same idempotency keys and then reconciles.
func (s *Steps) compensateUnknown(ctx context.Context, in Input, r reservation.Reservation, cause error) error {
	if err := s.markUnknown(ctx, r, cause.Error()); err != nil && !retryable(err) {
		s.outcome(ctx, "compensate", in, "error", err)
		return err
	}
	s.outcome(ctx, "compensate", in, outcomeName(cause), cause)
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

// cancelReason maps the saga's reason to Stripe's cancellation_reason vocabulary.
func cancelReason(reason string) string {
	if reason == ErrCustomerCanceled {
		return "requested_by_customer"
	}
	return "abandoned"
}

func releaseReason(reason string) string {
	switch reason {
	case ErrPaymentDeclined:
		return "payment_declined"
	case ErrCustomerCanceled:
		return "customer_canceled"
	case ErrHoldExpired:
		return "hold_expired"
	}
	return "compensation"
}
