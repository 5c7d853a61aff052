package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// The customer cancels after the gate let them through and before their saga's claim runs:
// the DELETE is answered 200 RELEASED at once, the seat is another buyer's to take straight
// away, the canceled saga's claim then refuses to hold (the cancel was first) and ends without
// touching the seat or the provider, and a retry of the canceled POST starts nothing.
func TestCancelBeforeTheClaimHoldsNothingAndFreesTheSeatAtOnce(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	open, waiting := e.Gate("claim")
	alice := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	arn := e.Reserve(alice)
	e.WaitFor("alice's claim to be invoked", time.Time{}, func() bool { return waiting() == 1 })

	status, raw := e.Cancel("alice", alice.ReservationID)
	var view cancelAnswer
	if err := json.Unmarshal([]byte(raw), &view); err != nil || status != http.StatusOK ||
		view.Status != string(reservation.Released) || !view.CancelRequested || view.Money != "none" {
		t.Fatalf("DELETE before the claim: %d %s, want 200 RELEASED, cancel recorded, money none", status, raw)
	}
	// Within the gate's lease, bob passes it for the seat alice gave up.
	bob := Input("bob", "b1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	bobARN := e.Reserve(bob)
	e.WaitFor("bob's claim to be invoked", time.Time{}, func() bool { return waiting() == 2 })
	open()

	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndSeatUnavailable)
	e.ExpectPath(x, "Claim seats", "Rejected: seats taken")
	e.ExpectEnding(e.Finish(bobARN), saga.EndConfirmed)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, bob.ReservationID)
	if _, found := e.Ledger(alice.ReservationID); found {
		t.Fatal("a PaymentIntent was created for the canceled buyer")
	}
	if r, err := e.Store.Get(e.Ctx, alice.ReservationID); err == nil {
		t.Fatalf("the canceled buyer has a reservation: %+v", r)
	}
	executions := countExecutions(e)
	body, _ := json.Marshal(api.CreateRequest{SeatIDs: alice.SeatIDs, PaymentMethod: alice.PaymentMethod})
	retry := callAPI(e, "POST", "/events/ev1/reservations", "alice", "k1", string(body))
	if retry.Status != http.StatusAccepted || retry.str("status") != string(reservation.Released) || countExecutions(e) != executions {
		t.Fatalf("retry of the canceled POST: %d %s, %d executions (were %d)", retry.Status, retry.Raw, countExecutions(e), executions)
	}
	e.Invariants()
}
