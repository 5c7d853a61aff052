// Package claimrace is the stage demo as a library: create an event with N seats, race M
// concurrent buyers through Claim, then audit the tables with full scans for double bookings,
// partial holds and records without a winner. The contention tests run their claims through the
// same harness, so the audit that passes the product is the one that catches a naive claim.
package claimrace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Claimer is what races: *inventory.Store in the product, anything else in tests.
type Claimer interface {
	Claim(ctx context.Context, req reservation.ClaimRequest) (reservation.Reservation, error)
}

// SeatCreator creates an event's priced seats (*inventory.Store).
type SeatCreator interface {
	CreateSeats(ctx context.Context, eventID string, seats []inventory.NewSeat) error
}

// Config describes one race.
type Config struct {
	DB      dynamodb.ScanAPIClient
	Names   tables.Names
	Seats   SeatCreator
	Claimer Claimer

	EventID       string // default: race-<unix nanos>
	SeatCount     int    // N, default 200
	Buyers        int    // M, default 2000
	SeatsPerBuyer int    // k, default 1
	Concurrency   int    // goroutines issuing claims, default 64
	HoldDuration  time.Duration
	// Amount is every seat's price in minor units of Currency; a buyer's claim is for the sum of
	// its seats' prices, as the API would compute it.
	Amount   int64
	Currency string
	Seed     uint64
	// Pick chooses buyer b's seats; default: k adjacent seats at a random position, or with k=1
	// seat b*N/M, so that each seat's M/N buyers are dispatched one after another and race.
	Pick func(buyer int, seatIDs []string, rng *rand.Rand) []string
}

// Outcome is one buyer's result.
type Outcome struct {
	Buyer         int
	ReservationID string
	SeatIDs       []string
	Won           bool
	Err           error
}

// Result is what a race did and what the audit found.
type Result struct {
	EventID         string
	Seats           int
	Buyers          int
	SeatsPerBuyer   int
	Concurrency     int
	Winners         int
	Losers          int // definitive SeatUnavailable
	Errors          int // anything else
	Elapsed         time.Duration
	ClaimsPerSecond float64
	Outcomes        []Outcome
	Audit           Audit
}

// Audit is what full scans of Seats, Reservations and Outbox found for one event.
type Audit struct {
	SeatsScanned        int
	SeatsTaken          int
	ActiveReservations  int
	OutboxRecords       int
	DoubleBookings      int      // seats listed by more than one active reservation
	PartialHolds        int      // active reservations that do not own every seat they list
	OrphanSeats         int      // taken seats whose owner does not exist or does not list them
	EventsWithoutChange int      // outbox records whose reservation does not exist
	Problems            []string // the first few findings, for people
}

// Clean reports whether the audit found nothing wrong.
func (a Audit) Clean() bool {
	return a.DoubleBookings == 0 && a.PartialHolds == 0 && a.OrphanSeats == 0 && a.EventsWithoutChange == 0
}

// SeatIDs names an event's seats S0001, S0002, ...
func SeatIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%04d", i+1)
	}
	return ids
}

