package e2e

import (
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// A payment method the provider does not know, sent through the HTTP API, is the buyer's
// decline: the POST is accepted (the api cannot know the method), the saga ends declined at
// once instead of holding the seat for a reconciliation no retry can win, nothing is charged,
// and the seat goes to the next buyer.
func TestAnUnknownPaymentMethodIsDeclinedAndTheSeatGoesBackAtOnce(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", "pm_that_stripe_never_issued", seats[0])
	x := e.Finish(e.Reserve(in))

	e.ExpectEnding(x, saga.EndPaymentDeclined)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after decline", "Payment failed")
	if r := e.Reservation(in.ReservationID); r.Inventory != reservation.Released {
		t.Fatalf("reservation %s/%s", r.Inventory, r.Payment)
	}
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	e.WaitFor("the PaymentIntent to be canceled", time.Time{}, func() bool {
		l, ok := e.Ledger(in.ReservationID)
		return ok && l.Status == "canceled"
	})
	if l, _ := e.Ledger(in.ReservationID); l.Authorized != 0 || l.Captured != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}
