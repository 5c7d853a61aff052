package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// Happy path: CONFIRMED + PAID, one authorization, one capture, at most 6 transitions.
func TestHappyPath(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 4)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0], seats[1])
	x := e.Finish(e.Reserve(in))

	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	if x.Transitions > 6 {
		t.Fatalf("%d transitions", x.Transitions)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, in.ReservationID)
	e.ExpectSeat("ev1", seats[1], reservation.Confirmed, in.ReservationID)
	e.ExpectSeat("ev1", seats[2], reservation.Available, "")
	e.ExpectOutbox(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged,
		outbox.PaymentAuthorized, outbox.ReservationConfirmed, outbox.PaymentStateChanged, outbox.PaymentCaptured)
	l, ok := e.Ledger(in.ReservationID)
	if !ok || l.Status != "succeeded" || l.Captures != 1 || l.Captured != in.Amount || l.Authorized != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// Seat taken: the loser is rejected in 2 transitions and no payment object exists.
func TestSeatTaken(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 3)
	winner := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.Finish(e.Reserve(winner))
	// Bob passed the api's admission pre-check before Alice's claim landed (the pre-check is
	// an eventually consistent read), so his execution starts and loses at the claim.
	loser := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[1], seats[0])
	x := e.Finish(e.StartSaga(loser))

	// A lost race is a business ending: the execution succeeds and its output says why.
	e.ExpectEnding(x, saga.EndSeatUnavailable)
	e.ExpectPath(x, "Claim seats", "Rejected: seats taken")
	if !strings.Contains(x.Ending.Cause, seats[0]) {
		t.Fatalf("cause does not name the taken seat: %s", x.Ending.Cause)
	}
	if _, err := e.Store.Get(e.Ctx, loser.ReservationID); err == nil {
		t.Fatal("the loser's reservation was written")
	}
	e.ExpectSeat("ev1", seats[1], reservation.Available, "")
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, winner.ReservationID)
	e.ExpectOutbox(loser.ReservationID)
	if l, ok := e.Ledger(loser.ReservationID); ok {
		t.Fatalf("payment object for the loser: %+v", l)
	}
	e.Invariants()
}

// Decline: the seat is released and the PaymentIntent canceled.
func TestDecline(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodDeclined, seats[0])
	x := e.Finish(e.Reserve(in))

	e.ExpectEnding(x, saga.EndPaymentDeclined)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after decline", "Payment failed")
	r := e.Reservation(in.ReservationID)
	if r.Inventory != reservation.Released || (r.Payment != reservation.Failed && r.Payment != reservation.Canceled) {
		t.Fatalf("reservation %s/%s", r.Inventory, r.Payment)
	}
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	types := e.OutboxTypes(in.ReservationID)
	if types[len(types)-1] != outbox.SeatsReleased {
		t.Fatalf("outbox %v", types)
	}
	e.WaitFor("the PaymentIntent to be canceled", time.Time{}, func() bool {
		l, ok := e.Ledger(in.ReservationID)
		return ok && l.Status == "canceled"
	})
	l, _ := e.Ledger(in.ReservationID)
	if l.Declines != 1 || l.Authorized != 0 || l.Captured != 0 {
		t.Fatalf("ledger %+v", l)
	}
	// The seat can be sold to the next buyer.
	next := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(next)), saga.EndConfirmed)
	e.Invariants()
}

// 3-D Secure never completed: at the deadline the PaymentIntent is canceled and the seat
// released; the next buyer can claim it.
func TestThreeDSecureNeverCompleted(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	e.ExpectSeat("ev1", seats[0], reservation.PaymentPending, in.ReservationID)
	e.Clock.Advance(Hold)
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndHoldExpired)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?", "Reconciled: hold expired")
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	e.ExpectOutboxUnwound(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged, outbox.PaymentVoided)
	if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Authorized != 0 {
		t.Fatalf("ledger %+v", l)
	}
	next := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(next)), saga.EndConfirmed)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, next.ReservationID)
	e.Invariants()
}

