package saga

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Tests for acting on the provider's answer to a void (Cancel) or refund before any write:
// a refused cancel is answered from the retrieved truth, a captured intent is refunded, an
// unanswered call is unknown, and the seats never go back while money may be held.

// racingPayments lets the provider's state move just before a Cancel arrives, like a late
// authorization or capture landing between the saga's Retrieve and its void.
type racingPayments struct {
	*fakePayments
	beforeCancel func()
}

func (p *racingPayments) Cancel(ctx context.Context, req payment.CancelRequest) (payment.Authorization, error) {
	if p.beforeCancel != nil {
		move := p.beforeCancel
		p.beforeCancel = nil
		move()
	}
	return p.fakePayments.Cancel(ctx, req)
}

// declined claims seat A1 for r1 and has its card declined; withWebhook also records the
// decline the way the webhook handler does (AUTHORIZING -> FAILED).
func declined(t *testing.T, h *harness, withWebhook bool) Input {
	t.Helper()
	in := input("r1", "pm_card_declined", "A1")
	h.claim(in)
	wantErr[*PaymentDeclined](t, h.authorize(in, "tok1"))
	if withWebhook {
		r := h.store.get("r1")
		if _, err := h.store.UpdatePayment(context.Background(), PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Event: reservation.PaymentDeclined, From: reservation.Authorizing, Reason: "webhook: declined"}); err != nil {
			t.Fatalf("webhook transition: %v", err)
		}
	}
	return in
}

var (
	cancelTimeout = &payment.Uncertain{Op: payment.OpCancel, Reason: "timeout"}
	refundTimeout = &payment.Uncertain{Op: payment.OpRefund, Reason: "timeout"}
	cancelRefused = &payment.Failed{Op: payment.OpCancel, HTTPStatus: 400, Type: "invalid_request_error", Code: "payment_intent_unexpected_state"}
)

