package inventory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// countingDB counts the store's calls by operation, and runs before, once, ahead of the next
// TransactWriteItems: another writer landing between the store's read and its write.
type countingDB struct {
	inventory.DynamoDB
	mu     sync.Mutex
	calls  map[string]int
	before func()
}

func (c *countingDB) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countingDB) take() (map[string]int, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, before := c.calls, c.before
	c.calls, c.before = map[string]int{}, nil
	return calls, before
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add("GetItem")
	return c.DynamoDB.GetItem(ctx, in, opts...)
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
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

// counted is a second store over the fixture's tables whose calls are counted: the fixture's
// own store plays every other writer (another function, another container).
func (f *fixture) counted(t *testing.T) (*inventory.Store, *countingDB) {
	t.Helper()
	db := &countingDB{DynamoDB: f.env.Client, calls: map[string]int{}}
	st, err := inventory.New(inventory.Config{Client: db, Names: f.env.Names, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return st, db
}

func wantCalls(t *testing.T, db *countingDB, what string, want map[string]int) {
	t.Helper()
	got, _ := db.take()
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s: %d %s, want %d (all: %v)", what, got[op], op, n, got)
		}
	}
	for op, n := range got {
		if _, ok := want[op]; !ok {
			t.Errorf("%s: %d unexpected %s", what, n, op)
		}
	}
}

// A change made right after a read decides on that read: one GetItem and one transaction, and
// the change after it reads nothing at all, since its predecessor's write determined the item.
func TestAChangeAfterAReadDoesNotReadAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	st, db := f.counted(t)

	r := must[reservation.Reservation](t)(st.Get(ctx, "r1"))
	r = must[reservation.Reservation](t)(st.StartPayment(ctx, "r1", reservation.GuardOf(r)))
	wantCalls(t, db, "read, then start the payment", map[string]int{"GetItem": 1, "TransactWriteItems": 1})
	r = must[reservation.Reservation](t)(st.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
		Event: reservation.StartAuthorization, From: reservation.NotStarted, PaymentIntentID: "pi_1", TaskToken: "tok-1"}))
	wantCalls(t, db, "record the authorization on the written item", map[string]int{"TransactWriteItems": 1})
	// What a write returns is what a read returns.
	if stored := must[reservation.Reservation](t)(f.store.Get(ctx, "r1")); !sameReservation(stored, r) {
		t.Fatalf("the write returned\n%+v\na read returns\n%+v", r, stored)
	}
}

// The guard still holds when the remembered item went stale: another writer's detail-only
// update keeps the version but moves the revision, so the change decided on the remembered
// item is refused by its condition, reads the item and lands on top of the other write
// without undoing it. A version the other writer moved on (a customer's cancel) is refused
// as it is after a fresh read: nothing is written.
func TestARememberedItemThatWentStaleIsRefusedByTheFence(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	r := must[reservation.Reservation](t)(f.store.StartPayment(ctx, "r1", reservation.GuardOf(must[reservation.Reservation](t)(f.store.Get(ctx, "r1")))))
	r = f.pay(t, r, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_1", TaskToken: "tok-1"})
	st, db := f.counted(t)
	read := must[reservation.Reservation](t)(st.Get(ctx, "r1"))
	db.take()

	// A new attempt of the payment wait records its token meanwhile (version kept).
	db.before = func() {
		must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1",
			Guard: reservation.GuardOf(read), TaskToken: "tok-2"}))
	}
	got := must[reservation.Reservation](t)(st.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(read),
		Event: reservation.AuthorizationOK, From: reservation.Authorizing}))
	wantCalls(t, db, "a change on a stale remembered item", map[string]int{"GetItem": 1, "TransactWriteItems": 2})
	stored := must[reservation.Reservation](t)(f.store.Get(ctx, "r1"))
	if stored.Payment != reservation.Authorized || stored.TaskToken != "tok-2" || got.TaskToken != "tok-2" {
		t.Fatalf("stored %s with token %q, returned token %q: want AUTHORIZED on top of tok-2", stored.Payment, stored.TaskToken, got.TaskToken)
	}

	// The customer cancels (a new version) between this store's read and its confirm.
	read = must[reservation.Reservation](t)(st.Get(ctx, "r1"))
	db.take()
	db.before = func() {
		must[reservation.Reservation](t)(f.store.Cancel(ctx, "r1", reservation.GuardOf(read)))
	}
	_, err := st.Confirm(ctx, "r1", reservation.GuardOf(read))
	var stale *reservation.StaleVersion
	var guard *reservation.GuardFailed
	if !errors.As(err, &stale) && !errors.As(err, &guard) {
		t.Fatalf("confirm over a cancel it did not read: %v, want a stale version or a refused guard", err)
	}
	if stored := must[reservation.Reservation](t)(f.store.Get(ctx, "r1")); stored.Inventory != reservation.PaymentPending || !stored.CustomerCanceled {
		t.Fatalf("after the refused confirm: %s, cancelled %v", stored.Inventory, stored.CustomerCanceled)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.PaymentPending {
		t.Fatalf("seat %s after the refused confirm", s.State)
	}
}

