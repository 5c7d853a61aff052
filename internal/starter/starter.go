// Package starter starts the executions Step Functions refused to start at once. When the api's
// StartExecution is throttled (a flash sale's burst is past the account's StartExecution
// quota), the api records the execution's input on the buyer's admission and answers 202: the
// admission is the durable queue, and the Admissions table's stream delivers it here. The
// starter calls StartExecution for each queued admission at the pace its event source mapping
// and Step Functions allow; a start Step Functions throttles again is reported as a batch item
// failure, so Lambda retries the stream from that record and nothing queued is lost. The
// execution is named by the reservation id, so a start that already happened (the api's own
// retry, a redelivered record) is answered ExecutionAlreadyExists and changes nothing.
package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Metric names the starter records.
const (
	MetricStarted   = "QueuedExecutionsStarted"
	MetricThrottled = "QueuedStartsThrottled"
	MetricFailed    = "QueuedStartsFailed"
)

// StepFunctions is the one call the starter makes.
type StepFunctions interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
}

// Backlog marks that starts wait in the queue (inventory.Store.MarkStartBacklog).
type Backlog interface {
	MarkStartBacklog(ctx context.Context) error
}

// Deps is what the starter needs; SFN and StateMachineARN are required. Without Backlog the
// starter marks nothing, and the api learns of the queue only from its own throttled calls.
type Deps struct {
	SFN             StepFunctions
	StateMachineARN string
	Backlog         Backlog
	Logger          *slog.Logger
	Metrics         metrics.Recorder
}

// Starter starts queued executions.
type Starter struct {
	d Deps
}

// New checks d and returns the starter.
func New(d Deps) (*Starter, error) {
	if d.SFN == nil {
		return nil, errors.New("starter: SFN is required")
	}
	if !strings.Contains(d.StateMachineARN, ":stateMachine:") {
		return nil, fmt.Errorf("starter: StateMachineARN %q is not a state machine ARN", d.StateMachineARN)
	}
	_, d.Logger, d.Metrics = obs.Defaults(nil, d.Logger, d.Metrics)
	return &Starter{d: d}, nil
}

// Handle starts the execution of every queued admission in the batch, in order. The first
// start that fails for a reason a retry may cure (throttling, an unavailable service) is the
// batch item failure: Lambda retries from it, and the records after it wait their turn.
func (s *Starter) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	for _, rec := range ev.Records {
		id, input, ok := Queued(rec)
		if !ok {
			continue
		}
		_, err := s.d.SFN.StartExecution(ctx, &sfn.StartExecutionInput{
			StateMachineArn: aws.String(s.d.StateMachineARN), Name: aws.String(id), Input: aws.String(input),
		})
		var exists *sfntypes.ExecutionAlreadyExists
		switch {
		case err == nil:
			s.d.Metrics.Count(MetricStarted, 1)
			s.d.Logger.InfoContext(ctx, "starter: queued execution started", "reservationId", id)
		case errors.As(err, &exists):
			s.d.Logger.InfoContext(ctx, "starter: the execution had started already", "reservationId", id)
		case !retryable(err):
			// A start no retry can make (an input Step Functions refuses, a missing state
			// machine, a denied call) must not hold back every queued winner behind it on the
			// shard: it is counted and logged for a person, and the stream moves on.
			s.d.Metrics.Count(MetricFailed, 1)
			s.d.Logger.ErrorContext(ctx, "starter: the queued start cannot be made; a person must start it or tell the buyer",
				"reservationId", id, "error", err.Error())
		default:
			if throttled(err) {
				s.d.Metrics.Count(MetricThrottled, 1)
			}
			if throttled(err) || openExecutionsFull(err) {
				s.markBacklog(ctx)
			}
			s.d.Logger.WarnContext(ctx, "starter: start failed; the stream retries it", "reservationId", id, "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{
				ItemIdentifier: rec.Change.SequenceNumber,
			})
			return resp, nil
		}
	}
	return resp, nil
}

// markBacklog marks the start backlog when the quota holds the starter's starts back (the
// batch is retried, and marks again while it still is): winners admitted meanwhile join the
// queue behind them instead of spending StartExecution calls the quota would refuse. A batch
// whose starts all succeed marks nothing, or the winners the backlog queued would extend it
// through the starter for as long as winners keep coming. Best effort: without the mark the
// api's own throttled calls queue them.
func (s *Starter) markBacklog(ctx context.Context) {
	if s.d.Backlog == nil {
		return
	}
	if err := s.d.Backlog.MarkStartBacklog(ctx); err != nil {
		s.d.Logger.WarnContext(ctx, "starter: the start backlog could not be marked; the api calls StartExecution for new winners until a throttled call marks it",
			"error", err.Error())
	}
}

// FilterPattern is the starter's event filter on the Admissions stream (the event source
// mapping's FilterCriteria): only an admitted buyer's queued start invokes it, not every buyer
// the gate let through. Queued is the same filter in Go, which the local stack applies.
const FilterPattern = `{"dynamodb":{"NewImage":{"` + tables.AttrStartQueued + `":{"BOOL":[true]},"` +
	tables.AttrAdmissionState + `":{"S":["` + string(reservation.Admitted) + `"]}}}}`

// Queued reads a record that asks for a start: an admission still ADMITTED whose new image
// carries the queued input. Every other record (a new admission, a rejection, a removal by TTL)
// asks for nothing.
func Queued(rec events.DynamoDBEventRecord) (id, input string, ok bool) {
	img := rec.Change.NewImage
	if q, has := img[tables.AttrStartQueued]; !has || q.DataType() != events.DataTypeBoolean || !q.Boolean() {
		return "", "", false
	}
	if st, has := img[tables.AttrAdmissionState]; !has || st.DataType() != events.DataTypeString || st.String() != string(reservation.Admitted) {
		return "", "", false
	}
	in, has := img[tables.AttrStartInput]
	rid, hasID := img[tables.AttrReservationID]
	if !has || !hasID || in.DataType() != events.DataTypeString || rid.DataType() != events.DataTypeString {
		return "", "", false
	}
	return rid.String(), in.String(), true
}

// retryable reports a start a later attempt may make: throttled, refused while the account
// runs as many executions as its quota allows (room comes back as they close), a Step
// Functions service error (5xx), or no answer at all.
func retryable(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return true
	}
	if throttled(err) || openExecutionsFull(err) {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode() >= 500
	}
	return apiErr.ErrorFault() == smithy.FaultServer
}

// openExecutionsFull reports a start refused while the account runs as many executions as
// its quota allows.
func openExecutionsFull(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ExecutionLimitExceeded"
}

func throttled(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ThrottlingException"
}
