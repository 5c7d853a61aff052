package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

var created = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func envelope(t testing.TB, i int, payloadBytes int) outbox.Envelope {
	t.Helper()
	var payload any = outbox.ReservationSnapshot{SeatIDs: []string{fmt.Sprintf("A%d", i)}, Amount: 1500, Currency: "EUR"}
	if payloadBytes > 0 {
		payload = map[string]string{"blob": strings.Repeat("x", payloadBytes)}
	}
	e, err := outbox.New(outbox.SeatsHeld, fmt.Sprintf("r-%03d", i), 1, created.Add(time.Duration(i)*time.Second), "corr", payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// streamRecord renders an envelope as the Lambda stream record of its Outbox INSERT.
func streamRecord(e outbox.Envelope, seq int) events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{}
	for k, v := range e.Item(0) {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			img[k] = events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			img[k] = events.NewNumberAttribute(v.Value)
		}
	}
	return events.DynamoDBEventRecord{
		EventName: "INSERT",
		Change:    events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprintf("%021d", seq), NewImage: img},
	}
}

func streamEvent(t testing.TB, n, payloadBytes int) (events.DynamoDBEvent, []outbox.Envelope) {
	var ev events.DynamoDBEvent
	var envs []outbox.Envelope
	for i := 0; i < n; i++ {
		e := envelope(t, i, payloadBytes)
		envs = append(envs, e)
		ev.Records = append(ev.Records, streamRecord(e, 100+i))
	}
	return ev, envs
}

func noSleep(context.Context, time.Duration) error { return nil }

// newRelay builds a relay over d, or fails the test.
func newRelay(t testing.TB, d relay.Deps) *relay.Relay {
	t.Helper()
	r, err := relay.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRequiresABus(t *testing.T) {
	if _, err := relay.New(relay.Deps{}); !errors.Is(err, relay.ErrNoBus) {
		t.Fatalf("err = %v, want ErrNoBus", err)
	}
}

func publishedIDs(t testing.TB, entries []ebtypes.PutEventsRequestEntry) []string {
	t.Helper()
	ids := make([]string, len(entries))
	for i, e := range entries {
		var env outbox.Envelope
		if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &env); err != nil {
			t.Fatal(err)
		}
		ids[i] = env.EventID
	}
	return ids
}

func ids(envs []outbox.Envelope) []string {
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = e.EventID
	}
	return out
}

// recordingBus counts the entries of each PutEvents call and refuses entries whose detail
// contains a marker, on every attempt.
type recordingBus struct {
	*relay.MemoryBus
	callSizes []int
	poison    string
}

