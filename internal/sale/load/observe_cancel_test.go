package load

import (
	"testing"
	"time"
)

// A buyer who canceled before the claim reads RELEASED from its admission (no payment state):
// it never held, so it has no time to hold; a release after a hold still counts as one.
func TestACancelBeforeTheClaimIsNoHold(t *testing.T) {
	res := Result{sent: time.Now().Add(-time.Second)}
	observe(&res, status{Status: "RELEASED"})
	if res.HoldLatency != 0 {
		t.Fatalf("hold latency %s for a buyer canceled before the claim, want none", res.HoldLatency)
	}
	observe(&res, status{Status: "RELEASED", PaymentState: "NOT_STARTED"})
	if res.HoldLatency == 0 {
		t.Fatal("no hold latency for a reservation released after its hold")
	}
}
