package e2e

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// cancelAndExpectAcknowledged sends DELETE and requires an acknowledged, recorded cancel.
func cancelAndExpectAcknowledged(t *testing.T, e *Env, customer, id string) cancelAnswer {
	t.Helper()
	return cancelAndExpect(t, e, customer, id, "an acknowledged cancel", func(status int, a cancelAnswer) bool {
		return (status == http.StatusAccepted || status == http.StatusOK) && a.CancelRequested
	})
}

// executionRunning reports whether the execution still runs.
func executionRunning(e *Env, arn string) bool {
	d, err := e.Stack.SFN.DescribeExecution(e.Ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	return err == nil && d.Status == sfntypes.ExecutionStatusRunning
}

// countOutbox counts the reservation's outbox records of type ty.
func countOutbox(e *Env, id string, ty outbox.Type) int {
	return countTypes(e.OutboxTypes(id), ty)
}

// countTypes counts the records of type ty in types.
func countTypes(types []outbox.Type, ty outbox.Type) int {
	n := 0
	for _, got := range types {
		if got == ty {
			n++
		}
	}
	return n
}

// A cancel recorded while the seats are HELD and the authorize step has not run yet: no
// PaymentIntent is ever created, the seat goes back at once, the saga ends canceled.
func TestCancelWhileHeldBeforeAuthorizeCreatesNoPayment(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	open, waiting := e.Gate("authorize")
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	arn := e.Reserve(in)
	e.WaitFor("authorize to be invoked", e.Clock.Now(), func() bool { return waiting() == 1 })
	e.ExpectReservation(in.ReservationID, reservation.Held, reservation.NotStarted)

	a := cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	if a.Money != api.MoneyNone {
		t.Fatalf("money %q for a hold with no payment, want none", a.Money)
	}
	open()
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndCustomerCanceled)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer")
	r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.NotStarted)
	if r.PaymentIntentID != "" || !r.CustomerCanceled {
		t.Fatalf("reservation %+v", r)
	}
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	if _, ok := e.Ledger(in.ReservationID); ok {
		t.Fatal("a PaymentIntent was created for a reservation cancelled before payment started")
	}
	e.Invariants()
}

// Many DELETEs racing each other and two POST retries of the same request while the saga
// waits for the payment: one cancel record, one execution, one PaymentIntent, voided.
func TestCancelRepeatedConcurrentlyWithPostRetriesIsRecordedOnce(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)

	var wg sync.WaitGroup
	statuses := make([]int, 6)
	body, _ := json.Marshal(api.CreateRequest{SeatIDs: in.SeatIDs, PaymentMethod: in.PaymentMethod})
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%3 == 2 {
				statuses[i], _ = e.call(http.MethodPost, "/events/ev1/reservations", in.CustomerID, in.IdempotencyKey, string(body))
				return
			}
			statuses[i], _ = e.Cancel(in.CustomerID, in.ReservationID)
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		want := http.StatusAccepted
		if s != want && !(i%3 != 2 && s == http.StatusOK) && !(i%3 != 2 && s == http.StatusConflict) {
			t.Fatalf("request %d answered %d; statuses %v", i, s, statuses)
		}
	}
	if !e.Reservation(in.ReservationID).CustomerCanceled {
		// Every DELETE may have lost the race to the others' writes (409); one more settles it.
		cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	}
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndCustomerCanceled)
	// Cancelling again after it settled changes nothing and says so.
	before := e.Reservation(in.ReservationID)
	if status, body := e.Cancel(in.CustomerID, in.ReservationID); status != http.StatusOK {
		t.Fatalf("DELETE after settlement: %d %s", status, body)
	}
	if after := e.Reservation(in.ReservationID); after.Version != before.Version {
		t.Fatalf("a repeated cancel wrote: version %d -> %d", before.Version, after.Version)
	}
	if n := countOutbox(e, in.ReservationID, outbox.ReservationCancelRequested); n != 1 {
		t.Fatalf("%d cancel records: %v", n, e.OutboxTypes(in.ReservationID))
	}
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
}