func (b *recordingBus) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	b.callSizes = append(b.callSizes, len(in.Entries))
	if b.poison == "" {
		return b.MemoryBus.PutEvents(ctx, in, opts...)
	}
	out := &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, len(in.Entries))}
	var pass []ebtypes.PutEventsRequestEntry
	var passIdx []int
	for i, e := range in.Entries {
		if strings.Contains(aws.ToString(e.Detail), b.poison) {
			out.Entries[i] = ebtypes.PutEventsResultEntry{ErrorCode: aws.String("InternalFailure"), ErrorMessage: aws.String("poison")}
			out.FailedEntryCount++
			continue
		}
		pass = append(pass, e)
		passIdx = append(passIdx, i)
	}
	if len(pass) > 0 {
		res, err := b.MemoryBus.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: pass})
		if err != nil {
			return nil, err
		}
		for j, r := range res.Entries {
			out.Entries[passIdx[j]] = r
		}
	}
	return out, nil
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name         string
		records      int
		payloadBytes int
		setup        func(*relay.MemoryBus, *recordingBus)
		maxAttempts  int
		wantCalls    []int // entries per PutEvents call
		wantFailedAt int   // index of the reported record, -1 for none
		wantIDs      func(envs []outbox.Envelope) []string
	}{
		{
			name: "batches of ten", records: 25,
			wantCalls: []int{10, 10, 5}, wantFailedAt: -1,
		},
		{
			name: "split by bytes", records: 5, payloadBytes: 100 * 1024,
			wantCalls: []int{2, 2, 1}, wantFailedAt: -1,
		},
		{
			name: "partial failure retries only the failed entries", records: 12,
			setup:     func(m *relay.MemoryBus, _ *recordingBus) { m.RefuseEntries(3, "ThrottlingException") },
			wantCalls: []int{10, 3, 2}, wantFailedAt: -1,
			// The three refused entries land after the seven accepted with them.
			wantIDs: func(e []outbox.Envelope) []string {
				i := ids(e)
				return append(append(append([]string{}, i[3:10]...), i[0:3]...), i[10:]...)
			},
		},
		{
			name: "whole call fails then succeeds", records: 3,
			setup:     func(m *relay.MemoryBus, _ *recordingBus) { m.FailCalls(2, errors.New("connection reset")) },
			wantCalls: []int{3, 3, 3}, wantFailedAt: -1,
		},
		{
			name: "bounded retries then the first unpublished record is reported", records: 15,
			setup:        func(_ *relay.MemoryBus, r *recordingBus) { r.poison = "r-012" },
			maxAttempts:  3,
			wantCalls:    []int{10, 5, 1, 1},
			wantFailedAt: 12,
			wantIDs: func(e []outbox.Envelope) []string {
				i := ids(e)
				return append(append([]string{}, i[:12]...), i[13:]...)
			},
		},
		{
			name: "a failed batch stops the records after it", records: 25,
			setup:        func(_ *relay.MemoryBus, r *recordingBus) { r.poison = "r-003" },
			maxAttempts:  2,
			wantCalls:    []int{10, 1},
			wantFailedAt: 3,
			wantIDs: func(e []outbox.Envelope) []string {
				i := ids(e)
				return append(append([]string{}, i[:3]...), i[4:10]...)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := relay.NewMemoryBus()
			bus := &recordingBus{MemoryBus: mem}
			if tc.setup != nil {
				tc.setup(mem, bus)
			}
			rec := metrics.NewMemory()
			r := newRelay(t, relay.Deps{Bus: bus, MaxAttempts: tc.maxAttempts, Sleep: noSleep, Metrics: rec})
			ev, envs := streamEvent(t, tc.records, tc.payloadBytes)
			resp, err := r.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(bus.callSizes, tc.wantCalls) {
				t.Errorf("calls %v, want %v", bus.callSizes, tc.wantCalls)
			}
			if tc.wantFailedAt < 0 {
				if len(resp.BatchItemFailures) != 0 {
					t.Fatalf("failures %+v", resp.BatchItemFailures)
				}
			} else {
				want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[tc.wantFailedAt].Change.SequenceNumber}}
				if !reflect.DeepEqual(resp.BatchItemFailures, want) {
					t.Fatalf("failures %+v, want %+v", resp.BatchItemFailures, want)
				}
			}
			want := ids(envs)
			if tc.wantIDs != nil {
				want = tc.wantIDs(envs)
			}
			if got := publishedIDs(t, mem.Entries()); !reflect.DeepEqual(got, want) {
				t.Fatalf("published %v\nwant      %v", got, want)
			}
			if got := rec.Total(relay.MetricPublished); got != int64(len(want)) {
				t.Errorf("published metric %d, want %d", got, len(want))
			}
		})
	}
}

func TestEntryShape(t *testing.T) {
	mem := relay.NewMemoryBus()
	r := newRelay(t, relay.Deps{Bus: mem, EventBusName: "seatsaga-bus"})
	ev, envs := streamEvent(t, 1, 0)
	if _, err := r.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	e := mem.Entries()[0]
	if aws.ToString(e.Source) != outbox.Source || aws.ToString(e.DetailType) != string(outbox.SeatsHeld) ||
		aws.ToString(e.EventBusName) != "seatsaga-bus" || !aws.ToTime(e.Time).Equal(envs[0].CreatedAt) {
		t.Fatalf("entry %+v", e)
	}
	var back outbox.Envelope
	if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, envs[0]) {
		t.Fatalf("detail %+v, want the envelope %+v", back, envs[0])
	}
}

