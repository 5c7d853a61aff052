package invariants

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/inventory"
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
