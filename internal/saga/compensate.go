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

		// Money first: seats may not go back while money may be held.
		switch r.Payment {
		case reservation.Authorizing, reservation.Authorized, reservation.UnknownNeedsReconciliation:
			auth, err := s.void(ctx, r, cancelReason(reason))
			if err != nil {
				s.outcome(ctx, "compensate", in, outcomeName(err), err)
				return res, err
			}
			event, label := reservation.VoidPayment, "voided"
			if auth.State == payment.StateRefunded || auth.State == payment.StatePaid {
				event, label = reservation.RefundPayment, "refunded"
			}
			if auth.State == payment.StatePaid {
				// The money was captured after all: refund it (next round records it).
				if _, err := s.Payments.Refund(ctx, payment.RefundRequest{ReservationID: id, PaymentIntentID: r.PaymentIntentID, Reason: "requested_by_customer"}); err != nil {
					routed := paymentError(id, err)
					s.outcome(ctx, "compensate", in, outcomeName(routed), routed)
					return res, routed
				}
			}
			from := r.Payment
			if event == reservation.RefundPayment && from != reservation.UnknownNeedsReconciliation {
				// Only the reconciliation state records a refund straight from an authorization.
				_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
					Event: reservation.OutcomeUnknown, From: from, Reason: "captured before compensation"})
				if err = s.storeStep(ctx, "compensate", in, err); err != nil {
					return res, err
				}
				continue
			}
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
				Event: event, From: from, Reason: reason, NotifyCustomer: true})
			if err = s.storeStep(ctx, "compensate", in, err); err != nil {
				return res, err
			}
			res.Payment = label
			s.compensation("compensate", label)
			continue

		case reservation.Paid:
			if _, err := s.Payments.Refund(ctx, payment.RefundRequest{ReservationID: id, PaymentIntentID: r.PaymentIntentID, Reason: "requested_by_customer"}); err != nil {
				routed := paymentError(id, err)
				s.outcome(ctx, "compensate", in, outcomeName(routed), routed)
				return res, routed
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
			// nothing can authorize it later. The cancel key makes this a no-op when repeated.
			if r.PaymentIntentID != "" && res.Payment == "none" {
				if _, err := s.void(ctx, r, cancelReason(reason)); err != nil {
					s.outcome(ctx, "compensate", in, outcomeName(err), err)
					return res, err
				}
				res.Payment = "voided"
				s.compensation("compensate", "voided")
			}
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

// void cancels the reservation's PaymentIntent with the key {reservationId}:cancel and
// returns the provider's truth afterwards. A cancel the provider refuses because the intent
// is already canceled (or was captured) is answered by retrieving the truth.
func (s *Steps) void(ctx context.Context, r reservation.Reservation, why string) (payment.Authorization, error) {
	if r.PaymentIntentID == "" {
		return payment.Authorization{State: payment.StateCanceled}, nil
	}
	auth, err := s.Payments.Cancel(ctx, payment.CancelRequest{ReservationID: r.ID, PaymentIntentID: r.PaymentIntentID, Reason: why})
	if err == nil {
		return auth, nil
	}
	if payment.IsUncertain(err) {
		return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: err.Error()}
	}
	truth, rerr := s.Payments.Retrieve(ctx, r.PaymentIntentID)
	if rerr != nil {
		return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: "cancel refused (" + err.Error() + "); truth unknown: " + rerr.Error()}
	}
	switch truth.State {
	case payment.StateCanceled, payment.StatePaid, payment.StateRefunded:
		return truth, nil
	}
	return payment.Authorization{}, &PaymentUncertain{ReservationID: r.ID, Detail: "cancel refused: " + err.Error() + "; provider status " + truth.ProviderStatus}
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
