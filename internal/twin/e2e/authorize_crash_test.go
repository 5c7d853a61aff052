package e2e

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// crashedIntoReconciliation starts a stack whose authorize step crashes once after acting,
// holds every reconcile invocation, reserves one of two ev1 seats for alice with a 3-D Secure
// card, and waits (what) until the crashed attempt's execution is held before reconciliation.
// The clock must not move: still is now, and a limit of now means WaitFor never steps it.
func crashedIntoReconciliation(t *testing.T, what string) (e *Env, seats []string, in saga.Input, arn string, open func(), still time.Time) {
	t.Helper()
	e = New(t, Options{})
	seats = e.Seed("ev1", 2)
	if err := e.Stack.Lambdas.FailAfter("authorize", 1, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	open, waiting := e.Gate("reconcile")
	in = Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn = e.Reserve(in)
	still = e.Clock.Now()
	e.WaitFor(what, still, func() bool { return waiting() == 1 })
	return e, seats, in, arn, open, still
}

// The authorize step crashes after creating the PaymentIntent and recording its task token;
// the payment wait has no Retry (a retried attempt would wait the whole hold again), so the
// execution goes to reconciliation. Before reconciliation runs, the customer completes 3-D
// Secure and the webhook records the authorization and answers the dead token. Reconciliation
// finds it authorized while the hold is live, confirms the seats and hands the capture on:
// CONFIRMED + PAID, one PaymentIntent, one authorization, one capture, and nobody answered the
// dead token but the webhook.
func TestAuthorizeCrashThenTheBuyerAuthorizes(t *testing.T) {
	e, seats, in, arn, open, still := crashedIntoReconciliation(t, "the crashed authorize attempt to reach reconciliation")
	first := e.ExpectReservation(in.ReservationID, reservation.PaymentPending, reservation.Authorizing)
	l, ok := e.Ledger(in.ReservationID)
	if !ok || l.Status != "requires_action" || first.TaskToken == "" || first.PaymentIntentID != l.PaymentIntentID {
		t.Fatalf("after the crash: ledger %+v, reservation %+v", l, first)
	}

	if err := e.Stack.Payments.Authenticate(first.PaymentIntentID, true); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the webhook to record the authorization", still, func() bool {
		return e.Reservation(in.ReservationID).Payment == reservation.Authorized
	})
	open()

	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?", "Capture payment", "Confirmed")
	if got := taskFailures(e, arn); len(got) != 1 || got[0] != "Lambda.ServiceException" {
		t.Fatalf("task failures %v, want only the crash", got)
	}
	if n := e.Stack.Lambdas.Invocations("authorize"); n != 1 {
		t.Fatalf("authorize ran %d times, want 1 (the crash; reconciliation took over)", n)
	}
	r := e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	if r.TaskToken != first.TaskToken {
		t.Fatal("a token other than the crashed attempt's was recorded")
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
		if m.ReservationID == in.ReservationID && m.Kind == stripesim.MovementAuthorized {
			authorizations++
		}
	}
	if authorizations != 1 {
		t.Fatalf("%d authorizations", authorizations)
	}
	e.Invariants()
}

// taskFailures lists the errors of the execution's failed task attempts, in order.
func taskFailures(e *Env, arn string) []string {
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
