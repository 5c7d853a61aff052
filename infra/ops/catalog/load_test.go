package catalog

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

var now = time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)

func loader(env *ddbtest.Env) *Loader {
	return &Loader{DB: env.Client, Table: env.Names.Of(tables.SeatsTable), Now: func() time.Time { return now }}
}

func mustParse(t *testing.T, file string) File {
	t.Helper()
	f, err := Parse("seats.json", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func load(t *testing.T, l *Loader, f File) (Plan, Result) {
	t.Helper()
	plan, err := l.Plan(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Apply(context.Background(), f, plan)
	if err != nil {
		t.Fatal(err)
	}
	return plan, res
}

func getSeat(t *testing.T, env *ddbtest.Env, eventID, seatID string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(env.Names.Of(tables.SeatsTable)), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: reservation.SeatKey(eventID, seatID)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func shape(item map[string]types.AttributeValue) []string {
	var out []string
	for k, v := range item {
		out = append(out, fmt.Sprintf("%s:%T", k, v))
	}
	sort.Strings(out)
	return out
}

// The loader writes its seats with a sale window, which inventory.CreateSeats has no argument
// for; both encode the item with inventory.SeatItem, and this keeps the two items alike, so
// every reader of CreateSeats' seats reads the loader's.
func TestLoadedSeatsAreWhatCreateSeatsWritesPlusTheWindowTheApiReads(t *testing.T) {
	env := ddbtest.New(t)
	ctx := context.Background()
	store, err := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateSeats(ctx, "by-inventory", inventory.SeatsAt(5000, "eur", "A1")); err != nil {
		t.Fatal(err)
	}
	load(t, loader(env), mustParse(t, `{"eventId": "by-loader", "opensAt": "2026-05-01T10:00:00+02:00", "closesAt": "2026-05-02T10:00:00Z",
		"seats": [{"seatId": "A1", "priceMinor": 5000, "currency": "eur"}]}`))

	byInventory, byLoader := getSeat(t, env, "by-inventory", "A1"), getSeat(t, env, "by-loader", "A1")
	for _, k := range []string{tables.AttrSeatKey, tables.AttrEventID} {
		delete(byInventory, k)
		delete(byLoader, k)
	}
	window := map[string]types.AttributeValue{}
	for _, k := range []string{tables.AttrOnSaleFrom, tables.AttrOnSaleUntil} {
		window[k] = byLoader[k]
		delete(byLoader, k)
	}
	if !reflect.DeepEqual(shape(byInventory), shape(byLoader)) || !reflect.DeepEqual(byInventory, byLoader) {
		t.Errorf("loader item %v\n  differs from CreateSeats' %v", byLoader, byInventory)
	}

	seat, ok, err := store.GetSeat(ctx, "by-loader", "A1")
	if err != nil || !ok || seat.State != reservation.Available || seat.PriceMinor != 5000 || seat.Currency != "EUR" || seat.Version != 1 {
		t.Errorf("inventory reads the loaded seat as %+v, %v, %v", seat, ok, err)
	}
	catalog := &api.DynamoCatalog{Client: env.Client, Table: env.Names.Of(tables.SeatsTable)}
	seats, err := catalog.Seats(ctx, "by-loader", []string{"A1"})
	if err != nil {
		t.Fatal(err)
	}
	cs := seats["A1"]
	if !cs.OnSaleFrom.Equal(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)) || !cs.OnSaleUntil.Equal(time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("the api reads the window as %v..%v (stored %v)", cs.OnSaleFrom, cs.OnSaleUntil, window)
	}
}

func TestLoadingTwiceChangesNothingAndNeverTouchesAHeldOrRepricedSeat(t *testing.T) {
	env := ddbtest.New(t)
	ctx := context.Background()
	l := loader(env)
	file := `{"eventId": "ev", "closesAt": "2026-06-01T00:00:00Z", "seats": [
		{"seatId": "A1", "priceMinor": 5000, "currency": "EUR"},
		{"seatId": "A2", "priceMinor": 5000, "currency": "EUR"},
		{"seatId": "A3", "priceMinor": 5000, "currency": "EUR"}]}`
	plan, res := load(t, l, mustParse(t, file))
	if len(plan.Create) != 3 || res.Created != 3 {
		t.Fatalf("first load plan %+v result %+v", plan, res)
	}
	// A buyer holds A2 meanwhile.
	if _, err := env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.Table),
		Key:                       seatKey("ev", "A2"),
		UpdateExpression:          aws.String("SET #s = :held, #v = :v2, #r = :r"),
		ExpressionAttributeNames:  map[string]string{"#s": tables.AttrSeatState, "#v": tables.AttrVersion, "#r": tables.AttrReservationID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":held": sv("HELD"), ":v2": nv(2), ":r": sv("r_buyer")},
	}); err != nil {
		t.Fatal(err)
	}
	before := map[string]map[string]types.AttributeValue{}
	for _, id := range []string{"A1", "A2", "A3"} {
		before[id] = getSeat(t, env, "ev", id)
	}

	plan, res = load(t, l, mustParse(t, file))
	if len(plan.Create) != 0 || res != (Result{}) || len(plan.Unchanged) != 3 || len(plan.Kept) != 0 {
		t.Errorf("second load plan %+v result %+v, want nothing to do", plan, res)
	}

	// The file reprices A1 and moves the window; the stored seats stay as they are.
	repriced := strings.Replace(strings.Replace(file, `"A1", "priceMinor": 5000`, `"A1", "priceMinor": 6000`, 1), "2026-06-01", "2026-07-01", 1)
	plan, res = load(t, l, mustParse(t, repriced))
	if len(plan.Create) != 0 || res != (Result{}) || len(plan.Kept) != 3 {
		t.Fatalf("repriced load plan %+v result %+v, want every seat kept", plan, res)
	}
	kept := map[string]Kept{}
	for _, k := range plan.Kept {
		kept[k.SeatID] = k
	}
	if k := kept["A1"]; len(k.Differences) != 2 || !strings.Contains(k.Differences[0], "priceMinor 5000 stored, 6000 in the file") {
		t.Errorf("A1 kept as %+v", k)
	}
	if k := kept["A2"]; k.State != "HELD" || !strings.Contains(strings.Join(k.Differences, ";"), "closesAt 2026-06-01T00:00:00Z stored, 2026-07-01T00:00:00Z in the file") {
		t.Errorf("A2 kept as %+v", k)
	}
	for id, item := range before {
		if after := getSeat(t, env, "ev", id); !reflect.DeepEqual(after, item) {
			t.Errorf("seat %s changed:\n before %v\n after  %v", id, item, after)
		}
	}
}

