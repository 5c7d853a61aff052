package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/sqs"
)

// queuesT0 starts the stacks' fake clocks near the wall clock: DynamoDB Local expires items by
// their TTL on the wall clock, and would delete outbox records stamped long before it.
var queuesT0 = time.Now().UTC().Truncate(time.Minute)

func TestNextAsyncAttemptRetriesAsLambdaDoes(t *testing.T) {
	d := deploy.DefaultDelivery() // 2 retries, events kept 6 hours
	for _, tc := range []struct {
		name                     string
		r                        asyncResult
		functionErrors, throttle int
		age                      time.Duration
		want                     asyncVerdict
	}{
		{"success ends it", asyncSucceeded, 1, 3, time.Minute, asyncVerdict{done: true}},
		{"the first function error waits a minute", asyncFunctionError, 1, 0, 0, asyncVerdict{wait: time.Minute}},
		{"the second waits two", asyncFunctionError, 2, 0, time.Minute, asyncVerdict{wait: 2 * time.Minute}},
		{"the third exhausts the retries", asyncFunctionError, 3, 0, 3 * time.Minute, asyncVerdict{condition: conditionRetriesExhausted}},
		{"throttles spend no retry", asyncThrottled, 2, 1, 3 * time.Minute, asyncVerdict{wait: time.Second}},
		{"throttles back off doubling", asyncThrottled, 0, 4, time.Minute, asyncVerdict{wait: 8 * time.Second}},
		{"throttles back off at most five minutes", asyncThrottled, 0, 12, time.Hour, asyncVerdict{wait: 5 * time.Minute}},
		{"an event whose retry would come too late expires at its maximum age", asyncThrottled, 0, 20, 6*time.Hour - time.Minute,
			asyncVerdict{wait: time.Minute, condition: conditionEventAgeExceeded}},
		{"an event already too old expires now", asyncFunctionError, 1, 0, 6*time.Hour + time.Second,
			asyncVerdict{condition: conditionEventAgeExceeded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextAsyncAttempt(tc.r, tc.functionErrors, tc.throttle, tc.age, d); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// eventually waits until done reports true: the stack's own goroutines (the stream reader, the
// consumer's attempts) get there in wall time while the stack's clock stands still. It fails
// after 60 s.
func eventually(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// putOutboxEvent writes an outbox record as the saga's transactions do, created at createdAt.
func putOutboxEvent(t *testing.T, st *Stack, reservationID string, createdAt time.Time) outbox.Envelope {
	t.Helper()
	env, err := outbox.New(outbox.SeatsHeld, reservationID, 1, createdAt, "corr-"+reservationID, map[string]string{"n": reservationID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(st.Names.Of(tables.OutboxTable)), Item: env.Item(outbox.DefaultRetention),
	}); err != nil {
		t.Fatal(err)
	}
	return env
}

// failingRelay wraps the stack's relay so that it cannot publish one event: it publishes what
// comes before it and names it as the batch item failure, as the relay does with an event
// EventBridge keeps refusing. After failFor such failures it lets the event through.
type failingRelay struct {
	real    func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	poison  string
	failFor int

	mu      sync.Mutex
	failed  int
	batches [][]string
}

func (f *failingRelay) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	at := -1
	var ids []string
	for i, rec := range ev.Records {
		if rec.EventName != "INSERT" {
			continue // the relay skips the rest (the TTL's REMOVEs) too
		}
		env, err := outbox.FromStreamImage(rec.Change.NewImage)
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		ids = append(ids, env.EventID)
		if env.EventID == f.poison && at < 0 {
			at = i
		}
	}
	f.mu.Lock()
	f.batches = append(f.batches, ids)
	fail := at >= 0 && f.failed < f.failFor
	if fail {
		f.failed++
	}
	f.mu.Unlock()
	if !fail {
		return f.real(ctx, ev)
	}
	if at > 0 {
		if resp, err := f.real(ctx, events.DynamoDBEvent{Records: ev.Records[:at]}); err != nil || len(resp.BatchItemFailures) > 0 {
			return resp, err
		}
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
		{ItemIdentifier: ev.Records[at].Change.SequenceNumber},
	}}, nil
}

// seen lists the event ids of each invocation.
func (f *failingRelay) seen() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// aloneCount counts the invocations of the failing event by itself.
func (f *failingRelay) aloneCount() int {
	n := 0
	for _, b := range f.seen() {
		if len(b) == 1 && b[0] == f.poison {
			n++
		}
	}
	return n
}

func publishedIDs(st *Stack) []string {
	var out []string
	for _, p := range (busPublications{bus: st.Bus}).Published() {
		out = append(out, p.EventID)
	}
	return out
}

// relayStack starts a stack whose relay fails the event of reservation r-poison failFor
// times, and writes to the outbox, in this order: old (when set, created that long ago), then
// the events of r-before, r-poison, r-after-1 and r-after-2, created now.
func relayStack(t *testing.T, failFor int, old time.Duration) (*Stack, *clock.Fake, *failingRelay, []outbox.Envelope) {
	t.Helper()
	c := clock.NewFake(queuesT0)
	st := start(t, Config{Clock: c, SweepInterval: -1, RelayPollInterval: 20 * time.Millisecond})
	f := &failingRelay{
		real:    st.Handler(FnRelay).(func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)),
		poison:  outbox.EventID("r-poison", 1, outbox.SeatsHeld),
		failFor: failFor,
	}
	st.Lambdas.Register(FnRelay, f.handle)
	var envs []outbox.Envelope
	if old > 0 {
		envs = append(envs, putOutboxEvent(t, st, "r-old", c.Now().Add(-old)))
	}
	for _, id := range []string{"r-before", "r-poison", "r-after-1", "r-after-2"} {
		envs = append(envs, putOutboxEvent(t, st, id, c.Now()))
	}
	return st, c, f, envs
}

// A relay that can never publish one event: the mapping isolates it, retries it RetryAttempts
// times, parks its stream coordinates in RelayDLQ and moves on, so the events after it are
// still published; the queue's depth and age reach CloudWatch every minute; a record older than
// MaxRecordAge is parked without being invoked; and every invocation reports IteratorAge.
func TestARelayFailingOneRecordForeverParksItInRelayDLQAndPublishesTheRest(t *testing.T) {
	d := deploy.DefaultDelivery()
	st, c, f, envs := relayStack(t, 1<<30, d.RelayMaxRecordAge+time.Hour)
	old, envs := envs[0], envs[1:]
	dlq := st.Queue(deploy.RelayDLQ)

	eventually(t, "the poison and the old record in RelayDLQ and the rest published", func() bool {
		return dlq.Depth(c.Now()) == 2 && len(publishedIDs(st)) == 3
	})
	want := []string{envs[0].EventID, envs[2].EventID, envs[3].EventID}
	if got := publishedIDs(st); !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	if n := f.aloneCount(); n != 1+d.RelayRetryAttempts {
		t.Errorf("the poison record was invoked alone %d times, want 1 + %d retries", n, d.RelayRetryAttempts)
	}
	byCondition := map[string]relay.FailureRecord{}
	for _, m := range dlq.Messages() {
		var rec relay.FailureRecord
		if err := json.Unmarshal([]byte(m.Body), &rec); err != nil {
			t.Fatalf("message %s: %v", m.Body, err)
		}
		byCondition[rec.RequestContext.Condition] = rec
	}
	poison, aged := byCondition[relay.ConditionRetryAttemptsExhausted], byCondition[relay.ConditionRecordAgeExceeded]
	if info := poison.DDBStreamBatchInfo; info.BatchSize != 1 || info.StartSequenceNumber != info.EndSequenceNumber ||
		info.StreamARN != st.deployment.streams[tables.OutboxTable] || info.ShardID == "" || !info.ApproximateArrivalOfFirstRecord.Equal(queuesT0) {
		t.Errorf("the poison record's batch info %+v", info)
	}
	if poison.RequestContext.FunctionARN != FunctionARN(FnRelay) || poison.RequestContext.ApproximateInvokeCount < 1+d.RelayRetryAttempts ||
		poison.ResponseContext == nil || poison.ResponseContext.StatusCode != 200 {
		t.Errorf("the poison record's contexts %+v %+v", poison.RequestContext, poison.ResponseContext)
	}
	if aged.DDBStreamBatchInfo.BatchSize != 1 || aged.RequestContext.ApproximateInvokeCount != 0 || aged.ResponseContext != nil ||
		!aged.DDBStreamBatchInfo.ApproximateArrivalOfFirstRecord.Equal(old.CreatedAt.Truncate(time.Second)) {
		t.Errorf("the expired record's DLQ record %+v", aged)
	}
	for _, b := range f.seen() {
		if slices.Contains(b, old.EventID) {
			t.Errorf("the expired record was invoked: %v", b)
		}
	}

	c.Advance(2 * time.Minute)
	dims := map[string]string{sqs.DimensionQueue: deploy.RelayDLQ}
	depth := st.CloudWatch.Points(cloudwatch.SeriesOf("AWS/SQS", "ApproximateNumberOfMessagesVisible", dims), queuesT0, c.Now().Add(time.Second))
	age := st.CloudWatch.Points(cloudwatch.SeriesOf("AWS/SQS", "ApproximateAgeOfOldestMessage", dims), queuesT0, c.Now().Add(time.Second))
	if len(depth) != 2 || depth[1].Value != 2 || !depth[1].Time.Equal(queuesT0.Add(2*time.Minute)) {
		t.Errorf("RelayDLQ depth points %+v, want 2 messages at +2 min", depth)
	}
	if len(age) != 2 || age[1].Value != 120 || age[1].Unit != "Seconds" {
		t.Errorf("RelayDLQ age points %+v, want the oldest 120 s old at +2 min", age)
	}
	ages := st.CloudWatch.Points(cloudwatch.SeriesOf("AWS/Lambda", "IteratorAge", map[string]string{"FunctionName": FnRelay}), queuesT0, c.Now())
	if len(ages) < 1+d.RelayRetryAttempts || ages[0].Unit != "Milliseconds" {
		t.Errorf("%d IteratorAge points (%+v), want one per invocation", len(ages), ages)
	}
}

// The control: a relay that fails the record once has it published on the retry, and nothing
// reaches RelayDLQ.
func TestARelayFailingOnceParksNothing(t *testing.T) {
	st, c, _, envs := relayStack(t, 1, 0)
	eventually(t, "every record published", func() bool { return len(publishedIDs(st)) == 4 })
	if got, want := publishedIDs(st), []string{envs[0].EventID, envs[1].EventID, envs[2].EventID, envs[3].EventID}; !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	c.Advance(time.Minute)
	if n := st.Queue(deploy.RelayDLQ).Depth(c.Now()); n != 0 {
		t.Errorf("RelayDLQ holds %d messages", n)
	}
}

// consumerStack starts a stack whose consumer fails its first failures invocations, records
// when each invocation came on the stack's clock, and publishes one event to the bus. It
// returns how many calls the stack's clock had pending before the event: one more means the
// consumer's retry is scheduled.
func consumerStack(t *testing.T, failures int) (st *Stack, c *clock.Fake, calls func() []time.Time, pending int) {
	t.Helper()
	c = clock.NewFake(queuesT0)
	st = start(t, Config{Clock: c, SweepInterval: -1})
	var mu sync.Mutex
	var at []time.Time
	st.Lambdas.Register(FnConsumer, func(ctx context.Context, ev events.EventBridgeEvent) error {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, c.Now())
		if len(at) <= failures {
			return errors.New("notification service down")
		}
		return nil
	})
	pending = c.Waiters()
	_, err := st.Bus.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		Source: aws.String(outbox.Source), DetailType: aws.String(string(outbox.ReservationConfirmed)),
		Detail: aws.String(`{"eventId":"r-1#v2#ReservationConfirmed","reservationId":"r-1"}`), EventBusName: aws.String(EventBusName),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return st, c, func() []time.Time { mu.Lock(); defer mu.Unlock(); return slices.Clone(at) }, pending
}

// retryScheduled waits until the consumer has been invoked n times and its next attempt (or
// its giving up) is scheduled on the clock.
func retryScheduled(t *testing.T, c *clock.Fake, calls func() []time.Time, n, pending int) {
	t.Helper()
	eventually(t, fmt.Sprintf("invocation %d and its retry scheduled", n), func() bool {
		return len(calls()) == n && c.Waiters() > pending
	})
}

// A consumer that always fails: Lambda retries the event twice, after a minute and then two,
// and then sends ConsumerDLQ the invocation record with the event and the last error.
func TestAConsumerFailingAlwaysLandsInConsumerDLQAfterItsRetries(t *testing.T) {
	st, c, calls, pending := consumerStack(t, 1<<30)
	dlq := st.Queue(deploy.ConsumerDLQ)
	retryScheduled(t, c, calls, 1, pending)
	c.Advance(time.Minute - time.Second)
	time.Sleep(50 * time.Millisecond) // a retry scheduled too early would be under way
	if n := len(calls()); n != 1 {
		t.Fatalf("%d invocations before the minute was up", n)
	}
	c.Advance(time.Second)
	retryScheduled(t, c, calls, 2, pending)
	c.Advance(2*time.Minute - time.Second)
	time.Sleep(50 * time.Millisecond)
	if n, depth := len(calls()), dlq.Depth(c.Now()); n != 2 || depth != 0 {
		t.Fatalf("%d invocations and %d dead letters before the two minutes were up", n, depth)
	}
	c.Advance(time.Second)
	eventually(t, "the event in ConsumerDLQ", func() bool { return dlq.Depth(c.Now()) == 1 })

	at := calls()
	if len(at) != 3 || at[1].Sub(at[0]) != time.Minute || at[2].Sub(at[1]) != 2*time.Minute {
		t.Fatalf("invocations at %v, want 1 + 2 retries a minute and then two apart", at)
	}
	var rec struct {
		RequestContext struct {
			FunctionARN            string `json:"functionArn"`
			Condition              string `json:"condition"`
			ApproximateInvokeCount int    `json:"approximateInvokeCount"`
		} `json:"requestContext"`
		RequestPayload  events.EventBridgeEvent `json:"requestPayload"`
		ResponseContext struct {
			StatusCode    int    `json:"statusCode"`
			FunctionError string `json:"functionError"`
		} `json:"responseContext"`
		ResponsePayload struct {
			ErrorMessage string `json:"errorMessage"`
		} `json:"responsePayload"`
	}
	m := dlq.Messages()[0]
	if err := json.Unmarshal([]byte(m.Body), &rec); err != nil {
		t.Fatalf("%s: %v", m.Body, err)
	}
	if rec.RequestContext.Condition != "RetriesExhausted" || rec.RequestContext.ApproximateInvokeCount != 3 ||
		rec.RequestContext.FunctionARN != FunctionARN(FnConsumer)+":$LATEST" {
		t.Errorf("request context %+v", rec.RequestContext)
	}
	if rec.RequestPayload.Source != outbox.Source || !strings.Contains(string(rec.RequestPayload.Detail), "r-1#v2#ReservationConfirmed") {
		t.Errorf("request payload %+v, want the event", rec.RequestPayload)
	}
	if rec.ResponseContext.StatusCode != 200 || rec.ResponseContext.FunctionError != "Unhandled" ||
		!strings.Contains(rec.ResponsePayload.ErrorMessage, "notification service down") {
		t.Errorf("response %+v %+v, want the function's last error", rec.ResponseContext, rec.ResponsePayload)
	}
	if !m.SentAt.Equal(at[2]) {
		t.Errorf("given up at %s, want at the last attempt %s", m.SentAt, at[2])
	}

	c.Advance(time.Minute)
	depth := st.CloudWatch.Points(cloudwatch.SeriesOf("AWS/SQS", "ApproximateNumberOfMessagesVisible",
		map[string]string{"QueueName": deploy.ConsumerDLQ}), m.SentAt, c.Now().Add(time.Second))
	if len(depth) == 0 || depth[len(depth)-1].Value != 1 {
		t.Errorf("ConsumerDLQ depth points after the message %+v, want 1", depth)
	}
}

// The control: a consumer that fails once succeeds on the retry a minute later, and nothing
// reaches ConsumerDLQ.
func TestAConsumerFailingOnceParksNothing(t *testing.T) {
	st, c, calls, pending := consumerStack(t, 1)
	retryScheduled(t, c, calls, 1, pending)
	c.Advance(time.Minute)
	eventually(t, "the retry", func() bool { return len(calls()) == 2 })
	c.Advance(10 * time.Minute)
	time.Sleep(100 * time.Millisecond) // a wrongly scheduled third attempt would be under way
	if n := len(calls()); n != 2 {
		t.Errorf("%d invocations, want the failure and its successful retry", n)
	}
	if n := st.Queue(deploy.ConsumerDLQ).Depth(c.Now()); n != 0 {
		t.Errorf("ConsumerDLQ holds %d messages", n)
	}
}

// The relay's IteratorAge is reported in wall time on a compressed stack: two seconds behind
// on a clock thirty times faster is two seconds, not the minute that would cross the alarm's
// threshold on a loaded machine.
func TestTheRelaysIteratorAgeIsWallTimeOnACompressedClock(t *testing.T) {
	c := clock.NewScaled(clock.Real{}, 30)
	st := &Stack{Clock: c, CloudWatch: cloudwatch.NewStore()}
	at := c.Now()
	st.publishIteratorAge(FnRelay, at, time.Minute)
	got := st.CloudWatch.Points(cloudwatch.SeriesOf("AWS/Lambda", "IteratorAge", map[string]string{"FunctionName": FnRelay}), at, at.Add(time.Second))
	if len(got) != 1 || got[0].Value != 2000 {
		t.Errorf("IteratorAge points %+v, want one of 2000 ms", got)
	}
}
