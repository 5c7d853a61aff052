package e2e

import (
	"net/http"
	"testing"

	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// A customer's reservations give their places under the cap (two by default) back as they
// end, sold or declined, not when the places' time runs out: two new reservations are let
// through at once, and a third while those two are in progress is refused hold_limit.
func TestAReservationThatEndsGivesItsPlaceUnderTheCapBackAtOnce(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 5)
	sold := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(sold)), saga.EndConfirmed)
	declined := Input("alice", "k2", "ev1", stripesim.PaymentMethodDeclined, seats[1])
	e.ExpectEnding(e.Finish(e.Reserve(declined)), saga.EndPaymentDeclined)

	// Both places are free again: two reservations go through while both are in progress
	// (their executions wait for the payment that the gate keeps from starting here).
	open, _ := e.Gate("authorize")
	defer open()
	e.Reserve(Input("alice", "k3", "ev1", stripesim.PaymentMethodVisa, seats[2]))
	e.Reserve(Input("alice", "k4", "ev1", stripesim.PaymentMethodVisa, seats[3]))
	third := callAPI(e, http.MethodPost, "/events/ev1/reservations", "alice", "k5", createBody(SeatPrice, stripesim.PaymentMethodVisa, seats[4]))
	if third.Status != http.StatusConflict || third.str("code") != "hold_limit" {
		t.Fatalf("a third reservation in progress: %d %s, want 409 hold_limit", third.Status, third.Raw)
	}
}
