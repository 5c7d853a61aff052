package invariants

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

type fakeStore struct {
	seats []Seat
	res   []Reservation
	err   error
}

func (f fakeStore) Seats(context.Context) ([]Seat, error)               { return f.seats, f.err }
func (f fakeStore) Reservations(context.Context) ([]Reservation, error) { return f.res, nil }

type fakeLedger []Payment

func (f fakeLedger) Payments(context.Context) ([]Payment, error) { return f, nil }

type fakeEngine []Execution

func (f fakeEngine) Executions(context.Context) ([]Execution, error) { return f, nil }

type fakeBus []Publication

func (f fakeBus) Published() []Publication { return f }

func TestRunCollectsEverySourceAndChecks(t *testing.T) {
	h := healthy()
	src := Sources{
		Store:  fakeStore{seats: h.Seats, res: h.Reservations},
		Ledger: fakeLedger(h.Payments),
		Engine: fakeEngine(h.Executions),
		Bus:    fakeBus(h.Published),
		Now:    func() time.Time { return now },
		Grace:  h.Grace,
	}
	v, err := Run(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || v.Seats != len(h.Seats) || v.Payments != len(h.Payments) || v.Published != len(h.Published) {
		t.Fatalf("verdict %s", v)
	}
	// The clock is read after the items: a hold that lapses meanwhile is judged as lapsed.
	src.Now = func() time.Time { return now.Add(time.Hour) }
	src.Store = fakeStore{seats: append(h.Seats, Seat{EventID: "e1", SeatID: "A9", State: Held, ReservationID: "r9", HoldExpiresAt: now}),
		res: append(h.Reservations, Reservation{ID: "r9", EventID: "e1", SeatIDs: []string{"A9"}, State: Held, HoldExpiresAt: now})}
	v, err = Run(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Broken(RuleNoStaleHold) {
		t.Fatalf("stale hold not found: %s", v)
	}
}

func TestCollectReportsSourceErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := Collect(context.Background(), Sources{Store: fakeStore{err: boom}, Ledger: fakeLedger{}, Engine: fakeEngine{}, Now: time.Now})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if _, err := Collect(context.Background(), Sources{}); err == nil {
		t.Fatal("missing sources accepted")
	}
}

type fakeScanner []map[string]types.AttributeValue

func (f fakeScanner) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{Items: f}, nil
}

// The snapshot must carry the customer's cancel from the reservation item's customerCanceled
// BOOL, or no-charge-for-acknowledged-cancel would judge nothing against the real stack.
func TestDynamoDBReservationsCarryTheCustomerCancel(t *testing.T) {
	item := func(id string, extra map[string]types.AttributeValue) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{
			"reservationId":  &types.AttributeValueMemberS{Value: id},
			"eventId":        &types.AttributeValueMemberS{Value: "e1"},
			"inventoryState": &types.AttributeValueMemberS{Value: Released},
			"paymentState":   &types.AttributeValueMemberS{Value: "CANCELED"},
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	store := DynamoDB{Client: fakeScanner{
		item("canceled", map[string]types.AttributeValue{"customerCanceled": &types.AttributeValueMemberBOOL{Value: true}}),
		item("cleared", map[string]types.AttributeValue{"customerCanceled": &types.AttributeValueMemberBOOL{Value: false}}),
		item("absent", nil),
	}}
	res, err := store.Reservations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"canceled": true, "cleared": false, "absent": false}
	if len(res) != len(want) {
		t.Fatalf("%d reservations, want %d", len(res), len(want))
	}
	for _, r := range res {
		if r.CustomerCanceled != want[r.ID] {
			t.Errorf("reservation %s CustomerCanceled=%v, want %v", r.ID, r.CustomerCanceled, want[r.ID])
		}
	}
}

// The probe must tell the consumer's own types apart, in both directions: a confirmation is
// one it notifies about, a hold is one it ignores. Were the probe always true or always false,
// consumer-applied-every-event-once would judge every event or none.
func TestExampleConsumerHandlesWhatTheConsumerNotifiesAbout(t *testing.T) {
	for typ, want := range map[string]bool{"ReservationConfirmed": true, "PaymentRefunded": true, "SeatsHeld": false, "PaymentAuthorized": false} {
		if got := (ExampleConsumer{}).Handles(typ); got != want {
			t.Errorf("Handles(%s) = %v, want %v", typ, got, want)
		}
	}
}