// lateAuthorization starts a reservation whose authorization arrives 10 s (fake) after its
// hold lapsed, and lets the hold lapse.
func lateAuthorization(t *testing.T, policy string) (*Env, saga.Input, string, []string) {
	e := New(t, Options{LateSuccessPolicy: policy, ReconcileAttempts: 6,
		Payments: stack.PaymentsConfig{LateAuthorizationDelay: Hold + 10*time.Second}})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodAuthorizeLate, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	e.Clock.Set(e.Reservation(in.ReservationID).HoldExpiresAt)
	// At the deadline the payment is still processing: the hold goes, the saga keeps asking.
	e.WaitFor("the lapsed hold to be released", e.Reservation(in.ReservationID).HoldExpiresAt.Add(9*time.Second), func() bool {
		return e.Reservation(in.ReservationID).Inventory == reservation.Released
	})
	return e, in, arn, seats
}

// Authorization after the deadline, seat still free: reacquired and confirmed.
func TestLateAuthorizationReacquired(t *testing.T) {
	e, in, arn, seats := lateAuthorization(t, "reacquire")
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndConfirmed)
	if x.Path[2] != "Reconcile payment" || !slices.Equal(x.Path[len(x.Path)-2:], []string{"Capture payment", "Confirmed"}) {
		t.Fatalf("path %v", x.Path)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, in.ReservationID)
	types := e.OutboxTypes(in.ReservationID)
	if !slices.Contains(types, outbox.SeatsReleased) || !slices.Contains(types, outbox.SeatsReacquired) || types[len(types)-1] != outbox.PaymentCaptured {
		t.Fatalf("outbox %v", types)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 1 || l.Captured != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// Authorization after the deadline, seat taken by another: voided, customer notified, no
// capture.
func TestLateAuthorizationSeatTaken(t *testing.T) {
	e, in, arn, seats := lateAuthorization(t, "reacquire")
	other := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	otherARN := e.Reserve(other)
	// Bob must hold the seat before Alice's authorization lands (10 s after her deadline).
	limit := e.Reservation(in.ReservationID).HoldExpiresAt.Add(9 * time.Second)
	e.WaitFor("bob to hold the seat", limit, func() bool { return e.Seat("ev1", seats[0]).ReservationID == other.ReservationID })
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndVoidedAfterLatePayment)
	if x.Path[len(x.Path)-1] != "Voided after late payment" {
		t.Fatalf("%s", x)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectEnding(e.Finish(otherARN), saga.EndConfirmed)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, other.ReservationID)
	voided := false
	for _, ev := range e.Outbox(in.ReservationID) {
		if ev.Type == outbox.PaymentVoided {
			voided = true
		}
	}
	if !voided {
		t.Fatalf("no PaymentVoided (customer notification) event: %v", e.OutboxTypes(in.ReservationID))
	}
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 0 || l.Status != "canceled" || l.Voided != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// Authorization after the deadline with policy void: voided even though the seat is free.
func TestLateAuthorizationPolicyVoid(t *testing.T) {
	e, in, arn, seats := lateAuthorization(t, "void")
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndVoidedAfterLatePayment)
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 0 || l.Status != "canceled" || l.Voided != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// Capture response lost: retried with the same key, exactly one capture.
func TestCaptureResponseLost(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	// stripe-go retries once itself; both answers are lost, so the state's Retry runs again.
	e.Stack.Payments.DropConnectionNext(stripesim.EndpointCaptureIntent, 4)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	x := e.Finish(e.Reserve(in))

	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	if n := e.Stack.Lambdas.Invocations("capture"); n < 2 {
		t.Fatalf("capture ran %d times; the lost answer was not retried", n)
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	l, _ := e.Ledger(in.ReservationID)
	if l.Captures != 1 || l.Captured != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	// The lost answer is recorded as unknown, and the retried capture records the capture.
	e.ExpectOutbox(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged,
		outbox.PaymentAuthorized, outbox.ReservationConfirmed, outbox.PaymentStateChanged, outbox.PaymentUncertain, outbox.PaymentCaptured)
	e.Invariants()
}

// Capture fails definitively (the authorization lapsed before capture): the capture-failure
// policy releases the seats, records the outcome and notifies.
func TestCaptureFailsDefinitively(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	// The first capture attempt is held until the authorization is gone at the provider.
	open, waiting := e.Gate("capture")
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	arn := e.Reserve(in)
	e.WaitFor("the capture to be invoked", e.Clock.Now(), func() bool { return waiting() == 1 })
	e.LapseAuthorization(in.ReservationID)
	open()
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndCaptureFailed)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Capture failed")
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Failed)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	// The failure and the release are one write: no second write can fail between them.
	types := e.OutboxTypes(in.ReservationID)
	if types[len(types)-1] != outbox.PaymentFailed || slices.Contains(types, outbox.SeatsReleased) {
		t.Fatalf("outbox %v", types)
	}
	e.ExpectOutboxUnwound(in.ReservationID, outbox.PaymentFailed)
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 0 || l.Held() != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// Provider down during reconcile: UNKNOWN_NEEDS_RECONCILIATION with the seat protected and
// the backlog above zero; once the provider is back the sweeper resolves it.
func TestProviderDownDuringReconcile(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	e.Stack.Payments.InjectFault(stripesim.EndpointRetrieveIntent, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
	e.Stack.Payments.InjectFault(stripesim.EndpointCancelIntent, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
	e.Clock.Advance(Hold)
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndNeedsReconciliation)
	e.ExpectReservation(in.ReservationID, reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	e.ExpectSeat("ev1", seats[0], reservation.PaymentPending, in.ReservationID)
	backlog, err := e.Store.NeedingReconciliation(e.Ctx, e.Clock.Now(), 100)
	if err != nil || len(backlog) != 1 {
		t.Fatalf("backlog %d %v", len(backlog), err)
	}
	// The seat is protected: nobody else can buy it while the money's fate is unknown.
	other := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	// The protected seat is not sold: the other buyer loses the race.
	e.ExpectEnding(e.Finish(e.StartSaga(other)), saga.EndSeatUnavailable)

	// The sweeper sees the backlog and, while the provider is still down, leaves the seat be.
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	if res := e.Sweep(); res.ReconciliationBacklog == 0 || res.UnresolvedPayments != 1 {
		t.Fatalf("sweep with the provider down: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	e.ExpectSeat("ev1", seats[0], reservation.PaymentPending, in.ReservationID)

	// The provider is back: the next sweep settles it from the provider's truth.
	e.Stack.Payments.ClearFaults()
	if res := e.Sweep(); res.ReconciliationBacklog != 0 || res.Reconciled != 1 {
		t.Fatalf("sweep with the provider back: %+v", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	if backlog, _ := e.Store.NeedingReconciliation(e.Ctx, e.Clock.Now(), 100); len(backlog) != 0 {
		t.Fatalf("backlog %d after the sweep", len(backlog))
	}
	e.Invariants()
}

// Customer cancels while paying: voided and released.
func TestCustomerCancelsWhilePaying(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	if status, body := e.Cancel(in.CustomerID, in.ReservationID); status != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndCustomerCanceled)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer")
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	e.ExpectOutboxUnwound(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged,
		outbox.ReservationCancelRequested, outbox.PaymentVoided)
	if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Captures != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// Steps crash after writing, before returning: retried, no double effect. (The payment
// wait is not retried, so an authorize crash goes through reconciliation instead:
// TestAuthorizeCrashThenTheBuyerAuthorizes.)
func TestStepCrashesAfterWriting(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	for _, fn := range []string{"claim", "confirm", "capture"} {
		if err := e.Stack.Lambdas.FailAfter(fn, 1, lambdahost.ServiceException()); err != nil {
			t.Fatal(err)
		}
	}
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	x := e.Finish(e.Reserve(in))

	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	for _, fn := range []string{"claim", "confirm", "capture"} {
		if n := e.Stack.Lambdas.Invocations(fn); n != 2 {
			t.Fatalf("%s ran %d times, want 2 (crash, retry)", fn, n)
		}
	}
	e.ExpectReservation(in.ReservationID, reservation.Confirmed, reservation.Paid)
	// One event per change, no duplicates: the retries found the work done.
	types := e.OutboxTypes(in.ReservationID)
	for _, once := range []outbox.Type{outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentAuthorized, outbox.ReservationConfirmed, outbox.PaymentCaptured} {
		if n := countTypes(types, once); n != 1 {
			t.Fatalf("%s written %d times: %v", once, n, types)
		}
	}
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 1 || l.Authorized != in.Amount {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}

// soldToAlice starts a stack, seeds ev1 with n seats, sells the first to alice with a card that
// succeeds, and returns the settled reservation.
func soldToAlice(t *testing.T, n int) (e *Env, seats []string, in saga.Input, sold reservation.Reservation) {
	t.Helper()
	e = New(t, Options{})
	seats = e.Seed("ev1", n)
	in = Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(in)), saga.EndConfirmed)
	return e, seats, in, e.Reservation(in.ReservationID)
}

// Stale deliveries change nothing: after the sale settled, the saga's steps are invoked
// again with the execution's old input and the old task token is answered again.
func TestStaleDeliveriesChangeNothing(t *testing.T) {
	e, _, in, before := soldToAlice(t, 2)
	events := len(e.Outbox(in.ReservationID))
	ledger, _ := e.Ledger(in.ReservationID)

	state := saga.State{Input: in, Hold: &saga.Hold{ReservationID: in.ReservationID, Version: 1}}
	invoke := func(fn string, payload any) {
		raw, _ := json.Marshal(payload)
		if _, err := e.Stack.Lambda.Invoke(e.Ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: raw}); err != nil {
			t.Fatalf("invoke %s: %v", fn, err)
		}
	}
	invoke("claim", state)
	invoke("authorize", saga.AuthorizeEvent{Input: state, TaskToken: before.TaskToken})
	invoke("confirm", state)
	invoke("capture", state)
	invoke("reconcile", state)
	_, err := e.Stack.SFN.SendTaskSuccess(e.Ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(before.TaskToken), Output: aws.String(`{"state":"AUTHORIZED"}`)})
	if err == nil {
		t.Fatal("a stale task token was accepted")
	}

	after := e.Reservation(in.ReservationID)
	if after.Version != before.Version || after.Inventory != before.Inventory || after.Payment != before.Payment {
		t.Fatalf("reservation changed: %+v -> %+v", before, after)
	}
	if n := len(e.Outbox(in.ReservationID)); n != events {
		t.Fatalf("outbox grew from %d to %d", events, n)
	}
	if l, _ := e.Ledger(in.ReservationID); l != ledger {
		t.Fatalf("ledger changed: %+v -> %+v", ledger, l)
	}
	e.Invariants()
}

// An outbox event older than one the consumer already handled (lower
// aggregate version) changes nothing, and a redelivered one sends nothing new.
func TestStaleOutboxEventChangesNothing(t *testing.T) {
	// The test needs the void and the release as two records, the void older: the webhook
	// records the provider's void before the compensation writes the release. Left to the race,
	// the compensation sometimes gets there first and records both in one write; so once the
	// customer cancelled, the compensation's release waits (up to a bound) for the webhook.
	var e *Env
	var id string
	var unwinding atomic.Bool
	e = New(t, Options{DynamoDBFault: func(op string, params any) error {
		if op != "TransactWriteItems" || !unwinding.Load() || !releaseOf(params) {
			return nil
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if r, err := e.Store.Get(e.Ctx, id); err == nil && r.Payment == reservation.Canceled {
				break
			}
		}
		return nil
	}})
	seats := e.Seed("ev1", 2)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	id = in.ReservationID
	unwinding.Store(true)
	if status, body := e.Cancel(in.CustomerID, in.ReservationID); status != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	e.Finish(arn)
	envs := e.Outbox(in.ReservationID)
	find := func(ty outbox.Type) outbox.Envelope {
		for _, ev := range envs {
			if ev.Type == ty {
				return ev
			}
		}
		t.Fatalf("no %s event in %v", ty, e.OutboxTypes(in.ReservationID))
		return outbox.Envelope{}
	}
	voided, released := find(outbox.PaymentVoided), find(outbox.SeatsReleased)
	if voided.AggregateVersion >= released.AggregateVersion {
		t.Fatalf("versions: voided %d, released %d", voided.AggregateVersion, released.AggregateVersion)
	}
	deliver := func(env outbox.Envelope) {
		detail, _ := json.Marshal(env)
		payload, _ := json.Marshal(events.EventBridgeEvent{ID: "bus-" + env.EventID, Source: outbox.Source,
			DetailType: string(env.Type), Detail: detail, Time: env.CreatedAt})
		out, err := e.Stack.Lambda.Invoke(e.Ctx, &lambda.InvokeInput{FunctionName: aws.String(stack.FnConsumer), Payload: payload})
		if err != nil || out.FunctionError != nil {
			t.Fatalf("consumer: %v %s", err, out.Payload)
		}
	}
	deliver(released) // the newer event arrives first
	deliver(voided)   // the older one arrives late: stale
	deliver(released) // and the newer one again: a duplicate

	sent := e.Stack.Notifications.Sent()
	if len(sent) != 1 || sent[0].EventID != released.EventID {
		t.Fatalf("notifications %+v", sent)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	if n := len(e.Outbox(in.ReservationID)); n != len(envs) {
		t.Fatalf("outbox grew from %d to %d", len(envs), n)
	}
}

// Compensate and reconcile crash after writing, before returning:
// retried, each compensation recorded once.
func TestCompensationCrashesAfterWriting(t *testing.T) {
	cases := []struct {
		name string
		fn   string
		act  func(e *Env, in saga.Input)
		path []string
	}{
		{name: "compensate after a customer cancel", fn: "compensate",
			act: func(e *Env, in saga.Input) {
				if status, body := e.Cancel(in.CustomerID, in.ReservationID); status != http.StatusAccepted {
					e.T.Fatalf("DELETE: %d %s", status, body)
				}
			},
			path: []string{"Claim seats", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer"}},
		{name: "reconcile at the hold's deadline", fn: "reconcile",
			act:  func(e *Env, _ saga.Input) { e.Clock.Advance(Hold) },
			path: []string{"Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?", "Reconciled: hold expired"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(t, Options{})
			seats := e.Seed("ev1", 2)
			if err := e.Stack.Lambdas.FailAfter(tc.fn, 1, lambdahost.ServiceException()); err != nil {
				t.Fatal(err)
			}
			in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
			arn := e.Reserve(in)
			e.WaitingForPayment(in.ReservationID)
			tc.act(e, in)
			x := e.Finish(arn)

			e.ExpectPath(x, tc.path...)
			if n := e.Stack.Lambdas.Invocations(tc.fn); n != 2 {
				t.Fatalf("%s ran %d times, want 2 (crash, retry)", tc.fn, n)
			}
			e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
			e.ExpectSeat("ev1", seats[0], reservation.Available, "")
			e.ExpectOutboxUnwound(in.ReservationID, outbox.SeatsHeld, outbox.PaymentPending, outbox.PaymentStateChanged, outbox.PaymentVoided)
			if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" || l.Captures != 0 {
				t.Fatalf("ledger %+v", l)
			}
			e.Invariants()
		})
	}
}