func (c *Config) defaults() error {
	if c.DB == nil || c.Seats == nil || c.Claimer == nil {
		return errors.New("claimrace: DB, Seats and Claimer are required")
	}
	if c.EventID == "" {
		c.EventID = fmt.Sprintf("race-%d", time.Now().UnixNano())
	}
	if c.SeatCount <= 0 {
		c.SeatCount = 200
	}
	if c.Buyers <= 0 {
		c.Buyers = 2000
	}
	if c.SeatsPerBuyer <= 0 {
		c.SeatsPerBuyer = 1
	}
	if c.SeatsPerBuyer > c.SeatCount {
		return fmt.Errorf("claimrace: %d seats per buyer but only %d seats", c.SeatsPerBuyer, c.SeatCount)
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.HoldDuration <= 0 {
		c.HoldDuration = 10 * time.Minute
	}
	if c.Amount <= 0 {
		c.Amount = 5000
	}
	if c.Currency == "" {
		c.Currency = "EUR"
	}
	if c.Pick == nil {
		k, buyers := c.SeatsPerBuyer, c.Buyers
		c.Pick = func(buyer int, ids []string, rng *rand.Rand) []string {
			if k == 1 {
				// Buyers of one seat are consecutive, so they are in flight at the same time.
				return []string{ids[buyer*len(ids)/buyers]}
			}
			start := rng.IntN(len(ids) - k + 1)
			return append([]string(nil), ids[start:start+k]...)
		}
	}
	return nil
}

// Run creates the seats, races the buyers and audits the result.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	ids := SeatIDs(cfg.SeatCount)
	if err := cfg.Seats.CreateSeats(ctx, cfg.EventID, inventory.SeatsAt(cfg.Amount, cfg.Currency, ids...)); err != nil {
		return Result{}, fmt.Errorf("claimrace: create seats: %w", err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5ea75a9a))
	reqs := make([]reservation.ClaimRequest, cfg.Buyers)
	for b := range reqs {
		seats := cfg.Pick(b, ids, rng)
		reqs[b] = reservation.ClaimRequest{
			ReservationID:  fmt.Sprintf("%s-buyer-%d", cfg.EventID, b),
			CustomerID:     fmt.Sprintf("buyer-%d", b),
			EventID:        cfg.EventID,
			SeatIDs:        seats,
			Amount:         cfg.Amount * int64(len(seats)),
			Currency:       cfg.Currency,
			HoldDuration:   cfg.HoldDuration,
			IdempotencyKey: fmt.Sprintf("race-%d", b),
			CorrelationID:  fmt.Sprintf("%s-%d", cfg.EventID, b),
		}
	}
	res := Result{EventID: cfg.EventID, Seats: cfg.SeatCount, Buyers: cfg.Buyers, SeatsPerBuyer: cfg.SeatsPerBuyer,
		Concurrency: cfg.Concurrency, Outcomes: make([]Outcome, cfg.Buyers)}
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				_, err := cfg.Claimer.Claim(ctx, reqs[b])
				res.Outcomes[b] = Outcome{Buyer: b, ReservationID: reqs[b].ReservationID, SeatIDs: reqs[b].SeatIDs, Won: err == nil, Err: err}
			}
		}()
	}
	for b := range reqs {
		next <- b
	}
	close(next)
	wg.Wait()
	res.Elapsed = time.Since(start)
	if s := res.Elapsed.Seconds(); s > 0 {
		res.ClaimsPerSecond = float64(cfg.Buyers) / s
	}
	for _, o := range res.Outcomes {
		var su *reservation.SeatUnavailable
		switch {
		case o.Won:
			res.Winners++
		case errors.As(o.Err, &su):
			res.Losers++
		default:
			res.Errors++
		}
	}
	audit, err := AuditEvent(ctx, cfg.DB, cfg.Names, cfg.EventID)
	if err != nil {
		return res, err
	}
	res.Audit = audit
	return res, nil
}

type stored struct {
	id    string
	state string
	seats []string
}

