package api

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

// TestDynamoCatalog reads seats the inventory wrote, on DynamoDB Local: the catalog must agree
// with internal/inventory on the seat item's shape.
func TestDynamoCatalog(t *testing.T) {
	env := ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox(), tables.Admissions())
	ctx := context.Background()
	now := time.Now().UTC()
	inv, err := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.CreateSeats(ctx, "ev1", []inventory.NewSeat{
		{SeatID: "A1", PriceMinor: 2500, Currency: "eur"}, {SeatID: "A2", PriceMinor: 2500, Currency: "eur"},
		{SeatID: "A3", PriceMinor: 4000, Currency: "eur"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.Claim(ctx, reservation.ClaimRequest{ReservationID: "r_1", CustomerID: "alice", EventID: "ev1",
		SeatIDs: []string{"A2"}, Amount: 2500, Currency: "eur", HoldDuration: 10 * time.Minute, IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	seatsTable := env.Names.Of(tables.SeatsTable)
	// A catalog loader's optional sale window on A3.
	_, err = env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(seatsTable),
		Key:              map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: "ev1#A3"}},
		UpdateExpression: aws.String("SET onSaleFrom = :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":f": &types.AttributeValueMemberS{Value: "2026-12-01T10:00:00Z"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	cat := &DynamoCatalog{Client: env.Client, Table: seatsTable}
	got, err := cat.Seats(ctx, "ev1", []string{"A1", "A2", "A3", "Z9"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d seats: %+v", len(got), got)
	}
	if s := got["A1"].Seat; s.State != reservation.Available || !s.ClaimableAt(now) {
		t.Fatalf("A1 %+v", s)
	}
	if s := got["A2"].Seat; s.State != reservation.Held || s.ReservationID != "r_1" || s.ClaimableAt(now) || s.PriceMinor != 2500 || s.Currency != "EUR" ||
		!s.HoldExpiresAt.Equal(now.Add(10*time.Minute).Truncate(time.Nanosecond)) {
		t.Fatalf("A2 %+v", s)
	}
	if a3 := got["A3"]; a3.Seat.PriceMinor != 4000 || a3.Seat.Currency != "EUR" || a3.OnSaleFrom.IsZero() {
		t.Fatalf("A3 %+v", a3)
	}
	for _, tc := range []struct {
		event string
		want  bool
	}{{"ev1", true}, {"ev2", false}} {
		if ok, err := cat.EventExists(ctx, tc.event); err != nil || ok != tc.want {
			t.Fatalf("EventExists(%s) = %v %v", tc.event, ok, err)
		}
	}
}
