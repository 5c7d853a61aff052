package inventory_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/sale/claimrace"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// 2,000 concurrent single-seat claims on 200 seats (ten buyers per seat, 64 at a time).
func TestContentionNeverDoubleBooks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := claimrace.Run(ctx, claimrace.Config{
		DB: f.env.Client, Names: f.env.Names, Seats: f.store, Claimer: f.store,
		EventID: "flash", SeatCount: 200, Buyers: 2000, SeatsPerBuyer: 1, Concurrency: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("winners %d, losers %d, errors %d, %.0f claims/s, conflicts %d, conditional failures %d",
		res.Winners, res.Losers, res.Errors, res.ClaimsPerSecond,
		f.metrics.Total(inventory.MetricTransactionConflict), f.metrics.Total(inventory.MetricConditionalCheckFailed))
	if res.Winners != 200 || res.Losers != 1800 || res.Errors != 0 {
		for _, o := range res.Outcomes {
			if o.Err != nil && !errors.As(o.Err, new(*reservation.SeatUnavailable)) {
				t.Errorf("buyer %d: %v", o.Buyer, o.Err)
				break
			}
		}
		t.Fatalf("winners %d losers %d errors %d, want 200/1800/0", res.Winners, res.Losers, res.Errors)
	}
	if !res.Audit.Clean() || res.Audit.SeatsTaken != 200 || res.Audit.ActiveReservations != 200 {
		t.Fatalf("audit %+v", res.Audit)
	}
	// Exactly the winners exist, each with exactly one SeatsHeld event; losers left no trace.
	winners := map[string]bool{}
	for _, o := range res.Outcomes {
		if o.Won {
			winners[o.ReservationID] = true
		}
	}
	if n := f.count(t, tables.ReservationsTable); n != 200 {
		t.Fatalf("%d reservations, want 200", n)
	}
	envs := f.outbox(t)
	if len(envs) != 200 {
		t.Fatalf("%d outbox records, want 200", len(envs))
	}
	for _, e := range envs {
		if !winners[e.ReservationID] || e.Type != outbox.SeatsHeld {
			t.Fatalf("outbox record %s for a loser or of type %s", e.EventID, e.Type)
		}
	}
	for _, o := range res.Outcomes {
		if o.Won {
			continue
		}
		if _, err := f.store.Get(ctx, o.ReservationID); !errors.As(err, new(*reservation.NotFound)) {
			t.Fatalf("loser %s: reservation lookup gave %v", o.ReservationID, err)
		}
	}
}

// Overlapping multi-seat claims A+B, B+C, C+D race, round after round: whatever wins, no
// reservation ever holds only part of its seats and no seat has two owners.
func TestOverlappingMultiSeatClaimsNeverPartial(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pairs := [][2]int{{0, 1}, {1, 2}, {2, 3}} // A+B, B+C, C+D
	outcomes := map[int]int{}
	for round := 0; round < 25; round++ {
		res, err := claimrace.Run(ctx, claimrace.Config{
			DB: f.env.Client, Names: f.env.Names, Seats: f.store, Claimer: f.store,
			EventID: "overlap-" + strconv.Itoa(round), SeatCount: 4, Buyers: 9, SeatsPerBuyer: 2, Concurrency: 9,
			Pick: func(buyer int, ids []string, _ *rand.Rand) []string {
				p := pairs[buyer%3]
				return []string{ids[p[0]], ids[p[1]]}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 0 || !res.Audit.Clean() {
			t.Fatalf("round %d: errors %d, audit %+v", round, res.Errors, res.Audit)
		}
		if res.Audit.SeatsTaken != 2*res.Winners || res.Winners < 1 || res.Winners > 2 {
			t.Fatalf("round %d: %d winners but %d seats taken", round, res.Winners, res.Audit.SeatsTaken)
		}
		outcomes[res.Winners]++
	}
	t.Logf("rounds by number of winners: %v", outcomes)
}

// naiveClaimer is the read-then-write claim the product must never use: it reads each seat,
// decides it is free, then writes without a condition. It exists only to prove that the
// contention harness catches double booking.
type naiveClaimer struct {
	db    *dynamodb.Client
	names tables.Names
	now   func() time.Time
}

func (c naiveClaimer) Claim(ctx context.Context, req reservation.ClaimRequest) (reservation.Reservation, error) {
	now := c.now()
	for _, sid := range req.SeatIDs {
		out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(c.names.Of(tables.SeatsTable)), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: reservation.SeatKey(req.EventID, sid)}},
		})
		if err != nil {
			return reservation.Reservation{}, err
		}
		if st, ok := out.Item["state"].(*types.AttributeValueMemberS); !ok || st.Value != string(reservation.Available) {
			return reservation.Reservation{}, &reservation.SeatUnavailable{EventID: req.EventID, SeatIDs: []string{sid}}
		}
	}
	r, err := reservation.NewReservation(req, reservation.DefaultLimits(), now)
	if err != nil {
		return reservation.Reservation{}, err
	}
	for _, sid := range req.SeatIDs {
		_, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.names.Of(tables.SeatsTable)), Item: map[string]types.AttributeValue{
			tables.AttrSeatKey: &types.AttributeValueMemberS{Value: reservation.SeatKey(req.EventID, sid)},
			tables.AttrEventID: &types.AttributeValueMemberS{Value: req.EventID}, tables.AttrSeatID: &types.AttributeValueMemberS{Value: sid},
			"state": &types.AttributeValueMemberS{Value: string(reservation.Held)}, tables.AttrReservationID: &types.AttributeValueMemberS{Value: r.ID},
		}})
		if err != nil {
			return reservation.Reservation{}, err
		}
	}
	seats := make([]types.AttributeValue, len(r.SeatIDs))
	for i, sid := range r.SeatIDs {
		seats[i] = &types.AttributeValueMemberS{Value: sid}
	}
	_, err = c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.names.Of(tables.ReservationsTable)), Item: map[string]types.AttributeValue{
		tables.AttrReservationID: &types.AttributeValueMemberS{Value: r.ID}, tables.AttrEventID: &types.AttributeValueMemberS{Value: r.EventID},
		"inventoryState": &types.AttributeValueMemberS{Value: string(r.Inventory)}, "seatIds": &types.AttributeValueMemberL{Value: seats},
	}})
	return r, err
}

// The control: the same harness and audit, with the naive claim, must find double bookings.
// If it ever stops finding them, the contention test above proves nothing.
func TestControlNaiveClaimIsCaughtDoubleBooking(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := claimrace.Run(ctx, claimrace.Config{
		DB: f.env.Client, Names: f.env.Names, Seats: f.store,
		Claimer: naiveClaimer{db: f.env.Client, names: f.env.Names, now: f.clock.Now},
		EventID: "control", SeatCount: 200, Buyers: 2000, SeatsPerBuyer: 1, Concurrency: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("naive claim: %d winners for 200 seats, %d double bookings, %d orphan seats",
		res.Winners, res.Audit.DoubleBookings, res.Audit.OrphanSeats)
	if res.Audit.DoubleBookings == 0 || res.Winners <= 200 {
		t.Fatalf("the harness did not catch the naive claim double-booking: %d winners, audit %+v", res.Winners, res.Audit)
	}
}
