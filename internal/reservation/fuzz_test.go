package reservation

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// FuzzTransitions drives random sequences of events, with right and wrong guards and a clock
// that moves across the hold deadline, and checks after every step that the reservation is in
// legal states, that refused events change nothing, that accepted ones raise the version by
// exactly one, and that the cross-machine rules hold. Each pair of bytes is one step: the first
// picks the machine (bit 0) and event, the second the guard (bits 0-1) and how far the clock
// moves (bits 2-7, in 20-second steps; the hold lasts 10 minutes).
func FuzzTransitions(f *testing.F) {
	// Happy path: StartPayment, StartAuthorization, Authorized, Confirm, RequestCapture, Captured.
	f.Add([]byte{2, 0, 1, 0, 3, 0, 4, 0, 7, 0, 9, 0})
	// Late success: payment unknown, clock past the deadline, expire, reconciled as authorized,
	// reacquire, capture.
	f.Add([]byte{2, 0, 1, 0, 15, 160, 8, 0, 3, 0, 10, 0, 7, 0, 9, 0})
	// Decline then release; then stale replays of everything.
	f.Add([]byte{2, 0, 1, 0, 5, 0, 6, 0, 2, 2, 4, 3, 6, 2, 1, 3})
	// Expiry of a merely held seat and a confirm after the deadline.
	f.Add([]byte{2, 252, 4, 0, 8, 0, 10, 0})
	// Capture ambiguous, reconciled as paid, refund.
	f.Add([]byte{2, 0, 1, 0, 3, 0, 4, 0, 7, 0, 15, 0, 9, 0, 13, 0})
	// Decline, then the void is uncertain, then found voided; release. And a decline found
	// refunded later.
	f.Add([]byte{2, 0, 1, 0, 5, 0, 15, 0, 11, 0, 6, 0})
	f.Add([]byte{2, 0, 1, 0, 5, 0, 13, 0, 6, 0})
	f.Add([]byte{})

	invEvents, payEvents := InventoryEvents(), PaymentEvents()
	f.Fuzz(func(t *testing.T, ops []byte) {
		req := ClaimRequest{ReservationID: "r1", CustomerID: "c1", EventID: "e1", SeatIDs: []string{"A1", "A2"},
			Amount: 500, Currency: "EUR", HoldDuration: 10 * time.Minute, IdempotencyKey: "k1"}
		now := t0
		r, err := NewReservation(req, DefaultLimits(), now)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(ops); i += 2 {
			pick, ctl := ops[i], ops[i+1]
			now = now.Add(time.Duration(ctl>>2) * 20 * time.Second)
			g := GuardOf(r)
			corrupt := ctl & 3
			switch corrupt {
			case 2:
				g.Version -= int64(1 + pick%3)
			case 3:
				g.Owner = "someone-else"
			}
			prev := r
			var next Reservation
			var stepErr error
			var desc string
			if pick&1 == 0 {
				ev := invEvents[int(pick>>1)%len(invEvents)]
				desc = "inventory " + string(ev)
				next, stepErr = r.ApplyInventory(ev, r.Inventory, g, now)
				if stepErr == nil {
					checkInventoryStep(t, prev, next, ev, now)
				}
			} else {
				ev := payEvents[int(pick>>1)%len(payEvents)]
				desc = "payment " + string(ev)
				next, stepErr = r.ApplyPayment(ev, r.Payment, g, now)
				if stepErr == nil {
					checkPaymentStep(t, prev, next, ev)
				}
			}
			if stepErr != nil {
				if !knownError(stepErr) {
					t.Fatalf("step %d %s: untyped error %v", i/2, desc, stepErr)
				}
				if !reflect.DeepEqual(next, prev) {
					t.Fatalf("step %d %s: refused event changed the reservation", i/2, desc)
				}
			} else if corrupt >= 2 {
				t.Fatalf("step %d %s: accepted with a wrong guard", i/2, desc)
			}
			if !next.Inventory.Valid() || !next.Payment.Valid() {
				t.Fatalf("step %d %s: illegal state %q/%q", i/2, desc, next.Inventory, next.Payment)
			}
			if next.Inventory == Available {
				t.Fatalf("step %d %s: a reservation went back to AVAILABLE", i/2, desc)
			}
			if next.Version < prev.Version {
				t.Fatalf("step %d %s: version went down %d -> %d", i/2, desc, prev.Version, next.Version)
			}
			if (next.Payment == UnknownNeedsReconciliation) == next.ReconcileSince.IsZero() {
				t.Fatalf("step %d %s: reconcile marker %v with payment %s", i/2, desc, next.ReconcileSince, next.Payment)
			}
			r = next
		}
	})
}

func checkInventoryStep(t *testing.T, prev, next Reservation, ev InventoryEvent, now time.Time) {
	t.Helper()
	want, ok := NextInventory(prev.Inventory, ev)
	if !ok || next.Inventory != want {
		t.Fatalf("%s from %s gave %s (table: %s, %v)", ev, prev.Inventory, next.Inventory, want, ok)
	}
	if next.Version != prev.Version+1 || next.Payment != prev.Payment {
		t.Fatalf("%s: version %d->%d, payment %s->%s", ev, prev.Version, next.Version, prev.Payment, next.Payment)
	}
	switch ev {
	case Confirm:
		if prev.Payment != Authorized || !prev.HoldLive(now) {
			t.Fatalf("confirmed with payment %s, hold live %v", prev.Payment, prev.HoldLive(now))
		}
	case StartPayment:
		if !prev.HoldLive(now) {
			t.Fatal("payment started on an expired hold")
		}
	case Expire:
		if prev.HoldLive(now) {
			t.Fatal("a live hold expired")
		}
	case Reacquire:
		if prev.Payment != Authorized && prev.Payment != Paid {
			t.Fatalf("reacquired with payment %s", prev.Payment)
		}
	}
	if next.Inventory == Released && prev.Payment.MoneyMayBeHeld() {
		t.Fatalf("seats released while payment %s", prev.Payment)
	}
}

func checkPaymentStep(t *testing.T, prev, next Reservation, ev PaymentEvent) {
	t.Helper()
	want, ok := NextPayment(prev.Payment, ev)
	if !ok || next.Payment != want {
		t.Fatalf("%s from %s gave %s (table: %s, %v)", ev, prev.Payment, next.Payment, want, ok)
	}
	if next.Version != prev.Version+1 || next.Inventory != prev.Inventory {
		t.Fatalf("%s: version %d->%d, inventory %s->%s", ev, prev.Version, next.Version, prev.Inventory, next.Inventory)
	}
	if ev == StartAuthorization && prev.Inventory != PaymentPending {
		t.Fatalf("authorization started with seats %s", prev.Inventory)
	}
	if ev == RequestCapture && prev.Inventory != Confirmed {
		t.Fatalf("capture requested with seats %s", prev.Inventory)
	}
}

func knownError(err error) bool {
	var (
		it *IllegalTransition
		sv *StaleVersion
		no *NotOwner
		us *UnexpectedState
		he *HoldExpired
		hl *HoldStillLive
		gf *GuardFailed
	)
	return errors.As(err, &it) || errors.As(err, &sv) || errors.As(err, &no) || errors.As(err, &us) ||
		errors.As(err, &he) || errors.As(err, &hl) || errors.As(err, &gf)
}