// An answer without a write never rests on a remembered item: a refusal decided on it is
// checked by a strong read first, so a store that remembers an old version answers from the
// stored one.
func TestARefusalIsAnsweredFromAFreshRead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	st, db := f.counted(t)
	old := must[reservation.Reservation](t)(st.Get(ctx, "r1"))
	// Another writer starts the payment: this store still remembers HELD at version 1.
	cur := must[reservation.Reservation](t)(f.store.StartPayment(ctx, "r1", reservation.GuardOf(old)))
	db.take()
	// With the current guard, the remembered item's version refuses the change; the store must
	// not answer that, but read and find the change applies.
	got, err := st.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(cur),
		Event: reservation.StartAuthorization, From: reservation.NotStarted, PaymentIntentID: "pi_1", TaskToken: "tok-1"})
	if err != nil || got.Payment != reservation.Authorizing {
		t.Fatalf("update with the current guard over a stale memory: %+v %v", got, err)
	}
	wantCalls(t, db, "a refusal on a remembered item, checked", map[string]int{"GetItem": 1, "TransactWriteItems": 1})
}

// UpdatePaymentWith writes its companion in the update's transaction: both land, or, when the
// companion refuses its condition, neither does and the error says so with the item it met.
func TestUpdatePaymentWithLandsWithItsCompanionOrNotAtAll(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	r := must[reservation.Reservation](t)(f.store.StartPayment(ctx, "r1", reservation.GuardOf(must[reservation.Reservation](t)(f.store.Get(ctx, "r1")))))
	r = f.pay(t, r, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_1", TaskToken: "tok-1"})
	// The companion is a put into the outbox table, which every fixture has, conditional on
	// its key being new.
	companion := func(id string) func(reservation.Reservation) (types.TransactWriteItem, bool) {
		return func(reservation.Reservation) (types.TransactWriteItem, bool) {
			return types.TransactWriteItem{Put: &types.Put{
				TableName: aws.String(f.env.Names.Of(tables.OutboxTable)),
				Item: map[string]types.AttributeValue{tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: id},
					"note": &types.AttributeValueMemberS{Value: "companion"}},
				ConditionExpression:                 aws.String("attribute_not_exists(#id)"),
				ExpressionAttributeNames:            map[string]string{"#id": tables.AttrOutboxEventID},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}, true
		}
	}
	// Both land.
	records := f.count(t, tables.OutboxTable)
	u := reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r), Event: reservation.AuthorizationOK,
		From: reservation.Authorizing, CaptureBefore: t0.Add(7 * 24 * time.Hour)}
	if r = must[reservation.Reservation](t)(f.store.UpdatePaymentWith(ctx, u, companion("taken"))); r.Payment != reservation.Authorized {
		t.Fatalf("payment %s after the update with its companion", r.Payment)
	}
	// The update's own record and the companion.
	if n := f.count(t, tables.OutboxTable); n != records+2 {
		t.Fatalf("%d outbox items after the update with its companion, want %d", n, records+2)
	}
	// A companion whose key exists refuses, and takes the update down with it.
	records = f.count(t, tables.OutboxTable)
	u = reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r), TaskToken: "tok-2"}
	_, err := f.store.UpdatePaymentWith(ctx, u, companion("taken"))
	var refused *inventory.CompanionRefused
	if !errors.As(err, &refused) || refused.Item["note"] == nil {
		t.Fatalf("a refused companion: %v (item %v), want *inventory.CompanionRefused with the item it met", err, refused)
	}
	if got := must[reservation.Reservation](t)(f.store.Get(ctx, "r1")); got.TaskToken != "tok-1" {
		t.Fatalf("the update landed without its companion: token %q", got.TaskToken)
	}
	if n := f.count(t, tables.OutboxTable); n != records {
		t.Fatalf("%d outbox records after the refused transaction, want %d", n, records)
	}
}

// sameReservation compares what matters of two reads of one reservation (times by instant).
func sameReservation(a, b reservation.Reservation) bool {
	times := func(r reservation.Reservation) []time.Time {
		return []time.Time{r.HoldExpiresAt, r.CaptureBefore, r.CreatedAt, r.UpdatedAt, r.ReconcileSince}
	}
	ta, tb := times(a), times(b)
	for i := range ta {
		if !ta[i].Equal(tb[i]) {
			return false
		}
	}
	a.HoldExpiresAt, a.CaptureBefore, a.CreatedAt, a.UpdatedAt, a.ReconcileSince = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	b.HoldExpiresAt, b.CaptureBefore, b.CreatedAt, b.UpdatedAt, b.ReconcileSince = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a.ID == b.ID && a.Version == b.Version && a.Inventory == b.Inventory && a.Payment == b.Payment &&
		a.PaymentIntentID == b.PaymentIntentID && a.TaskToken == b.TaskToken && len(a.SeatIDs) == len(b.SeatIDs) &&
		a.Amount == b.Amount && a.CustomerCanceled == b.CustomerCanceled
}
