package api

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// hotBacklogReader answers BatchGetItem as DynamoDB does when the one start backlog item is
// past its partition's read throughput (every POST reads it, strongly consistently): every
// other key is read, and the backlog key comes back in UnprocessedKeys, round after round.
type hotBacklogReader struct {
	seatsTable, admissionsTable string
	mu                          sync.Mutex
	calls                       int
}

func (r *hotBacklogReader) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for table, ka := range in.RequestItems {
		for _, key := range ka.Keys {
			if table == r.admissionsTable {
				if k, _ := key[tables.AttrReservationID].(*types.AttributeValueMemberS); k != nil && k.Value == inventory.StartBacklogKey {
					if out.UnprocessedKeys == nil {
						out.UnprocessedKeys = map[string]types.KeysAndAttributes{}
					}
					u := out.UnprocessedKeys[table]
					u.Keys, u.ConsistentRead = append(u.Keys, key), ka.ConsistentRead
					out.UnprocessedKeys[table] = u
				}
				continue // no admission yet: a first POST
			}
			sk := key[tables.AttrSeatKey].(*types.AttributeValueMemberS).Value
			out.Responses[table] = append(out.Responses[table], map[string]types.AttributeValue{
				tables.AttrSeatKey:   &types.AttributeValueMemberS{Value: sk},
				tables.AttrEventID:   &types.AttributeValueMemberS{Value: "ev1"},
				tables.AttrSeatID:    &types.AttributeValueMemberS{Value: sk[len("ev1#"):]},
				tables.AttrSeatState: &types.AttributeValueMemberS{Value: "AVAILABLE"},
			})
		}
	}
	return out, nil
}

func (r *hotBacklogReader) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}

// The start backlog is a hint: a POST whose admission and seats were read must not fail
// because the one hot backlog item stayed unprocessed. Every POST reads that one item
// strongly consistently, so past one partition's read throughput (3,000 strongly consistent
// reads a second, under API Gateway's 10,000 rps default) DynamoDB leaves it unprocessed; the
// read must then go on as if no backlog were marked, not answer the buyer 500.
func TestAHotStartBacklogItemDoesNotFailThePOSTsFirstRead(t *testing.T) {
	r := &hotBacklogReader{seatsTable: "Seats", admissionsTable: "Admissions"}
	c := &DynamoCatalog{Client: r, Table: "Seats", AdmissionsTable: "Admissions"}
	first, err := c.AdmissionAndSeats(context.Background(), "r_abc", "ev1", []string{"A1", "A2"})
	if err != nil {
		t.Fatalf("first read with the backlog item unprocessed: %v (the POST answers 500), after %d BatchGetItem calls", err, r.calls)
	}
	if first.Found || len(first.Seats) != 2 || !first.StartBacklogUntil.IsZero() {
		t.Fatalf("first read: %+v, want no admission, both seats, no backlog", first)
	}
	if r.calls != 1 {
		t.Fatalf("%d BatchGetItem calls, want 1: retrying the hot key only adds to its load and to the POST's latency", r.calls)
	}
}
