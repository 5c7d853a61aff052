package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/seatsaga/seatsaga/internal/sale/bill"
)

// billRows prints the sale's AWS bill as summary rows: the prices' region and date, the total
// and what a booking and a thousand buyers cost, one row per line, the dominant lines, and the
// functions' mean billed duration, since the local host's wall time is what the GB-seconds are
// priced from and a loaded machine inflates it.
func billRows(row func(label, format string, args ...any), b bill.Bill, u bill.Usage) {
	row("AWS bill", "%s list prices of %s: %s total; %s per booking; %s per 1,000 buyers",
		b.Region, b.PricesAsOf, bill.FormatUSD(b.Total), bill.FormatUSD(b.PerBooking), bill.FormatUSD(b.Per1000Buyers))
	for _, l := range b.Lines {
		row("", "%-16s %-62s %16s %-10s %s", l.Service, l.Item, bill.FormatQuantity(l.Quantity, l.Unit), l.Unit, bill.FormatUSD(l.USD))
	}
	row("dominant lines", "%s", dominantLine(b))
	row("billed duration", "%s (mean ms per invocation, the local host's wall time)", durationLine(u))
}

// durationLine lists each function's mean billed milliseconds per invocation, longest first.
func durationLine(u bill.Usage) string {
	fns := slices.Clone(u.Functions)
	slices.SortFunc(fns, func(a, b bill.FunctionUsage) int { return cmp.Compare(b.GBSeconds(), a.GBSeconds()) })
	parts := make([]string, 0, len(fns))
	for _, f := range fns {
		parts = append(parts, fmt.Sprintf("%s %.0f (%d MB, %.1f GB-s)", f.Name, float64(f.BilledMs)/float64(max(f.Requests, 1)), f.MemoryMB, f.GBSeconds()))
	}
	return strings.Join(parts, ", ")
}

// dominantLine names the costliest lines with their share of the total.
func dominantLine(b bill.Bill) string {
	parts := make([]string, 0, len(b.Dominant))
	for _, l := range b.Dominant {
		share := 0.0
		if b.Total > 0 {
			share = 100 * l.USD / b.Total
		}
		parts = append(parts, fmt.Sprintf("%s %s %s (%.0f%%)", l.Service, l.Item, bill.FormatUSD(l.USD), share))
	}
	return strings.Join(parts, "; ")
}
