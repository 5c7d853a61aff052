package e2e

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// strandCapturedMoney sells a seat, then rewrites the stored state as if its seats had been
// given back while its money stayed captured (the state a lost write could leave), keeping the
// version and revision so every fenced writer still acts on it. The reservation joins the
// reconciliation index, as the store puts any RELEASED reservation with captured money there.
func strandCapturedMoney(t *testing.T, e *Env, method string) (saga.Input, string) {
	t.Helper()
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", method, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(in)), saga.EndConfirmed)
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	_, err := e.Stack.DynamoDB.UpdateItem(e.Ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(e.Stack.Names.Of(tables.ReservationsTable)),
		Key:                      map[string]ddbtypes.AttributeValue{tables.AttrReservationID: s(in.ReservationID)},
		UpdateExpression:         aws.String("SET inventoryState = :rel, #sh = :sh, #since = :since"),
		ExpressionAttributeNames: map[string]string{"#sh": tables.AttrReconShard, "#since": tables.AttrReconSince},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":rel": s(string(reservation.Released)), ":sh": s("0"),
			":since": s(e.Clock.Now().UTC().Format("2006-01-02T15:04:05.000000000Z"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Stack.DynamoDB.UpdateItem(e.Ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.Stack.Names.Of(tables.SeatsTable)),
		Key:                       map[string]ddbtypes.AttributeValue{tables.AttrSeatKey: s(reservation.SeatKey("ev1", seats[0]))},
		UpdateExpression:          aws.String("SET #st = :avail REMOVE #rid"),
		ExpressionAttributeNames:  map[string]string{"#st": "state", "#rid": tables.AttrReservationID},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":avail": s(string(reservation.Available))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Paid); !r.Unsettled() {
		t.Fatal("captured money for released seats is not unsettled")
	}
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	return in, seats[0]
}

// A refund is unsettled until the provider says it succeeded: the sweeper records it pending,
// keeps it in the backlog while it is pending, and only then records it refunded.
func TestARefundStaysPendingUntilTheProviderSettlesIt(t *testing.T) {
	const delay = 10 * time.Minute
	e := New(t, Options{LateSuccessPolicy: "void", Payments: stack.PaymentsConfig{RefundDelay: delay}})
	in, _ := strandCapturedMoney(t, e, stripesim.PaymentMethodVisa)

	if res := e.Sweep(); res.ReconciliationBacklog != 1 {
		t.Fatalf("sweep while the refund is pending: %+v; want it in the backlog", res)
	}
	r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.RefundPending)
	if r.RefundID == "" || r.RefundAttempts != 0 {
		t.Fatalf("refund id %q, attempts %d", r.RefundID, r.RefundAttempts)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Refunded != 0 || l.RefundsPending != 1 {
		t.Fatalf("ledger %+v: want one refund pending, nothing refunded yet", l)
	}

	e.Clock.Advance(delay + time.Second)
	if res := e.Sweep(); res.ReconciliationBacklog != 0 {
		t.Fatalf("sweep after the refund succeeded: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Refunded)
	if l, _ := e.Ledger(in.ReservationID); l.Net() != 0 || l.Refunds != 1 {
		t.Fatalf("ledger %+v: want the money returned once", l)
	}
	e.Invariants()
}

// A refund that fails is retried with a new attempt (a new idempotency key); one that keeps
// failing is escalated: counted for an alarm, left in the backlog, never recorded refunded.
func TestAFailedRefundIsRetriedThenEscalated(t *testing.T) {
	const delay = time.Minute
	e := New(t, Options{LateSuccessPolicy: "void", Payments: stack.PaymentsConfig{RefundDelay: delay}})
	in, _ := strandCapturedMoney(t, e, stripesim.PaymentMethodRefundFail)

	for attempt := 1; attempt <= reservation.MaxRefundAttempts; attempt++ {
		if res := e.Sweep(); res.ReconciliationBacklog != 1 {
			t.Fatalf("sweep %d: %+v", attempt, res)
		}
		r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.RefundPending)
		if r.RefundAttempts != attempt-1 {
			t.Fatalf("refund attempt %d pending with %d failures recorded", attempt, r.RefundAttempts)
		}
		e.Clock.Advance(delay + time.Second)
	}
	if res := e.Sweep(); res.ReconciliationBacklog != 1 {
		t.Fatalf("sweep after the last failure: %+v; want it still in the backlog", res)
	}
	r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Paid)
	if r.RefundAttempts != reservation.MaxRefundAttempts {
		t.Fatalf("%d failed refunds recorded, want %d", r.RefundAttempts, reservation.MaxRefundAttempts)
	}
	if n := e.Stack.Metrics.Total(saga.MetricSettlementEscalated); n == 0 {
		t.Fatal("the refunds that keep failing were not escalated")
	}
	l, _ := e.Ledger(in.ReservationID)
	if l.RefundsFailed != reservation.MaxRefundAttempts || l.Refunded != 0 || l.Net() != in.Amount {
		t.Fatalf("ledger %+v: want %d failed refunds and the money still captured", l, reservation.MaxRefundAttempts)
	}
}

// The hold deadline bounds every wait: after the payment wait failed late in the hold and
// reconciliation resumed it, the resumed wait ends at the hold's deadline, not a whole hold
// later, and the seat goes back then.
func TestAResumedPaymentWaitEndsAtTheHoldsDeadline(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	if err := e.Stack.Lambdas.FailAfter("authorize", 1, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	open, waiting := e.Gate("reconcile")
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitFor("the failed wait to reach reconciliation", e.Clock.Now(), func() bool { return waiting() == 1 })
	deadline := e.Reservation(in.ReservationID).HoldExpiresAt
	// Most of the hold passes before reconciliation resumes the wait.
	e.Clock.Set(deadline.Add(-2 * time.Minute))
	open()
	e.WaitFor("the resumed wait", deadline.Add(-2*time.Minute), func() bool {
		return e.Stack.Lambdas.Invocations("authorize") == 2
	})
	e.Clock.Set(deadline.Add(time.Second))
	e.WaitFor("the seat to go back at the deadline", deadline.Add(30*time.Second), func() bool {
		return e.Seat("ev1", seats[0]).State == reservation.Available
	})
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndHoldExpired)
	e.Invariants()
}
