package relay_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func putOutbox(t *testing.T, env *ddbtest.Env, envs ...outbox.Envelope) {
	t.Helper()
	for _, e := range envs {
		_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName:           aws.String(env.Names.Of(tables.OutboxTable)),
			Item:                e.Item(0),
			ConditionExpression: aws.String("attribute_not_exists(eventId)"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// pollUntil polls until the bus holds want entries or the deadline passes; DynamoDB Local
// makes stream records readable right after the write, but a busy machine may lag.
func pollUntil(t *testing.T, reader *relay.StreamReader, bus *relay.MemoryBus, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(bus.Entries()) < want {
		if time.Now().After(deadline) {
			t.Fatalf("bus has %d entries, want %d", len(bus.Entries()), want)
		}
		if _, err := reader.Poll(context.Background()); err != nil {
			t.Fatalf("poll: %v", err)
		}
		if len(bus.Entries()) < want {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestStreamReaderAgainstDynamoDBLocal(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox())
	ctx := context.Background()
	arn, err := relay.StreamARN(ctx, env.Client, env.Names.Of(tables.OutboxTable))
	if err != nil {
		t.Fatal(err)
	}
	bus := relay.NewMemoryBus()
	reader := &relay.StreamReader{
		Streams:   localStreamsClient(env.Endpoint),
		StreamARN: arn,
		Relay:     newRelay(t, relay.Deps{Bus: bus, MaxAttempts: 2, Sleep: noSleep}),
		BatchSize: 7,
		// Retried until the records are too old, and they never are: every record is
		// published in the end.
		MaximumRetryAttempts:    -1,
		ReportBatchItemFailures: true,
	}

	// 1. Everything written is published once, in write order, across several GetRecords.
	var first []outbox.Envelope
	for i := 0; i < 12; i++ {
		first = append(first, envelope(t, i, 0))
	}
	putOutbox(t, env, first...)
	pollUntil(t, reader, bus, 12)
	if got := publishedIDs(t, bus.Entries()); !reflect.DeepEqual(got, ids(first)) {
		t.Fatalf("published %v\nwant      %v", got, ids(first))
	}
	if n, err := reader.Poll(ctx); err != nil || n != 0 {
		t.Fatalf("an idle poll relayed %d records (err %v)", n, err)
	}

	// 2. EventBridge down: the poll reports a redelivery and publishes nothing; the next poll
	// resumes at the failed record and publishes each record once.
	second := []outbox.Envelope{envelope(t, 20, 0), envelope(t, 21, 0), envelope(t, 22, 0)}
	putOutbox(t, env, second...)
	bus.FailCalls(2, errors.New("service unavailable"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := reader.Poll(ctx)
		if errors.Is(err, relay.ErrRedeliver) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the failing bus never saw the new records")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(bus.Entries()) != 12 {
		t.Fatalf("entries published while the bus was down: %d", len(bus.Entries()))
	}
	pollUntil(t, reader, bus, 15)
	if got := publishedIDs(t, bus.Entries()); !reflect.DeepEqual(got, append(ids(first), ids(second)...)) {
		t.Fatalf("after recovery published %v", got)
	}

	// 3. One entry refused past the retry bound: the stream redelivers from it; the records
	// after it that were accepted alongside are published again, identically (at least once).
	third := []outbox.Envelope{envelope(t, 30, 0), envelope(t, 31, 0)}
	putOutbox(t, env, third...)
	reader.Relay = newRelay(t, relay.Deps{Bus: bus, MaxAttempts: 1, Sleep: noSleep})
	bus.RefuseEntries(1, "InternalFailure") // entry 30; 31 is accepted in the same call
	for len(bus.Entries()) < 18 {
		if _, err := reader.Poll(ctx); err != nil && !errors.Is(err, relay.ErrRedeliver) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("third round published %v", publishedIDs(t, bus.Entries())[15:])
		}
	}
	got := publishedIDs(t, bus.Entries())[15:]
	want := []string{third[1].EventID, third[0].EventID, third[1].EventID}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("third round published %v, want %v", got, want)
	}
	entries := bus.Entries()
	if !reflect.DeepEqual(entries[15], entries[17]) {
		t.Fatalf("the republished entry differs:\n%+v\n%+v", entries[15], entries[17])
	}
}

func TestStreamReaderStartAtLatest(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox())
	ctx := context.Background()
	putOutbox(t, env, envelope(t, 1, 0))
	arn, err := relay.StreamARN(ctx, env.Client, env.Names.Of(tables.OutboxTable))
	if err != nil {
		t.Fatal(err)
	}
	bus := relay.NewMemoryBus()
	reader := &relay.StreamReader{
		Streams: localStreamsClient(env.Endpoint), StreamARN: arn,
		Relay: newRelay(t, relay.Deps{Bus: bus}), StartAt: streamtypes.ShardIteratorTypeLatest,
	}
	if _, err := reader.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	later := envelope(t, 2, 0)
	putOutbox(t, env, later)
	pollUntil(t, reader, bus, 1)
	if got := publishedIDs(t, bus.Entries()); !reflect.DeepEqual(got, []string{later.EventID}) {
		t.Fatalf("published %v", got)
	}
}

func TestStreamARNOfATableWithoutStream(t *testing.T) {
	env := ddbtest.New(t, tables.ProcessedEvents())
	if _, err := relay.StreamARN(context.Background(), env.Client, env.Names.Of(tables.ProcessedEventsTable)); err == nil {
		t.Fatal("want an error for a table without a stream")
	}
}

func TestRunStopsWithTheContext(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox())
	arn, err := relay.StreamARN(context.Background(), env.Client, env.Names.Of(tables.OutboxTable))
	if err != nil {
		t.Fatal(err)
	}
	bus := relay.NewMemoryBus()
	reader := &relay.StreamReader{Streams: localStreamsClient(env.Endpoint), StreamARN: arn,
		Relay: newRelay(t, relay.Deps{Bus: bus}), PollInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reader.Run(ctx) }()
	putOutbox(t, env, envelope(t, 5, 0))
	deadline := time.Now().Add(20 * time.Second)
	for len(bus.Entries()) < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(bus.Entries()) != 1 {
		t.Fatalf("Run published %d entries", len(bus.Entries()))
	}
}
