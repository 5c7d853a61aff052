package stack

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
)

// SeatIDs names n seats S001…Sn (zero-padded to n's width, so they sort in order).
func SeatIDs(n int) []string {
	width := len(strconv.Itoa(n))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%0*d", width, i+1)
	}
	return ids
}

// DefaultSeatPrice is a seat's price when Pricing says nothing: 50.00 EUR.
const (
	DefaultSeatPrice    int64 = 5000
	DefaultSeatCurrency       = "EUR"
)

// Pricing prices the seats SeedEvent creates, as an operator's catalog import would: by row,
// cheaper at the back. The zero value is a flat DefaultSeatPrice in DefaultSeatCurrency.
type Pricing struct {
	// Currency is ISO 4217, any case (default DefaultSeatCurrency); seats store it upper case.
	Currency string
	// Tiers are prices in minor units, front row first: seat i (0-based, in SeatIDs order) is in
	// row i/RowSize and costs Tiers[row], or the last tier past the last one. Empty means
	// DefaultSeatPrice for every seat.
	Tiers []int64
	// RowSize is how many seats make a row (0: one row, i.e. every seat costs Tiers[0]).
	RowSize int
}

// Flat prices every seat at priceMinor of currency.
func Flat(priceMinor int64, currency string) Pricing {
	return Pricing{Currency: currency, Tiers: []int64{priceMinor}}
}

// PriceOf is the price of seat i (0-based, in SeatIDs order) in minor units.
func (p Pricing) PriceOf(i int) int64 {
	if len(p.Tiers) == 0 {
		return DefaultSeatPrice
	}
	row := 0
	if p.RowSize > 0 {
		row = i / p.RowSize
	}
	return p.Tiers[min(row, len(p.Tiers)-1)]
}

// CurrencyOrDefault is the currency seats are priced in.
func (p Pricing) CurrencyOrDefault() string {
	if p.Currency == "" {
		return DefaultSeatCurrency
	}
	return p.Currency
}

// Seats prices ids (SeatIDs order) for inventory.CreateSeats.
func (p Pricing) Seats(ids []string) []inventory.NewSeat {
	seats := make([]inventory.NewSeat, len(ids))
	for i, id := range ids {
		seats[i] = inventory.NewSeat{SeatID: id, PriceMinor: p.PriceOf(i), Currency: p.CurrencyOrDefault()}
	}
	return seats
}

// SeedEvent creates an event with n AVAILABLE seats (SeatIDs(n)) priced by the stack's
// Config.Pricing, through the inventory store as an operator's catalog import would, and
// returns the seat ids. Seeding an event again leaves existing seats, and their prices, alone.
func (st *Stack) SeedEvent(ctx context.Context, eventID string, n int) ([]string, error) {
	return st.SeedEventPriced(ctx, eventID, n, st.cfg.Pricing)
}

// SeedEventPriced is SeedEvent with its own pricing. A bad price (zero or negative tier, bad
// currency) is a *reservation.ValidationError and no seat is written.
func (st *Stack) SeedEventPriced(ctx context.Context, eventID string, n int, pricing Pricing) ([]string, error) {
	store, err := inventory.New(inventory.Config{Client: st.DynamoDB, Names: st.Names, Now: st.Clock.Now, Metrics: st.Metrics, Logger: st.log})
	if err != nil {
		return nil, fmt.Errorf("stack: seed: %w", err)
	}
	ids := SeatIDs(n)
	seats := pricing.Seats(ids)
	// Validate the whole event before the writers start, so a bad price writes no seat at all.
	if _, err := inventory.ValidateSeats(eventID, seats); err != nil {
		return nil, fmt.Errorf("stack: seed event %s: %w", eventID, err)
	}
	// Seats are independent items; a few writers make a thousand seats quick.
	const writers = 8
	chunk := (len(seats) + writers - 1) / writers
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(seats))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(w int, part []inventory.NewSeat) {
			defer wg.Done()
			errs[w] = store.CreateSeats(ctx, eventID, part)
		}(w, seats[lo:hi])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("stack: seed event %s: %w", eventID, err)
		}
	}
	return ids, nil
}

// SeatSample counts seats per state at one moment.
type SeatSample struct {
	// At is wall-clock time since the sampler started.
	At     time.Duration
	Counts map[string]int
}

// SeatSampler scans the Seats table on an interval (wall clock) and records how many seats are
// in each state, for the report's timeline.
type SeatSampler struct {
	mu      sync.Mutex
	samples []SeatSample
	stop    context.CancelFunc
	done    chan struct{}
}

// SampleSeats starts a sampler; Stop ends it and returns the samples.
func (st *Stack) SampleSeats(interval time.Duration) *SeatSampler {
	ctx, cancel := context.WithCancel(st.ctx)
	s := &SeatSampler{stop: cancel, done: make(chan struct{})}
	store := invariants.DynamoDB{Client: st.DynamoDB, Names: st.Names}
	start := time.Now()
	go func() {
		defer close(s.done)
		for {
			seats, err := store.Seats(ctx)
			if err == nil {
				counts := map[string]int{}
				for _, seat := range seats {
					counts[seat.State]++
				}
				s.mu.Lock()
				s.samples = append(s.samples, SeatSample{At: time.Since(start), Counts: counts})
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return s
}

// Stop ends sampling and returns every sample.
func (s *SeatSampler) Stop() []SeatSample {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SeatSample(nil), s.samples...)
}
