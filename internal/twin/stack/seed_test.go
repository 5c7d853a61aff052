package stack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
)

func TestPricingByRow(t *testing.T) {
	cases := []struct {
		name    string
		p       Pricing
		want    []int64 // seats 0..len-1
		wantCur string
	}{
		{"zero value is the default flat price", Pricing{}, []int64{DefaultSeatPrice, DefaultSeatPrice}, "EUR"},
		{"flat", Flat(1999, "usd"), []int64{1999, 1999, 1999}, "usd"},
		{"tiers by row, last tier repeats", Pricing{Tiers: []int64{9000, 6000}, RowSize: 2, Currency: "GBP"},
			[]int64{9000, 9000, 6000, 6000, 6000}, "GBP"},
		{"tiers without rows are one row", Pricing{Tiers: []int64{700, 500}}, []int64{700, 700}, "EUR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, want := range c.want {
				if got := c.p.PriceOf(i); got != want {
					t.Errorf("seat %d costs %d, want %d", i, got, want)
				}
			}
			if got := c.p.CurrencyOrDefault(); got != c.wantCur {
				t.Errorf("currency %q, want %q", got, c.wantCur)
			}
		})
	}
}

// SeedEvent writes each seat's price on its item (as DecodeSeat reads it), and a bad price
// writes no seat at all.
func TestSeedEventPricesSeats(t *testing.T) {
	st := start(t, Config{SweepInterval: -1, Pricing: Pricing{Tiers: []int64{9000, 6000, 3000}, RowSize: 2, Currency: "eur"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids, err := st.SeedEvent(ctx, "tiers", 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SeedEventPriced(ctx, "free", 3, Pricing{Tiers: []int64{1000, 0}, RowSize: 1}); !errors.As(err, new(*reservation.ValidationError)) {
		t.Fatalf("a zero tier: want *ValidationError, got %v", err)
	}
	seats, err := invariants.DynamoDB{Client: st.DynamoDB, Names: st.Names}.Seats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{ids[0]: 9000, ids[1]: 9000, ids[2]: 6000, ids[3]: 6000, ids[4]: 3000}
	if len(seats) != len(want) {
		t.Fatalf("%d seats, want %d (the badly priced event must write none): %+v", len(seats), len(want), seats)
	}
	for _, s := range seats {
		if s.EventID != "tiers" || s.PriceMinor != want[s.SeatID] || s.Currency != "EUR" {
			t.Errorf("seat %+v, want %d EUR", s, want[s.SeatID])
		}
	}
}
