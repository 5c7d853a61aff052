package reservation

import (
	"slices"
	"testing"
)

// fuzzPick maps a fuzz byte onto vals, or, for the two values past the end, onto the zero
// value and an unknown one: callers are Go code that can pass either by mistake.
func fuzzPick[T ~string](vals []T, b byte) T {
	switch i := int(b) % (len(vals) + 2); i {
	case len(vals):
		return ""
	case len(vals) + 1:
		return "BOGUS"
	default:
		return vals[i]
	}
}

var knownActions = []Action{ActDone, ActAsk, ActRecord, ActConfirm, ActReacquire, ActCapture, ActVoid,
	ActRefund, ActRelease, ActWait, ActEscalate}

// FuzzDecide checks the safety properties of the settlement decision over arbitrary facts:
// whatever the facts, nobody is charged for seats they gave up or did not get, and no seat
// goes back while money may still be taken.
func FuzzDecide(f *testing.F) {
	// inventory, payment, truth, flags (live, canceled, deadline, lost, wasAuth, expired),
	// policy, refund attempts; indices as in InventoryStates, PaymentStates, Truths.
	f.Add(byte(2), byte(2), byte(6), byte(0b000010), byte(0), int8(0))   // PP/AUTHORIZED authorized, cancelled
	f.Add(byte(4), byte(1), byte(5), byte(0b000000), byte(0), int8(0))   // RELEASED/AUTHORIZING processing
	f.Add(byte(3), byte(3), byte(8), byte(0b000000), byte(0), int8(0))   // CONFIRMED/CAPTURE_PENDING canceled
	f.Add(byte(1), byte(4), byte(7), byte(0b000000), byte(1), int8(3))   // HELD/PAID captured, void policy, refunds exhausted
	f.Add(byte(2), byte(8), byte(9), byte(0b000010), byte(0), int8(0))   // PP/REFUND_PENDING refund pending
	f.Add(byte(2), byte(9), byte(1), byte(0b000001), byte(0), int8(0))   // PP/UNKNOWN unavailable, live
	f.Add(byte(1), byte(1), byte(12), byte(0), byte(0), int8(0))         // HELD/AUTHORIZING, zero truth
	f.Add(byte(1), byte(1), byte(13), byte(0), byte(0), int8(0))         // HELD/AUTHORIZING, unknown truth
	f.Add(byte(6), byte(11), byte(12), byte(0xff), byte(3), int8(-1))    // unknown everything
	f.Add(byte(4), byte(5), byte(4), byte(0b010000), byte(0), int8(0))   // RELEASED/FAILED declined, was authorized
	f.Add(byte(2), byte(4), byte(7), byte(0b000001), byte(0), int8(0))   // PP/PAID captured, live
	f.Add(byte(4), byte(2), byte(6), byte(0b000000), byte(0), int8(0))   // RELEASED/AUTHORIZED authorized: reacquire
	f.Add(byte(3), byte(9), byte(6), byte(0b000100), byte(0), int8(0))   // CONFIRMED/UNKNOWN authorized, deadline
	f.Add(byte(0), byte(0), byte(0), byte(0), byte(0), int8(0))          // AVAILABLE, not asked
	f.Add(byte(2), byte(9), byte(7), byte(0b1000001), byte(0), int8(0))  // PP/UNKNOWN captured, live, unwinding
	f.Add(byte(4), byte(4), byte(11), byte(0b1000000), byte(0), int8(1)) // RELEASED/PAID refund failed

	f.Fuzz(func(t *testing.T, invB, payB, truthB, flags, policyB byte, attempts int8) {
		facts := Facts{
			Inventory:             fuzzPick(InventoryStates(), invB),
			Payment:               fuzzPick(PaymentStates(), payB),
			Truth:                 fuzzPick(Truths(), truthB),
			HoldLive:              flags&1 != 0,
			CustomerCanceled:      flags&2 != 0,
			CaptureDeadlinePassed: flags&4 != 0,
			SeatsLost:             flags&8 != 0,
			WasAuthorized:         flags&16 != 0,
			HoldExpired:           flags&32 != 0,
			Unwinding:             flags&64 != 0,
			Policy:                fuzzPick([]LateSuccessPolicy{LateSuccessReacquire, LateSuccessVoid}, policyB),
			RefundAttempts:        int(attempts),
		}
		d := Decide(facts) // (g) a panic fails the fuzz run
		checkDecisionIsSafe(t, facts, d)
	})
}

