package e2e

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/outbox"
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

// declineRecordOf reports the transaction that records a payment declined (its outbox record).
func declineRecordOf(params any) bool {
	in, ok := params.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range in.TransactItems {
		if it.Put == nil {
			continue
		}
		if v, ok := it.Put.Item[outbox.AttrType].(*ddbtypes.AttributeValueMemberS); ok && v.Value == string(outbox.PaymentFailed) {
			return true
		}
	}
	return false
}

// The authorize step's record of an unknown payment method's decline fails once: the wait
// ends in reconciliation, which finds the buyer still to pay during a live hold and resumes
// the wait; the next attempt meets the same refusal and records it. The reservation ends
// declined with the seat back and nothing held, not waiting out the hold.
func TestAnUnknownPaymentMethodWhoseDeclineRecordFailedIsDeclinedByTheNextAttempt(t *testing.T) {
	var refused atomic.Int64
	e := New(t, Options{DynamoDBFault: func(op string, params any) error {
		if op == "TransactWriteItems" && declineRecordOf(params) && refused.Add(1) == 1 {
			return &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected: the decline's record fails"}
		}
		return nil
	}})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", "pm_that_stripe_never_issued", seats[0])
	x := e.Finish(e.Reserve(in))
	if refused.Load() < 2 {
		t.Fatalf("%d decline records tried; want the failed one and the next attempt's", refused.Load())
	}
	e.ExpectEnding(x, saga.EndPaymentDeclined)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
		"Resume waiting for payment", "Wait for payment authorization", "Void payment after decline", "Payment failed")
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Failed)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Authorized != 0 || l.Captured != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}