// The customer cancels while a late authorization is processing and the hold is live: the
// seat goes back at once and another buyer buys it; then the provider authorizes the first
// customer's payment after the saga gave up. The webhook changes nothing, the sweeper voids
// it; the seat is sold once, the first customer is never charged.
func TestCancelWhileProcessingThenALateAuthorizationAfterResaleIsVoided(t *testing.T) {
	e := New(t, Options{ReconcileAttempts: 2, Payments: stack.PaymentsConfig{LateAuthorizationDelay: 5 * time.Minute}})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodAuthorizeLate, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	if l, _ := e.Ledger(in.ReservationID); l.Status != "processing" {
		t.Fatalf("ledger %+v; want the payment processing", l)
	}
	start := e.Clock.Now()
	cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	e.WaitFor("the saga to give up on the processing payment", start.Add(4*time.Minute), func() bool { return !executionRunning(e, arn) })
	r := e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Authorizing)
	if !r.Unsettled() {
		t.Fatal("released seats with a payment still processing are off the reconciliation index")
	}
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")

	bob := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(bob)), saga.EndConfirmed)
	e.Clock.Set(start.Add(5*time.Minute + 10*time.Second))
	e.WaitFor("the late authorization", time.Time{}, func() bool {
		l, _ := e.Ledger(in.ReservationID)
		return l.Status == "requires_capture"
	})
	e.WaitFor("the webhooks", time.Time{}, func() bool { return e.Stack.Payments.PendingWebhooks() == 0 })
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	for i := 0; i < 3; i++ {
		if res := e.Sweep(); res.ReconciliationBacklog == 0 {
			break
		}
	}
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, bob.ReservationID)
	e.ExpectReservation(bob.ReservationID, reservation.Confirmed, reservation.Paid)
	r = e.Reservation(in.ReservationID)
	if r.Inventory != reservation.Released || r.Payment != reservation.Canceled || !r.CustomerCanceled {
		t.Fatalf("alice %s/%s canceled=%v; want RELEASED/CANCELED", r.Inventory, r.Payment, r.CustomerCanceled)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Net() != 0 || l.Held() != 0 || l.Authorized != in.Amount {
		t.Fatalf("alice's ledger %+v: the late authorization must be voided", l)
	}
	e.Invariants()
}