func checkDecisionIsSafe(t *testing.T, f Facts, d Decision) {
	t.Helper()
	fail := func(property string) { t.Fatalf("%s: %+v\nfacts %s", property, d, describe(f)) }

	// (g) a known action, and a known outcome or party where one is due.
	if !slices.Contains(knownActions, d.Action) {
		fail("unknown action")
	}
	if d.Action == ActDone && !slices.Contains([]Settled{SettledSold, SettledCanceled, SettledDeclined,
		SettledExpired, SettledVoided, SettledCaptureFailed}, d.Outcome) {
		fail("done without a known outcome")
	}
	if d.Action == ActWait && d.Waiting != WaitBuyer && d.Waiting != WaitProvider {
		fail("wait for nobody")
	}
	sells := d.Action == ActConfirm || d.Action == ActReacquire || d.Action == ActCapture ||
		(d.Action == ActRecord && d.Event == RequestCapture)
	// (a) the customer's cancel is final.
	if f.CustomerCanceled && sells {
		fail("sells a cancelled reservation")
	}
	// (a') so is the saga's own give-up: a reservation being unwound is never sold.
	if f.Unwinding && sells {
		fail("sells a reservation being unwound")
	}
	// (b) released seats are not captured or confirmed; only a reacquire takes them back.
	if f.Inventory == Released && sells && d.Action != ActReacquire {
		fail("captures or confirms released seats")
	}
	// (c) seats go back only when the provider's truth says no money is or can be taken:
	// listed as what is allowed, so that an unknown truth never releases.
	releases := d.Action == ActRelease || (d.Action == ActRecord && d.ReleaseSeats)
	if releases {
		switch {
		case f.Truth == TruthNoPayment, f.Truth == TruthCanceled, f.Truth == TruthRefunded:
		case f.Truth == TruthProcessing && f.Payment == Authorizing && d.Action == ActRelease:
		default:
			fail("releases seats while money may be taken")
		}
	}
	if d.ReleaseSeats && d.Action != ActRecord {
		fail("ReleaseSeats without a record")
	}
	if d.Action == ActRelease && !seatsMayGo(f.Payment) {
		fail("releases seats the stored payment keeps")
	}
	if d.Expired && !releases {
		fail("Expired without a release")
	}
	// (d) every record is a legal transition, and a release with it leaves money nowhere.
	if d.Action == ActRecord {
		to, ok := NextPayment(f.Payment, d.Event)
		if !ok {
			fail("illegal record")
		}
		if d.ReleaseSeats && !seatsMayGo(to) {
			fail("releases seats in a write that leaves money held")
		}
	}
	// (e) capture only what is authorized for confirmed seats, once the capture is requested
	// or its outcome unknown.
	if d.Action == ActCapture && !(f.Inventory == Confirmed && f.Truth == TruthAuthorized &&
		(f.Payment == CapturePending || f.Payment == UnknownNeedsReconciliation)) {
		fail("captures without a confirmed seat and a requested capture")
	}
	// (f) sold means confirmed seats and captured money.
	if d.Action == ActDone && d.Outcome == SettledSold && !(f.Inventory == Confirmed && f.Payment == Paid) {
		fail("sold while not CONFIRMED and PAID")
	}
}

// TestEveryCombinationIsSafe applies the fuzz properties to the exhaustive combinations too.
func TestEveryCombinationIsSafe(t *testing.T) {
	everyFacts(func(f Facts) { checkDecisionIsSafe(t, f, Decide(f)) })
}