func TestCompensateActsOnTheVoidAnswer(t *testing.T) {
	ctx := context.Background()
	declineState := func(in Input) State { return State{Input: in, Failure: &Failure{Error: ErrPaymentDeclined}} }

	cases := []struct {
		name    string
		webhook bool
		// setup runs after the decline; the first Compensate must fail with wantFirst and
		// leave the payment in firstPay with the seats held, or (wantFirst nil) succeed.
		setup     func(h *harness)
		wantFirst bool
		firstPay  reservation.PaymentState
		// After the first attempt the provider answers normally; the retry settles.
		wantLabel string
		wantPay   reservation.PaymentState
		wantPI    string
		refunds   int
	}{
		{name: "decline not yet recorded, void unanswered: UNKNOWN, then CANCELED",
			setup:     func(h *harness) { h.pay.fail["cancel"] = []error{cancelTimeout} },
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "voided", wantPay: reservation.Canceled, wantPI: "canceled"},
		{name: "decline recorded, void unanswered: FAILED -> UNKNOWN, seats held, then CANCELED", webhook: true,
			setup:     func(h *harness) { h.pay.fail["cancel"] = []error{cancelTimeout} },
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "voided", wantPay: reservation.Canceled, wantPI: "canceled"},
		{name: "decline recorded, late authorization, void refused: UNKNOWN, seats held until it is voided", webhook: true,
			setup: func(h *harness) {
				h.pay.force("r1", "requires_capture")
				h.pay.fail["cancel"] = []error{cancelRefused}
			},
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "voided", wantPay: reservation.Canceled, wantPI: "canceled"},
		{name: "decline recorded, intent captured meanwhile: FAILED -> REFUNDED, not voided", webhook: true,
			setup:     func(h *harness) { h.pay.force("r1", "succeeded") },
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
		{name: "decline recorded, captured, refund unanswered: UNKNOWN, seats held, then REFUNDED", webhook: true,
			setup: func(h *harness) {
				h.pay.force("r1", "succeeded")
				h.pay.fail["refund"] = []error{refundTimeout}
			},
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
		{name: "decline not yet recorded, intent captured meanwhile: REFUNDED",
			setup:     func(h *harness) { h.pay.force("r1", "succeeded") },
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
		{name: "decline not yet recorded, captured, refund unanswered: UNKNOWN, then REFUNDED",
			setup: func(h *harness) {
				h.pay.force("r1", "succeeded")
				h.pay.fail["refund"] = []error{refundTimeout}
			},
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := declined(t, h, tc.webhook)
			tc.setup(h)
			st := declineState(in)
			if tc.wantFirst {
				_, err := h.steps.Compensate(ctx, st)
				wantErr[*PaymentUncertain](t, err)
				h.expectState("r1", reservation.PaymentPending, tc.firstPay)
				h.expectSeatOwner("A1", "r1")
			}
			res, err := h.steps.Compensate(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Payment != tc.wantLabel || !res.SeatsReleased {
				t.Fatalf("result %+v", res)
			}
			h.expectState("r1", reservation.Released, tc.wantPay)
			h.expectSeatOwner("A1", "")
			if got := h.pay.status("r1"); got != tc.wantPI {
				t.Fatalf("intent %s, want %s", got, tc.wantPI)
			}
			if h.pay.refunds != tc.refunds || h.pay.captures != 0 {
				t.Fatalf("refunds %d captures %d, want %d refunds", h.pay.refunds, h.pay.captures, tc.refunds)
			}
			if tc.refunds > 0 {
				if a := h.pay.pis[h.pay.byRes["r1"]]; a.State != payment.StateRefunded {
					t.Fatalf("money not returned: %s", a.State)
				}
			}
			// A redelivery finds the work done: nothing is voided or refunded again.
			cancels, refunds := h.pay.cancels, h.pay.refunds
			again, err := h.steps.Compensate(ctx, st)
			if err != nil || again.Payment != tc.wantLabel {
				t.Fatalf("re-run: %+v %v", again, err)
			}
			if h.pay.cancels != cancels || h.pay.refunds != refunds {
				t.Fatal("re-run moved money again")
			}
			h.expectState("r1", reservation.Released, tc.wantPay)
		})
	}

	t.Run("late authorization refused a void and retrieving the truth fails: uncertain, seats held", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, false)
		h.pay.fail["cancel"] = []error{cancelRefused}
		h.pay.fail["retrieve"] = []error{&payment.Uncertain{Op: payment.OpRetrieve, Reason: "connection"}}
		_, err := h.steps.Compensate(ctx, declineState(in))
		wantErr[*PaymentUncertain](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		h.expectSeatOwner("A1", "r1")
	})
}

func TestReconcileActsOnTheVoidAnswer(t *testing.T) {
	// Whether or not the decline was already recorded FAILED, an unanswered void is recorded
	// UNKNOWN with the seats held, and the next round voids, records CANCELED and releases.
	for _, recorded := range []bool{false, true} {
		t.Run(fmt.Sprintf("declined (recorded FAILED: %v), void unanswered: UNKNOWN and retry; then CANCELED and released", recorded), func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := declined(t, h, recorded)
			h.pay.fail["cancel"] = []error{cancelTimeout}
			st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
			if res := reconcile(t, h, &st); res.Outcome != OutcomeRetry {
				t.Fatalf("%+v", res)
			}
			h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
			h.expectSeatOwner("A1", "r1")
			if res := reconcile(t, h, &st); res.Outcome != OutcomeFailed {
				t.Fatalf("%+v", res)
			}
			h.expectState("r1", reservation.Released, reservation.Canceled)
			h.expectSeatOwner("A1", "")
			if got := h.pay.status("r1"); got != "canceled" {
				t.Fatalf("intent %s", got)
			}
		})
	}

	t.Run("declined, captured before the void arrived: refunded, never recorded FAILED", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		rp := &racingPayments{fakePayments: h.pay}
		h.steps.Payments = rp
		in := declined(t, h, false)
		h.advance(10 * time.Minute)
		rp.beforeCancel = func() { h.pay.force("r1", "succeeded") }
		st := State{Input: in, Failure: &Failure{Error: "States.Timeout"}}
		res := reconcile(t, h, &st)
		if res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		if h.pay.refunds != 1 {
			t.Fatalf("refunds %d", h.pay.refunds)
		}
		for _, e := range h.store.events {
			if e == "PaymentDeclined:declined:notify" || e == "PaymentVoid:declined:notify" {
				t.Fatalf("recorded %s for a captured payment: %v", e, h.store.events)
			}
		}
	})

	t.Run("recorded FAILED, late authorization: voided, recorded CANCELED, seats released", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "requires_capture")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		// The authorization existed, so the recorded void routes like any voided authorization.
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		if got := h.pay.status("r1"); got != "canceled" {
			t.Fatalf("intent %s", got)
		}
	})

	t.Run("recorded FAILED, late authorization, void refused: UNKNOWN, retry with the seats held", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "requires_capture")
		h.pay.fail["cancel"] = []error{cancelRefused}
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeRetry {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		h.expectSeatOwner("A1", "r1")
		if got := h.pay.status("r1"); got != "requires_capture" {
			t.Fatalf("intent %s", got)
		}
	})

	t.Run("recorded FAILED, captured: refunded, recorded REFUNDED and released", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "succeeded")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		if h.pay.refunds != 1 {
			t.Fatalf("refunds %d", h.pay.refunds)
		}
		if a := h.pay.pis[h.pay.byRes["r1"]]; a.State != payment.StateRefunded {
			t.Fatalf("money not returned: %s", a.State)
		}
	})

	t.Run("recorded FAILED, captured, refund unanswered: UNKNOWN, retry with the seats held, then the truth decides", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "succeeded")
		h.pay.fail["refund"] = []error{refundTimeout}
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeRetry {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		h.expectSeatOwner("A1", "r1")
		// UNKNOWN no longer remembers the decline: like any unknown payment, the provider's
		// truth (captured, hold still live) decides, and the captured money buys the seats.
		if res := reconcile(t, h, &st); res.Outcome != OutcomePaid {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Confirmed, reservation.Paid)
		if h.pay.refunds != 0 {
			t.Fatalf("refunds %d", h.pay.refunds)
		}
	})

	t.Run("late success, void policy, captured before the void arrived: refunded, not recorded CANCELED", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		rp := &racingPayments{fakePayments: h.pay}
		h.steps.Payments = rp
		in := authorized(t, h, "pm_card_visa")
		h.advance(10 * time.Minute)
		rp.beforeCancel = func() { h.pay.force("r1", "succeeded") }
		st := State{Input: in, Failure: &Failure{Error: "States.Timeout"}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		if h.pay.refunds != 1 {
			t.Fatalf("refunds %d", h.pay.refunds)
		}
	})
}
