package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

type fixture struct {
	env     *ddbtest.Env
	clock   *clock.Fake
	sender  *consumer.MemorySender
	metrics *metrics.Memory
	table   string
	n       *consumer.Notifier
}

func setup(t *testing.T) *fixture {
	t.Helper()
	env := ddbtest.New(t, tables.ProcessedEvents())
	f := &fixture{env: env, clock: clock.NewFake(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)),
		sender: &consumer.MemorySender{}, metrics: metrics.NewMemory()}
	f.table = env.Names.Of(tables.ProcessedEventsTable)
	f.n = f.notifier(t, env.Client)
	return f
}

// notifier builds the fixture's consumer over db.
func (f *fixture) notifier(t *testing.T, db consumer.DynamoDB) *consumer.Notifier {
	t.Helper()
	n, err := consumer.New(consumer.Deps{DB: db, Table: f.table, Sender: f.sender,
		Now: f.clock.Now, Retention: 48 * time.Hour, Lease: 30 * time.Second, Metrics: f.metrics})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNewChecksDeps(t *testing.T) {
	db := &failMarkDB{}
	for name, d := range map[string]consumer.Deps{
		"no DB":     {Table: "t", Sender: &consumer.MemorySender{}},
		"no table":  {DB: db, Sender: &consumer.MemorySender{}},
		"no sender": {DB: db, Table: "t"},
	} {
		if _, err := consumer.New(d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func event(t *testing.T, typ outbox.Type, reservation string, version int64) events.EventBridgeEvent {
	t.Helper()
	env, err := outbox.New(typ, reservation, version, time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC), "corr-1",
		outbox.ReservationSnapshot{CustomerID: "cust-1", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	detail, _ := json.Marshal(env)
	return events.EventBridgeEvent{ID: "bus-" + env.EventID, Source: outbox.Source, DetailType: string(typ), Detail: detail}
}

func (f *fixture) item(t *testing.T, eventID string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tables.AttrDedupeKey: &types.AttributeValueMemberS{Value: consumer.DedupeKey(eventID)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func state(item map[string]types.AttributeValue) string {
	if v, ok := item[consumer.AttrState].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func eventID(t *testing.T, ev events.EventBridgeEvent) string {
	var env outbox.Envelope
	if err := json.Unmarshal(ev.Detail, &env); err != nil {
		t.Fatal(err)
	}
	return env.EventID
}

func TestRedeliveredEventSendsOnce(t *testing.T) {
	f := setup(t)
	ev := event(t, outbox.ReservationConfirmed, "r-1", 5)
	var outcomes []consumer.Outcome
	for i := 0; i < 5; i++ {
		o, err := f.n.Process(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, o)
	}
	want := []consumer.Outcome{consumer.OutcomeSent, consumer.OutcomeDuplicate, consumer.OutcomeDuplicate, consumer.OutcomeDuplicate, consumer.OutcomeDuplicate}
	for i := range want {
		if outcomes[i] != want[i] {
			t.Fatalf("outcomes %v, want %v", outcomes, want)
		}
	}
	sent := f.sender.Sent()
	if len(sent) != 1 || sent[0].Kind != consumer.KindConfirmed || sent[0].CustomerID != "cust-1" || sent[0].ReservationID != "r-1" {
		t.Fatalf("sent %+v", sent)
	}
	item := f.item(t, eventID(t, ev))
	if state(item) != consumer.StateSent {
		t.Fatalf("record %v", item)
	}
	ttl, _ := strconv.ParseInt(item[tables.AttrExpiresAtTTL].(*types.AttributeValueMemberN).Value, 10, 64)
	if want := f.clock.Now().Add(48 * time.Hour).Unix(); ttl != want {
		t.Fatalf("ttl %d, want %d", ttl, want)
	}
	if f.metrics.Total(consumer.MetricDuplicates) != 4 || f.metrics.Total(consumer.MetricSent) != 1 {
		t.Fatalf("metrics %v", f.metrics.Snapshot())
	}
}

func TestStaleEventChangesNothing(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	newer := event(t, outbox.ReservationConfirmed, "r-2", 5)
	older := event(t, outbox.SeatsReleased, "r-2", 3)
	if o, err := f.n.Process(ctx, newer); err != nil || o != consumer.OutcomeSent {
		t.Fatalf("newer: %v %v", o, err)
	}
	if o, err := f.n.Process(ctx, older); err != nil || o != consumer.OutcomeStale {
		t.Fatalf("older: %v %v", o, err)
	}
	if o, err := f.n.Process(ctx, older); err != nil || o != consumer.OutcomeDuplicate {
		t.Fatalf("older again: %v %v", o, err)
	}
	if sent := f.sender.Sent(); len(sent) != 1 || sent[0].Kind != consumer.KindConfirmed {
		t.Fatalf("sent %+v", sent)
	}
	if state(f.item(t, eventID(t, older))) != consumer.StateStale {
		t.Fatal("stale event not recorded")
	}
}

func TestEventsOfOneChangeShareAVersion(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	for _, typ := range []outbox.Type{outbox.SeatsReleased, outbox.PaymentVoided} {
		if o, err := f.n.Process(ctx, event(t, typ, "r-3", 7)); err != nil || o != consumer.OutcomeSent {
			t.Fatalf("%s: %v %v", typ, o, err)
		}
	}
	if len(f.sender.Sent()) != 2 {
		t.Fatalf("sent %+v", f.sender.Sent())
	}
}

func TestSendFailureIsRetriedAfterTheLease(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	ev := event(t, outbox.PaymentRefunded, "r-4", 9)
	f.sender.FailNext(errors.New("smtp down"))
	if _, err := f.n.Process(ctx, ev); err == nil {
		t.Fatal("want the send error")
	}
	if state(f.item(t, eventID(t, ev))) != consumer.StateSending {
		t.Fatal("claim not left SENDING")
	}
	// A redelivery inside the lease must not send concurrently.
	if err := f.n.Handle(ctx, ev); !errors.Is(err, consumer.ErrInProgress) {
		t.Fatalf("inside the lease: err = %v, want ErrInProgress", err)
	}
	f.clock.Advance(31 * time.Second)
	if o, err := f.n.Process(ctx, ev); err != nil || o != consumer.OutcomeSent {
		t.Fatalf("after the lease: %v %v", o, err)
	}
	if o, _ := f.n.Process(ctx, ev); o != consumer.OutcomeDuplicate {
		t.Fatalf("after sending: %v", o)
	}
	if len(f.sender.Sent()) != 1 {
		t.Fatalf("sent %+v", f.sender.Sent())
	}
}

func TestConcurrentDeliveriesSendOnce(t *testing.T) {
	f := setup(t)
	ev := event(t, outbox.ReservationConfirmed, "r-5", 2)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.n.Process(context.Background(), ev); err != nil && !errors.Is(err, consumer.ErrInProgress) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		// A transaction conflict between the racers is transient; it is retried by EventBridge.
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			t.Errorf("unexpected error %v", err)
		}
	}
	if n := len(f.sender.Sent()); n != 1 {
		t.Fatalf("sent %d notifications, want 1", n)
	}
}

func TestIgnoredAndInvalidEvents(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	held := event(t, outbox.SeatsHeld, "r-6", 1)
	if o, err := f.n.Process(ctx, held); err != nil || o != consumer.OutcomeIgnored {
		t.Fatalf("SeatsHeld: %v %v", o, err)
	}
	if f.item(t, eventID(t, held)) != nil {
		t.Fatal("an ignored event was recorded")
	}
	foreign := event(t, outbox.ReservationConfirmed, "r-6", 2)
	foreign.Source = "someone.else"
	if o, err := f.n.Process(ctx, foreign); err != nil || o != consumer.OutcomeIgnored {
		t.Fatalf("foreign source: %v %v", o, err)
	}
	bad := events.EventBridgeEvent{Source: outbox.Source, Detail: json.RawMessage(`{"eventId":""}`)}
	_, err := f.n.Process(ctx, bad)
	var invalid *consumer.InvalidEventError
	if !errors.As(err, &invalid) {
		t.Fatalf("invalid: err = %v", err)
	}
	if err := f.n.Handle(ctx, bad); err != nil {
		t.Fatalf("Handle must drop an invalid event, got %v", err)
	}
	if len(f.sender.Sent()) != 0 {
		t.Fatal("sent something")
	}
}

// failMarkDB fails the first UpdateItem: the crash after sending, before marking sent.
type failMarkDB struct {
	consumer.DynamoDB
	failed bool
}

func (d *failMarkDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !d.failed {
		d.failed = true
		return nil, errors.New("connection reset")
	}
	return d.DynamoDB.UpdateItem(ctx, in, opts...)
}

func TestCrashAfterSendingResendsOnceAfterTheLease(t *testing.T) {
	f := setup(t)
	f.n = f.notifier(t, &failMarkDB{DynamoDB: f.env.Client})
	ctx := context.Background()
	ev := event(t, outbox.PaymentVoided, "r-7", 4)
	if _, err := f.n.Process(ctx, ev); err == nil {
		t.Fatal("want the mark error")
	}
	if err := f.n.Handle(ctx, ev); !errors.Is(err, consumer.ErrInProgress) {
		t.Fatalf("inside the lease: %v", err)
	}
	f.clock.Advance(time.Minute)
	if o, err := f.n.Process(ctx, ev); err != nil || o != consumer.OutcomeSent {
		t.Fatalf("after the lease: %v %v", o, err)
	}
	// At least once towards the channel: the crashed attempt's send and the retry's, both with
	// the same EventID for the channel to dedupe; never more.
	sent := f.sender.Sent()
	if len(sent) != 2 || sent[0].EventID != sent[1].EventID {
		t.Fatalf("sent %+v", sent)
	}
	if o, _ := f.n.Process(ctx, ev); o != consumer.OutcomeDuplicate {
		t.Fatalf("after marking: %v", o)
	}
}

// A late payment that took its seats back (SeatsReacquired) tells the customer they have them:
// before, such buyers were charged and only ever heard that their seats were released.
func TestReacquiredSeatsAreAConfirmationForTheCustomer(t *testing.T) {
	f := setup(t)
	ev := event(t, outbox.SeatsReacquired, "r-7", 6)
	if o, err := f.n.Process(context.Background(), ev); err != nil || o != consumer.OutcomeSent {
		t.Fatalf("outcome %v, %v; want sent", o, err)
	}
	if sent := f.sender.Sent(); len(sent) != 1 || sent[0].Kind != consumer.KindConfirmed || sent[0].ReservationID != "r-7" {
		t.Fatalf("sent %+v; want one confirmation", sent)
	}
}
