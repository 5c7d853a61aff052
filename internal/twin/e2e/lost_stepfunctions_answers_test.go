package e2e

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// loseFirstAnswers loses the first answer of each (function, operation) pair among the calls
// that move a reservation along (the api's start and cancel, the webhook's and the steps'
// answers to the waiting task) and records which it lost.
type loseFirstAnswers struct {
	mu   sync.Mutex
	seen map[string]bool
	lost []string
}

func (l *loseFirstAnswers) lose(role, op string) bool {
	switch op {
	case "StartExecution", "SendTaskSuccess", "SendTaskFailure":
	default:
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	pair := role + " " + op
	if l.seen[pair] {
		return false
	}
	l.seen[pair] = true
	l.lost = append(l.lost, pair)
	return true
}

func (l *loseFirstAnswers) lostPairs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lost)
}

// A StartExecution that took effect but whose answer never reached the api is retried and
// answered 202 with the one execution it started, not 500; an answer to the waiting task lost
// the same way changes nothing: the seat is sold once and paid once.
func TestAStartAndATaskAnswerWhoseResponsesWereLostSellTheSeatOnce(t *testing.T) {
	var l loseFirstAnswers
	e := New(t, Options{StepFunctionsLoseResponse: l.lose})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	x := e.Finish(e.Reserve(in))

	lost := l.lostPairs()
	if !slices.Contains(lost, stack.RoleName(stack.FnAPI)+" StartExecution") || len(lost) < 2 {
		t.Fatalf("lost %v; want the api's start and an answer to the waiting task", lost)
	}
	if n := countExecutions(e); n != 1 {
		t.Fatalf("%d executions; want 1", n)
	}
	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 1 || l.Captured != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// A customer's cancel whose SendTaskFailure took effect but lost its answer is still
// acknowledged, and the payment is voided, not charged.
func TestACancelWhoseTaskFailureAnswerWasLostIsAcknowledgedAndNotCharged(t *testing.T) {
	var l loseFirstAnswers
	e := New(t, Options{StepFunctionsLoseResponse: func(role, op string) bool {
		return role == stack.RoleName(stack.FnAPI) && op == "SendTaskFailure" && l.lose(role, op)
	}})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	if status, body := e.Cancel(in.CustomerID, in.ReservationID); status != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	if lost := l.lostPairs(); len(lost) != 1 {
		t.Fatalf("lost %v; want the cancel's SendTaskFailure", lost)
	}
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndCustomerCanceled)
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectOutboxUnwound(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged,
		outbox.ReservationCancelRequested, outbox.PaymentVoided)
	if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Captures != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}
