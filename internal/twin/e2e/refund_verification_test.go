package e2e

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// refundIDWrite reports a write that records a refund's id: a transaction putting a
// reservation item that carries refundId.
func refundIDWrite(params any) bool {
	in, ok := params.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range in.TransactItems {
		if it.Put != nil {
			if _, has := it.Put.Item["refundId"]; has {
				return true
			}
		}
	}
	return false
}

// expectRefundNotRecordedBeforeItSucceeded drives the rest of both refund tests:
// while the provider's refund is pending the reservation must not be at rest as REFUNDED,
// and once the provider says the refund failed the money must still be owed back (on the
// backlog), never forgotten.
func expectRefundNotRecordedBeforeItSucceeded(t *testing.T, e *Env, in saga.Input, delay time.Duration) {
	t.Helper()
	l, _ := e.Ledger(in.ReservationID)
	if l.RefundsPending != 1 || l.Refunded != 0 {
		t.Fatalf("ledger %+v: the test needs exactly one refund pending at the provider", l)
	}
	r := e.Reservation(in.ReservationID)
	if r.Payment == reservation.Refunded {
		// Let the refund fail at the provider and show that nothing will ever look again.
		e.Clock.Advance(delay + time.Second)
		res := e.Sweep()
		l, _ = e.Ledger(in.ReservationID)
		t.Errorf("reservation recorded %s/%s (refundId %q, on index %v) while the provider's refund was still pending; "+
			"after the refund failed: ledger captured %d refunded %d refundsFailed %d net %d, sweep backlog %d, reservation %s",
			r.Inventory, r.Payment, r.RefundID, r.Unsettled(), l.Captured, l.Refunded, l.RefundsFailed, l.Net(),
			res.ReconciliationBacklog, e.Reservation(in.ReservationID).Payment)
		e.Invariants()
		return
	}
	// The correct behaviour: still unsettled while pending, refunded once it succeeds.
	if !r.Unsettled() {
		t.Fatalf("%s/%s with a refund pending is off the reconciliation index", r.Inventory, r.Payment)
	}
	e.Clock.Advance(delay + time.Second)
	for i := 0; i < 4; i++ {
		if res := e.Sweep(); res.ReconciliationBacklog == 0 {
			break
		}
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Refunded)
	if l, _ := e.Ledger(in.ReservationID); l.Net() != 0 || l.Refunds != 1 || l.RefundsFailed != 0 {
		t.Fatalf("ledger %+v: want the one refund found again and succeeded, no second one", l)
	}
	e.Invariants()
}

// Nobody is charged for a seat they did not get and no unknown payment is forgotten, promises
// once broken here: RELEASED/PAID goes to the sweeper with the void policy; the provider
// accepts the refund pending, and the write recording its id fails once. The provider counts a
// pending refund as refunded, so a PaymentIntent alone must never settle it: the reservation
// stays REFUND_PENDING on the index, the refund's id is found again by repeating the same
// refund attempt, and it is recorded REFUNDED only once the refund itself succeeded.
func TestRefundIDWriteFailsThenThePendingRefundIsStillVerified(t *testing.T) {
	const delay = 10 * time.Minute
	var armed atomic.Bool
	var refused atomic.Int64
	e := New(t, Options{LateSuccessPolicy: "void", Payments: stack.PaymentsConfig{RefundDelay: delay},
		DynamoDBFault: func(op string, params any) error {
			if op == "TransactWriteItems" && armed.Load() && refundIDWrite(params) && refused.Add(1) == 1 {
				return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "injected: the refund id write fails"}
			}
			return nil
		}})
	in, _ := strandCapturedMoney(t, e, stripesim.PaymentMethodVisa)
	armed.Store(true)
	e.Sweep()
	if refused.Load() == 0 {
		t.Fatal("the refund id write was never attempted: the test did not reach its point")
	}
	expectRefundNotRecordedBeforeItSucceeded(t, e, in, delay)
}

// The same promises through the provider instead of DynamoDB: the refund's response is lost
// (the refund is created, the answers never arrive). The settlement records UNKNOWN, then
// REFUND_PENDING from the PaymentIntent, finds the refund's id by repeating the attempt, and
// records REFUNDED only once the refund succeeded.
func TestRefundResponseLostThenThePendingRefundIsStillVerified(t *testing.T) {
	const delay = 10 * time.Minute
	e := New(t, Options{LateSuccessPolicy: "void", Payments: stack.PaymentsConfig{RefundDelay: delay}})
	in, _ := strandCapturedMoney(t, e, stripesim.PaymentMethodVisa)
	e.Stack.Payments.LoseResponseNext(stripesim.EndpointCreateRefund, 3)
	// The refund's answers are lost: the money's fate is unknown, and it stays in the backlog.
	if res := e.Sweep(); res.Errors != 0 || res.UnresolvedPayments != 1 || res.ReconciliationBacklog != 1 {
		t.Fatalf("sweep with the refund's answers lost: %+v; want the payment unresolved, in the backlog", res)
	}
	e.Stack.Payments.ClearFaults()
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.UnknownNeedsReconciliation)
	if l, _ := e.Ledger(in.ReservationID); l.RefundsPending != 1 {
		t.Fatalf("ledger %+v: the lost refund was not created", l)
	}
	// The provider answers again: the PaymentIntent shows the refund, which is still pending,
	// so the reservation is recorded REFUND_PENDING and stays in the backlog.
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	if res := e.Sweep(); res.Errors != 0 || res.ReconciliationBacklog != 1 {
		t.Fatalf("sweep with the refund pending: %+v; want it still in the backlog", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.RefundPending)
	expectRefundNotRecordedBeforeItSucceeded(t, e, in, delay)
}
