package inventory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
)

// scriptedDB answers TransactWriteItems from a script, so that conflict and throttling paths
// can be driven deterministically; the other calls are not expected on these paths.
type scriptedDB struct {
	mu     sync.Mutex
	script []error // nil entry: success
	calls  int
}

func (d *scriptedDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.calls
	d.calls++
	if i >= len(d.script) {
		i = len(d.script) - 1
	}
	if d.script[i] == nil {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	return nil, d.script[i]
}

func (d *scriptedDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errors.New("unexpected GetItem")
}

func (d *scriptedDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errors.New("unexpected PutItem")
}

func (d *scriptedDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errors.New("unexpected UpdateItem")
}

func (d *scriptedDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("unexpected DeleteItem")
}

func (d *scriptedDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, errors.New("unexpected Query")
}

// cancelled builds the error a single-seat claim gets back: seat, reservation, outbox reasons.
func cancelled(codes ...string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
}

func TestClaimRetriesTransientCancellations(t *testing.T) {
	conflict := cancelled("TransactionConflict", "None", "None")
	throttled := cancelled("ThrottlingError", "None", "None")
	apiThrottle := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "slow down"}
	cases := []struct {
		name         string
		script       []error
		wantAttempts int
		wantErr      error
		conflicts    int64
		throttles    int64
	}{
		{"conflicts then success", []error{conflict, conflict, nil}, 3, nil, 2, 0},
		{"throttled then success", []error{throttled, nil}, 2, nil, 0, 1},
		{"conflicts forever", []error{conflict}, 0, inventory.ErrTooManyConflicts, 4, 0},
		{"throttling the SDK gave up on", []error{apiThrottle}, 0, apiThrottle, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := &scriptedDB{script: c.script}
			m := metrics.NewMemory()
			st, err := inventory.New(inventory.Config{Client: db, Now: func() time.Time { return t0 }, Metrics: m, MaxAttempts: 4})
			if err != nil {
				t.Fatal(err)
			}
			res, err := st.ClaimDetailed(context.Background(), request("r1", "show", "A1"))
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("want %v, got %v", c.wantErr, err)
				}
			} else if err != nil || res.Attempts != c.wantAttempts {
				t.Fatalf("attempts %d err %v, want %d attempts", res.Attempts, err, c.wantAttempts)
			}
			if got := m.Total(inventory.MetricTransactionConflict); got != c.conflicts {
				t.Errorf("conflicts counted %d, want %d", got, c.conflicts)
			}
			if got := m.Total(inventory.MetricThrottle); got != c.throttles {
				t.Errorf("throttles counted %d, want %d", got, c.throttles)
			}
		})
	}
}
