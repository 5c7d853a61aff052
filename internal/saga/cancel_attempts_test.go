package saga

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Tests for the cancel attempt: the provider stores a refused cancel under its idempotency key
// and replays it, so the void moves to a new attempt (and key) only after a refusal, and
// repeats its attempt after an unanswered cancel or a redelivery. No void is sent while the
// decision sees the payment processing; a refusal happens when the payment starts processing
// between the decision's retrieve and the cancel.

func TestVoidCancelAttempts(t *testing.T) {
	ctx := context.Background()
	// paying claims r1's seat and starts a payment with pm; the customer cancels.
	paying := func(t *testing.T, h *harness, pm, status string) State {
		t.Helper()
		in := input("r1", pm, "A1")
		h.claim(in)
		if err := h.authorize(in, "tok1"); err != nil {
			t.Fatal(err)
		}
		if got := h.pay.status("r1"); got != status {
			t.Fatalf("intent %s, want %s", got, status)
		}
		return State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}}
	}
	// racing has the buyer's payment start processing (pm_3ds completed) between the
	// decision's retrieve and the first cancel, which the provider then refuses.
	racing := func(t *testing.T, h *harness) State {
		t.Helper()
		st := paying(t, h, "pm_3ds", "requires_action")
		rp := &racingPayments{fakePayments: h.pay, beforeCancel: func() { h.pay.force("r1", "processing") }}
		h.steps.Payments = rp
		return st
	}
	expectAttempts := func(t *testing.T, h *harness, stored int, sent ...int) {
		t.Helper()
		if got := h.store.get("r1").CancelAttempts; got != stored {
			t.Fatalf("stored CancelAttempts %d, want %d", got, stored)
		}
		if !slices.Equal(h.pay.cancelAttempts, sent) {
			t.Fatalf("cancel attempts sent %v, want %v", h.pay.cancelAttempts, sent)
		}
	}

	t.Run("processing when the decision reads it: seats back at once, no void until it authorizes", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := paying(t, h, "pm_slow", "processing")
		res, err := h.steps.Compensate(ctx, st)
		unsure := wantErr[*PaymentUncertain](t, err)
		if !strings.Contains(unsure.Detail, "waits for the provider") || !res.SeatsReleased {
			t.Fatalf("%+v: %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Authorizing)
		h.expectSeatOwner("A1", "")
		expectAttempts(t, h, 0)

		h.pay.force("r1", "requires_capture")
		res, err = h.steps.Compensate(ctx, st)
		if err != nil || res.Payment != "voided" {
			t.Fatalf("once authorized: %+v, %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		expectAttempts(t, h, 0, 1)
		if h.pay.cancels != 1 || h.pay.captures != 0 {
			t.Fatalf("cancels %d captures %d", h.pay.cancels, h.pay.captures)
		}
	})

	// A refusal while processing is an answer: it is recorded (the next void is attempt 2),
	// nothing is marked UNKNOWN, and the decision goes on from "processing": the seats of the
	// AUTHORIZING payment go back, then the step waits for the provider.
	t.Run("refused while processing: recorded as an answer, seats back, and the next attempt voids once authorized", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := racing(t, h)
		res, err := h.steps.Compensate(ctx, st)
		unsure := wantErr[*PaymentUncertain](t, err)
		if !strings.Contains(unsure.Detail, "waits for the provider") || !res.SeatsReleased {
			t.Fatalf("first compensate: %+v, %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Authorizing)
		h.expectSeatOwner("A1", "")
		expectAttempts(t, h, 1, 1)
		for _, c := range h.store.Changes() {
			if c.PaymentEvent == reservation.OutcomeUnknown {
				t.Fatalf("a refusal while processing recorded UNKNOWN: %+v", c)
			}
		}

		h.pay.force("r1", "requires_capture")
		res, err = h.steps.Compensate(ctx, st)
		if err != nil || res.Payment != "voided" || res.SeatsReleased {
			t.Fatalf("second compensate: %+v, %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		expectAttempts(t, h, 1, 1, 2)
		if h.pay.cancels != 1 || h.pay.status("r1") != "canceled" {
			t.Fatalf("cancels %d, intent %s", h.pay.cancels, h.pay.status("r1"))
		}
	})

	t.Run("the same attempt would meet the stored refusal", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := racing(t, h)
		wantErr[*PaymentUncertain](t, func() error { _, err := h.steps.Compensate(ctx, st); return err }())
		h.pay.force("r1", "requires_capture")
		// Undo the recorded refusal, as a store without the counter would: the void repeats
		// attempt 1, the provider replays its refusal and the seats stay protected.
		h.store.mu.Lock()
		r := h.store.res["r1"]
		r.CancelAttempts = 0
		h.store.res["r1"] = r
		h.store.mu.Unlock()
		truthBefore := h.pay.status("r1")
		_, err := h.steps.void(ctx, h.store.get("r1"), "requested_by_customer")
		wantErr[*PaymentUncertain](t, err)
		if h.pay.status("r1") != truthBefore || h.pay.cancels != 0 {
			t.Fatal("a replayed refusal voided the payment")
		}
		expectAttempts(t, h, 1, 1, 1)
	})

	t.Run("unanswered cancel: the retry reuses the attempt", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := paying(t, h, "pm_card_visa", "requires_capture")
		h.pay.fail["cancel"] = []error{cancelTimeout}
		_, err := h.steps.Compensate(ctx, st)
		wantErr[*PaymentUncertain](t, err)
		expectAttempts(t, h, 0, 1)
		res, err := h.steps.Compensate(ctx, st)
		if err != nil || res.Payment != "voided" {
			t.Fatalf("retry: %+v, %v", res, err)
		}
		expectAttempts(t, h, 0, 1, 1)
		h.expectState("r1", reservation.Released, reservation.Canceled)
	})

	t.Run("refusal not recorded: the redelivered step repeats the attempt and records it then", func(t *testing.T) {
		// Not a customer cancel: the hold lapsed and the policy voids a late payment.
		h := newHarness(t, reservation.LateSuccessVoid)
		st := racing(t, h)
		st.Failure = &Failure{Error: ErrHoldExpired}
		h.advance(h.steps.Hold)
		h.store.fail["updatePayment"] = &reservation.StaleVersion{ReservationID: "r1"}
		// The refusal is an answer (processing): the lapsed hold's seats go back as an expiry
		// and the step waits for the provider, but the refusal itself was not recorded.
		res, err := h.steps.Compensate(ctx, st)
		unsure := wantErr[*PaymentUncertain](t, err)
		if !strings.Contains(unsure.Detail, "waits for the provider") || !res.SeatsReleased {
			t.Fatalf("first compensate: %+v, %v", res, err)
		}
		expectAttempts(t, h, 0, 1)
		h.expectState("r1", reservation.Released, reservation.Authorizing)
		h.expectSeatOwner("A1", "")
		if got := h.store.get("r1").Outcome; got != reservation.OutcomeExpired {
			t.Fatalf("outcome %s, want %s", got, reservation.OutcomeExpired)
		}
		// The payment finished processing; the redelivered step records the authorization,
		// sends attempt 1 again, meets the stored refusal and records it. The authorization is
		// still open, so that refusal leaves the money uncertain.
		h.pay.force("r1", "requires_capture")
		_, err = h.steps.Compensate(ctx, st)
		wantErr[*PaymentUncertain](t, err)
		expectAttempts(t, h, 1, 1, 1)
		h.expectState("r1", reservation.Released, reservation.UnknownNeedsReconciliation)
		if res, err := h.steps.Compensate(ctx, st); err != nil || res.Payment != "voided" || res.SeatsReleased {
			t.Fatalf("next attempt: %+v, %v", res, err)
		}
		expectAttempts(t, h, 1, 1, 1, 2)
		h.expectState("r1", reservation.Released, reservation.Canceled)
		if h.pay.cancels != 1 || h.pay.captures != 0 {
			t.Fatalf("cancels %d captures %d", h.pay.cancels, h.pay.captures)
		}
	})

	t.Run("reconcile voids a late authorization with the next attempt", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		st := racing(t, h)
		wantErr[*PaymentUncertain](t, func() error { _, err := h.steps.Compensate(ctx, st); return err }())
		h.pay.force("r1", "requires_capture")
		h.advance(h.steps.Hold)
		rst := State{Input: st.Input, Failure: &Failure{Error: ErrPaymentUncertain}}
		res := reconcile(t, h, &rst)
		if res.Outcome != OutcomeCanceled {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		expectAttempts(t, h, 1, 1, 2)
	})
}
