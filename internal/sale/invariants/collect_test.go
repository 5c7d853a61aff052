package invariants

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type fakeStore struct {
	seats []Seat
	res   []Reservation
	err   error
}

func (f fakeStore) Seats(context.Context) ([]Seat, error)               { return f.seats, f.err }
func (f fakeStore) Reservations(context.Context) ([]Reservation, error) { return f.res, nil }

type fakeLedger []Payment

func (f fakeLedger) Payments(context.Context) ([]Payment, error) { return f, nil }

type fakeEngine []Execution

func (f fakeEngine) Executions(context.Context) ([]Execution, error) { return f, nil }

type fakeBus []Publication

func (f fakeBus) Published() []Publication { return f }

func TestRunCollectsEverySourceAndChecks(t *testing.T) {
	h := healthy()
	src := Sources{
		Store:  fakeStore{seats: h.Seats, res: h.Reservations},
		Ledger: fakeLedger(h.Payments),
		Engine: fakeEngine(h.Executions),
		Bus:    fakeBus(h.Published),
		Now:    func() time.Time { return now },
		Grace:  h.Grace,
	}
	v, err := Run(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || v.Seats != len(h.Seats) || v.Payments != len(h.Payments) || v.Published != len(h.Published) {
		t.Fatalf("verdict %s", v)
	}
	// The clock is read after the items: a hold that lapses meanwhile is judged as lapsed.
	src.Now = func() time.Time { return now.Add(time.Hour) }
	src.Store = fakeStore{seats: append(h.Seats, Seat{EventID: "e1", SeatID: "A9", State: Held, ReservationID: "r9", HoldExpiresAt: now}),
		res: append(h.Reservations, Reservation{ID: "r9", EventID: "e1", SeatIDs: []string{"A9"}, State: Held, HoldExpiresAt: now})}
	v, err = Run(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Broken(RuleNoStaleHold) {
		t.Fatalf("stale hold not found: %s", v)
	}
}

func TestCollectReportsSourceErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := Collect(context.Background(), Sources{Store: fakeStore{err: boom}, Ledger: fakeLedger{}, Engine: fakeEngine{}, Now: time.Now})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if _, err := Collect(context.Background(), Sources{}); err == nil {
		t.Fatal("missing sources accepted")
	}
}

type fakeScanner []map[string]types.AttributeValue

func (f fakeScanner) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{Items: f}, nil
}

// The snapshot must carry the customer's cancel from the reservation item's customerCanceled
// BOOL, or no-charge-for-acknowledged-cancel would judge nothing against the real stack.
func TestDynamoDBReservationsCarryTheCustomerCancel(t *testing.T) {
	item := func(id string, extra map[string]types.AttributeValue) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{
			"reservationId":  &types.AttributeValueMemberS{Value: id},
			"eventId":        &types.AttributeValueMemberS{Value: "e1"},
			"inventoryState": &types.AttributeValueMemberS{Value: Released},
			"paymentState":   &types.AttributeValueMemberS{Value: "CANCELED"},
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	store := DynamoDB{Client: fakeScanner{
		item("canceled", map[string]types.AttributeValue{"customerCanceled": &types.AttributeValueMemberBOOL{Value: true}}),
		item("cleared", map[string]types.AttributeValue{"customerCanceled": &types.AttributeValueMemberBOOL{Value: false}}),
		item("absent", nil),
	}}
	res, err := store.Reservations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"canceled": true, "cleared": false, "absent": false}
	if len(res) != len(want) {
		t.Fatalf("%d reservations, want %d", len(res), len(want))
	}
	for _, r := range res {
		if r.CustomerCanceled != want[r.ID] {
			t.Errorf("reservation %s CustomerCanceled=%v, want %v", r.ID, r.CustomerCanceled, want[r.ID])
		}
	}
}
