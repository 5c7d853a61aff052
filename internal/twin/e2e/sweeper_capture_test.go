package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// executionDiesAfterConfirm runs a reservation whose execution dies after Confirm and before
// Capture: the capture and reconcile functions fail before their handlers run (a Lambda outage)
// through every retry, so the execution ends in "Needs reconciliation" having captured nothing.
// The seats are CONFIRMED, the payment AUTHORIZED, no hold is left to expire: only the
// reconciliation index leads the sweeper there. It returns the reservation as the execution
// left it.
func executionDiesAfterConfirm(t *testing.T, e *Env, in saga.Input) reservation.Reservation {
	t.Helper()
	for _, fn := range []string{stack.FnCapture, stack.FnReconcile} {
		if err := e.Stack.Lambdas.FailBefore(fn, 1000, lambdahost.ServiceException()); err != nil {
			t.Fatal(err)
		}
	}
	x := e.Finish(e.Reserve(in))
	for _, fn := range []string{stack.FnCapture, stack.FnReconcile} {
		e.Stack.Lambdas.ClearFaults(fn)
	}
	e.ExpectEnding(x, saga.EndNeedsReconciliation)
	if !slices.Contains(x.Path, "Capture payment") || x.Path[len(x.Path)-1] != "Needs reconciliation" {
		t.Fatalf("execution %s", x)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Authorized)
	if l, ok := e.Ledger(in.ReservationID); !ok || l.Status != "requires_capture" || l.Captures != 0 || l.Held() != in.Amount {
		t.Fatalf("ledger before the sweep %+v", l)
	}
	// Nothing else would ever settle it: it is on the reconciliation index, and only there.
	if holds, err := e.Store.ExpiredHolds(e.Ctx, e.Clock.Now().Add(30*24*time.Hour), 100); err != nil || len(holds) != 0 {
		t.Fatalf("hold index %+v %v", holds, err)
	}
	listed, err := e.Store.NeedingReconciliation(e.Ctx, e.Clock.Now().Add(time.Second), 100)
	if err != nil || len(listed) != 1 || listed[0].ID != in.ReservationID || listed[0].ReconcileSince.IsZero() {
		t.Fatalf("reconciliation index %+v %v", listed, err)
	}
	return listed[0]
}