func TestApplyLeavesASeatAnotherWriterCreatedAfterThePlan(t *testing.T) {
	env := ddbtest.New(t)
	ctx := context.Background()
	l := loader(env)
	f := mustParse(t, `{"eventId": "ev", "seats": [
		{"seatId": "A1", "priceMinor": 5000, "currency": "EUR"},
		{"seatId": "A2", "priceMinor": 5000, "currency": "EUR"}]}`)
	plan, err := l.Plan(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	store, _ := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: time.Now})
	if err := store.CreateSeats(ctx, "ev", inventory.SeatsAt(7000, "EUR", "A2")); err != nil {
		t.Fatal(err)
	}
	res, err := l.Apply(ctx, f, plan)
	if err != nil {
		t.Fatal(err)
	}
	if res != (Result{Created: 1, Raced: 1}) {
		t.Errorf("result %+v, want one created and one raced", res)
	}
	if got := num(getSeat(t, env, "ev", "A2"), tables.AttrPriceMinor); got != "7000" {
		t.Errorf("A2 price %s, want the other writer's 7000", got)
	}
}

func TestPlanReadsMoreSeatsThanOneBatch(t *testing.T) {
	env := ddbtest.New(t)
	var b strings.Builder
	b.WriteString(`{"eventId": "big", "seats": [`)
	for i := range 250 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"seatId": "S%03d", "priceMinor": %d, "currency": "EUR"}`, i, 1000+i)
	}
	b.WriteString("]}")
	f := mustParse(t, b.String())
	l := loader(env)
	if _, res := load(t, l, f); res.Created != 250 {
		t.Fatalf("created %d", res.Created)
	}
	plan, err := l.Plan(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Create) != 0 || len(plan.Unchanged) != 250 {
		t.Errorf("plan after load: %d to create, %d unchanged", len(plan.Create), len(plan.Unchanged))
	}
}
