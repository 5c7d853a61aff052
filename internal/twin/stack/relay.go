package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/starter"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
)

// startRelay plays the Outbox table's stream event source mapping: a reader polls DynamoDB
// Local's stream under the relay's role and invokes the relay function with each batch through
// the Lambda host, with the mapping's deployed settings (deploy.Delivery): a failing batch is
// bisected, retried a bounded number of times and then parked in RelayDLQ by its stream
// coordinates, and records too old are parked without being invoked, so the shard moves on as
// it does on AWS. Each invocation publishes the relay's IteratorAge. The relay publishes to the
// in-memory bus through the gate.
func (st *Stack) startRelay(ctx context.Context) error {
	d := deploy.DefaultDelivery()
	reader := &relay.StreamReader{
		Streams:                    st.streamsOf(FnRelay),
		StreamARN:                  st.deployment.streams[tables.OutboxTable],
		Relay:                      streamFunction{client: st.Lambda, name: FnRelay},
		FunctionARN:                FunctionARN(FnRelay),
		BatchSize:                  int32(d.RelayBatchSize),
		BisectBatchOnFunctionError: d.RelayBisectBatchOnError,
		ReportBatchItemFailures:    d.RelayReportBatchItemFailures,
		MaximumRetryAttempts:       d.RelayRetryAttempts,
		MaximumRecordAge:           d.RelayMaxRecordAge,
		OnFailure: func(_ context.Context, rec relay.FailureRecord) error {
			return st.sendOnFailure(FnRelay, deploy.RelayDLQ, rec)
		},
		OnInvoke:     func(at time.Time, age time.Duration) { st.publishIteratorAge(FnRelay, at, age) },
		RecordTime:   st.outboxRecordTime,
		Now:          st.Clock.Now,
		PollInterval: st.cfg.RelayPollInterval,
		Log:          st.log,
	}
	st.subscribeConsumers()
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		_ = reader.Run(st.ctx)
	}()
	return nil
}

// publishIteratorAge records the relay's AWS/Lambda IteratorAge for one invocation, as Lambda
// does for a stream mapping: milliseconds from the stream receiving the batch's last record to
// the mapping sending the batch. The age is given in wall time: it measures how far the
// mapping is behind, which a compressed stack clock would otherwise stretch by its factor, so
// a loaded machine's scheduling delay would read as an incident.
func (st *Stack) publishIteratorAge(function string, at time.Time, age time.Duration) {
	if c, ok := st.Clock.(*clock.Scaled); ok {
		age = time.Duration(float64(age) / c.Factor())
	}
	st.CloudWatch.Put(cloudwatch.Datum{
		Namespace: "AWS/Lambda", Name: "IteratorAge", Dimensions: map[string]string{"FunctionName": function},
		Value: float64(age.Milliseconds()), Unit: "Milliseconds", Time: at,
	})
}

// outboxRecordTime is when an outbox record reached the stream, on the stack's clock. DynamoDB
// Local stamps its stream records on the wall clock, which a fake or scaled stack clock does
// not follow, so a record's age (MaxRecordAge) is taken from the item's createdAt,
// which its writer stamped on the stack's clock in the same transaction; a record without one
// (the TTL's REMOVE) counts as arriving when the mapping reads it.
func (st *Stack) outboxRecordTime(rec events.DynamoDBEventRecord) time.Time {
	return st.stampedAt(rec, outbox.AttrCreatedAt)
}

// stampedAt is the time a record's new image carries in attr, stamped by its writer on the
// stack's clock (RFC 3339, which inventory.TimeLayout is too), or now when it carries none.
func (st *Stack) stampedAt(rec events.DynamoDBEventRecord, attr string) time.Time {
	if v, ok := rec.Change.NewImage[attr]; ok && v.DataType() == events.DataTypeString {
		if t, err := time.Parse(time.RFC3339Nano, v.String()); err == nil {
			return t
		}
	}
	return st.Clock.Now()
}

// streamFunction hands a batch to a stream's function (the relay, the starter) with a
// synchronous invocation, as Lambda's event source mapping does: a function error fails the
// whole batch, a partial batch response names the records to retry, and an invocation Lambda
// refused (a throttle, a service error) did not run the function at all.
type streamFunction struct {
	client *lambda.Client
	name   string
}

func (f streamFunction) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	out, err := f.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(f.name), Payload: payload})
	if err != nil {
		return events.DynamoDBEventResponse{}, fmt.Errorf("%w: invoke the %s: %w", relay.ErrNotInvoked, f.name, err)
	}
	if out.FunctionError != nil {
		return events.DynamoDBEventResponse{}, &relay.FunctionError{Type: aws.ToString(out.FunctionError), Payload: out.Payload}
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out.Payload, &resp); err != nil {
		return events.DynamoDBEventResponse{}, fmt.Errorf("the %s's response: %w", f.name, err)
	}
	return resp, nil
}

// startStarter plays the Admissions table's stream event source mapping, with the starter's
// deployed settings (deploy.Delivery): each batch invokes the starter, which starts the
// executions Step Functions throttled at the api; a start it keeps failing is retried until
// the record is too old, then parked in StarterDLQ. Each invocation publishes the starter's
// IteratorAge: how long queued winners wait.
func (st *Stack) startStarter() {
	d := deploy.DefaultDelivery()
	reader := &relay.StreamReader{
		Streams:                 st.streamsOf(FnStarter),
		StreamARN:               st.deployment.streams[tables.AdmissionsTable],
		Relay:                   streamFunction{client: st.Lambda, name: FnStarter},
		FunctionARN:             FunctionARN(FnStarter),
		BatchSize:               int32(d.StarterBatchSize),
		ReportBatchItemFailures: true,
		Filter: func(rec events.DynamoDBEventRecord) bool {
			_, _, ok := starter.Queued(rec)
			return ok
		},
		MaximumRetryAttempts: d.StarterRetryAttempts,
		MaximumRecordAge:     d.StarterMaxRecordAge,
		OnFailure: func(_ context.Context, rec relay.FailureRecord) error {
			return st.sendOnFailure(FnStarter, deploy.StarterDLQ, rec)
		},
		OnInvoke: func(at time.Time, age time.Duration) { st.publishIteratorAge(FnStarter, at, age) },
		// The api stamped the queueing on the stack's clock; DynamoDB Local's stamp is the
		// wall clock rounded to the minute.
		RecordTime:   func(rec events.DynamoDBEventRecord) time.Time { return st.stampedAt(rec, tables.AttrStartQueuedAt) },
		Now:          st.Clock.Now,
		PollInterval: st.cfg.RelayPollInterval,
		Log:          st.log,
	}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		_ = reader.Run(st.ctx)
	}()
}

// busPublications lists what the relay published, as the invariant checker reads it: the
// envelope's event id and the whole envelope as payload.
type busPublications struct{ bus *relay.MemoryBus }

func (b busPublications) Published() []invariants.Publication {
	if b.bus == nil {
		return nil
	}
	entries := b.bus.Entries()
	out := make([]invariants.Publication, 0, len(entries))
	for _, e := range entries {
		detail := aws.ToString(e.Detail)
		var env struct {
			EventID string `json:"eventId"`
		}
		_ = json.Unmarshal([]byte(detail), &env)
		out = append(out, invariants.Publication{EventID: env.EventID, Payload: []byte(detail)})
	}
	return out
}
