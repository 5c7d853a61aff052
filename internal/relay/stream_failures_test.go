package relay_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func seqRecords(seqs ...string) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, len(seqs))
	for i, s := range seqs {
		out[i].Change.SequenceNumber = s
	}
	return out
}

func failures(ids ...string) events.DynamoDBEventResponse {
	var resp events.DynamoDBEventResponse
	for _, id := range ids {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: id})
	}
	return resp
}

func TestClassifyInvocationReadsTheAnswerAsTheMappingDoes(t *testing.T) {
	batch := seqRecords("100", "200", "300")
	for _, tc := range []struct {
		name   string
		resp   events.DynamoDBEventResponse
		err    error
		report bool
		want   relay.Outcome
	}{
		{"no failures", failures(), nil, true, relay.Outcome{Kind: relay.Succeeded}},
		{"one failure", failures("200"), nil, true, relay.Outcome{Kind: relay.PartlyFailed, FirstFailed: 1}},
		{"the lowest of several failures", failures("300", "200"), nil, true, relay.Outcome{Kind: relay.PartlyFailed, FirstFailed: 1}},
		{"the first record", failures("100"), nil, true, relay.Outcome{Kind: relay.PartlyFailed, FirstFailed: 0}},
		{"partial responses ignored without ReportBatchItemFailures", failures("200"), nil, false, relay.Outcome{Kind: relay.Succeeded}},
		{"an empty identifier fails the batch", failures(""), nil, true, relay.Outcome{Kind: relay.FunctionFailed}},
		{"an identifier of no record fails the batch", failures("200", "999"), nil, true, relay.Outcome{Kind: relay.FunctionFailed}},
		{"a handler's error is a function error", failures(), errors.New("boom"), true, relay.Outcome{Kind: relay.FunctionFailed, FunctionError: "Unhandled"}},
		{"Lambda's function error keeps its type", failures(), &relay.FunctionError{Type: "Unhandled", Payload: []byte(`{}`)}, false,
			relay.Outcome{Kind: relay.FunctionFailed, FunctionError: "Unhandled"}},
		{"a throttle did not invoke", failures(), fmt.Errorf("%w: TooManyRequestsException", relay.ErrNotInvoked), true, relay.Outcome{Kind: relay.NotInvoked}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relay.ClassifyInvocation(batch, tc.resp, tc.err, tc.report); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNextStepBisectsRetriesAndDiscardsAsLambdaDoes(t *testing.T) {
	span := func(start, end, retries, invocations int) relay.Span {
		return relay.Span{Start: start, End: end, Retries: retries, Invocations: invocations}
	}
	bisect := relay.RetryPolicy{Bisect: true, MaxRetries: 2}
	plain := relay.RetryPolicy{MaxRetries: 2}
	failed := relay.Outcome{Kind: relay.FunctionFailed, FunctionError: "Unhandled"}
	partAt := func(k int) relay.Outcome { return relay.Outcome{Kind: relay.PartlyFailed, FirstFailed: k} }
	for _, tc := range []struct {
		name    string
		span    relay.Span
		outcome relay.Outcome
		policy  relay.RetryPolicy
		want    relay.Step
	}{
		{"success finishes the span", span(0, 4, 1, 2), relay.Outcome{Kind: relay.Succeeded}, bisect,
			relay.Step{Done: 4}},
		{"not invoked leaves the span as it was", span(2, 4, 1, 2), relay.Outcome{Kind: relay.NotInvoked}, bisect,
			relay.Step{Next: []relay.Span{span(2, 4, 1, 2)}}},
		{"a function error halves the batch without spending a retry", span(0, 5, 0, 0), failed, bisect,
			relay.Step{Next: []relay.Span{span(0, 2, 0, 1), span(2, 5, 0, 1)}}},
		{"a failed single record is retried", span(3, 4, 1, 3), failed, bisect,
			relay.Step{Next: []relay.Span{span(3, 4, 2, 4)}}},
		{"a single record past its retries is discarded", span(3, 4, 2, 5), failed, bisect,
			relay.Step{Discard: span(3, 4, 2, 6)}},
		{"without bisection the whole batch is retried", span(0, 4, 0, 0), failed, plain,
			relay.Step{Next: []relay.Span{span(0, 4, 1, 1)}}},
		{"without bisection the whole batch is discarded past its retries", span(0, 4, 2, 2), failed, plain,
			relay.Step{Discard: span(0, 4, 2, 3)}},
		{"a partial failure finishes the records before it and splits at it", span(0, 5, 0, 0), partAt(2), bisect,
			relay.Step{Done: 2, Next: []relay.Span{span(2, 5, 0, 1)}}},
		{"without bisection the rest after a partial failure is a retry", span(0, 5, 0, 0), partAt(2), plain,
			relay.Step{Done: 2, Next: []relay.Span{span(2, 5, 1, 1)}}},
		{"without bisection the rest past its retries is discarded", span(0, 5, 2, 2), partAt(2), plain,
			relay.Step{Done: 2, Discard: span(2, 5, 2, 3)}},
		{"a failure at the first record halves the batch", span(4, 8, 0, 1), partAt(0), bisect,
			relay.Step{Next: []relay.Span{span(4, 6, 0, 2), span(6, 8, 0, 2)}}},
		{"a failure at the first record without bisection is a retry", span(4, 8, 0, 1), partAt(0), plain,
			relay.Step{Next: []relay.Span{span(4, 8, 1, 2)}}},
		{"no retries at all discards on the first failure", span(0, 1, 0, 0), failed, relay.RetryPolicy{MaxRetries: 0},
			relay.Step{Discard: span(0, 1, 0, 1)}},
		{"unbounded retries never discard", span(0, 1, 500, 500), failed, relay.RetryPolicy{MaxRetries: -1},
			relay.Step{Next: []relay.Span{span(0, 1, 501, 501)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relay.NextStep(tc.span, tc.outcome, tc.policy); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// poisoned is a relay that cannot publish one event: like the relay, it publishes the records
// before the one it fails and reports that one as the batch item failure.
type poisoned struct {
	relay  *relay.Relay
	poison string

	mu      sync.Mutex
	batches [][]string // the event ids of each invocation
}

func (p *poisoned) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var ids []string
	at := -1
	for i, rec := range ev.Records {
		if rec.EventName != "INSERT" {
			continue // the relay skips the rest (the TTL's REMOVEs) too
		}
		env, err := outbox.FromStreamImage(rec.Change.NewImage)
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		ids = append(ids, env.EventID)
		if env.EventID == p.poison && at < 0 {
			at = i
		}
	}
	p.mu.Lock()
	p.batches = append(p.batches, ids)
	p.mu.Unlock()
	if at < 0 {
		return p.relay.Handle(ctx, ev)
	}
	if at > 0 {
		if resp, err := p.relay.Handle(ctx, events.DynamoDBEvent{Records: ev.Records[:at]}); err != nil || len(resp.BatchItemFailures) > 0 {
			return resp, err
		}
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
		{ItemIdentifier: ev.Records[at].Change.SequenceNumber},
	}}, nil
}

func (p *poisoned) invocationsOf(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, b := range p.batches {
		if slices.Contains(b, id) {
			n++
		}
	}
	return n
}

type destination struct {
	mu      sync.Mutex
	records []relay.FailureRecord
}

func (d *destination) send(_ context.Context, rec relay.FailureRecord) error {
	d.mu.Lock()
	d.records = append(d.records, rec)
	d.mu.Unlock()
	return nil
}

func (d *destination) all() []relay.FailureRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.records)
}

// pollFor polls until done reports true or the deadline passes; redeliveries are expected.
func pollFor(t *testing.T, reader *relay.StreamReader, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("never got %s", what)
		}
		if _, err := reader.Poll(context.Background()); err != nil && !errors.Is(err, relay.ErrRedeliver) {
			t.Fatalf("poll: %v", err)
		}
		if !done() {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// One record the relay can never publish is isolated by bisection, retried RetryAttempts
// times alone, and parked in the destination by its coordinates; every other record of its
// batch and after it is published once, in order.
func TestStreamReaderParksAPoisonRecordAndMovesOn(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox())
	ctx := context.Background()
	arn, err := relay.StreamARN(ctx, env.Client, env.Names.Of(tables.OutboxTable))
	if err != nil {
		t.Fatal(err)
	}
	var envs []outbox.Envelope
	for i := 0; i < 6; i++ {
		envs = append(envs, envelope(t, 40+i, 0))
	}
	putOutbox(t, env, envs...)
	bus := relay.NewMemoryBus()
	fn := &poisoned{relay: newRelay(t, relay.Deps{Bus: bus, Sleep: noSleep}), poison: envs[2].EventID}
	dlq := &destination{}
	var ages []time.Duration
	reader := &relay.StreamReader{
		Streams: localStreamsClient(env.Endpoint), StreamARN: arn, Relay: fn,
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:relay",
		BatchSize:   10, BisectBatchOnFunctionError: true, ReportBatchItemFailures: true,
		MaximumRetryAttempts: 2, MaximumRecordAge: 24 * time.Hour,
		OnFailure: dlq.send,
		OnInvoke:  func(_ time.Time, age time.Duration) { ages = append(ages, age) },
	}
	pollFor(t, reader, "the poison record in the destination and the rest on the bus", func() bool {
		return len(dlq.all()) == 1 && len(bus.Entries()) == 5
	})

	want := ids(slices.Delete(slices.Clone(envs), 2, 3))
	if got := publishedIDs(t, bus.Entries()); !reflect.DeepEqual(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	// Alone, the poison record was invoked once and retried twice.
	alone := 0
	for _, b := range fn.batches {
		if len(b) == 1 && b[0] == envs[2].EventID {
			alone++
		}
	}
	if alone != 3 {
		t.Errorf("the poison record was invoked alone %d times, want 1 + 2 retries; batches %v", alone, fn.batches)
	}
	rec := dlq.all()[0]
	info := rec.DDBStreamBatchInfo
	if rec.RequestContext.Condition != relay.ConditionRetryAttemptsExhausted || info.BatchSize != 1 ||
		info.StartSequenceNumber != info.EndSequenceNumber || info.StreamARN != arn || info.ShardID == "" {
		t.Errorf("on-failure record %+v", rec)
	}
	if rec.RequestContext.ApproximateInvokeCount != fn.invocationsOf(envs[2].EventID) {
		t.Errorf("approximateInvokeCount %d, but the record was in %d invocations", rec.RequestContext.ApproximateInvokeCount, fn.invocationsOf(envs[2].EventID))
	}
	if rec.ResponseContext == nil || rec.ResponseContext.StatusCode != 200 || rec.RequestContext.FunctionARN != reader.FunctionARN {
		t.Errorf("on-failure record lacks the last response or the function: %+v", rec)
	}
	// The shard's checkpoint is past the last record: nothing of it is invoked again.
	if _, err := reader.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(bus.Entries()) != 5 || len(dlq.all()) != 1 {
		t.Errorf("an idle poll changed things: %d published, %d parked", len(bus.Entries()), len(dlq.all()))
	}
	if len(ages) == 0 {
		t.Error("no invocation was reported with its iterator age")
	}
}

// Records older than MaximumRecordAge go to the destination without being invoked; the ones
// after them are, and their iterator age counts from the record's own time on the mapping's
// clock, not from DynamoDB Local's stamp (rounded down to the minute).
func TestStreamReaderSendsRecordsTooOldToTheDestinationUninvoked(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox())
	ctx := context.Background()
	arn, err := relay.StreamARN(ctx, env.Client, env.Names.Of(tables.OutboxTable))
	if err != nil {
		t.Fatal(err)
	}
	old, fresh := envelope(t, 50, 0), envelope(t, 51, 0)
	putOutbox(t, env, old, fresh)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	createdAt := map[string]time.Time{old.EventID: now.Add(-25 * time.Hour), fresh.EventID: now.Add(-time.Hour)}
	bus := relay.NewMemoryBus()
	fn := &poisoned{relay: newRelay(t, relay.Deps{Bus: bus, Sleep: noSleep})}
	dlq := &destination{}
	var ages []time.Duration
	reader := &relay.StreamReader{
		Streams: localStreamsClient(env.Endpoint), StreamARN: arn, Relay: fn,
		BisectBatchOnFunctionError: true, ReportBatchItemFailures: true,
		MaximumRetryAttempts: 2, MaximumRecordAge: 24 * time.Hour, OnFailure: dlq.send,
		Now:      func() time.Time { return now },
		OnInvoke: func(_ time.Time, age time.Duration) { ages = append(ages, age) },
		RecordTime: func(rec events.DynamoDBEventRecord) time.Time {
			e, _ := outbox.FromStreamImage(rec.Change.NewImage)
			return createdAt[e.EventID]
		},
	}
	pollFor(t, reader, "the old record parked and the fresh one published", func() bool {
		return len(dlq.all()) == 1 && len(bus.Entries()) == 1
	})
	if fn.invocationsOf(old.EventID) != 0 {
		t.Errorf("the expired record was invoked %d times", fn.invocationsOf(old.EventID))
	}
	rec := dlq.all()[0]
	if rec.RequestContext.Condition != relay.ConditionRecordAgeExceeded || rec.RequestContext.ApproximateInvokeCount != 0 ||
		rec.ResponseContext != nil || rec.DDBStreamBatchInfo.BatchSize != 1 ||
		!rec.DDBStreamBatchInfo.ApproximateArrivalOfFirstRecord.Equal(createdAt[old.EventID]) {
		t.Errorf("on-failure record %+v", rec)
	}
	if got := publishedIDs(t, bus.Entries()); !reflect.DeepEqual(got, []string{fresh.EventID}) {
		t.Errorf("published %v", got)
	}
	if !reflect.DeepEqual(ages, []time.Duration{time.Hour}) {
		t.Errorf("iterator ages %v, want the fresh record's hour", ages)
	}
}

// The mapping's filter: records it drops are finished without an invocation, and one poll
// reads past a long run of them to the record it keeps, so unwanted records cost no lag.
func TestStreamReaderInvokesOnlyWhatItsFilterKeepsAndReadsOnPastTheRest(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox())
	ctx := context.Background()
	arn, err := relay.StreamARN(ctx, env.Client, env.Names.Of(tables.OutboxTable))
	if err != nil {
		t.Fatal(err)
	}
	var envs []outbox.Envelope
	for i := 0; i < 30; i++ {
		envs = append(envs, envelope(t, 60+i, 0))
	}
	putOutbox(t, env, envs...)
	wanted := envs[27].EventID
	bus := relay.NewMemoryBus()
	fn := &poisoned{relay: newRelay(t, relay.Deps{Bus: bus, Sleep: noSleep})}
	reader := &relay.StreamReader{
		Streams: localStreamsClient(env.Endpoint), StreamARN: arn, Relay: fn, BatchSize: 5, ReportBatchItemFailures: true,
		Filter: func(rec events.DynamoDBEventRecord) bool {
			e, _ := outbox.FromStreamImage(rec.Change.NewImage)
			return e.EventID == wanted
		},
	}
	if _, err := reader.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := publishedIDs(t, bus.Entries()); !reflect.DeepEqual(got, []string{wanted}) {
		t.Fatalf("one poll published %v, want only the record the filter keeps", got)
	}
	if n := len(fn.batches); n != 1 {
		t.Fatalf("%d invocations, want 1", n)
	}
}
