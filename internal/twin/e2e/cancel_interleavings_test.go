package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// Interleavings around the money: a customer's cancel that was acknowledged is never charged,
// whatever the saga was doing when it arrived; and one failed write never strands a sold seat
// without its money. Each test reproduces one interleaving the old code got wrong and asserts
// the DELETE answer, the final reservation and seats, and the provider's ledger.

// cancelAnswer is the part of DELETE's answer these tests read.
type cancelAnswer struct {
	Status          string `json:"status"`
	CancelRequested bool   `json:"cancelRequested"`
	Money           string `json:"money"`
}

// cancelAndExpectRecorded sends DELETE and requires the cancel to be acknowledged as recorded
// with the money to be voided, and the record to be on the reservation.
func cancelAndExpectRecorded(t *testing.T, e *Env, customer, id string) cancelAnswer {
	t.Helper()
	return cancelAndExpect(t, e, customer, id, "202, cancelRequested, money will_be_voided", func(status int, a cancelAnswer) bool {
		return status == http.StatusAccepted && a.CancelRequested && a.Money == "will_be_voided"
	})
}

// cancelAndExpect sends DELETE, requires its answer to decode and to satisfy ok (want says
// what ok accepts), and requires the cancel to be recorded on the reservation.
func cancelAndExpect(t *testing.T, e *Env, customer, id, want string, ok func(status int, a cancelAnswer) bool) cancelAnswer {
	t.Helper()
	status, body := e.Cancel(customer, id)
	var a cancelAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("DELETE answer %d %s: %v", status, body, err)
	}
	if !ok(status, a) {
		t.Fatalf("DELETE: %d %s; want %s", status, body, want)
	}
	if !e.Reservation(id).CustomerCanceled {
		t.Fatal("the acknowledged cancel is not recorded on the reservation")
	}
	return a
}

// expectCancelNeverCharged requires the cancelled reservation released, its seat free and
// nothing captured, then every invariant (the no-charge-for-acknowledged-cancel rule
// included).
func expectCancelNeverCharged(t *testing.T, e *Env, id, eventID, seat string) {
	t.Helper()
	r := e.Reservation(id)
	if r.Inventory != reservation.Released || !r.CustomerCanceled ||
		(r.Payment != reservation.Canceled && r.Payment != reservation.Refunded) {
		t.Fatalf("reservation %s/%s canceled=%v; want RELEASED, voided or refunded", r.Inventory, r.Payment, r.CustomerCanceled)
	}
	e.ExpectSeat(eventID, seat, reservation.Available, "")
	l, ok := e.Ledger(id)
	if !ok || l.Net() != 0 || l.Held() != 0 || l.Captures != 0 {
		t.Fatalf("ledger %+v: the cancelled customer is charged or still held", l)
	}
	e.Invariants()
}

// The webhook's SendTaskSuccess closed the wait and Confirm has not run yet.
func TestCancelAfterTheWebhookClosedTheWaitIsNeverCharged(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	open, waiting := e.Gate("confirm")
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	arn := e.Reserve(in)
	r := e.WaitingForPayment(in.ReservationID)
	if err := e.Stack.Payments.Authenticate(r.PaymentIntentID, true); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the webhook to close the wait and Confirm to be invoked", e.Deadline(in.ReservationID), func() bool { return waiting() == 1 })
	if got := e.Reservation(in.ReservationID); got.Payment != reservation.Authorized {
		t.Fatalf("payment %s before the cancel, want AUTHORIZED (the webhook recorded it)", got.Payment)
	}

	cancelAndExpectRecorded(t, e, in.CustomerID, in.ReservationID)
	open()
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndCustomerCanceled)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Void payment after customer cancel", "Canceled by customer")
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 0 || l.Voided != in.Amount {
		t.Fatalf("ledger %+v: want the authorization voided, no capture", l)
	}
}

// The wait ended in "Reconcile payment" (authorize failed after acting) while the hold is
// live and the buyer is in 3-D Secure; the customer cancels; then the buyer authenticates.
func TestCancelDuringReconciliationThenTheBuyerAuthenticatesIsNeverCharged(t *testing.T) {
	e, seats, in, arn, open, still := crashedIntoReconciliation(t, "the failed wait to reach reconciliation")
	r := e.ExpectReservation(in.ReservationID, reservation.PaymentPending, reservation.Authorizing)

	cancelAndExpectRecorded(t, e, in.CustomerID, in.ReservationID)
	if err := e.Stack.Payments.Authenticate(r.PaymentIntentID, true); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the provider to authorize", still, func() bool {
		l, _ := e.Ledger(in.ReservationID)
		return l.Status == "requires_capture"
	})
	open()
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndCustomerCanceled)
	if !slices.Contains(x.Path, "Reconcile payment") {
		t.Fatalf("path %v; want reconciliation to end canceled by customer", x.Path)
	}
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
	if l, _ := e.Ledger(in.ReservationID); l.Authorized != in.Amount || l.Voided != in.Amount || l.Captures != 0 {
		t.Fatalf("ledger %+v: want the late authorization voided", l)
	}
}

