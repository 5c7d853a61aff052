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

// expectRefundNotRecordedBeforeItSucceeded drives the rest of both refund attacks:
// while the provider's refund is pending the reservation must not be at rest as REFUNDED,
// and once the provider says the refund failed the money must still be owed back (on the
// backlog), never forgotten.
func expectRefundNotRecordedBeforeItSucceeded(t *testing.T, e *Env, in saga.Input, delay time.Duration) {
	t.Helper()
	l, _ := e.Ledger(in.ReservationID)
	if l.RefundsPending != 1 || l.Refunded != 0 {
		t.Fatalf("ledger %+v: the attack needs exactly one refund pending at the provider", l)
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
	if l, _ := e.Ledger(in.ReservationID); l.Net() != 0 {
		t.Fatalf("ledger %+v: the money was not returned", l)
	}
	e.Invariants()
}

// Promises 2 and 3 (nobody is charged for a seat they did not get; no unknown payment is
// forgotten), once broken here: RELEASED/PAID goes to the sweeper with the void policy; the
// provider accepts the refund pending, and the write recording its id fails once. The
// provider counts a pending refund as refunded, so a PaymentIntent alone must never settle
// it: the reservation stays REFUND_PENDING on the index, the refund's id is found again by
// repeating the same refund attempt, and it is recorded REFUNDED only once the refund itself
// succeeded.
func TestAttackCustomerRefundIDWriteFailsThenThePendingRefundIsStillVerified(t *testing.T) {
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
		t.Fatal("the refund id write was never attempted: the attack did not reach its point")
	}
	expectRefundNotRecordedBeforeItSucceeded(t, e, in, delay)
}

// The same promises through the provider instead of DynamoDB: the refund's response is lost
// (the refund is created, the answers never arrive). The settlement records UNKNOWN, then
// REFUND_PENDING from the PaymentIntent, finds the refund's id by repeating the attempt, and
// records REFUNDED only once the refund succeeded.
func TestAttackCustomerRefundResponseLostThenThePendingRefundIsStillVerified(t *testing.T) {
	const delay = 10 * time.Minute
	e := New(t, Options{LateSuccessPolicy: "void", Payments: stack.PaymentsConfig{RefundDelay: delay}})
	in, _ := strandCapturedMoney(t, e, stripesim.PaymentMethodVisa)
	e.Stack.Payments.LoseResponseNext(stripesim.EndpointCreateRefund, 3)
	res1 := e.Sweep()
	e.Stack.Payments.ClearFaults()
	r1 := e.Reservation(in.ReservationID)
	t.Logf("after sweep 1: %+v %s/%s refundId=%q", res1, r1.Inventory, r1.Payment, r1.RefundID)
	if l, _ := e.Ledger(in.ReservationID); l.RefundsPending != 1 {
		t.Fatalf("ledger %+v: the lost refund was not created", l)
	}
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	res2 := e.Sweep()
	r2 := e.Reservation(in.ReservationID)
	l2, _ := e.Ledger(in.ReservationID)
	t.Logf("after sweep 2: %+v %s/%s refundId=%q ledger %+v", res2, r2.Inventory, r2.Payment, r2.RefundID, l2)
	expectRefundNotRecordedBeforeItSucceeded(t, e, in, delay)
}
