package outbox

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

func TestEventIDIsDeterministicAndDistinct(t *testing.T) {
	a := EventID("r1", 2, SeatsHeld)
	if a != EventID("r1", 2, SeatsHeld) {
		t.Fatal("same inputs gave different ids")
	}
	for _, other := range []string{EventID("r1", 3, SeatsHeld), EventID("r2", 2, SeatsHeld), EventID("r1", 2, SeatsReleased)} {
		if other == a {
			t.Fatalf("distinct changes share id %s", a)
		}
	}
}

func TestItemRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 5, 0, 0, 123456789, time.FixedZone("x", 3600))
	e, err := New(SeatsHeld, "r1", 1, at, "corr-1", ReservationSnapshot{EventID: "show", SeatIDs: []string{"A1"}, Amount: 1500, Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	item := e.Item(time.Hour)
	ttl := item[tables.AttrExpiresAtTTL].(*types.AttributeValueMemberN).Value
	if want := strconv.FormatInt(at.Add(time.Hour).Unix(), 10); ttl != want {
		t.Fatalf("ttl %s, want %s", ttl, want)
	}
	back, err := FromItem(item)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, e)
	}
	if !back.CreatedAt.Equal(at) || back.CreatedAt.Location() != time.UTC {
		t.Fatalf("createdAt %v", back.CreatedAt)
	}
}

func TestFromStreamImage(t *testing.T) {
	e, err := New(PaymentVoided, "r9", 7, time.Unix(1700000000, 0), "", map[string]string{"reason": "late"})
	if err != nil {
		t.Fatal(err)
	}
	img := map[string]events.DynamoDBAttributeValue{}
	for k, v := range e.Item(0) {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			img[k] = events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			img[k] = events.NewNumberAttribute(v.Value)
		}
	}
	back, err := FromStreamImage(img)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Fatalf("got %+v, want %+v", back, e)
	}
}

func TestFromItemRejectsBrokenItems(t *testing.T) {
	good, _ := New(SeatsHeld, "r1", 1, time.Unix(0, 0), "", nil)
	cases := map[string]func(map[string]types.AttributeValue){
		"no id": func(m map[string]types.AttributeValue) { delete(m, tables.AttrOutboxEventID) },
		"bad version": func(m map[string]types.AttributeValue) {
			m[AttrAggregateVersion] = &types.AttributeValueMemberN{Value: "x"}
		},
		"bad created at": func(m map[string]types.AttributeValue) {
			m[AttrCreatedAt] = &types.AttributeValueMemberS{Value: "yesterday"}
		},
		"bad payload": func(m map[string]types.AttributeValue) { m[AttrPayload] = &types.AttributeValueMemberS{Value: "{"} },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			item := good.Item(0)
			breakIt(item)
			if _, err := FromItem(item); err == nil {
				t.Fatal("broken item accepted")
			}
		})
	}
}

// TestForReservationCarriesReasonAndNotifyFlag: the record of a change names the change by its
// reservation, version and type, and carries the reason and whether to notify the customer as
// fields of their own (the flag even when false, so a consumer never has to guess).
func TestForReservationCarriesReasonAndNotifyFlag(t *testing.T) {
	r := reservation.Reservation{ID: "r1", Version: 4, CustomerID: "c1", EventID: "show", SeatIDs: []string{"A1"},
		Inventory: reservation.Released, Payment: reservation.Canceled, UpdatedAt: time.Unix(1700000000, 0), CorrelationID: "corr"}
	for _, notify := range []bool{true, false} {
		e, err := ForReservation(PaymentVoided, r, "late_payment", notify)
		if err != nil {
			t.Fatal(err)
		}
		if e.EventID != EventID("r1", 4, PaymentVoided) || e.AggregateVersion != 4 || e.CorrelationID != "corr" {
			t.Fatalf("envelope %+v", e)
		}
		var fields map[string]any
		if err := json.Unmarshal(e.Payload, &fields); err != nil {
			t.Fatal(err)
		}
		if fields["reason"] != "late_payment" || fields["notifyCustomer"] != notify ||
			fields["inventoryState"] != "RELEASED" || fields["paymentState"] != "CANCELED" {
			t.Fatalf("notify %v: payload %s", notify, e.Payload)
		}
	}
}
