package e2e

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// An orphaned hold whose execution was stopped while waiting for a payment the buyer never
// finished: the sweeper leaves it alone within the grace period, then voids the PaymentIntent
// (provider truth first) and releases the seat; the next buyer can claim it.
func TestSweeperVoidsAndReleasesAHoldWhoseExecutionStopped(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	id := postReservation(e, "alice", "k1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	r := e.WaitingForPayment(id)
	if _, err := e.Stack.SFN.StopExecution(e.Ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(e.Stack.ExecutionARN(id)),
		Error: aws.String("OperatorStopped"), Cause: aws.String("test: the execution is gone")}); err != nil {
		t.Fatal(err)
	}
	x := e.Finish(e.Stack.ExecutionARN(id))
	if x.Status != "ABORTED" {
		t.Fatalf("execution %s", x.Status)
	}

	// Past the deadline but within the grace period: not the sweeper's yet.
	e.Clock.Set(r.HoldExpiresAt.Add(time.Minute))
	if res := e.Sweep(); res.HoldsExamined != 0 || res.Released+res.Reconciled != 0 {
		t.Fatalf("sweep within grace: %+v", res)
	}
	e.ExpectReservation(id, reservation.PaymentPending, reservation.Authorizing)

	e.Clock.Set(r.HoldExpiresAt.Add(config.DefaultSweepGrace + time.Second))
	res := e.Sweep()
	if res.HoldsExamined != 1 || res.Reconciled != 1 || res.Errors != 0 || res.ReconciliationBacklog != 0 {
		t.Fatalf("sweep: %+v", res)
	}
	e.ExpectReservation(id, reservation.Released, reservation.Canceled)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	types := e.OutboxTypes(id)
	if countType(types, outbox.PaymentVoided) != 1 {
		t.Fatalf("outbox %v", types)
	}
	e.ExpectOutboxUnwound(id, outbox.PaymentVoided)
	if l, ok := e.Ledger(id); !ok || l.Status != "canceled" || l.Captured != 0 {
		t.Fatalf("ledger %+v", l)
	}
	if again := e.Sweep(); again.HoldsExamined+again.PaymentsExamined != 0 || again.ReconciliationBacklog != 0 {
		t.Fatalf("second sweep: %+v", again)
	}
	// The seat is free for the next buyer.
	next := callAPI(e, "POST", "/events/ev1/reservations", "bob", "b1", createBody(2500, stripesim.PaymentMethodVisa, seats[0]))
	if next.Status != http.StatusAccepted {
		t.Fatalf("next buyer: %d %s", next.Status, next.Raw)
	}
	nx := e.Finish(e.Stack.ExecutionARN(next.str("reservationId")))
	e.ExpectEnding(nx, saga.EndConfirmed)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, next.str("reservationId"))
	e.Invariants()
}

// A hold written by a Claim whose execution never got further (no payment started, no
// execution at all): released by the sweeper, once.
func TestSweeperReleasesAHoldWithoutAnExecution(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	res, err := e.Store.Claim(e.Ctx, reservation.ClaimRequest{ReservationID: "r_orphan", CustomerID: "alice", EventID: "ev1",
		SeatIDs: []string{seats[1]}, Amount: 2500, Currency: "eur", HoldDuration: Hold, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	e.Clock.Set(res.HoldExpiresAt.Add(config.DefaultSweepGrace + time.Second))
	sweep := e.Sweep()
	if sweep.Released != 1 || sweep.ReconciliationBacklog != 0 {
		t.Fatalf("sweep: %+v", sweep)
	}
	e.ExpectReservation("r_orphan", reservation.Released, reservation.NotStarted)
	e.ExpectSeat("ev1", seats[1], reservation.Available, "")
	e.ExpectOutbox("r_orphan", outbox.SeatsHeld, outbox.SeatsReleased)
	if _, ok := e.Ledger("r_orphan"); ok {
		t.Fatal("a payment object appeared")
	}
}

// The sweeper racing the saga: the buyer's authorization landed but its webhook never
// came, and the execution is still running long past the deadline (stuck, as far as the
// sweeper can tell). The saga's own reconcile and the sweeper settle the late success at the
// same time; exactly one of them reacquires and captures, never a release and a confirmation.
func TestSweeperRacingTheSagaSettlesALateSuccessOnce(t *testing.T) {
	e := New(t, Options{})
	e.Stack.Payments.SetWebhook(stripesim.WebhookConfig{}) // the authorization is never reported
	seats := e.Seed("ev1", 1)
	id := postReservation(e, "alice", "k1", stripesim.PaymentMethodVisa, seats[0])
	r := e.WaitingForPayment(id)
	e.WaitFor("the PaymentIntent to be authorized", e.Deadline(id), func() bool {
		l, ok := e.Ledger(id)
		return ok && l.Status == "requires_capture"
	})

	var wg sync.WaitGroup
	var sweep sweeper.Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The wait state times out and the saga reconciles in the same moment.
		e.Clock.Set(r.HoldExpiresAt.Add(sweeper.DefaultStuckAfter + time.Second))
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		sweep = e.Sweep()
	}()
	wg.Wait()
	x := e.Finish(e.Stack.ExecutionARN(id))

	// The sweeper examined the one reservation at most, and whatever it found (the hold to
	// settle, or the saga's write first) it neither failed nor released it.
	if sweep.HoldsExamined+sweep.PaymentsExamined > 1 || sweep.Errors != 0 || sweep.Released != 0 {
		t.Fatalf("sweep racing the saga: %+v", sweep)
	}
	// The saga's wait timed out into reconciliation and, whoever settled first, it ends sold.
	e.ExpectEnding(x, saga.EndConfirmed)
	if !slices.Contains(x.Path, "Reconcile payment") || x.Path[len(x.Path)-1] != "Confirmed" {
		t.Fatalf("execution %s; want reconciled and confirmed", x)
	}
	e.ExpectReservation(id, reservation.Confirmed, reservation.Paid)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, id)
	types := e.OutboxTypes(id)
	if countType(types, outbox.SeatsReacquired)+countType(types, outbox.ReservationConfirmed) != 1 ||
		countType(types, outbox.SeatsReleased) != 0 || countType(types, outbox.PaymentVoided) != 0 {
		t.Fatalf("outbox %v", types)
	}
	if l, ok := e.Ledger(id); !ok || l.Captures != 1 || l.Captured != 2500 {
		t.Fatalf("ledger %+v", l)
	}
	if after := e.Sweep(); after.ReconciliationBacklog != 0 {
		t.Fatalf("backlog after: %+v", after)
	}
	e.Invariants()
}
