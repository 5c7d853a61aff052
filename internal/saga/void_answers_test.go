package saga

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Tests for acting on the provider's answer to a void (Cancel) or refund before any write:
// a refused cancel is answered from the retrieved truth, a captured intent is refunded, an
// unanswered call is unknown, and the seats never go back while money may be held.

// racingPayments lets the provider's state move just before a Cancel (or Capture) arrives,
// like a late authorization or capture landing between the saga's Retrieve and its void, or
// an authorization lapsing between the Retrieve and the capture. Each hook runs once.
type racingPayments struct {
	*fakePayments
	beforeCancel, beforeCapture func()
}

// runOnce runs the hook *hook, if any, and clears it first so it never runs again.
func runOnce(hook *func()) {
	if *hook != nil {
		move := *hook
		*hook = nil
		move()
	}
}

func (p *racingPayments) Capture(ctx context.Context, req payment.CaptureRequest) (payment.Authorization, error) {
	runOnce(&p.beforeCapture)
	return p.fakePayments.Capture(ctx, req)
}

func (p *racingPayments) Cancel(ctx context.Context, req payment.CancelRequest) (payment.Authorization, error) {
	runOnce(&p.beforeCancel)
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

// lapse lets r1's hold run out.
func lapse(h *harness) { h.advance(h.steps.Hold) }

func TestCompensateActsOnTheVoidAnswer(t *testing.T) {
	ctx := context.Background()
	declineState := func(in Input) State { return State{Input: in, Failure: &Failure{Error: ErrPaymentDeclined}} }

	// A decline is durable (Reservation.Unwinding): a void the provider leaves unanswered or
	// refuses keeps the record FAILED with the seats held until the provider answers, and
	// money found captured afterwards is refunded, never sold. The captured cases here let
	// the hold lapse under LateSuccessVoid; the loop below keeps it live under
	// LateSuccessReacquire.
	cases := []struct {
		name    string
		webhook bool
		policy  reservation.LateSuccessPolicy
		// setup runs after the decline; with wantFirst the first Compensate must fail with
		// PaymentUncertain and leave the payment in firstPay with the seats held.
		setup     func(h *harness)
		wantFirst bool
		firstPay  reservation.PaymentState
		// After the first attempt the provider answers normally; the retry settles.
		wantLabel string
		// againLabel is what a redelivery reports (wantLabel unless set): a redelivery that
		// finds RELEASED/FAILED voided nothing itself.
		againLabel string
		wantPay    reservation.PaymentState
		wantPI     string
		refunds    int
	}{
		// FAILED is never turned into UNKNOWN: the voided intent is released from FAILED,
		// which names the outcome (declined).
		{name: "decline not yet recorded, void unanswered: FAILED kept, seats held, then voided and released",
			setup:     func(h *harness) { h.pay.fail["cancel"] = []error{cancelTimeout} },
			wantFirst: true, firstPay: reservation.Failed,
			wantLabel: "voided", againLabel: "none", wantPay: reservation.Failed, wantPI: "canceled"},
		{name: "decline recorded, void unanswered: FAILED kept, seats held, then voided and released", webhook: true,
			setup:     func(h *harness) { h.pay.fail["cancel"] = []error{cancelTimeout} },
			wantFirst: true, firstPay: reservation.Failed,
			wantLabel: "voided", againLabel: "none", wantPay: reservation.Failed, wantPI: "canceled"},
		// The refused void is recorded (the retry is attempt 2); the recorded decline survives
		// it, so the retry voids the late authorization instead of selling the live hold.
		{name: "decline recorded, late authorization, void refused: FAILED kept, seats held until it is voided", webhook: true,
			setup: func(h *harness) {
				h.pay.force("r1", "requires_capture")
				h.pay.fail["cancel"] = []error{cancelRefused}
			},
			wantFirst: true, firstPay: reservation.Failed,
			wantLabel: "voided", againLabel: "none", wantPay: reservation.Failed, wantPI: "canceled"},
		{name: "decline recorded, captured after the hold lapsed: refunded, not voided", webhook: true,
			policy:    reservation.LateSuccessVoid,
			setup:     func(h *harness) { lapse(h); h.pay.force("r1", "succeeded") },
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
		{name: "decline recorded, captured after the hold lapsed, refund unanswered: UNKNOWN, seats held, then REFUNDED", webhook: true,
			policy: reservation.LateSuccessVoid,
			setup: func(h *harness) {
				lapse(h)
				h.pay.force("r1", "succeeded")
				h.pay.fail["refund"] = []error{refundTimeout}
			},
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
		{name: "decline not yet recorded, captured after the hold lapsed: REFUNDED",
			policy:    reservation.LateSuccessVoid,
			setup:     func(h *harness) { lapse(h); h.pay.force("r1", "succeeded") },
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
		{name: "decline not yet recorded, captured after the hold lapsed, refund unanswered: UNKNOWN, then REFUNDED",
			policy: reservation.LateSuccessVoid,
			setup: func(h *harness) {
				lapse(h)
				h.pay.force("r1", "succeeded")
				h.pay.fail["refund"] = []error{refundTimeout}
			},
			wantFirst: true, firstPay: reservation.UnknownNeedsReconciliation,
			wantLabel: "refunded", wantPay: reservation.Refunded, wantPI: "succeeded", refunds: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			policy := tc.policy
			if policy == "" {
				policy = reservation.LateSuccessReacquire
			}
			h := newHarness(t, policy)
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
			for _, c := range h.store.Changes() {
				if c.InventoryEvent == reservation.Confirm || c.InventoryEvent == reservation.Reacquire {
					t.Fatalf("a declined reservation was sold: %+v", c)
				}
			}
			if tc.refunds > 0 {
				if a := h.pay.pis[h.pay.byRes["r1"]]; a.State != payment.StateRefunded || h.pay.cancels != 0 {
					t.Fatalf("money not returned: %s, cancels %d", a.State, h.pay.cancels)
				}
			}
			// A redelivery finds the work done: nothing is voided or refunded again.
			cancels, refunds := h.pay.cancels, h.pay.refunds
			againLabel := tc.againLabel
			if againLabel == "" {
				againLabel = tc.wantLabel
			}
			again, err := h.steps.Compensate(ctx, st)
			if err != nil || again.Payment != againLabel || again.SeatsReleased {
				t.Fatalf("re-run: %+v %v", again, err)
			}
			if h.pay.cancels != cancels || h.pay.refunds != refunds {
				t.Fatal("re-run moved money again")
			}
			h.expectState("r1", reservation.Released, tc.wantPay)
		})
	}

	// A decline never recorded (the stored payment is still AUTHORIZING) gave nothing up: money
	// found captured while the hold is live buys the seats; compensate hands the rest to
	// reconcile, which routes paid. Nothing is refunded.
	t.Run("decline not recorded, captured while the hold is live: sold, handed to reconcile", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, false)
		h.pay.force("r1", "succeeded")
		st := declineState(in)
		_, err := h.steps.Compensate(ctx, st)
		wantErr[*SettlementContinues](t, err)
		h.expectState("r1", reservation.Confirmed, reservation.Paid)
		h.expectSeatOwner("A1", "r1")
		if res := reconcile(t, h, &st); res.Outcome != OutcomePaid {
			t.Fatalf("reconcile: %+v", res)
		}
		if h.pay.refunds != 0 || h.pay.cancels != 0 {
			t.Fatalf("refunds %d cancels %d", h.pay.refunds, h.pay.cancels)
		}
	})

	// A recorded decline is durable: money found captured while the hold is live (and the
	// policy would reacquire) is refunded and the seats released, never confirmed.
	t.Run("decline recorded FAILED, captured while the hold is live: refunded, not sold", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "succeeded")
		st := declineState(in)
		res, err := h.steps.Compensate(ctx, st)
		if err != nil || res.Payment != "refunded" || !res.SeatsReleased {
			t.Fatalf("%+v, %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		h.expectSeatOwner("A1", "")
		if a := h.pay.pis[h.pay.byRes["r1"]]; a.State != payment.StateRefunded || h.pay.refunds != 1 {
			t.Fatalf("money not returned: %s, refunds %d", a.State, h.pay.refunds)
		}
		if h.pay.cancels != 0 || h.pay.captures != 0 {
			t.Fatalf("cancels %d captures %d", h.pay.cancels, h.pay.captures)
		}
		for _, c := range h.store.Changes() {
			if c.InventoryEvent == reservation.Confirm || c.InventoryEvent == reservation.Reacquire {
				t.Fatalf("a declined reservation was sold: %+v", c)
			}
		}
	})

	t.Run("void refused and the truth unreadable: uncertain, FAILED kept, seats held", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, false)
		h.pay.fail["cancel"] = []error{cancelRefused}
		// The decision's retrieve answers; the one after the refused cancel does not.
		h.pay.fail["retrieve"] = []error{nil, &payment.Uncertain{Op: payment.OpRetrieve, Reason: "connection"}}
		_, err := h.steps.Compensate(ctx, declineState(in))
		unsure := wantErr[*PaymentUncertain](t, err)
		if !strings.Contains(unsure.Detail, "truth unknown") || !slices.Equal(h.pay.cancelAttempts, []int{1}) {
			t.Fatalf("%v; cancels sent %v", err, h.pay.cancelAttempts)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.Failed)
		h.expectSeatOwner("A1", "r1")
	})
}

