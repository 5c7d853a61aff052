package webhook

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

// countingDynamoDB counts the webhook's DynamoDB calls by operation (the store's and the
// dedupe records' alike: one client, as in the Lambda) and runs before, once, ahead of the
// next TransactWriteItems: another writer landing between the webhook's read and its write.
type countingDynamoDB struct {
	inventory.DynamoDB
	mu     sync.Mutex
	calls  map[string]int
	before func()
}

func (c *countingDynamoDB) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countingDynamoDB) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = map[string]int{}
	return calls
}

func (c *countingDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add("GetItem")
	return c.DynamoDB.GetItem(ctx, in, opts...)
}

func (c *countingDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.add("PutItem")
	return c.DynamoDB.PutItem(ctx, in, opts...)
}

func (c *countingDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.add("UpdateItem")
	return c.DynamoDB.UpdateItem(ctx, in, opts...)
}

func (c *countingDynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.add("TransactWriteItems")
	c.mu.Lock()
	before := c.before
	c.before = nil
	c.mu.Unlock()
	if before != nil {
		before()
	}
	return c.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

// dynamoRig is the webhook over the DynamoDB store and dedupe records, as internal/app builds
// it, with a reservation r1 waiting for the authorization of pi_1 under task token tok-1.
type dynamoRig struct {
	h      *Handler
	db     *countingDynamoDB
	other  *inventory.Store // every other writer (the saga's steps, the api)
	dedupe *DynamoDedupe
	pay    *sagatest.Payments
	sfn    *sagatest.StepFunctions
	clock  *clock.Fake
}

func newDynamoRig(t *testing.T) *dynamoRig {
	t.Helper()
	env := ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox(), tables.ProcessedEvents(), tables.Admissions())
	r := &dynamoRig{clock: clock.NewFake(t0), pay: sagatest.NewPayments(), sfn: sagatest.NewStepFunctions()}
	ctx := context.Background()
	var err error
	if r.other, err = inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: r.clock.Now}); err != nil {
		t.Fatal(err)
	}
	if err := r.other.CreateSeats(ctx, "show", inventory.SeatsAt(2500, "eur", "A1")); err != nil {
		t.Fatal(err)
	}
	res, err := r.other.Claim(ctx, reservation.ClaimRequest{ReservationID: "r1", CustomerID: "alice", EventID: "show",
		SeatIDs: []string{"A1"}, Amount: 2500, Currency: "EUR", HoldDuration: 10 * time.Minute, IdempotencyKey: "k1"})
	if err == nil {
		res, err = r.other.StartPayment(ctx, "r1", reservation.GuardOf(res))
	}
	if err == nil {
		_, err = r.other.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(res),
			Event: reservation.StartAuthorization, From: reservation.NotStarted, PaymentIntentID: "pi_1", TaskToken: "tok-1"})
	}
	if err != nil {
		t.Fatal(err)
	}
	r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StateAuthorized, ProviderStatus: "requires_capture"})

	// The webhook's own store is a fresh one: a Lambda container remembers nothing of it.
	r.db = &countingDynamoDB{DynamoDB: env.Client, calls: map[string]int{}}
	store, err := inventory.New(inventory.Config{Client: r.db, Names: env.Names, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.dedupe = &DynamoDedupe{Client: r.db, Table: env.Names.Of(tables.ProcessedEventsTable), Now: r.clock.Now}
	r.h, err = New(Deps{Verifier: fakeVerifier{}, Payments: r.pay, Store: store, Dedupe: r.dedupe, SFN: r.sfn,
		Now: r.clock.Now, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *dynamoRig) deliver(t *testing.T, id, typ string) events.APIGatewayProxyResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"id": id, "type": typ, "pi": "pi_1"})
	resp, err := r.h.Handle(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/webhooks/stripe",
		Body: string(body), Headers: map[string]string{"stripe-signature": "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (r *dynamoRig) stored(t *testing.T) reservation.Reservation {
	t.Helper()
	res, err := r.other.Get(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sameCalls(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for op, n := range want {
		if got[op] != n {
			return false
		}
	}
	return true
}

// An authorization is reported in three DynamoDB requests: the reservation's read, one
// transaction that records the authorization and claims the callback, and the callback's
// completion. A redelivery of the event is told apart by the claim, which names the event
// that sent it; the events that cannot be a reason to act (the intent's creation, a captured
// intent) read nothing.
func TestAnAuthorizationIsReportedInThreeRequests(t *testing.T) {
	r := newDynamoRig(t)
	if resp := r.deliver(t, "evt_created", eventCreated); resp.StatusCode != 200 || action(t, resp) != ActionIgnored {
		t.Fatalf("created: %d %s", resp.StatusCode, resp.Body)
	}
	if calls := r.db.take(); len(calls) != 0 || r.pay.Calls(sagatest.PayRetrieve) != 0 {
		t.Fatalf("the intent's creation made %v and %d retrieves, want nothing", calls, r.pay.Calls(sagatest.PayRetrieve))
	}

	if resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated"); resp.StatusCode != 200 || action(t, resp) != ActionAuthorized {
		t.Fatalf("authorized: %d %s", resp.StatusCode, resp.Body)
	}
	if calls, want := r.db.take(), map[string]int{"GetItem": 1, "TransactWriteItems": 1, "UpdateItem": 1}; !sameCalls(calls, want) {
		t.Fatalf("reporting the authorization made %v, want %v", calls, want)
	}
	if got := r.stored(t); got.Payment != reservation.Authorized {
		t.Fatalf("payment %s, want AUTHORIZED", got.Payment)
	}
	if s := r.sfn.Successes(); len(s) != 1 || s[0].TaskToken != "tok-1" {
		t.Fatalf("successes %+v", s)
	}

	for _, d := range []struct {
		id   string
		want Action
	}{{"evt_1", ActionDuplicate}, {"evt_2", ActionAlreadyReported}} {
		if resp := r.deliver(t, d.id, "payment_intent.amount_capturable_updated"); resp.StatusCode != 200 || action(t, resp) != d.want {
			t.Fatalf("%s again: %d %s, want %s", d.id, resp.StatusCode, resp.Body, d.want)
		}
	}
	if len(r.sfn.Successes()) != 1 {
		t.Fatalf("%d successes after the redeliveries, want 1", len(r.sfn.Successes()))
	}
	// A refused claim returns the record it met: nothing is read to learn why.
	if calls, want := r.db.take(), map[string]int{"GetItem": 2, "PutItem": 2}; !sameCalls(calls, want) {
		t.Fatalf("two redeliveries made %v, want %v", calls, want)
	}

	r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StatePaid, ProviderStatus: "succeeded"})
	if resp := r.deliver(t, "evt_3", "payment_intent.succeeded"); resp.StatusCode != 200 {
		t.Fatalf("succeeded: %d %s", resp.StatusCode, resp.Body)
	}
	if calls := r.db.take(); len(calls) != 0 {
		t.Fatalf("a captured intent made %v, want no DynamoDB request", calls)
	}
}

// The callback claimed with the transition is still a claim: while another delivery holds a
// live lease on it (it is sending, or crashed while sending), this one records the provider's
// truth but sends nothing and is told to come back; after the lease it reports, once.
func TestALiveClaimStillKeepsASecondSenderOut(t *testing.T) {
	r := newDynamoRig(t)
	ctx := context.Background()
	if c, err := r.dedupe.ClaimCallback(ctx, callbackKey(r.stored(t)), "evt_other", DefaultCallbackLease); err != nil || c != Claimed {
		t.Fatalf("the other delivery's claim: %v %v", c, err)
	}
	if resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated"); resp.StatusCode != 409 {
		t.Fatalf("inside the other's lease: %d %s, want 409", resp.StatusCode, resp.Body)
	}
	if n := len(r.sfn.Successes()); n != 0 {
		t.Fatalf("%d successes inside the other delivery's lease", n)
	}
	if got := r.stored(t); got.Payment != reservation.Authorized {
		t.Fatalf("payment %s: the provider's truth is recorded whoever reports it", got.Payment)
	}
	r.clock.Advance(DefaultCallbackLease + time.Second)
	if resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated"); resp.StatusCode != 200 || action(t, resp) != ActionAuthorized {
		t.Fatalf("after the lease: %d %s", resp.StatusCode, resp.Body)
	}
	if n := len(r.sfn.Successes()); n != 1 {
		t.Fatalf("%d successes, want 1", n)
	}
}

