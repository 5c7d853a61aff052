package stack

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// The records inspect reads are written as inspect has always printed them, whoever gathered
// them; a section whose read failed before anything of it was read is left out, and one that
// failed part way keeps what was read.
func TestWriteRecordsPrintsWhatInspectPrints(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 0, 1, 500_000_000, time.UTC)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	r := ReservationRecords{
		ReservationID: "r_1", ReservationsTable: "p-Reservations", SeatsTable: "p-Seats",
		Reservation: map[string]types.AttributeValue{"reservationId": s("r_1"), "taskToken": s("secret"),
			"seatIds": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("S1"), s("S2")}}, "version": &types.AttributeValueMemberN{Value: "3"}},
		EventID: "e", SeatIDs: []string{"S1", "S2"},
		Seats:    []SeatItem{{Key: "e#S1", Item: map[string]types.AttributeValue{"seatKey": s("e#S1"), "state": s("HELD")}}},
		SeatsErr: errors.New("get seat e#S2: down"),
		Outbox:   []outbox.Envelope{{AggregateVersion: 1, Type: "SeatsHeld", CreatedAt: at, Payload: []byte(`{"a":1}`)}},
		Ledger: &ReservationLedger{
			Entries:   []stripesim.LedgerEntry{{PaymentIntentID: "pi_1", Status: "succeeded", Amount: 5000, Currency: "eur", Authorized: 5000, Captured: 5000, Captures: 1}},
			Movements: []stripesim.Movement{{At: at, Kind: stripesim.MovementCaptured, Amount: 5000, Currency: "eur", PaymentIntentID: "pi_1"}},
		},
	}
	want := `
reservation item (p-Reservations)
  reservationId      r_1
  seatIds            [S1,S2]
  taskToken          (set)
  version            3

seat items (p-Seats)
  e#S1: state=HELD

outbox events (1)
  v1   SeatsHeld              18:00:01.500  {"a":1}

provider ledger (1 PaymentIntents)
  pi_1 status=succeeded amount=5000 eur authorized=5000 captured=5000 voided=0 refunded=0 captures=1 refunds=0 declines=0
    18:00:01.500 captured   5000 eur pi_1
`
	var out bytes.Buffer
	WriteRecords(&out, r)
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if err := r.Err(); err == nil || err.Error() != "get seat e#S2: down" {
		t.Errorf("Err() = %v", err)
	}
	// A control: the sections that failed outright are left out, the ledger's missing one too.
	r.ReservationErr, r.OutboxErr, r.Ledger = errors.New("get reservation r_1: down"), errors.New("scan outbox: down"), nil
	out.Reset()
	WriteRecords(&out, r)
	if want := "\nseat items (p-Seats)\n  e#S1: state=HELD\n"; out.String() != want {
		t.Errorf("with failed sections got %q, want %q", out.String(), want)
	}
}