// The customer cancels while the buyer is in 3-D Secure and every void's response is lost
// (the provider cancels, the answer never arrives): the saga retries with the same key and
// ends canceled; the buyer's authentication after the void changes nothing.
func TestCancelWithVoidResponsesLostIsNeverCharged(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	r := e.WaitingForPayment(in.ReservationID)
	e.Stack.Payments.LoseResponseNext(stripesim.EndpointCancelIntent, 2)
	cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	x := e.Finish(arn)
	if err := e.Stack.Payments.Authenticate(r.PaymentIntentID, true); err == nil {
		if l, _ := e.Ledger(in.ReservationID); l.Authorized != 0 {
			t.Fatalf("the buyer authenticated a voided payment: %+v", l)
		}
	}
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	e.Sweep()
	if got := x.Ending.Outcome; got != saga.EndCustomerCanceled && got != saga.EndNeedsReconciliation {
		t.Fatalf("execution %s", x)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Status != "canceled" {
		t.Fatalf("ledger %+v", l)
	}
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
}

// The customer cancels while the provider refuses every void before acting (its cancel
// endpoint is down), and meanwhile the buyer completes 3-D Secure: money is held for a
// cancelled reservation. The saga gives up into the backlog; once the provider is back, the
// sweeper voids the authorization and gives the seat back.
func TestCancelWhileVoidsFailAndTheBuyerAuthenticatesIsSweptVoided(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	r := e.WaitingForPayment(in.ReservationID)
	e.Stack.Payments.InjectFault(stripesim.EndpointCancelIntent, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
	cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	if err := e.Stack.Payments.Authenticate(r.PaymentIntentID, true); err != nil {
		t.Fatal(err)
	}
	x := e.Finish(arn)
	if x.Ending.Outcome != saga.EndNeedsReconciliation || !x.Ending.NeedsPerson {
		t.Fatalf("%s: with every void refused the saga cannot have settled", x)
	}
	got := e.Reservation(in.ReservationID)
	if got.Inventory == reservation.Confirmed || !got.Unsettled() && !got.HoldActive() {
		t.Fatalf("%s/%s: the cancelled reservation with money held is neither unsettled nor a hold", got.Inventory, got.Payment)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Held() != in.Amount || l.Captures != 0 {
		t.Fatalf("ledger %+v; want the authorization held, nothing captured", l)
	}
	e.Stack.Payments.ClearFaults()
	e.Clock.Advance(Hold + e.Stack.AppConfig.SweepGrace + time.Minute)
	for i := 0; i < 3; i++ {
		if res := e.Sweep(); res.ReconciliationBacklog == 0 {
			break
		}
	}
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
}

// Webhooks duplicated, reordered and delayed past the hold: the buyer authenticates, the
// customer cancels before any webhook arrives; the saga voids; the late webhooks, each
// delivered twice, change nothing.
func TestCancelThenDelayedDuplicatedWebhooksChangeNothing(t *testing.T) {
	e := New(t, Options{Payments: stack.PaymentsConfig{WebhookDuplicateRate: 1, WebhookReorder: true,
		WebhookReorderWindow: 30 * time.Second, WebhookDelay: Hold + time.Minute}})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	r := e.WaitingForPayment(in.ReservationID)
	if err := e.Stack.Payments.Authenticate(r.PaymentIntentID, true); err != nil {
		t.Fatal(err)
	}
	cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndCustomerCanceled)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer")
	settled := e.Reservation(in.ReservationID)
	e.Clock.Advance(Hold + 2*time.Minute)
	e.WaitFor("the delayed webhooks", time.Time{}, func() bool { return e.Stack.Payments.PendingWebhooks() == 0 })
	if n := len(e.Stack.Payments.Deliveries()); n < 2 {
		t.Fatalf("%d webhook deliveries; the test needs the late duplicates", n)
	}
	if after := e.Reservation(in.ReservationID); after.Version != settled.Version {
		t.Fatalf("late webhooks moved the settled reservation: %d -> %d (%s/%s)", settled.Version, after.Version, after.Inventory, after.Payment)
	}
	if l, _ := e.Ledger(in.ReservationID); l.Authorized != in.Amount || l.Voided != in.Amount {
		t.Fatalf("ledger %+v; want the authorization voided", l)
	}
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
}

// The compensation after a cancel is stuck (held by a gate) long past the hold; the sweeper
// settles the reservation meanwhile; then the compensation runs and finds it done: one void,
// seat released once.
func TestCancelWithAStuckCompensationRacingTheSweeperVoidsOnce(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 1)
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	e.WaitingForPayment(in.ReservationID)
	open, waiting := e.Gate("compensate")
	cancelAndExpectAcknowledged(t, e, in.CustomerID, in.ReservationID)
	e.WaitFor("the compensation to be invoked", e.Clock.Now(), func() bool { return waiting() == 1 })
	e.Clock.Advance(Hold + 2*time.Hour)
	res := e.Sweep()
	if res.Reconciled+res.Released == 0 {
		t.Fatalf("sweep %+v: the stuck execution's reservation was not settled", res)
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Canceled)
	open()
	x := e.Finish(arn)
	e.ExpectEnding(x, saga.EndCustomerCanceled)
	if countOutbox(e, in.ReservationID, outbox.SeatsReleased) > 1 || countOutbox(e, in.ReservationID, outbox.PaymentVoided) > 1 {
		t.Fatalf("released or voided recorded twice: %v", e.OutboxTypes(in.ReservationID))
	}
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
}
