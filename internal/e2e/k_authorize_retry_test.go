package e2e

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/lambdahost"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/paymentsim"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// 12 (authorize, the webhook first). The authorize step crashes after creating the
// PaymentIntent and recording its task token; while the state backs off, the customer completes
// 3-D Secure and the webhook records the authorization and answers the dead token. The retried
// attempt finds the payment AUTHORIZED and, instead of answering its own token (only the api
// and webhook may call SendTask*), fails with PaymentAlreadyAuthorized, which the ASL catches
// into "Confirm seats": CONFIRMED + PAID on the happy path's five states, one PaymentIntent,
// one authorization, one capture.
func TestKAuthorizeCrashThenCustomerAuthorizes(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	if err := e.Stack.Lambdas.FailAfter("authorize", 1, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	in := Input("alice", "k1", "ev1", paymentsim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)

	// The clock must not move until the webhook has answered: the retry's backoff is under a
	// second of fake time, and WaitFor steps the clock whenever the stack looks idle. A limit
	// of now means it never steps.
	still := e.Clock.Now()
	e.WaitFor("the first authorize attempt to crash after its writes", still, func() bool {
		return e.Stack.Lambdas.Stats("authorize").FaultsInjected == 1
	})
	first := e.ExpectReservation(in.ReservationID, reservation.PaymentPending, reservation.Authorizing)
	l, ok := e.Ledger(in.ReservationID)
	if !ok || l.Status != "requires_action" || first.TaskToken == "" || first.PaymentIntentID != l.PaymentIntentID {
		t.Fatalf("after the crash: ledger %+v, reservation %+v", l, first)
	}

	if err := e.Stack.Payments.Authenticate(first.PaymentIntentID, true); err != nil {
		t.Fatal(err)
	}
	// The webhook's callback goes to the dead token whenever it runs; what matters is that the
	// authorization is recorded before the retry runs.
	e.WaitFor("the webhook to record the authorization", still, func() bool {
		return e.Reservation(in.ReservationID).Payment == reservation.Authorized
	})
	if n := e.Stack.Lambdas.Invocations("authorize"); n != 1 {
		t.Fatalf("authorize retried before the buyer authorized: %d runs", n)
	}

	x := e.Finish(arn)
	if x.Status != "SUCCEEDED" {
		t.Fatalf("%s %s: %s %v", x.Status, x.Error, x.Cause, x.Path)
	}
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	if got := kTaskFailures(e, arn); len(got) != 2 || got[0] != "Lambda.ServiceException" || got[1] != saga.ErrPaymentAlreadyAuthorized {
		t.Fatalf("task failures %v, want the crash then %s", got, saga.ErrPaymentAlreadyAuthorized)
	}
	if n := e.Stack.Lambdas.Invocations("authorize"); n != 2 {
		t.Fatalf("authorize ran %d times, want 2 (crash, retry)", n)
	}
	r := e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	if r.TaskToken != first.TaskToken {
		t.Fatal("the retry recorded its token, which nobody may answer")
	}
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, in.ReservationID)
	e.ExpectOutbox(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged,
		outbox.PaymentAuthorized, outbox.ReservationConfirmed, outbox.PaymentStateChanged, outbox.PaymentCaptured)

	l, _ = e.Ledger(in.ReservationID)
	if l.Status != "succeeded" || l.Captures != 1 || l.Captured != in.Amount || l.Authorized != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	authorizations := 0
	for _, m := range e.Stack.Payments.Ledger().Movements {
		if m.ReservationID == in.ReservationID && m.Kind == paymentsim.MovementAuthorized {
			authorizations++
		}
	}
	if authorizations != 1 {
		t.Fatalf("%d authorizations", authorizations)
	}
	e.Invariants()
}

// kTaskFailures lists the errors of the execution's failed task attempts, in order.
func kTaskFailures(e *Env, arn string) []string {
	e.T.Helper()
	events, err := e.Stack.History(e.Ctx, arn)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		if ev.Type == sfntypes.HistoryEventTypeTaskFailed && ev.TaskFailedEventDetails != nil {
			out = append(out, aws.ToString(ev.TaskFailedEventDetails.Error))
		}
	}
	return out
}
