package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// lateAuthorizationAtTheDeadline seeds ev1 with one seat, reserves it for alice with the
// authorize-late card, waits for the saga to wait on the payment and sets the clock to the
// hold's deadline, which it returns.
func (e *Env) lateAuthorizationAtTheDeadline() (seats []string, in saga.Input, arn string, deadline time.Time) {
	e.T.Helper()
	seats = e.Seed("ev1", 1)
	in = Input("alice", "k1", "ev1", stripesim.PaymentMethodAuthorizeLate, seats[0])
	arn = e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	deadline = e.Reservation(in.ReservationID).HoldExpiresAt
	e.Clock.Set(deadline)
	return seats, in, arn, deadline
}

// A late authorization that lands while the reconcile loop waits before its last attempt:
// the last attempt reacquires the seat and the execution captures it and ends Confirmed. The
// capture bound used to count reconcile attempts, so this execution ended in "Needs
// reconciliation" with the payment recorded UNKNOWN (capture never tried) and only the
// sweeper sold the seat; in the one-minute demo every late-auth buyer went that way.
func TestLateAuthorizationOnTheLastReconcileAttempt(t *testing.T) {
	// Attempts at the deadline (seats released, still processing), 10 s later, and 30 s
	// later (the last). The authorization lands about 20 s after the deadline.
	e := New(t, Options{ReconcileAttempts: 3, ReconcileBackoff: 10 * time.Second,
		Payments: stack.PaymentsConfig{LateAuthorizationDelay: Hold + 20*time.Second}})
	seats, in, arn, deadline := e.lateAuthorizationAtTheDeadline()
	e.WaitFor("the lapsed hold to be released", deadline.Add(9*time.Second), func() bool {
		return e.Reservation(in.ReservationID).Inventory == reservation.Released
	})
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndConfirmed)
	reconciles := 0
	for _, s := range x.Path {
		if s == "Reconcile payment" {
			reconciles++
		}
	}
	if reconciles != 3 || !slices.Equal(x.Path[len(x.Path)-2:], []string{"Capture payment", "Confirmed"}) {
		t.Fatalf("want the authorization found by the last of 3 attempts, then captured; path %v", x.Path)
	}
	r := e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	if r.Outcome != reservation.OutcomeConfirmedLate {
		t.Fatalf("outcome %s", r.Outcome)
	}
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, in.ReservationID)
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 1 || l.Captured != in.Amount || l.Held() != 0 {
		t.Fatalf("ledger %+v", l)
	}
	if res := e.Sweep(); res.ReconciliationBacklog != 0 || res.PaymentsExamined != 0 {
		t.Fatalf("left for the sweeper: %+v", res)
	}
	e.Invariants()
}
