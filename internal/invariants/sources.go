package invariants

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

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

// Executions implements Engine.
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
	return out, nil
}

// Scanner is the part of the DynamoDB API the store source needs.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Item attribute names of seats and reservations as internal/inventory writes them (its decoders
// are unexported; the names are the stored contract).
const (
	attrSeatState       = "state"
	attrInventoryState  = "inventoryState"
	attrPaymentState    = "paymentState"
	attrSeatIDs         = "seatIds"
	attrVersion         = "version"
	attrAmount          = "amount"
	attrCurrency        = "currency"
	attrPaymentIntentID = "paymentIntentId"
)

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
		at, err := timeAttr(item, tables.AttrHoldExpiresAt)
		if err != nil {
			return fmt.Errorf("seat %s: %w", strAttr(item, tables.AttrSeatKey), err)
		}
		out = append(out, Seat{
			EventID:       strAttr(item, tables.AttrEventID),
			SeatID:        strAttr(item, tables.AttrSeatID),
			State:         strAttr(item, attrSeatState),
			ReservationID: strAttr(item, tables.AttrReservationID),
			HoldExpiresAt: at,
			Version:       numAttr(item, attrVersion),
		})
		return nil
	})
	return out, err
}

// Reservations implements Store.
func (d DynamoDB) Reservations(ctx context.Context) ([]Reservation, error) {
	var out []Reservation
	err := d.scan(ctx, tables.ReservationsTable, func(item map[string]types.AttributeValue) error {
		id := strAttr(item, tables.AttrReservationID)
		at, err := timeAttr(item, tables.AttrHoldExpiresAt)
		if err != nil {
			return fmt.Errorf("reservation %s: %w", id, err)
		}
		r := Reservation{
			ID:              id,
			EventID:         strAttr(item, tables.AttrEventID),
			State:           strAttr(item, attrInventoryState),
			PaymentState:    strAttr(item, attrPaymentState),
			HoldExpiresAt:   at,
			Version:         numAttr(item, attrVersion),
			Amount:          numAttr(item, attrAmount),
			Currency:        strAttr(item, attrCurrency),
			PaymentIntentID: strAttr(item, attrPaymentIntentID),
		}
		if l, ok := item[attrSeatIDs].(*types.AttributeValueMemberL); ok {
			for _, v := range l.Value {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					r.SeatIDs = append(r.SeatIDs, s.Value)
				}
			}
		}
		_, hasRecon := item[tables.AttrReconSince]
		r.InReconciliation = r.PaymentState == NeedsReconciliation || hasRecon
		out = append(out, r)
		return nil
	})
	return out, err
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numAttr(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// timeAttr reads an instant stored as an RFC 3339 string (inventory writes fixed-width UTC with
// nanoseconds, which RFC3339Nano parses).
func timeAttr(item map[string]types.AttributeValue, name string) (time.Time, error) {
	s := strAttr(item, name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("attribute %s: %w", name, err)
	}
	return t, nil
}
