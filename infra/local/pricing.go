package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// pricingFlags price the seats a command seeds: tier prices by row, front row first.
type pricingFlags struct {
	prices   string
	row      int
	currency string
}

func (p *pricingFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.prices, "price", p.prices, "seat prices in minor units by row, front row first, comma-separated (one value: a flat price); rows past the last tier pay the last tier")
	fs.IntVar(&p.row, "row", p.row, "seats per row for -price tiers")
	fs.StringVar(&p.currency, "currency", p.currency, "ISO 4217 currency of the seat prices")
}

// pricing checks the flags and returns the pricing they describe.
func (p pricingFlags) pricing() (stack.Pricing, error) {
	cur, ok := reservation.NormalizeCurrency(p.currency)
	if !ok {
		return stack.Pricing{}, fmt.Errorf("-currency: %q is not a three-letter ISO 4217 code", p.currency)
	}
	if p.row <= 0 {
		return stack.Pricing{}, fmt.Errorf("-row must be positive, got %d", p.row)
	}
	var tiers []int64
	for _, part := range strings.Split(p.prices, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := strconv.ParseInt(part, 10, 64)
		if err != nil || v <= 0 {
			return stack.Pricing{}, fmt.Errorf("-price: %q is not a positive number of minor units", part)
		}
		tiers = append(tiers, v)
	}
	if len(tiers) == 0 {
		return stack.Pricing{}, fmt.Errorf("-price is empty")
	}
	return stack.Pricing{Currency: cur, Tiers: tiers, RowSize: p.row}, nil
}

// describePricing says what n seats cost, for people: "50.00 EUR" or
// "rows of 20: 75.00 / 50.00 / 25.00 EUR". Amounts are shown with two decimals, which is what
// most currencies use; the API speaks minor units.
func describePricing(p stack.Pricing, n int) string {
	var prices []string
	for i := 0; i < n; i += max(p.RowSize, 1) {
		s := major(p.PriceOf(i))
		if len(prices) == 0 || prices[len(prices)-1] != s {
			prices = append(prices, s)
		}
	}
	if len(prices) <= 1 {
		return major(p.PriceOf(0)) + " " + p.CurrencyOrDefault() + " per seat"
	}
	return fmt.Sprintf("rows of %d: %s %s", p.RowSize, strings.Join(prices, " / "), p.CurrencyOrDefault())
}

func major(minor int64) string { return fmt.Sprintf("%d.%02d", minor/100, minor%100) }
