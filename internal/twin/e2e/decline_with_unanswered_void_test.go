package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// A declined card whose void (the cancel of the PaymentIntent) does not get a clear
// answer. The saga must not guess: the payment goes to UNKNOWN_NEEDS_RECONCILIATION with the
// seat protected, and only the provider's truth, retrieved by reconciliation, lets the seat
// go, with the payment recorded CANCELED. At no moment is the payment FAILED while the
// intent could still be authorized, and the invariant checker passes throughout.
//
// The decline webhook is held back (WebhookDelay) so that the saga, not the webhook, records
// the decline; the webhook races the compensate step otherwise, and a FAILED recorded by the
// webhook would make expectNeverFailed's check meaningless.
func TestDeclineWithUnansweredVoid(t *testing.T) {
	noWebhooks := stack.PaymentsConfig{WebhookDelay: 48 * time.Hour}

	t.Run("the void acts but its answer is lost: reconciliation finds it canceled", func(t *testing.T) {
		e := New(t, Options{Payments: noWebhooks})
		seats := e.Seed("ev1", 1)
		// Every cancel acts, then loses its response: compensate never hears back. The first
		// answer is held until the client times out, the later ones are cut at once (the
		// same uncertainty, without waiting out the timeout on every retry).
		e.Stack.Payments.LoseResponseNext(stripesim.EndpointCancelIntent, 1)
		e.Stack.Payments.InjectFault(stripesim.EndpointCancelIntent, stripesim.Fault{Kind: stripesim.FaultDropConnection, Times: -1})
		in := Input("alice", "k1", "ev1", stripesim.PaymentMethodDeclined, seats[0])
		x := e.Finish(e.Reserve(in))

		e.ExpectEnding(x, saga.EndPaymentDeclined)
		if x.Path[len(x.Path)-1] != "Payment failed" {
			t.Fatalf("%s", x)
		}
		// FAILED, the decline, stays once the void is known: it names the outcome.
		e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Failed)
		e.ExpectSeat("ev1", seats[0], reservation.Available, "")
		l, ok := e.Ledger(in.ReservationID)
		if !ok || l.Status != "canceled" || l.Held() != 0 || l.Captured != 0 || l.Declines != 1 {
			t.Fatalf("ledger %+v", l)
		}
		expectNeverFailed(t, e, in.ReservationID)
		e.Invariants()
	})

	t.Run("the void fails before acting: seats protected until the sweeper's reconciliation voids it", func(t *testing.T) {
		e := New(t, Options{Payments: noWebhooks, ReconcileAttempts: 2})
		seats := e.Seed("ev1", 1)
		e.Stack.Payments.InjectFault(stripesim.EndpointCancelIntent, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
		in := Input("alice", "k1", "ev1", stripesim.PaymentMethodDeclined, seats[0])
		x := e.Finish(e.Reserve(in))

		// Compensate and the bounded reconcile loop never learned the void's outcome: the
		// execution leaves the reservation in the backlog, the seat still held for it.
		e.ExpectEnding(x, saga.EndNeedsReconciliation)
		if !slices.Contains(x.Path, "Void payment after decline") {
			t.Fatalf("%s", x)
		}
		// FAILED stays FAILED while the void is unknown; the seat stays held because nothing
		// releases seats without the provider's answer, and the lapsed hold keeps it findable.
		r := e.ExpectReservation(in.ReservationID, reservation.PaymentPending, reservation.Failed)
		if l, _ := e.Ledger(in.ReservationID); l.Status != "requires_payment_method" {
			t.Fatalf("ledger %+v", l)
		}
		e.Invariants()

		// The provider answers again; the sweeper reconciles from its truth.
		e.Stack.Payments.ClearFaults()
		e.Clock.Set(r.HoldExpiresAt.Add(e.Stack.AppConfig.SweepGrace + time.Second))
		if res := e.Sweep(); res.Errors != 0 || res.ReconciliationBacklog != 0 {
			t.Fatalf("sweep: %+v", res)
		}
		e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Failed)
		e.ExpectSeat("ev1", seats[0], reservation.Available, "")
		if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Held() != 0 || l.Captured != 0 {
			t.Fatalf("ledger %+v", l)
		}
		expectNeverFailed(t, e, in.ReservationID)
		e.Invariants()
	})
}

// expectNeverFailed fails the test unless the reservation's outbox announced the decline once,
// from the provider's truth, and never announced the void (CANCELED) before the provider
// canceled: with the void unanswered, recording it would have been a guess. A FAILED that
// stays FAILED after the void is the durable decline.
func expectNeverFailed(t *testing.T, e *Env, id string) {
	t.Helper()
	types := e.OutboxTypes(id)
	failed := 0
	for _, ty := range types {
		if ty == outbox.PaymentFailed {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("decline recorded %d times: %v", failed, types)
	}
}
