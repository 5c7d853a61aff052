package saga

import (
	"context"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Capture takes the money for confirmed seats by carrying out the settlement decision with
// capturing allowed: it records CAPTURE_PENDING before asking the provider (the seats cannot
// be released while money may move), then captures with the idempotency key
// {reservationId}:capture on every attempt, so the ASL's retries of an ambiguous capture
// charge at most once.
//
// Capture-failure policy (never charge for a seat we could not give, never keep a seat we were
// not paid for): when the provider refuses the capture and its truth shows the authorization
// gone, the decision records the failure and releases the seats in one write, with a customer
// notification in its outbox record; the step then returns CaptureFailed. An uncertain
// capture returns PaymentUncertain: the ASL retries, then reconciles.
func (s *Steps) Capture(ctx context.Context, st State) (CaptureResult, error) {
	in := st.Input
	id := in.ReservationID
	out, err := s.settle(ctx, in, "capture", settleOptions{reason: "capture"})
	if err != nil {
		s.fail(ctx, "capture", in, err)
		return CaptureResult{}, err
	}
	d := out.Last
	switch {
	case d.Action == reservation.ActDone && d.Outcome == reservation.SettledSold:
		s.outcome(ctx, "capture", in, "paid", nil, "paymentIntentId", out.R.PaymentIntentID)
		return CaptureResult{PaymentIntentID: out.R.PaymentIntentID, AmountCaptured: out.R.Amount, Version: out.R.Version}, nil
	case d.Action == reservation.ActDone:
		err := &CaptureFailed{ReservationID: id, Detail: "the provider refused the capture (" + out.ProviderStatus + "); seats released"}
		s.fail(ctx, "capture", in, err)
		return CaptureResult{}, err
	case d.Action == reservation.ActWait:
		err := &PaymentUncertain{ReservationID: id, Detail: "capture waits: " + d.Reason}
		s.fail(ctx, "capture", in, err)
		return CaptureResult{}, err
	}
	err = &ConflictError{ReservationID: id, Detail: "nothing to capture: " + out.describe()}
	s.fail(ctx, "capture", in, err)
	return CaptureResult{}, err
}