// The webhook decides on its one read, and the guard still holds: when another writer moves
// the reservation between that read and the webhook's transaction (a new attempt of the wait
// records its task token), the transaction is refused by the revision it was fenced by, and
// the webhook reads again and reports to the token now recorded, not to the one it read.
func TestTheTransitionIsFencedByTheReadItDecidedOn(t *testing.T) {
	r := newDynamoRig(t)
	ctx := context.Background()
	r.db.before = func() {
		cur := r.stored(t)
		if _, err := r.other.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(cur), TaskToken: "tok-2"}); err != nil {
			t.Error(err)
		}
	}
	if resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated"); resp.StatusCode != 200 || action(t, resp) != ActionAuthorized {
		t.Fatalf("authorized: %d %s", resp.StatusCode, resp.Body)
	}
	if calls, want := r.db.take(), map[string]int{"GetItem": 2, "TransactWriteItems": 2, "UpdateItem": 1}; !sameCalls(calls, want) {
		t.Fatalf("a refused transition and its retry made %v, want %v", calls, want)
	}
	if got := r.stored(t); got.Payment != reservation.Authorized || got.TaskToken != "tok-2" {
		t.Fatalf("stored %s with token %q, want AUTHORIZED with tok-2", got.Payment, got.TaskToken)
	}
	if s := r.sfn.Successes(); len(s) != 1 || s[0].TaskToken != "tok-2" {
		t.Fatalf("successes %+v, want one to tok-2", s)
	}
}
