package saga

import (
	"context"
	"errors"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Confirm sells the seats (the Lambda "confirm"; the payment method is confirmed by Authorize):
// PAYMENT_PENDING -> CONFIRMED, with owner, version and the hold's deadline in the write
// condition. If the webhook's report arrived (the state's $.payment) before its own guarded
// write is visible, the provider's truth is recorded first. An expired hold ends in
// HoldExpired, which the ASL sends to reconciliation (the late-success policy). It reads only
// the reservation from the store, never $.payment, so it runs the same after the webhook's
// SendTaskSuccess and after the ASL caught PaymentAlreadyAuthorized (whose {"Error","Cause"}
// lands at $.payment).
func (s *Steps) Confirm(ctx context.Context, st State) (Confirmation, error) {
	in := st.Input
	id := in.ReservationID
	// written is the reservation as this step's last write left it: the next round decides on
	// it rather than reading it back (see Authorize).
	var written *reservation.Reservation
	for round := 0; round < maxRounds; round++ {
		var r reservation.Reservation
		var err error
		if written != nil {
			r, written = *written, nil
		} else if r, err = s.get(ctx, id); err != nil {
			s.fail(ctx, "confirm", in, err)
			return Confirmation{}, err
		}
		switch {
		case r.Inventory == reservation.Confirmed:
			s.outcome(ctx, "confirm", in, "confirmed", nil, "version", r.Version)
			return Confirmation{Version: r.Version}, nil

		case r.CustomerCanceled:
			// Recorded before it was acknowledged: the seats are never sold, whatever the
			// webhook reported. The ASL sends this to "Void payment after customer cancel".
			err := &CustomerCanceled{ReservationID: id}
			s.fail(ctx, "confirm", in, err)
			return Confirmation{}, err

		case r.Inventory != reservation.PaymentPending:
			err := &ConflictError{ReservationID: id, Detail: "seats are " + string(r.Inventory) + ", not PAYMENT_PENDING"}
			s.fail(ctx, "confirm", in, err)
			return Confirmation{}, err

		case !r.HoldLive(s.now()):
			err := &reservation.HoldExpired{ReservationID: id, ExpiredAt: r.HoldExpiresAt, Now: s.now(),
				Reason: "the authorization arrived after the deadline"}
			s.fail(ctx, "confirm", in, err)
			return Confirmation{}, err

		case r.Payment == reservation.Authorizing || r.Payment == reservation.UnknownNeedsReconciliation:
			// The state was told the payment is authorized; believe only the provider.
			auth, err := s.Payments.Retrieve(ctx, r.PaymentIntentID)
			if err != nil {
				routed := paymentError(id, err)
				s.fail(ctx, "confirm", in, routed)
				return Confirmation{}, routed
			}
			if auth.State != payment.StateAuthorized {
				err := &ConflictError{ReservationID: id, Detail: "the provider reports " + auth.ProviderStatus + ", not an authorization"}
				s.fail(ctx, "confirm", in, err)
				return Confirmation{}, err
			}
			next, err := s.Store.UpdatePayment(ctx, PaymentUpdate{
				ReservationID: id, Guard: reservation.GuardOf(r),
				Event: reservation.AuthorizationOK, From: r.Payment, CaptureBefore: auth.CaptureBefore,
			})
			if err == nil {
				written = &next
			}
			if err = s.storeStep(ctx, "confirm", in, err); err != nil {
				return Confirmation{}, err
			}

		case r.Payment == reservation.Authorized:
			next, err := s.Store.Confirm(ctx, id, reservation.GuardOf(r))
			if err == nil {
				written = &next
			}
			var refused *reservation.GuardFailed
			if errors.As(err, &refused) {
				// A cancel landed between the read and the write: the next round routes it.
				continue
			}
			if err = s.storeStep(ctx, "confirm", in, err); err != nil {
				return Confirmation{}, err
			}

		default:
			err := &ConflictError{ReservationID: id, Detail: "payment is " + string(r.Payment) + ", not AUTHORIZED"}
			s.fail(ctx, "confirm", in, err)
			return Confirmation{}, err
		}
	}
	err := &TransactionConflict{Detail: "reservation " + id + " kept changing under the confirm step"}
	s.fail(ctx, "confirm", in, err)
	return Confirmation{}, err
}

// storeStep turns a write's error into nil (done, or lost a race: read again) or the routed
// error the step returns, which it also counts.
func (s *Steps) storeStep(ctx context.Context, step string, in Input, err error) error {
	if err == nil {
		return nil
	}
	routed := storeError(in.ReservationID, err)
	if retryable(routed) {
		s.log().DebugContext(ctx, "lost a race; reading again", "step", step, "reservationId", in.ReservationID, "error", err.Error())
		return nil
	}
	s.fail(ctx, step, in, routed)
	return routed
}