// The recorded token is a dead one from a crashed authorize attempt: the cancel's signal
// reaches nobody, and the next attempt must not go on paying.
func TestCancelWithADeadTokenStopsTheNextAuthorizeAttempt(t *testing.T) {
	e, seats, in, arn, openReconcile, still := crashedIntoReconciliation(t, "the crashed attempt to reach reconciliation")
	dead := e.Reservation(in.ReservationID).TaskToken

	// Reconciliation sends the execution back to waiting with the hold's time left; hold the
	// new authorize attempt before it records its token.
	openAuthorize, authorizeWaiting := e.Gate("authorize")
	openReconcile()
	e.WaitFor("the next authorize attempt", still, func() bool { return authorizeWaiting() == 1 })
	if got := e.Reservation(in.ReservationID).TaskToken; got != dead {
		t.Fatal("the recorded token changed before the cancel; the test did not reach the dead-token case")
	}

	cancelAndExpectRecorded(t, e, in.CustomerID, in.ReservationID)
	openAuthorize()
	x := e.Finish(arn)

	want := []string{"Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
		"Resume waiting for payment", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer"}
	e.ExpectPath(x, want...)
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
}

// The hold lapsed while the payment was processing: seats RELEASED, payment AUTHORIZING.
// The customer cancels; then the late authorization lands, and the reacquire policy must not
// sell the seat back to the customer who cancelled.
func TestCancelOfALapsedHoldIsNotReacquiredByALateAuthorization(t *testing.T) {
	e, in, arn, seats := lateAuthorization(t, "reacquire")
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Authorizing)

	cancelAndExpectRecorded(t, e, in.CustomerID, in.ReservationID)
	x := e.Finish(arn)

	e.ExpectEnding(x, saga.EndCustomerCanceled)
	expectCancelNeverCharged(t, e, in.ReservationID, "ev1", seats[0])
	if l, _ := e.Ledger(in.ReservationID); l.Authorized != in.Amount || l.Voided != in.Amount {
		t.Fatalf("ledger %+v: want the late authorization voided", l)
	}
}

// A cancel of a confirmed reservation is refused with nothing written, and says the money is
// taken.
func TestCancelOfAConfirmedReservationIsRefusedAndWritesNothing(t *testing.T) {
	e, _, in, before := soldToAlice(t, 1)
	status, body := e.Cancel(in.CustomerID, in.ReservationID)
	var a cancelAnswer
	if status != http.StatusConflict || json.Unmarshal([]byte(body), &a) != nil || a.Money != api.MoneyCaptured || a.CancelRequested {
		t.Fatalf("DELETE of a confirmed reservation: %d %s; want 409 saying the money is captured", status, body)
	}
	if after := e.Reservation(in.ReservationID); after.Version != before.Version || after.CustomerCanceled {
		t.Fatalf("the refused cancel wrote: version %d -> %d, canceled %v", before.Version, after.Version, after.CustomerCanceled)
	}
	e.Invariants()
}

// releaseOf reports a transaction that gives a reservation's seats back: an update of a seat
// to AVAILABLE.
func releaseOf(params any) bool {
	in, ok := params.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range in.TransactItems {
		if it.Update != nil && it.Update.ExpressionAttributeValues[":available"] != nil {
			return true
		}
	}
	return false
}

// One failed release must not strand a sold seat with no money: the capture-failure
// policy's write fails every time the saga tries; the reservation stays on the sweeper's
// index (the backlog is not 0), and once DynamoDB accepts the write again the sweeper settles
// it and every invariant holds.
func TestAFailedReleaseAfterACaptureFailureIsSweptUntilSettled(t *testing.T) {
	var failReleases atomic.Bool
	var refused atomic.Int64
	e := New(t, Options{DynamoDBFault: func(op string, params any) error {
		if op == "TransactWriteItems" && failReleases.Load() && releaseOf(params) {
			refused.Add(1)
			return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "injected: the release write fails"}
		}
		return nil
	}})
	seats := e.Seed("ev1", 2)
	open, waiting := e.Gate("capture")
	in := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	arn := e.Reserve(in)
	e.WaitFor("the capture to be invoked", e.Clock.Now(), func() bool { return waiting() == 1 })
	// The authorization lapses before the capture runs, so the provider refuses it
	// definitively and the capture-failure policy must release the seat.
	failReleases.Store(true)
	e.LapseAuthorization(in.ReservationID)
	open()
	x := e.Finish(arn)
	if x.Ending.Outcome == saga.EndConfirmed {
		t.Fatalf("%s %v: the capture cannot have succeeded", x.Status, x.Path)
	}
	if refused.Load() == 0 {
		t.Fatal("no release write was refused: the test did not reach the stranded case")
	}
	r := e.Reservation(in.ReservationID)
	if r.Inventory != reservation.Confirmed || r.Payment == reservation.Paid {
		t.Fatalf("after the failed releases: %s/%s; want CONFIRMED seats without captured money", r.Inventory, r.Payment)
	}
	if !r.Unsettled() {
		t.Fatalf("%s/%s is not on the reconciliation index: nothing would ever settle it", r.Inventory, r.Payment)
	}
	e.Clock.Advance(e.Stack.AppConfig.SweepGrace + time.Minute)
	if res := e.Sweep(); res.ReconciliationBacklog == 0 {
		t.Fatalf("sweep while the release still fails: %+v; want the stranded seat in the backlog", res)
	}

	failReleases.Store(false)
	settled := false
	for i := 0; i < 5 && !settled; i++ {
		res := e.Sweep()
		settled = res.ReconciliationBacklog == 0
	}
	if !settled {
		t.Fatal("the sweeper did not settle the stranded seat in five runs")
	}
	e.ExpectReservation(in.ReservationID, reservation.Released, reservation.Failed)
	e.ExpectSeat("ev1", seats[0], reservation.Available, "")
	if l, _ := e.Ledger(in.ReservationID); l.Captures != 0 || l.Held() != 0 {
		t.Fatalf("ledger %+v", l)
	}
	e.Invariants()
}
