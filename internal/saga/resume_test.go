package saga

import (
	"context"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Once a provider blip recorded UNKNOWN for a payment still waiting for the buyer (3-D
// Secure), reconcile does not answer "resume": the authorize step cannot take an UNKNOWN
// payment up again (its wait would end at once and its token would never be recorded). It
// polls instead (retry, never past the hold's deadline), with the seats held, and the next poll
// that finds the buyer's authorization goes on to sell.
func TestAnUnknownPaymentIsPolledNotResumed(t *testing.T) {
	ctx := context.Background()
	h, in := authorizingR1(t, "pm_3ds")
	h.pay.fail["retrieve"] = []error{&payment.Uncertain{Op: payment.OpRetrieve, Reason: "timeout"}}
	st := State{Input: in, Failure: &Failure{Error: "States.ALL"}}
	res, err := h.steps.Reconcile(ctx, st)
	if err != nil || res.Outcome != OutcomeRetry {
		t.Fatalf("provider down: %+v %v", res, err)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	st.Reconcile = &res
	// The provider answers: still waiting for the buyer, hold live. Not resumable from UNKNOWN.
	res, err = h.steps.Reconcile(ctx, st)
	if err != nil || res.Outcome != OutcomeRetry || res.Resumes != 0 || res.Hold != nil {
		t.Fatalf("reconcile answered %+v %v, want retry without a resume", res, err)
	}
	left := int(h.store.get("r1").HoldExpiresAt.Sub(h.now).Seconds())
	if res.RetryAfterSeconds < 1 || res.RetryAfterSeconds > left {
		t.Fatalf("retry after %ds, hold has %ds left", res.RetryAfterSeconds, left)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	h.expectSeatOwner("A1", "r1")
	if got := h.store.get("r1").TaskToken; got != "tok1" {
		t.Fatalf("task token %q, want tok1", got)
	}
	// The buyer completes 3-D Secure: the next poll confirms the seats and hands the capture on.
	st.Reconcile = &res
	h.pay.force("r1", "requires_capture")
	res, err = h.steps.Reconcile(ctx, st)
	if err != nil || res.Outcome != OutcomeCapture {
		t.Fatalf("after the buyer paid: %+v %v", res, err)
	}
	h.expectState("r1", reservation.Confirmed, reservation.CapturePending)
	h.expectSeatOwner("A1", "r1")
}
