package reservation

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestEveryDecisionIsExecutableByTheDomain applies every write the decision asks for (record, release,
// confirm, reacquire) with the domain's own rules, holding the provider's truth fixed, and
// follows the chain: a write the guards refuse (which the executor's afterWrite turns into
// "decide again" and the same decision) would spin, and a chain of writes must end.
func TestEveryDecisionIsExecutableByTheDomain(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var refused, long []string
	for _, inv := range []InventoryState{Held, PaymentPending, Confirmed, Released} {
		for _, pay := range PaymentStates() {
			for _, truth := range Truths() {
				if truth == TruthNotAsked {
					continue
				}
				for flags := 0; flags < 64; flags++ {
					for _, pol := range []LateSuccessPolicy{LateSuccessReacquire, LateSuccessVoid} {
						r := Reservation{ID: "r", SeatIDs: []string{"A1"}, Inventory: inv, Payment: pay, Version: 1,
							CustomerCanceled: flags&2 != 0, PaymentIntentID: "pi"}
						if inv == Confirmed && r.CustomerCanceled {
							continue // Cancel refuses confirmed seats.
						}
						if inv == Held && pay != NotStarted {
							// Unreachable: StartPayment moves the seats to PAYMENT_PENDING before
							// any money moves (Decide would answer ActConfirm, illegal from HELD).
							continue
						}
						if flags&1 != 0 {
							r.HoldExpiresAt = now.Add(time.Minute)
						} else {
							r.HoldExpiresAt = now.Add(-time.Minute)
						}
						if flags&4 != 0 {
							r.CaptureBefore = now.Add(time.Hour)
						}
						if flags&8 != 0 {
							r.RefundAttempts = MaxRefundAttempts
						}
						r.Unwinding = flags&16 != 0
						if flags&32 != 0 {
							r.CaptureBefore = now.Add(-time.Hour)
						}
						start := fmt.Sprintf("%s/%s truth=%s live=%v cc=%v pol=%s", inv, pay, truth, flags&1 != 0, r.CustomerCanceled, pol)
						for step := 0; ; step++ {
							if step > 6 {
								long = append(long, start)
								break
							}
							d := Decide(FactsOf(r, truth, pol, now))
							var next Reservation
							var err error
							g := GuardOf(r)
							switch d.Action {
							case ActRecord:
								next, err = r.ApplyUpdate(PaymentUpdate{Guard: g, Event: d.Event, From: r.Payment,
									ReleaseSeats: d.ReleaseSeats, Expired: d.Expired}, now)
							case ActRelease:
								ev := Release
								if d.Expired {
									ev = Expire
								}
								next, err = r.ApplyInventory(ev, r.Inventory, g, now)
							case ActConfirm:
								next, err = r.ApplyInventory(Confirm, r.Inventory, g, now)
							case ActReacquire:
								next, err = r.ApplyInventory(Reacquire, r.Inventory, g, now)
							default:
								step = 1 << 30
							}
							if step == 1<<30 {
								break
							}
							if err != nil {
								var gf *GuardFailed
								var he *HoldExpired
								if errors.As(err, &gf) || errors.As(err, &he) {
									refused = append(refused, fmt.Sprintf("%s: step %d %s %s refused: %v", start, step, d.Action, d.Event, err))
								} else {
									refused = append(refused, fmt.Sprintf("%s: step %d %s %s error: %v", start, step, d.Action, d.Event, err))
								}
								break
							}
							if next.Version != r.Version+1 {
								refused = append(refused, fmt.Sprintf("%s: %s bumped the version by %d", start, d.Action, next.Version-r.Version))
							}
							r = next
							if d.Action == ActRecord && d.Event == RefundFailed {
								// The recorded failure is forgotten: the provider then shows
								// the money captured.
								truth = TruthCaptured
							}
						}
					}
				}
			}
		}
	}
	for _, s := range refused {
		t.Error(s)
	}
	for _, s := range long {
		t.Error("no end: " + s)
	}
}
