package saga

import (
	"context"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// A customer cancel whose compensation cannot void the authorization ends in reconciliation,
// which must finish the cancel (void or refund) whatever the provider reports meanwhile, and
// never confirm, capture or reacquire. The intent is recorded on the reservation, so the
// sweeper's Resolve, which has no $.failure, knows it too.
func TestReconcileFinishesACustomerCancel(t *testing.T) {
	ctx := context.Background()
	// canceledUnanswered claims r1's seat with a payment waiting for 3-D Secure, has the
	// customer cancel, and loses the void's answer: the compensation ends uncertain.
	canceledUnanswered := func(t *testing.T, h *harness) Input {
		t.Helper()
		in := input("r1", "pm_3ds", "A1")
		h.claim(in)
		if err := h.authorize(in, "tok1"); err != nil {
			t.Fatal(err)
		}
		h.pay.fail["cancel"] = []error{cancelTimeout}
		_, err := h.steps.Compensate(ctx, State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}})
		wantErr[*PaymentUncertain](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		if !h.store.get("r1").CustomerCanceled {
			t.Fatal("the customer's cancel was not recorded")
		}
		return in
	}
	cases := []struct {
		name string
		// provider is what happened at the provider after the lost void; advance moves the
		// clock before reconciling.
		provider    string
		advance     time.Duration
		policy      reservation.LateSuccessPolicy
		wantPayment reservation.PaymentState
		wantIntent  string
		refunds     int
	}{
		{name: "buyer completed 3-D Secure, hold live: voided, not confirmed", provider: "requires_capture",
			policy: reservation.LateSuccessReacquire, wantPayment: reservation.Canceled, wantIntent: "canceled"},
		{name: "authorized after the hold lapsed, reacquire policy: voided, not reacquired", provider: "requires_capture",
			advance: 11 * time.Minute, policy: reservation.LateSuccessReacquire, wantPayment: reservation.Canceled, wantIntent: "canceled"},
		{name: "captured meanwhile: refunded", provider: "succeeded",
			policy: reservation.LateSuccessReacquire, wantPayment: reservation.Refunded, wantIntent: "succeeded", refunds: 1},
		{name: "still waiting for the buyer, hold live: voided now, not waited for", provider: "requires_action",
			policy: reservation.LateSuccessReacquire, wantPayment: reservation.Canceled, wantIntent: "canceled"},
	}
	for _, tc := range cases {
		for _, via := range []string{"reconcile", "sweeper"} {
			t.Run(tc.name+" ("+via+")", func(t *testing.T) {
				h := newHarness(t, tc.policy)
				in := canceledUnanswered(t, h)
				h.pay.force("r1", tc.provider)
				h.advance(tc.advance)
				var outcome string
				if via == "reconcile" {
					// The compensate state's Catch overwrote $.failure: only the record tells.
					st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
					outcome = reconcile(t, h, &st).Outcome
				} else {
					var err error
					if outcome, err = h.steps.Resolve(ctx, in); err != nil {
						t.Fatal(err)
					}
				}
				if outcome != OutcomeCanceled {
					t.Fatalf("outcome %s, want %s", outcome, OutcomeCanceled)
				}
				h.expectState("r1", reservation.Released, tc.wantPayment)
				h.expectSeatOwner("A1", "")
				if h.pay.captures != 0 || h.pay.refunds != tc.refunds || h.pay.status("r1") != tc.wantIntent {
					t.Fatalf("captures %d refunds %d intent %s", h.pay.captures, h.pay.refunds, h.pay.status("r1"))
				}
			})
		}
	}

	t.Run("the same truth without a customer cancel is still sold", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "pm_3ds", "A1")
		h.claim(in)
		if err := h.authorize(in, "tok1"); err != nil {
			t.Fatal(err)
		}
		h.pay.force("r1", "requires_capture")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeCapture {
			t.Fatalf("%+v", res)
		}
		// Confirmed, with the capture request recorded for the ASL's capture state.
		h.expectState("r1", reservation.Confirmed, reservation.CapturePending)
	})

	t.Run("a re-run of a finished cancel records nothing more", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := canceledUnanswered(t, h)
		h.pay.force("r1", "requires_capture")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		reconcile(t, h, &st)
		events := len(h.store.events)
		st.Reconcile = nil
		if res := reconcile(t, h, &st); res.Outcome != OutcomeCanceled || len(h.store.events) != events {
			t.Fatalf("re-run: %+v, events %v", res, h.store.events[events:])
		}
	})
}

// TestARecordedCancelStopsThePayment: the api records the customer's cancel before it
// acknowledges it, so a step that runs after it starts no payment and sells no seat, whatever
// the webhook reported meanwhile; it returns CustomerCanceled, which the ASL sends to the
// cancel's compensation.
func TestARecordedCancelStopsThePayment(t *testing.T) {
	ctx := context.Background()
	cancel := func(t *testing.T, h *harness) {
		t.Helper()
		if _, err := h.store.Cancel(ctx, "r1", reservation.GuardOf(h.store.get("r1"))); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("authorize starts no payment", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "pm_card_visa", "A1")
		h.claim(in)
		cancel(t, h)
		wantErr[*CustomerCanceled](t, h.authorize(in, "tok1"))
		h.expectState("r1", reservation.Held, reservation.NotStarted)
		if h.pay.creates != 0 {
			t.Fatalf("%d payments created", h.pay.creates)
		}
	})
	t.Run("confirm sells nothing although the webhook reported the authorization", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := authorized(t, h, "pm_card_visa")
		cancel(t, h)
		_, err := h.steps.Confirm(ctx, State{Input: in})
		wantErr[*CustomerCanceled](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.Authorized)
	})
	t.Run("the webhook's report wins the race with the api's signal: Confirm seats hands over to the cancel", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_card_visa", "A1"))
		token := r.waitingWith("r1", reservation.Authorizing)
		cancel(t, r.harness)
		r.reportAuthorized("r1", token)
		r.finish(x)
		r.expectEnding(x, EndCustomerCanceled)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Void payment after customer cancel", "Canceled by customer")
		r.expectState("r1", reservation.Released, reservation.Canceled)
		r.expectSeatOwner("A1", "")
		if r.pay.captures != 0 || r.pay.status("r1") != "canceled" {
			t.Fatalf("captures %d intent %s", r.pay.captures, r.pay.status("r1"))
		}
	})
}
