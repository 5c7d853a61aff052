package saga

import (
	"context"
	"slices"
	"testing"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Tests for the cancel attempt: the provider stores a refused cancel under its idempotency key
// and replays it, so the void moves to a new attempt (and key) only after a refusal, and
// repeats its attempt after an unanswered cancel or a redelivery.

func TestVoidCancelAttempts(t *testing.T) {
	ctx := context.Background()
	// slow claims r1's seat and starts a payment that stays processing (pm_slow).
	slow := func(t *testing.T, h *harness) State {
		t.Helper()
		in := input("r1", "pm_slow", "A1")
		h.claim(in)
		if err := h.authorize(in, "tok1"); err != nil {
			t.Fatal(err)
		}
		if got := h.pay.status("r1"); got != "processing" {
			t.Fatalf("intent %s, want processing", got)
		}
		return State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}}
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

	t.Run("refused while processing: recorded, and the next attempt voids once authorized", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := slow(t, h)
		_, err := h.steps.Compensate(ctx, st)
		wantErr[*PaymentUncertain](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		h.expectSeatOwner("A1", "r1")
		expectAttempts(t, h, 1, 1)

		h.pay.force("r1", "requires_capture")
		res, err := h.steps.Compensate(ctx, st)
		if err != nil || res.Payment != "voided" || !res.SeatsReleased {
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
		st := slow(t, h)
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
		st := slow(t, h)
		h.pay.force("r1", "requires_capture")
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
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := slow(t, h)
		// Not a customer cancel, so the refusal is the first thing the step records.
		st.Failure = &Failure{Error: ErrHoldExpired}
		h.store.fail["updatePayment"] = &reservation.StaleVersion{ReservationID: "r1"}
		_, err := h.steps.Compensate(ctx, st)
		wantErr[*PaymentUncertain](t, err)
		expectAttempts(t, h, 0, 1)
		_, err = h.steps.Compensate(ctx, st)
		wantErr[*PaymentUncertain](t, err)
		expectAttempts(t, h, 1, 1, 1)
		h.pay.force("r1", "requires_capture")
		if res, err := h.steps.Compensate(ctx, st); err != nil || res.Payment != "voided" {
			t.Fatalf("after authorization: %+v, %v", res, err)
		}
		expectAttempts(t, h, 1, 1, 1, 2)
	})

	t.Run("reconcile voids a late authorization with the next attempt", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		st := slow(t, h)
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
