package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// CreateSeats writes exactly SeatItem's encoding, with no window.
func TestCreateSeatsWritesSeatItem(t *testing.T) {
	f := newFixture(t)
	if err := f.store.CreateSeats(context.Background(), "show", inventory.SeatsAt(4500, "eur", "A1")); err != nil {
		t.Fatal(err)
	}
	out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.env.Names.Of(tables.SeatsTable)), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: reservation.SeatKey("show", "A1")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := inventory.SeatItem("show", inventory.NewSeat{SeatID: "A1", PriceMinor: 4500, Currency: "EUR"}, t0, inventory.SaleWindow{})
	if !reflect.DeepEqual(out.Item, want) {
		t.Errorf("CreateSeats wrote %v,\n want SeatItem's %v", out.Item, want)
	}
}

func TestSeatItemWritesOnlyTheBoundedSidesOfTheWindow(t *testing.T) {
	seat := inventory.NewSeat{SeatID: "A1", PriceMinor: 4500, Currency: "EUR"}
	from := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	for _, tc := range []struct {
		window inventory.SaleWindow
		want   map[string]string
	}{
		{inventory.SaleWindow{}, map[string]string{}},
		{inventory.SaleWindow{OnSaleFrom: from}, map[string]string{tables.AttrOnSaleFrom: "2026-05-01T08:00:00Z"}},
		{inventory.SaleWindow{OnSaleUntil: from}, map[string]string{tables.AttrOnSaleUntil: "2026-05-01T08:00:00Z"}},
	} {
		item := inventory.SeatItem("show", seat, t0, tc.window)
		got := map[string]string{}
		for _, k := range []string{tables.AttrOnSaleFrom, tables.AttrOnSaleUntil} {
			if v, ok := item[k].(*types.AttributeValueMemberS); ok {
				got[k] = v.Value
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("window %+v: item has %v, want %v", tc.window, got, tc.want)
		}
		if v := item[tables.AttrSeatState].(*types.AttributeValueMemberS).Value; v != string(reservation.Available) {
			t.Errorf("state %s", v)
		}
	}
}

// throttlingDB serves BatchGetItem from items, leaving all but the first key of every call
// unprocessed for the first unprocessedCalls calls.
type throttlingDB struct {
	items            map[string]map[string]types.AttributeValue
	unprocessedCalls int
	calls            int
	consistent       []bool
	keysPerCall      []int
}

func (d *throttlingDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	d.calls++
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for table, ka := range in.RequestItems {
		d.consistent = append(d.consistent, aws.ToBool(ka.ConsistentRead))
		d.keysPerCall = append(d.keysPerCall, len(ka.Keys))
		keys := ka.Keys
		if d.calls <= d.unprocessedCalls && len(keys) > 1 {
			left := ka
			left.Keys = keys[1:]
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{table: left}
			keys = keys[:1]
		}
		for _, k := range keys {
			if item, ok := d.items[k[tables.AttrSeatKey].(*types.AttributeValueMemberS).Value]; ok {
				out.Responses[table] = append(out.Responses[table], item)
			}
		}
	}
	return out, nil
}

func seatIDsOf(items []map[string]types.AttributeValue) []string {
	var ids []string
	for _, item := range items {
		ids = append(ids, item[tables.AttrSeatID].(*types.AttributeValueMemberS).Value)
	}
	sort.Strings(ids)
	return ids
}

func TestBatchGetSeatsBatchesAndRetriesUnprocessedKeys(t *testing.T) {
	db := &throttlingDB{items: map[string]map[string]types.AttributeValue{}, unprocessedCalls: 2}
	var ids, want []string
	for i := range 150 {
		id := fmt.Sprintf("S%03d", i)
		ids = append(ids, id)
		if i%2 == 0 { // half the seats exist
			db.items[reservation.SeatKey("show", id)] = inventory.SeatItem("show", inventory.NewSeat{SeatID: id, PriceMinor: 100, Currency: "EUR"}, t0, inventory.SaleWindow{})
			want = append(want, id)
		}
	}
	items, err := inventory.BatchGetSeats(context.Background(), db, "Seats", "show", ids,
		inventory.BatchGetOptions{ConsistentRead: true, Rounds: 4, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := seatIDsOf(items); !reflect.DeepEqual(got, want) {
		t.Errorf("read %d seats %v, want %d", len(got), got, len(want))
	}
	// 100 keys, 99 left over, 98 left over, then the rest; then the last 50 at once.
	if !reflect.DeepEqual(db.keysPerCall, []int{100, 99, 98, 50}) {
		t.Errorf("keys per call %v", db.keysPerCall)
	}
	for i, c := range db.consistent {
		if !c {
			t.Errorf("call %d not consistent", i)
		}
	}
}

func TestBatchGetSeatsGivesUpAfterItsRounds(t *testing.T) {
	db := &throttlingDB{items: map[string]map[string]types.AttributeValue{}, unprocessedCalls: 100}
	_, err := inventory.BatchGetSeats(context.Background(), db, "Seats", "show", []string{"A1", "A2", "A3"},
		inventory.BatchGetOptions{Rounds: 2, Backoff: time.Millisecond})
	if !errors.Is(err, inventory.ErrUnprocessedKeys) || db.calls != 2 {
		t.Errorf("err = %v after %d calls, want ErrUnprocessedKeys after 2", err, db.calls)
	}
	if db.consistent[0] {
		t.Error("an eventually consistent read was asked for a consistent one")
	}
}

// Against DynamoDB Local: more keys than one call takes, some seats absent.
func TestBatchGetSeatsReadsTheTable(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for i := range 130 {
		ids = append(ids, fmt.Sprintf("S%03d", i))
	}
	f.seats(t, "big", ids[:120]...)
	items, err := inventory.BatchGetSeats(context.Background(), f.env.Client, f.env.Names.Of(tables.SeatsTable), "big", ids, inventory.BatchGetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := seatIDsOf(items); !reflect.DeepEqual(got, ids[:120]) {
		t.Errorf("read %d seats, want 120", len(got))
	}
}