func TestReconcileActsOnTheVoidAnswer(t *testing.T) {
	// Whether or not the decline was already recorded FAILED, an unanswered void leaves it
	// FAILED (never UNKNOWN) with the seats held, and the next round voids and releases the
	// seats from FAILED.
	for _, recorded := range []bool{false, true} {
		t.Run(fmt.Sprintf("declined (recorded FAILED: %v), void unanswered: FAILED kept and retry; then voided and released", recorded), func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := declined(t, h, recorded)
			h.pay.fail["cancel"] = []error{cancelTimeout}
			st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
			if res := reconcile(t, h, &st); res.Outcome != OutcomeRetry {
				t.Fatalf("%+v", res)
			}
			h.expectState("r1", reservation.PaymentPending, reservation.Failed)
			h.expectSeatOwner("A1", "r1")
			if res := reconcile(t, h, &st); res.Outcome != OutcomeFailed {
				t.Fatalf("%+v", res)
			}
			h.expectState("r1", reservation.Released, reservation.Failed)
			h.expectSeatOwner("A1", "")
			if got := h.pay.status("r1"); got != "canceled" {
				t.Fatalf("intent %s", got)
			}
		})
	}

	t.Run("declined, captured before the void arrived: the decline recorded, then the capture, refunded, never voided", func(t *testing.T) {
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
		// The decline is the first record; the refused void's answer (captured) is then
		// recorded through UNKNOWN and refunded; no void is ever recorded.
		var events []reservation.PaymentEvent
		for _, c := range h.store.Changes() {
			if c.PaymentEvent != "" {
				events = append(events, c.PaymentEvent)
			}
		}
		want := []reservation.PaymentEvent{reservation.StartAuthorization, reservation.PaymentDeclined, reservation.OutcomeUnknown,
			reservation.CaptureOK, reservation.RefundPayment}
		if !slices.Equal(events, want) {
			t.Fatalf("payment records %v, want %v", events, want)
		}
	})

	// The decline stands: the late authorization is voided and the record stays FAILED, so
	// the outcome is the decline's.
	t.Run("recorded FAILED, late authorization: voided, stays FAILED, seats released", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "requires_capture")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeFailed {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Failed)
		h.expectSeatOwner("A1", "")
		if got := h.pay.status("r1"); got != "canceled" || h.pay.captures != 0 {
			t.Fatalf("intent %s captures %d", got, h.pay.captures)
		}
	})

	t.Run("recorded FAILED, late authorization, void refused: FAILED kept, retry with the seats held, then voided", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "requires_capture")
		h.pay.fail["cancel"] = []error{cancelRefused}
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeRetry {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.Failed)
		h.expectSeatOwner("A1", "r1")
		if got := h.pay.status("r1"); got != "requires_capture" || h.store.get("r1").CancelAttempts != 1 {
			t.Fatalf("intent %s, CancelAttempts %d", got, h.store.get("r1").CancelAttempts)
		}
		// The decline survives the refusal: the retry voids with the next attempt, never
		// confirms the live hold.
		if res := reconcile(t, h, &st); res.Outcome != OutcomeFailed {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Failed)
		h.expectSeatOwner("A1", "")
		if got := h.pay.status("r1"); got != "canceled" || h.pay.captures != 0 || !slices.Equal(h.pay.cancelAttempts, []int{1, 2}) {
			t.Fatalf("intent %s captures %d cancel attempts %v", got, h.pay.captures, h.pay.cancelAttempts)
		}
	})

	// Captured money of a recorded decline: the decline is durable, so even with the hold
	// live and a reacquiring policy the money is refunded and the seats released, not sold.
	t.Run("recorded FAILED, captured while the hold is live: refunded and released, not sold", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := declined(t, h, true)
		h.pay.force("r1", "succeeded")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		h.expectSeatOwner("A1", "")
		if a := h.pay.pis[h.pay.byRes["r1"]]; h.pay.refunds != 1 || a.State != payment.StateRefunded {
			t.Fatalf("refunds %d, intent %s", h.pay.refunds, a.State)
		}
	})

	t.Run("recorded FAILED, captured after the hold lapsed, void policy: refunded, recorded REFUNDED and released", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		in := declined(t, h, true)
		lapse(h)
		h.pay.force("r1", "succeeded")
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		h.expectSeatOwner("A1", "")
		if h.pay.refunds != 1 {
			t.Fatalf("refunds %d", h.pay.refunds)
		}
		if a := h.pay.pis[h.pay.byRes["r1"]]; a.State != payment.StateRefunded {
			t.Fatalf("money not returned: %s", a.State)
		}
	})

	t.Run("recorded FAILED, captured after the hold lapsed, refund unanswered: UNKNOWN, retry with the seats held, then refunded", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		in := declined(t, h, true)
		lapse(h)
		h.pay.force("r1", "succeeded")
		h.pay.fail["refund"] = []error{refundTimeout}
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeRetry {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		h.expectSeatOwner("A1", "r1")
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		// The retry repeats the unanswered attempt under its key.
		if h.pay.refunds != 1 || !slices.Equal(h.pay.refundAttempts, []int{1, 1}) {
			t.Fatalf("refunds %d attempts %v", h.pay.refunds, h.pay.refundAttempts)
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