// AuditEvent scans Seats, Reservations and Outbox in full and checks one event's bookings.
func AuditEvent(ctx context.Context, db dynamodb.ScanAPIClient, names tables.Names, eventID string) (Audit, error) {
	var a Audit
	problem := func(format string, args ...any) {
		if len(a.Problems) < 20 {
			a.Problems = append(a.Problems, fmt.Sprintf(format, args...))
		}
	}
	owners := map[string]string{} // seatId -> reservationId for taken seats
	err := scan(ctx, db, names.Of(tables.SeatsTable), eventID, func(item map[string]types.AttributeValue) {
		a.SeatsScanned++
		state, owner := str(item, tables.AttrSeatState), str(item, tables.AttrReservationID)
		if state != string(reservation.Available) && owner != "" {
			a.SeatsTaken++
			owners[str(item, tables.AttrSeatID)] = owner
		}
	})
	if err != nil {
		return a, err
	}
	all := map[string]stored{}
	err = scan(ctx, db, names.Of(tables.ReservationsTable), eventID, func(item map[string]types.AttributeValue) {
		r := stored{id: str(item, tables.AttrReservationID), state: str(item, tables.AttrInventoryState)}
		if l, ok := item["seatIds"].(*types.AttributeValueMemberL); ok {
			for _, v := range l.Value {
				if sv, ok := v.(*types.AttributeValueMemberS); ok {
					r.seats = append(r.seats, sv.Value)
				}
			}
		}
		all[r.id] = r
	})
	if err != nil {
		return a, err
	}
	claimants := map[string][]string{} // seatId -> active reservations listing it
	for _, r := range all {
		switch reservation.InventoryState(r.state) {
		case reservation.Held, reservation.PaymentPending, reservation.Confirmed:
		default:
			continue
		}
		a.ActiveReservations++
		partial := false
		for _, sid := range r.seats {
			claimants[sid] = append(claimants[sid], r.id)
			if owners[sid] != r.id {
				partial = true
			}
		}
		if partial {
			a.PartialHolds++
			problem("reservation %s (%s) does not own all of its seats %v", r.id, r.state, r.seats)
		}
	}
	seatIDs := make([]string, 0, len(claimants))
	for sid := range claimants {
		seatIDs = append(seatIDs, sid)
	}
	sort.Strings(seatIDs)
	for _, sid := range seatIDs {
		if rs := claimants[sid]; len(rs) > 1 {
			a.DoubleBookings++
			problem("seat %s is booked by %d reservations: %v", sid, len(rs), rs)
		}
	}
	for sid, owner := range owners {
		r, ok := all[owner]
		if !ok || !contains(r.seats, sid) {
			a.OrphanSeats++
			problem("seat %s is held by %s, which does not exist or does not list it", sid, owner)
		}
	}
	err = scan(ctx, db, names.Of(tables.OutboxTable), "", func(item map[string]types.AttributeValue) {
		env, err := outbox.FromItem(item)
		if err != nil {
			return
		}
		if _, ok := all[env.ReservationID]; ok {
			a.OutboxRecords++
			return
		}
		// Only this event's records count: they carry the event id in their payload snapshot.
		if env.Type == outbox.SeatsHeld && len(env.Payload) > 0 && payloadEvent(env.Payload) == eventID {
			a.EventsWithoutChange++
			problem("outbox record %s has no reservation", env.EventID)
		}
	})
	return a, err
}

func scan(ctx context.Context, db dynamodb.ScanAPIClient, table, eventID string, each func(map[string]types.AttributeValue)) error {
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	if eventID != "" {
		in.FilterExpression = aws.String("#e = :e")
		in.ExpressionAttributeNames = map[string]string{"#e": tables.AttrEventID}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: eventID}}
	}
	p := dynamodb.NewScanPaginator(db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("claimrace: scan %s: %w", table, err)
		}
		for _, item := range page.Items {
			each(item)
		}
	}
	return nil
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Print writes the race's figures for people.
func (r Result) Print(w io.Writer) {
	fmt.Fprintf(w, "event            %s\n", r.EventID)
	fmt.Fprintf(w, "seats            %d\n", r.Seats)
	fmt.Fprintf(w, "buyers           %d (%d seats each, %d concurrent)\n", r.Buyers, r.SeatsPerBuyer, r.Concurrency)
	fmt.Fprintf(w, "winners          %d\n", r.Winners)
	fmt.Fprintf(w, "losers           %d (seat unavailable)\n", r.Losers)
	if r.Errors > 0 {
		fmt.Fprintf(w, "errors           %d\n", r.Errors)
	}
	fmt.Fprintf(w, "seats taken      %d of %d\n", r.Audit.SeatsTaken, r.Audit.SeatsScanned)
	fmt.Fprintf(w, "double bookings  %d (full scan)\n", r.Audit.DoubleBookings)
	fmt.Fprintf(w, "partial holds    %d\n", r.Audit.PartialHolds)
	fmt.Fprintf(w, "orphan seats     %d\n", r.Audit.OrphanSeats)
	fmt.Fprintf(w, "claims/second    %.0f (%d claims in %s)\n", r.ClaimsPerSecond, r.Buyers, r.Elapsed.Round(time.Millisecond))
	for _, p := range r.Audit.Problems {
		fmt.Fprintf(w, "  ! %s\n", p)
	}
}

func payloadEvent(raw []byte) string {
	var snap outbox.ReservationSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return ""
	}
	return snap.EventID
}
