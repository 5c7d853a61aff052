package starter

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/tables"
)

const machine = "arn:aws:states:us-east-1:000000000000:stateMachine:reservation"

// fakeSFN answers each start by name from answers (nil: started) and records every call.
type fakeSFN struct {
	answers map[string]error
	calls   []*sfn.StartExecutionInput
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.calls = append(f.calls, in)
	return &sfn.StartExecutionOutput{}, f.answers[aws.ToString(in.Name)]
}

func record(seq, id string, queued bool) events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{tables.AttrReservationID: events.NewStringAttribute(id),
		tables.AttrAdmissionState: events.NewStringAttribute("ADMITTED")}
	if queued {
		img[tables.AttrStartQueued] = events.NewBooleanAttribute(true)
		img[tables.AttrStartInput] = events.NewStringAttribute(`{"reservationId":"` + id + `"}`)
	}
	return events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{SequenceNumber: seq, NewImage: img}}
}

// Queued admissions are started in order under their reservation's name with their input; the
// rest of the stream (new admissions, rejections) starts nothing; a start that happened already
// is done; a start no retry can make is counted and passed over; the first throttled start is
// the batch item failure and nothing after it is tried.
func TestTheStarterStartsQueuedAdmissionsAndRetriesFromTheFirstThrottledOne(t *testing.T) {
	f := &fakeSFN{answers: map[string]error{
		"r_b": &sfntypes.ExecutionAlreadyExists{Message: aws.String("exists")},
		"r_c": &sfntypes.InvalidExecutionInput{Message: aws.String("not JSON")},
		"r_d": &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"},
	}}
	m := metrics.NewMemory()
	s, err := New(Deps{SFN: f, StateMachineARN: machine, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		record("1", "r_a", true), record("2", "r_x", false), record("3", "r_b", true), record("35", "r_c", true), record("4", "r_d", true), record("5", "r_e", true),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "4" {
		t.Fatalf("batch item failures %+v, want the throttled record 4", resp.BatchItemFailures)
	}
	var names []string
	for _, c := range f.calls {
		names = append(names, aws.ToString(c.Name))
		if aws.ToString(c.StateMachineArn) != machine || aws.ToString(c.Input) != `{"reservationId":"`+aws.ToString(c.Name)+`"}` {
			t.Errorf("start %+v", c)
		}
	}
	if len(names) != 4 || names[0] != "r_a" || names[1] != "r_b" || names[2] != "r_c" || names[3] != "r_d" {
		t.Fatalf("started %v, want r_a, r_b, r_c, r_d and nothing after the throttled one", names)
	}
	if m.Total(MetricStarted) != 1 || m.Total(MetricThrottled) != 1 || m.Total(MetricFailed) != 1 {
		t.Fatalf("metrics %v", m.Snapshot())
	}
}

// A start refused because the account runs as many executions as its quota allows waits for
// room, as a throttled one does: it is the batch item failure, not a start given up.
func TestAStartRefusedForWantOfOpenExecutionsIsRetriedNotGivenUp(t *testing.T) {
	f := &fakeSFN{answers: map[string]error{
		"r_a": &sfntypes.ExecutionLimitExceeded{Message: aws.String("The maximum number of running executions has been reached.")},
	}}
	m := metrics.NewMemory()
	s, err := New(Deps{SFN: f, StateMachineARN: machine, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		record("1", "r_a", true), record("2", "r_b", true),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "1" || len(f.calls) != 1 {
		t.Fatalf("batch item failures %+v after %d starts, want record 1 retried and nothing after it tried", resp.BatchItemFailures, len(f.calls))
	}
	if m.Total(MetricFailed) != 0 {
		t.Fatalf("the start was counted failed: %v", m.Snapshot())
	}
}

// countingBacklog counts the marks of the start backlog.
type countingBacklog struct{ marks int }

func (b *countingBacklog) MarkStartBacklog(context.Context) error { b.marks++; return nil }

// The starter marks the start backlog when the quota is what holds its starts back (a start
// throttled, or refused for want of open executions: the batch is retried and the starts wait),
// not whenever a batch holds queued starts. Winners the backlog queued reach the starter in
// batches too: a mark for every such batch keeps the backlog live as long as winners keep
// coming, and every one of them waits a stream delivery although Step Functions has tokens.
func TestTheStarterMarksTheBacklogOnlyWhenTheQuotaHoldsItsStartsBack(t *testing.T) {
	b := &countingBacklog{}
	f := &fakeSFN{answers: map[string]error{
		"r_g": &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"},
		"r_i": &smithy.GenericAPIError{Code: "ExecutionLimitExceeded", Message: "open executions"},
	}}
	s, err := New(Deps{SFN: f, StateMachineARN: machine, Backlog: b})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("1", "r_a", false), record("2", "r_b", false)}}); err != nil || b.marks != 0 {
		t.Fatalf("a batch without queued starts: %d marks, %v; want none", b.marks, err)
	}
	if _, err := s.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("3", "r_c", true), record("4", "r_d", false), record("5", "r_e", true)}}); err != nil || b.marks != 0 {
		t.Fatalf("a batch whose queued starts all started: %d marks, %v; want none", b.marks, err)
	}
	if _, err := s.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("6", "r_f", true), record("7", "r_g", true), record("8", "r_h", true)}}); err != nil || b.marks != 1 {
		t.Fatalf("a batch with a throttled start: %d marks, %v; want one", b.marks, err)
	}
	if _, err := s.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("9", "r_i", true)}}); err != nil || b.marks != 2 {
		t.Fatalf("a batch with a start refused for want of open executions: %d marks, %v; want one more", b.marks, err)
	}
}
