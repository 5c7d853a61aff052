package saga

import (
	"context"
	"errors"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Compensate undoes a reservation that will not be sold, as new recorded operations rather
// than a rollback, by carrying out the settlement decision: the money is voided (or refunded)
// and recorded, and only then are the seats released, in the same write as the record where
// one is due. The reason is the error that led here ($.failure.Error). A customer cancel is
// recorded on the reservation before anything else (the api records it first; this covers a
// signal that arrived without it), so no later provider truth can sell what was cancelled.
//
// When the decision does not unwind (a late authorization the policy reacquires, a payment
// still processing, a person needed) the step returns an error the ASL's catch sends on to
// "Reconcile payment", which routes on the decision's outcome.
func (s *Steps) Compensate(ctx context.Context, st State) (CompensationResult, error) {
	in := st.Input
	id := in.ReservationID
	reason := failureName(st)
	if reason == "" {
		reason = "unknown"
	}
	res := CompensationResult{Reason: reason, Payment: "none"}
	r, err := s.Store.Get(ctx, id)
	var nf *reservation.NotFound
	if errors.As(err, &nf) {
		// The claim never landed: nothing to give back.
		s.outcome(ctx, "compensate", in, "nothing_to_do", nil)
		return res, nil
	}
	if err != nil {
		routed := storeError(id, err)
		s.fail(ctx, "compensate", in, routed)
		return res, routed
	}
	// The settlement decides first on what this step just read or wrote; after a lost race it
	// reads again.
	first := &r
	if reason == ErrCustomerCanceled && !r.CustomerCanceled {
		canceled, err := s.Store.Cancel(ctx, id, reservation.GuardOf(r))
		first = &canceled
		if err != nil {
			first = nil
			if err = s.afterWrite(ctx, "compensate", in, err); err != nil {
				s.fail(ctx, "compensate", in, err)
				return res, err
			}
		}
	}
	out, err := s.settle(ctx, in, "compensate", settleOptions{stopAtCapture: true, reason: reason, first: first})
	res.Version = out.R.Version
	res.SeatsReleased = out.Released
	switch {
	case out.Refunded || out.R.Payment == reservation.Refunded || out.R.Payment == reservation.RefundPending:
		res.Payment = "refunded"
	case out.Voided || out.R.Payment == reservation.Canceled:
		res.Payment = "voided"
	}
	if err != nil {
		s.fail(ctx, "compensate", in, err)
		return res, err
	}
	if out.Last.Action == reservation.ActWait && out.Last.Waiting == reservation.WaitProvider {
		// The provider must move first (a payment still processing, a refund pending): the
		// ASL retries this step, then reconciles with its backoff.
		err := &PaymentUncertain{ReservationID: id, Detail: "compensation waits for the provider: " + out.Last.Reason}
		s.fail(ctx, "compensate", in, err)
		return res, err
	}
	if out.Last.Action != reservation.ActDone || out.Last.Outcome == reservation.SettledSold {
		err := &SettlementContinues{ReservationID: id, Detail: out.describe()}
		s.outcome(ctx, "compensate", in, outcomeHandedToReconcile, err)
		return res, err
	}
	s.outcome(ctx, "compensate", in, "compensated", nil, "payment", res.Payment, "seatsReleased", res.SeatsReleased,
		"settled", string(out.Last.Outcome))
	return res, nil
}