// expectCapturedOnce checks the end state: seats sold, paid once, announced once, nothing
// left for the sweeper, every invariant intact.
func expectCapturedOnce(t *testing.T, e *Env, in saga.Input, seat string) {
	t.Helper()
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	e.ExpectSeat("ev1", seat, reservation.Confirmed, in.ReservationID)
	if l, ok := e.Ledger(in.ReservationID); !ok || l.Status != "succeeded" || l.Captures != 1 || l.Captured != in.Amount || l.Held() != 0 {
		t.Fatalf("ledger %+v", l)
	}
	types := e.OutboxTypes(in.ReservationID)
	if countType(types, outbox.PaymentCaptured) != 1 || countType(types, outbox.ReservationConfirmed) != 1 ||
		countType(types, outbox.SeatsReleased) != 0 || types[len(types)-1] != outbox.PaymentCaptured {
		t.Fatalf("outbox %v", types)
	}
	if again := e.Sweep(); again.PaymentsExamined+again.HoldsExamined != 0 || again.ReconciliationBacklog != 0 || again.Captured != 0 {
		t.Fatalf("second sweep: %+v", again)
	}
	if listed, _ := e.Store.NeedingReconciliation(e.Ctx, e.Clock.Now().Add(time.Second), 100); len(listed) != 0 {
		t.Fatalf("still on the reconciliation index: %+v", listed)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 1 {
		t.Fatalf("ledger after the second sweep %+v", l)
	}
	e.Invariants()
}

// The execution died after Confirm, before Capture: the sweeper leaves the reservation to
// the saga within the grace period, then captures it exactly once with the saga's idempotency
// key, provider truth first.
func TestSweeperCapturesOnceAfterTheExecutionDiedBeforeCapture(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	r := executionDiesAfterConfirm(t, e, in)
	grace := e.Stack.AppConfig.SweepGrace

	e.Clock.Set(r.ReconcileSince.Add(grace - time.Second))
	if res := e.Sweep(); res.PaymentsExamined != 0 || res.Reconciled != 0 {
		t.Fatalf("sweep within the grace period: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Authorized)

	e.Clock.Set(r.ReconcileSince.Add(grace + time.Second))
	res := e.Sweep()
	if res.PaymentsExamined != 1 || res.Reconciled != 1 || res.Captured != 1 || res.Errors != 0 || res.LostRaces != 0 ||
		res.ReconciliationBacklog != 0 || res.UnresolvedPayments != 0 {
		t.Fatalf("sweep: %+v", res)
	}
	expectCapturedOnce(t, e, in, seats[0])
}

// The same, found late: the authorization is a day from lapsing and the provider cannot
// answer at the first sweep. The sweeper counts it near its capture deadline, records the
// payment as unknown (seats kept) and captures it once the provider answers again.
func TestSweeperCountsAnAuthorizationNearItsCaptureDeadline(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	r := executionDiesAfterConfirm(t, e, in)
	if r.CaptureBefore.IsZero() {
		t.Fatalf("no capture deadline recorded: %+v", r)
	}

	e.Clock.Set(r.CaptureBefore.Add(-12 * time.Hour))
	e.Stack.Payments.InjectFault(stripesim.EndpointRetrieveIntent, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
	res := e.Sweep()
	if res.PaymentsExamined != 1 || res.AuthorizationsNearCaptureDeadline != 1 || res.UnresolvedPayments != 1 ||
		res.ReconciliationBacklog != 1 || res.Captured != 0 {
		t.Fatalf("sweep with the provider down: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.UnknownNeedsReconciliation)
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 0 {
		t.Fatalf("captured without the provider's truth: %+v", l)
	}

	e.Stack.Payments.ClearFaults()
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Second)
	res = e.Sweep()
	if res.PaymentsExamined != 1 || res.Reconciled != 1 || res.ReconciliationBacklog != 0 || res.AuthorizationsNearCaptureDeadline != 0 {
		t.Fatalf("sweep with the provider back: %+v", res)
	}
	expectCapturedOnce(t, e, in, seats[0])
}

// The execution is alive but stuck in the capture step's retries (the capture function
// keeps failing before its handler runs). The sweeper leaves it to the saga until it counts as
// stuck, then captures; when the capture function recovers, the saga's own retry finds the
// payment captured and succeeds without a second capture.
func TestSweeperCapturesOnceForAStuckExecution(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	if err := e.Stack.Lambdas.FailBefore(stack.FnCapture, 1000, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	arn := e.Reserve(in)
	e.WaitFor("the first capture attempt to fail", time.Time{}, func() bool {
		r, err := e.Store.Get(e.Ctx, in.ReservationID)
		return err == nil && r.Inventory == reservation.Confirmed && r.Payment == reservation.Authorized &&
			e.Stack.Lambdas.Stats(stack.FnCapture).FaultsInjected >= 1
	})
	listed, err := e.Store.NeedingReconciliation(e.Ctx, e.Clock.Now().Add(time.Second), 100)
	if err != nil || len(listed) != 1 {
		t.Fatalf("reconciliation index %+v %v", listed, err)
	}
	since := listed[0].ReconcileSince

	// Past the grace period but not stuck yet: the running saga keeps it.
	e.Clock.Set(since.Add(e.Stack.AppConfig.SweepGrace + time.Second))
	if res := e.Sweep(); res.PaymentsExamined != 1 || res.LeftToSaga != 1 || res.UnresolvedPayments != 1 || res.Reconciled != 0 {
		t.Fatalf("sweep of a running saga: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Authorized)

	// Stuck: the sweeper captures while the execution still runs.
	e.Clock.Set(since.Add(sweeper.DefaultStuckAfter + time.Second))
	if res := e.Sweep(); res.PaymentsExamined != 1 || res.Captured != 1 || res.Errors != 0 || res.ReconciliationBacklog != 0 {
		t.Fatalf("sweep of a stuck saga: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)

	// The capture function recovers; the saga's next attempt finds the work done.
	e.Stack.Lambdas.ClearFaults(stack.FnCapture)
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndConfirmed)
	// The clock jumps past the stuck threshold at once, so the capture's retry waits may all
	// come due while the function still fails: the saga then reconciles and is sent back to
	// capture. Either way it ends by a capture attempt that finds the payment captured.
	path := e.Path(arn)
	direct := []string{"Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed"}
	viaReconcile := []string{"Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment",
		"Reconcile payment", "What did reconciliation find?", "Capture payment", "Confirmed"}
	if !slices.Equal(path, direct) && !slices.Equal(path, viaReconcile) {
		t.Fatalf("execution path %q, want %q or, after spent retries, %q", path, direct, viaReconcile)
	}
	if e.Stack.Lambdas.Invocations(stack.FnCapture) < 1 {
		t.Fatal("the saga's capture step never ran after the sweeper captured")
	}
	expectCapturedOnce(t, e, in, seats[0])
}
