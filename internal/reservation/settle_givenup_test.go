package reservation

import (
	"testing"
	"time"
)

// A given-up payment (FAILED) is unwound even where recording the provider's truth passes
// through UNKNOWN_NEEDS_RECONCILIATION, which by itself says nothing of the give-up: the
// reservation's Unwinding fact, set when it entered FAILED, keeps every later decision
// unwinding, so captured money is refunded, never sold.
func TestAGivenUpReservationIsNeverSoldThroughUnknown(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := Reservation{ID: "r", SeatIDs: []string{"A1"}, Inventory: PaymentPending, Payment: Authorizing, Version: 1,
		HoldExpiresAt: now.Add(time.Minute), PaymentIntentID: "pi"}
	r, err := r.ApplyPayment(PaymentDeclined, Authorizing, GuardOf(r), now)
	if err != nil || !r.Unwinding {
		t.Fatalf("declined: %+v, %v; want Unwinding set", r, err)
	}
	sawUnknown := false
	for step := 0; step < 6; step++ {
		sawUnknown = sawUnknown || r.Payment == UnknownNeedsReconciliation
		d := Decide(FactsOf(r, TruthCaptured, LateSuccessReacquire, now))
		switch d.Action {
		case ActConfirm, ActReacquire, ActCapture:
			t.Fatalf("step %d from %s/%s: %+v: the given-up reservation is sold", step, r.Inventory, r.Payment, d)
		case ActRefund:
			if !sawUnknown {
				t.Fatal("refunded without passing through UNKNOWN_NEEDS_RECONCILIATION: the case this test is about was not reached")
			}
			return
		case ActRecord:
			if r, err = r.ApplyUpdate(PaymentUpdate{Guard: GuardOf(r), Event: d.Event, From: r.Payment}, now); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("step %d from %s/%s: %+v; want the captured money refunded", step, r.Inventory, r.Payment, d)
		}
	}
	t.Fatal("no refund within six steps")
}
