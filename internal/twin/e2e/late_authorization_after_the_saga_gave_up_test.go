package e2e

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// A late authorization that lands when nothing waits for it any more: the reconcile loop
// spent its attempts while the payment was processing (seats released, payment UNKNOWN, the
// execution ended in "Needs reconciliation" with the payment still AUTHORIZING, which keeps it
// on the reconciliation index), another buyer bought the seat, and then the
// provider authorizes. The webhook changes nothing (stale); the authorization stays on the
// reconciliation index, so the invariant checker accepts it as backlog, and the sweeper voids it
// after the grace period. At no moment is an authorization open on a released reservation
// outside the backlog.
func TestLateAuthorizationAfterTheSagaGaveUp(t *testing.T) {
	e := New(t, Options{ReconcileAttempts: 2, ReconcileBackoff: 2 * time.Second,
		Payments: stack.PaymentsConfig{LateAuthorizationDelay: Hold + 5*time.Minute}})
	seats, in, arn, deadline := e.lateAuthorizationAtTheDeadline()
	authorizedAt := deadline.Add(4 * time.Minute) // before the late authorization lands
	e.WaitFor("the saga to give up", authorizedAt, func() bool {
		st, err := e.Stack.SFN.DescribeExecution(e.Ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		return err == nil && st.Status != sfntypes.ExecutionStatusRunning
	})
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndNeedsReconciliation)
	if r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Authorizing); !r.Unsettled() {
		t.Fatal("the released, still authorizing reservation is not on the reconciliation index")
	}

	bob := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(bob)), saga.EndConfirmed)
	e.Clock.Set(deadline.Add(5*time.Minute + 30*time.Second))
	e.WaitFor("the late authorization", time.Time{}, func() bool {
		l, ok := e.Ledger(in.ReservationID)
		return ok && l.Status == "requires_capture"
	})
	e.WaitFor("the webhooks to be delivered", time.Time{}, func() bool { return e.Stack.Payments.PendingWebhooks() == 0 })
	// Open, but in the backlog: the webhook did not move it (the saga no longer waits).
	r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Authorizing)
	e.Invariants()

	e.Clock.Set(r.ReconcileSince.Add(e.Stack.AppConfig.SweepGrace + time.Second))
	res := e.Sweep()
	if res.PaymentsExamined != 1 || res.Reconciled != 1 || res.ReconciliationBacklog != 0 || res.Errors != 0 {
		t.Fatalf("sweep: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, bob.ReservationID)
	if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Captures != 0 || l.Held() != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}