func TestRedeliveryProducesTheSameEntries(t *testing.T) {
	mem := relay.NewMemoryBus()
	r := newRelay(t, relay.Deps{Bus: mem})
	ev, _ := streamEvent(t, 4, 0)
	for i := 0; i < 2; i++ {
		if _, err := r.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	entries := mem.Entries()
	if len(entries) != 8 {
		t.Fatalf("%d entries", len(entries))
	}
	if !reflect.DeepEqual(entries[:4], entries[4:]) {
		t.Fatalf("a redelivered record produced a different entry:\n%+v\n%+v", entries[:4], entries[4:])
	}
}

func TestSkipsAndUndecodable(t *testing.T) {
	mem := relay.NewMemoryBus()
	rec := metrics.NewMemory()
	r := newRelay(t, relay.Deps{Bus: mem, Metrics: rec})
	ev, envs := streamEvent(t, 4, 0)
	ev.Records[1].EventName = "REMOVE"
	ev.Records[1].Change.NewImage = nil
	ev.Records[2].EventName = "MODIFY"
	ev.Records[3].Change.NewImage = map[string]events.DynamoDBAttributeValue{"eventId": events.NewStringAttribute("x")}
	resp, err := r.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[3].Change.SequenceNumber {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if got := publishedIDs(t, mem.Entries()); !reflect.DeepEqual(got, []string{envs[0].EventID}) {
		t.Fatalf("published %v", got)
	}
	if rec.Total(relay.MetricSkipped) != 2 || rec.Total(relay.MetricRecordFailures) != 1 {
		t.Fatalf("metrics %v", rec.Snapshot())
	}
}

func TestOversizedEventIsReported(t *testing.T) {
	mem := relay.NewMemoryBus()
	r := newRelay(t, relay.Deps{Bus: mem})
	ev, envs := streamEvent(t, 3, 0)
	big := envelope(t, 1, relay.MaxBytesPerCall)
	ev.Records[1] = streamRecord(big, 101)
	resp, _ := r.Handle(context.Background(), ev)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[1].Change.SequenceNumber {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if got := publishedIDs(t, mem.Entries()); !reflect.DeepEqual(got, []string{envs[0].EventID}) {
		t.Fatalf("published %v", got)
	}
}

func TestEmptyFailuresMarshalAsAnEmptyList(t *testing.T) {
	r := newRelay(t, relay.Deps{Bus: relay.NewMemoryBus()})
	resp, _ := r.Handle(context.Background(), events.DynamoDBEvent{})
	b, _ := json.Marshal(resp)
	if string(b) != `{"batchItemFailures":[]}` {
		t.Fatalf("got %s", b)
	}
}

func TestMemoryBusDeliversToSubscribers(t *testing.T) {
	mem := relay.NewMemoryBus()
	var got []events.EventBridgeEvent
	mem.Subscribe(func(_ context.Context, ev events.EventBridgeEvent) error {
		got = append(got, ev)
		return errors.New("consumer down")
	})
	r := newRelay(t, relay.Deps{Bus: mem})
	ev, envs := streamEvent(t, 2, 0)
	if _, err := r.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Source != outbox.Source || got[0].DetailType != "SeatsHeld" || !got[0].Time.Equal(envs[0].CreatedAt) {
		t.Fatalf("delivered %+v", got)
	}
	var env outbox.Envelope
	if err := json.Unmarshal(got[1].Detail, &env); err != nil || env.EventID != envs[1].EventID {
		t.Fatalf("detail %s: %v", got[1].Detail, err)
	}
	if mem.DeliveryErrors() == nil {
		t.Fatal("subscriber errors not recorded")
	}
}

func BenchmarkHandle100(b *testing.B) {
	ev, _ := streamEvent(b, 100, 0)
	r := newRelay(b, relay.Deps{Bus: discardBus{}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp, _ := r.Handle(context.Background(), ev); len(resp.BatchItemFailures) > 0 {
			b.Fatal("failure")
		}
	}
}

type discardBus struct{}

func (discardBus) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	out := &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, len(in.Entries))}
	for i := range out.Entries {
		out.Entries[i].EventId = aws.String("id")
	}
	return out, nil
}

// TestLambdaEventFixture decodes a stream event in the shape Lambda delivers it (an outbox
// INSERT pair and a TTL REMOVE) and publishes it.
func TestLambdaEventFixture(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/streams/outbox-batch.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	mem := relay.NewMemoryBus()
	rec := metrics.NewMemory()
	resp, err := newRelay(t, relay.Deps{Bus: mem, EventBusName: "seatsaga-prod", Metrics: rec}).Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	entries := mem.Entries()
	if got := publishedIDs(t, entries); !reflect.DeepEqual(got, []string{"res-7f3a#v1#SeatsHeld", "res-7f3a#v4#ReservationConfirmed"}) {
		t.Fatalf("published %v", got)
	}
	var env outbox.Envelope
	if err := json.Unmarshal([]byte(aws.ToString(entries[1].Detail)), &env); err != nil {
		t.Fatal(err)
	}
	var snap outbox.ReservationSnapshot
	if err := json.Unmarshal(env.Payload, &snap); err != nil {
		t.Fatal(err)
	}
	if env.AggregateVersion != 4 || env.CorrelationID != "corr-19c2" || snap.CustomerID != "cust-42" || snap.Amount != 9000 || snap.PaymentState != "PAID" {
		t.Fatalf("envelope %+v payload %+v", env, snap)
	}
	if !aws.ToTime(entries[0].Time).Equal(time.Date(2026, 11, 30, 6, 0, 0, 123000000, time.UTC)) {
		t.Fatalf("time %v", aws.ToTime(entries[0].Time))
	}
	if rec.Get(relay.MetricSkipped, metrics.Dim{Name: "reason", Value: "REMOVE"}) != 1 {
		t.Fatalf("metrics %v", rec.Snapshot())
	}
}
