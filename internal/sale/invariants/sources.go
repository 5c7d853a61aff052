package invariants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// ExecutionLister is the part of the Step Functions API the engine source needs.
type ExecutionLister interface {
	ListExecutions(ctx context.Context, in *sfn.ListExecutionsInput, opts ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error)
}

// StepFunctions lists every execution of one state machine through the Step Functions API (the
// local engine or AWS). Execution names are reservation ids.
type StepFunctions struct {
	Client          ExecutionLister
	StateMachineARN string
}

// ExecutionDescriber is the part of the Step Functions API that tells how an execution ended.
type ExecutionDescriber interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// Executions implements Engine. When the client can also describe executions, each finished
// one is described and classified (saga.EndingOf), so that needs-person-in-backlog has
// something to judge; a lister alone leaves NeedsPerson false.
func (s StepFunctions) Executions(ctx context.Context) ([]Execution, error) {
	var out []Execution
	p := sfn.NewListExecutionsPaginator(s.Client, &sfn.ListExecutionsInput{
		StateMachineArn: aws.String(s.StateMachineARN),
		MaxResults:      1000,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list executions of %s: %w", s.StateMachineARN, err)
		}
		for _, e := range page.Executions {
			out = append(out, Execution{Name: aws.ToString(e.Name), ARN: aws.ToString(e.ExecutionArn), Status: string(e.Status)})
		}
	}
	describer, ok := s.Client.(ExecutionDescriber)
	if !ok {
		return out, nil
	}
	for i, e := range out {
		if e.Status == ExecRunning {
			continue
		}
		d, err := describer.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(e.ARN)})
		if err != nil {
			return nil, fmt.Errorf("describe execution %s: %w", e.ARN, err)
		}
		ending := saga.EndingOf(string(d.Status), aws.ToString(d.Output), aws.ToString(d.Error))
		out[i].Status, out[i].NeedsPerson, out[i].Outcome = string(d.Status), ending.NeedsPerson, ending.Outcome
	}
	return out, nil
}

// Scanner is the part of the DynamoDB API the store source needs.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// DynamoDB reads seats and reservations with strongly consistent full scans.
type DynamoDB struct {
	Client Scanner
	Names  tables.Names
}

func (d DynamoDB) scan(ctx context.Context, logical string, each func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewScanPaginator(d.Client, &dynamodb.ScanInput{
		TableName:      aws.String(d.Names.Of(logical)),
		ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("scan %s: %w", d.Names.Of(logical), err)
		}
		for _, item := range page.Items {
			if err := each(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// Seats implements Store.
func (d DynamoDB) Seats(ctx context.Context) ([]Seat, error) {
	var out []Seat
	err := d.scan(ctx, tables.SeatsTable, func(item map[string]types.AttributeValue) error {
		st, err := inventory.DecodeSeat(item)
		if err != nil {
			return err
		}
		out = append(out, Seat{
			EventID:       st.EventID,
			SeatID:        st.SeatID,
			State:         string(st.State),
			ReservationID: st.ReservationID,
			HoldExpiresAt: st.HoldExpiresAt,
			Version:       st.Version,
			PriceMinor:    st.PriceMinor,
			Currency:      st.Currency,
		})
		return nil
	})
	return out, err
}

// Reservations implements Store.
func (d DynamoDB) Reservations(ctx context.Context) ([]Reservation, error) {
	var out []Reservation
	err := d.scan(ctx, tables.ReservationsTable, func(item map[string]types.AttributeValue) error {
		res, err := inventory.DecodeReservation(item)
		if err != nil {
			return err
		}
		r := Reservation{
			ID:              res.ID,
			EventID:         res.EventID,
			SeatIDs:         res.SeatIDs,
			State:           string(res.Inventory),
			PaymentState:    string(res.Payment),
			HoldExpiresAt:   res.HoldExpiresAt,
			Version:         res.Version,
			Amount:          res.Amount,
			Currency:        res.Currency,
			PaymentIntentID: res.PaymentIntentID,
			// The inventory decoder reads the customerCanceled BOOL; an absent attribute is false.
			CustomerCanceled: res.CustomerCanceled,
			CustomerID:       res.CustomerID,
		}
		_, hasRecon := item[tables.AttrReconSince]
		r.InReconciliation = r.PaymentState == NeedsReconciliation || hasRecon
		out = append(out, r)
		return nil
	})
	return out, err
}

// ConsumerRecords reads the example consumer's ProcessedEvents records (keys
// consumer.DedupeKey(eventId)), leaving out its per-reservation "latest version" items and
// the webhook's records, which share the table.
func (d DynamoDB) ConsumerRecords(ctx context.Context) ([]ConsumerRecord, error) {
	prefix := consumer.DedupeKey("")
	var out []ConsumerRecord
	err := d.scan(ctx, tables.ProcessedEventsTable, func(item map[string]types.AttributeValue) error {
		key, _ := item[tables.AttrDedupeKey].(*types.AttributeValueMemberS)
		if key == nil || !strings.HasPrefix(key.Value, prefix) {
			return nil
		}
		state, _ := item[consumer.AttrState].(*types.AttributeValueMemberS)
		rec := ConsumerRecord{EventID: strings.TrimPrefix(key.Value, prefix)}
		if state != nil {
			rec.State = state.Value
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// NotificationLog is what a consumer's sender sent; *consumer.MemorySender is one.
type NotificationLog interface {
	Sent() []consumer.Notification
}

// ExampleConsumer is the example consumer's side of the events: its records in DynamoDB and
// what its sender sent.
type ExampleConsumer struct {
	Store  DynamoDB
	Sender NotificationLog
}

// Records implements Consumer.
func (c ExampleConsumer) Records(ctx context.Context) ([]ConsumerRecord, error) {
	return c.Store.ConsumerRecords(ctx)
}

// Sent implements Consumer.
func (c ExampleConsumer) Sent() []string {
	notes := c.Sender.Sent()
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.EventID
	}
	return out
}

// Handles implements Consumer by asking the consumer itself: it ignores an event type it does
// not act on without touching its table, and tries to claim one it does (here against a table
// that refuses every write, so nothing is recorded or sent). Asking keeps the checker from
// holding a second copy of the consumer's list of types.
func (ExampleConsumer) Handles(eventType string) bool {
	n, err := consumer.New(consumer.Deps{DB: refusingDB{}, Table: "probe", Sender: &consumer.MemorySender{}})
	if err != nil {
		return true
	}
	detail, _ := json.Marshal(outbox.Envelope{EventID: "probe", Type: outbox.Type(eventType), ReservationID: "probe"})
	outcome, _ := n.Process(context.Background(), events.EventBridgeEvent{Source: outbox.Source, Detail: detail})
	return outcome != consumer.OutcomeIgnored
}

// refusingDB fails every call, so that a probe of the consumer changes nothing.
type refusingDB struct{}

var errProbe = errors.New("invariants: probing which events the consumer handles")

func (refusingDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errProbe
}

func (refusingDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errProbe
}

func (refusingDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errProbe
}
