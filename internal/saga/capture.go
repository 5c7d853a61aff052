package saga

import (
	"context"
	"errors"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Capture takes the money for confirmed seats. It records CAPTURE_PENDING before asking the
// provider (the seats cannot be released while money may move), then captures with the
// idempotency key {reservationId}:capture on every attempt, so the ASL's retries of an
// ambiguous capture charge at most once.
//
// Capture-failure policy (DESIGN.md §1: never charge for a seat we could not give, never keep a
// seat we were not paid for): when the provider refuses the capture definitively and its truth
// confirms nothing was captured, the payment is marked FAILED, the seats are released and the
// outbox carries a customer notification; the step then returns CaptureFailed. An uncertain
// capture returns PaymentUncertain: the ASL retries, then reconciles.
func (s *Steps) Capture(ctx context.Context, st State) (CaptureResult, error) {
	in := st.Input
	id := in.ReservationID
	for round := 0; round < maxRounds; round++ {
		r, err := s.get(ctx, id)
		if err != nil {
			s.outcome(ctx, "capture", in, "error", err)
			return CaptureResult{}, err
		}
		switch {
		case r.Payment == reservation.Paid:
			s.outcome(ctx, "capture", in, "paid", nil, "paymentIntentId", r.PaymentIntentID)
			return CaptureResult{PaymentIntentID: r.PaymentIntentID, AmountCaptured: r.Amount, Version: r.Version}, nil

		case r.Payment == reservation.Failed:
			// The policy already ran (or is half done after a crash): finish the release.
			if err := s.releaseAfterCaptureFailure(ctx, in, r); err != nil {
				if retryable(err) {
					continue
				}
				return CaptureResult{}, err
			}
			err := &CaptureFailed{ReservationID: id, Detail: "the provider refused the capture; seats released"}
			s.outcome(ctx, "capture", in, "capture_failed", err)
			return CaptureResult{}, err

		case r.Inventory != reservation.Confirmed:
			err := &ConflictError{ReservationID: id, Detail: "seats are " + string(r.Inventory) + ", not CONFIRMED"}
			s.outcome(ctx, "capture", in, "error", err)
			return CaptureResult{}, err

		case r.Payment == reservation.Authorized:
			_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{
				ReservationID: id, Guard: reservation.GuardOf(r),
				Event: reservation.RequestCapture, From: reservation.Authorized,
			})
			if err = s.storeStep(ctx, "capture", in, err); err != nil {
				return CaptureResult{}, err
			}

		case r.Payment == reservation.CapturePending || r.Payment == reservation.UnknownNeedsReconciliation:
			auth, err := s.Payments.Capture(ctx, payment.CaptureRequest{ReservationID: id, PaymentIntentID: r.PaymentIntentID})
			if err != nil {
				auth, err = s.captureTruth(ctx, id, r, err)
				if err != nil {
					var failed *CaptureFailed
					if errors.As(err, &failed) {
						if perr := s.markCaptureFailed(ctx, in, r, failed.Detail); perr != nil {
							if retryable(perr) {
								continue
							}
							return CaptureResult{}, perr
						}
						continue
					}
					s.outcome(ctx, "capture", in, outcomeName(err), err)
					return CaptureResult{}, err
				}
			}
			if auth.State != payment.StatePaid {
				err := &PaymentUncertain{ReservationID: id, Detail: "capture answered " + auth.ProviderStatus}
				s.outcome(ctx, "capture", in, "uncertain", err)
				return CaptureResult{}, err
			}
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{
				ReservationID: id, Guard: reservation.GuardOf(r),
				Event: reservation.CaptureOK, From: r.Payment,
			})
			if err = s.storeStep(ctx, "capture", in, err); err != nil {
				return CaptureResult{}, err
			}

		default:
			err := &ConflictError{ReservationID: id, Detail: "payment is " + string(r.Payment) + "; nothing to capture"}
			s.outcome(ctx, "capture", in, "error", err)
			return CaptureResult{}, err
		}
	}
	err := &TransactionConflict{Detail: "reservation " + id + " kept changing under the capture step"}
	s.outcome(ctx, "capture", in, "error", err)
	return CaptureResult{}, err
}

// captureTruth decides what a failed capture means. Uncertain stays uncertain. A definitive
// refusal is checked against the provider's truth: the capture may have happened under the
// same key earlier (then it is paid), or the authorization is gone (then CaptureFailed).
func (s *Steps) captureTruth(ctx context.Context, id string, r reservation.Reservation, capErr error) (payment.Authorization, error) {
	if payment.IsUncertain(capErr) {
		return payment.Authorization{}, &PaymentUncertain{ReservationID: id, Detail: capErr.Error()}
	}
	auth, err := s.Payments.Retrieve(ctx, r.PaymentIntentID)
	if err != nil {
		return payment.Authorization{}, &PaymentUncertain{ReservationID: id, Detail: "capture refused (" + capErr.Error() + ") and the truth is unknown: " + err.Error()}
	}
	switch auth.State {
	case payment.StatePaid:
		return auth, nil
	case payment.StateAuthorized:
		// Still capturable: the refusal was about this request, not the money. Let the
		// ASL's retry try again rather than giving up a valid authorization.
		return payment.Authorization{}, &PaymentUncertain{ReservationID: id, Detail: "capture refused but still capturable: " + capErr.Error()}
	}
	return payment.Authorization{}, &CaptureFailed{ReservationID: id, Detail: capErr.Error() + "; provider status " + auth.ProviderStatus}
}

// markCaptureFailed records the definitive capture failure (payment FAILED, notifying).
func (s *Steps) markCaptureFailed(ctx context.Context, in Input, r reservation.Reservation, detail string) error {
	from := r.Payment
	if from == reservation.UnknownNeedsReconciliation || from == reservation.CapturePending {
		_, err := s.Store.UpdatePayment(ctx, PaymentUpdate{
			ReservationID: r.ID, Guard: reservation.GuardOf(r),
			Event: reservation.PaymentDeclined, From: from,
			Reason: "capture_failed: " + detail, NotifyCustomer: true,
		})
		if err != nil {
			return storeError(r.ID, err)
		}
	}
	return nil
}

// releaseAfterCaptureFailure releases the seats of a reservation whose capture failed.
func (s *Steps) releaseAfterCaptureFailure(ctx context.Context, in Input, r reservation.Reservation) error {
	if r.Inventory == reservation.Released {
		return nil
	}
	_, err := s.Store.Release(ctx, ReleaseRequest{
		ReservationID: r.ID, Guard: reservation.GuardOf(r),
		Reason: "capture_failed", NotifyCustomer: true,
	})
	if err != nil {
		routed := storeError(r.ID, err)
		if !retryable(routed) {
			s.outcome(ctx, "capture", in, "error", routed)
		}
		return routed
	}
	s.compensation("capture", "seats_released")
	return nil
}