// The consumer's records share ProcessedEvents with its latest-version items and the
// webhook's dedupe records; only its own per-event records are read, with their state.
func TestConsumerRecordsReadOnlyTheConsumersEventRecords(t *testing.T) {
	item := func(key, state string) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{"dedupeKey": &types.AttributeValueMemberS{Value: key}}
		if state != "" {
			m["state"] = &types.AttributeValueMemberS{Value: state}
		}
		return m
	}
	store := DynamoDB{Client: fakeScanner{
		item("notify#ev1", ConsumerSent), item("notify#ev2", ConsumerSending),
		item("notify-latest#r1", ""), item("webhook#evt_1", "DONE"),
	}}
	recs, err := store.ConsumerRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []ConsumerRecord{{EventID: "ev1", State: ConsumerSent}, {EventID: "ev2", State: ConsumerSending}}
	if len(recs) != len(want) || recs[0] != want[0] || recs[1] != want[1] {
		t.Fatalf("records %+v, want %+v", recs, want)
	}
}

type fakeConsumer struct {
	records []ConsumerRecord
	sent    []string
}

func (f fakeConsumer) Records(context.Context) ([]ConsumerRecord, error) { return f.records, nil }
func (f fakeConsumer) Sent() []string                                    { return f.sent }
func (f fakeConsumer) Handles(t string) bool                             { return t == "ReservationConfirmed" }

// Collect asks the consumer about the types the bus published, so that an unrecorded
// confirmation breaks the rule through Run as it does in a fixture.
func TestRunJudgesTheConsumerAgainstThePublishedEvents(t *testing.T) {
	h := healthy()
	src := Sources{
		Store: fakeStore{seats: h.Seats, res: h.Reservations}, Ledger: fakeLedger(h.Payments),
		Engine: fakeEngine(h.Executions), Bus: fakeBus(h.Published), Now: func() time.Time { return now }, Grace: h.Grace,
		Consumer: fakeConsumer{records: h.Consumer.Records, sent: h.Consumer.Sent},
	}
	v, err := Run(context.Background(), src)
	if err != nil || !v.OK() {
		t.Fatalf("healthy consumer: %v %s", err, v)
	}
	src.Consumer = fakeConsumer{}
	if v, err = Run(context.Background(), src); err != nil || !v.Broken(RuleConsumerAppliedOnce) {
		t.Fatalf("unrecorded confirmation: %v %s", err, v)
	}
}

type fakeSFN struct {
	list     []sfntypes.ExecutionListItem
	describe map[string]*sfn.DescribeExecutionOutput
}

func (f fakeSFN) ListExecutions(context.Context, *sfn.ListExecutionsInput, ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error) {
	return &sfn.ListExecutionsOutput{Executions: f.list}, nil
}

func (f fakeSFN) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	return f.describe[*in.ExecutionArn], nil
}

// A client that can describe executions has each finished one classified: a failure needs a
// person, a business ending does not, and a running one is not described at all.
func TestStepFunctionsClassifiesFinishedExecutions(t *testing.T) {
	item := func(name string, st sfntypes.ExecutionStatus) sfntypes.ExecutionListItem {
		arn := "arn:" + name
		return sfntypes.ExecutionListItem{Name: &name, ExecutionArn: &arn, Status: st}
	}
	str := func(s string) *string { return &s }
	client := fakeSFN{
		list: []sfntypes.ExecutionListItem{item("failed", sfntypes.ExecutionStatusFailed), item("declined", sfntypes.ExecutionStatusSucceeded), item("running", sfntypes.ExecutionStatusRunning)},
		describe: map[string]*sfn.DescribeExecutionOutput{
			"arn:failed":   {Status: sfntypes.ExecutionStatusFailed, Error: str("NeedsReconciliation")},
			"arn:declined": {Status: sfntypes.ExecutionStatusSucceeded, Output: str(`{"Error":"PaymentDeclined","Cause":"declined"}`)},
		},
	}
	execs, err := StepFunctions{Client: client, StateMachineARN: "arn:sm"}.Executions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range execs {
		got[e.Name] = e.NeedsPerson
	}
	if !got["failed"] || got["declined"] || got["running"] || len(got) != 3 {
		t.Fatalf("needs a person: %v, want only failed", got)
	}
}
