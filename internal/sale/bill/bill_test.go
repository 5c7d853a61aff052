package bill

import (
	"math"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A usage whose every quantity is a round number of the table's units prices to a total worked
// out by hand, line by line, so that a changed price or a line priced at the wrong entry shows.
func TestKnownUsageHasAKnownBill(t *testing.T) {
	u := Usage{
		StateTransitions: 9000, TransitionRetries: 1000, // 10,000 × $0.000025 = $0.25
		Functions: []FunctionUsage{
			{Name: "api", MemoryMB: 512, Requests: 600_000, BilledMs: 60_000_000},    // 30,000 GB-s
			{Name: "claim", MemoryMB: 1024, Requests: 400_000, BilledMs: 10_000_000}, // 10,000 GB-s
		}, // 1M requests × $0.20/M = $0.20; 40,000 GB-s × $0.0000133334 = $0.533336
		DynamoDB:            DynamoDBUsage{ReadUnits: 8e6, WriteUnits: 1.6e6, IndexWriteUnits: 8e5}, // $1 + $1 + $0.50
		APIRequests:         1e6,                                                                    // $3.50
		EventBridgeEvents:   2e6,                                                                    // $2.00
		SQSRequests:         2.5e6,                                                                  // $1.00
		SecretsManagerCalls: 2e4,                                                                    // $0.10
		Logs:                LogUsage{FunctionBytes: 2 * GB, PlatformBytes: GB},                     // $1.00 + $0.50
	}
	b := Compute(u, 100, 4000)
	want := []struct {
		item string
		qty  float64
		usd  float64
	}{
		{"Standard state transitions (retries included)", 10_000, 0.25},
		{"requests", 1e6, 0.20},
		{"duration, arm64", 40_000, 0.533336},
		{"read request units", 8e6, 1.00},
		{"write request units, tables", 1.6e6, 1.00},
		{"write request units, indexes", 8e5, 0.50},
		{"REST API requests", 1e6, 3.50},
		{"custom events published", 2e6, 2.00},
		{"standard queue requests", 2.5e6, 1.00},
		{"API calls", 2e4, 0.10},
		{"ingested, functions' logs and metrics (measured)", 2, 1.00},
		{"ingested, Lambda, Step Functions and access logs (estimated)", 1, 0.50},
	}
	if len(b.Lines) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(b.Lines), len(want), b.Lines)
	}
	for i, w := range want {
		l := b.Lines[i]
		if l.Item != w.item || !near(l.Quantity, w.qty) || !near(l.USD, w.usd) {
			t.Errorf("line %d = %q %g → $%g, want %q %g → $%g", i, l.Item, l.Quantity, l.USD, w.item, w.qty, w.usd)
		}
	}
	const total = 11.583336
	if !near(b.Total, total) {
		t.Errorf("total $%.6f, want $%.6f", b.Total, total)
	}
	if !near(b.PerBooking, total/100) || !near(b.Per1000Buyers, total/4) {
		t.Errorf("per booking $%g, per 1,000 buyers $%g; want $%g and $%g", b.PerBooking, b.Per1000Buyers, total/100, total/4)
	}
	// The costliest first; of the lines tied at $1, the table's first.
	dominant := []string{"REST API requests", "custom events published", "read request units"}
	for i, item := range dominant {
		if i >= len(b.Dominant) || b.Dominant[i].Item != item {
			t.Fatalf("dominant lines %+v, want %v", b.Dominant, dominant)
		}
	}
	if b.Region != "us-east-1" || b.PricesAsOf != PricesAsOf {
		t.Errorf("bill of %s as of %s", b.Region, b.PricesAsOf)
	}
}

// Without bookings or buyers the per-unit figures are zero rather than infinite, and an empty
// usage costs nothing.
func TestEmptyUsageCostsNothing(t *testing.T) {
	b := Compute(Usage{}, 0, 0)
	if b.Total != 0 || b.PerBooking != 0 || b.Per1000Buyers != 0 || len(b.Dominant) != 3 {
		t.Errorf("empty bill %+v", b)
	}
}

// DynamoDB's request units: a transactional write costs twice a plain one of the same item,
// sizes round up to the next KB (writes) or 4 KB (reads), and nothing costs less than one unit's
// worth.
func TestDynamoDBRequestUnits(t *testing.T) {
	writes := []struct {
		bytes int
		tx    bool
		want  float64
	}{
		{0, false, 1}, {1, false, 1}, {1024, false, 1}, {1025, false, 2}, {3000, false, 3},
		{1, true, 2}, {1024, true, 2}, {1025, true, 4}, {3000, true, 6},
	}
	for _, c := range writes {
		if got := WriteUnits(c.bytes, c.tx); got != c.want {
			t.Errorf("WriteUnits(%d, transactional %v) = %g, want %g", c.bytes, c.tx, got, c.want)
		}
	}
	for _, size := range []int{1, 700, 1024, 2500, 9000} {
		if plain, tx := WriteUnits(size, false), WriteUnits(size, true); tx != 2*plain {
			t.Errorf("a %d-byte item: transactional write %g units, plain %g: want twice", size, tx, plain)
		}
	}
	reads := []struct {
		bytes int
		c     Consistency
		want  float64
	}{
		{1, Strong, 1}, {4096, Strong, 1}, {4097, Strong, 2}, {8192, Strong, 2},
		{1, Eventual, 0.5}, {8192, Eventual, 1},
		{1, Transactional, 2}, {8192, Transactional, 4},
	}
	for _, c := range reads {
		if got := ReadUnits(c.bytes, c.c); got != c.want {
			t.Errorf("ReadUnits(%d, %d) = %g, want %g", c.bytes, c.c, got, c.want)
		}
	}
	// Priced: a million transactional items of under 1 KB cost twice a million plain writes.
	plain := Compute(Usage{DynamoDB: DynamoDBUsage{WriteUnits: 1e6 * WriteUnits(500, false)}}, 0, 0).Total
	tx := Compute(Usage{DynamoDB: DynamoDBUsage{WriteUnits: 1e6 * WriteUnits(500, true)}}, 0, 0).Total
	if !near(plain, 0.625) || !near(tx, 1.25) {
		t.Errorf("a million plain writes $%g, transactional $%g; want $0.625 and $1.25", plain, tx)
	}
}

// An item's size is its attribute names and values as DynamoDB counts them.
func TestItemSize(t *testing.T) {
	item := map[string]types.AttributeValue{
		"seatKey":  &types.AttributeValueMemberS{Value: "ev#A1"},                                                                                                      // 7 + 5
		"version":  &types.AttributeValueMemberN{Value: "12"},                                                                                                         // 7 + 2
		"price":    &types.AttributeValueMemberN{Value: "-5000.50"},                                                                                                   // 5 + 4 (50005: 3 + 1)
		"held":     &types.AttributeValueMemberBOOL{Value: true},                                                                                                      // 4 + 1
		"seatIds":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "A1"}, &types.AttributeValueMemberS{Value: "A2"}}}, // 7 + 3 + 2×(1+2)
		"tags":     &types.AttributeValueMemberSS{Value: []string{"vip", "row-a"}},                                                                                    // 4 + 8
		"nothing":  &types.AttributeValueMemberNULL{Value: true},                                                                                                      // 7 + 1
		"metadata": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}},                               // 8 + 3 + (1 + 1 + 1)
	}
	const want = 12 + 9 + 9 + 5 + 16 + 12 + 8 + 14
	if got := ItemSize(item); got != want {
		t.Errorf("ItemSize = %d, want %d", got, want)
	}
}

// Every price in the table has a source, a unit and a positive amount, and every line the bill
// prints is priced from the table.
func TestThePriceTableIsComplete(t *testing.T) {
	seen := map[PriceID]bool{}
	for _, p := range Prices {
		if p.Source == "" || p.Unit == "" || p.USD <= 0 || p.Service == "" || seen[p.ID] {
			t.Errorf("price %+v: want a unique id, a source, a unit and a positive price", p)
		}
		seen[p.ID] = true
	}
	for _, l := range Compute(Usage{}, 0, 0).Lines {
		if !seen[l.Price] {
			t.Errorf("line %q is priced at %q, which the table lacks", l.Item, l.Price)
		}
	}
}

// Amounts keep enough decimals for a small sale's fractions of a cent; quantities show whole
// units whole and gigabytes to the kilobyte.
func TestFormatting(t *testing.T) {
	for v, want := range map[float64]string{0: "$0", 12.345: "$12.35", 0.0567: "$0.0567", 0.000539: "$0.000539"} {
		if got := FormatUSD(v); got != want {
			t.Errorf("FormatUSD(%g) = %q, want %q", v, got, want)
		}
	}
	for _, c := range []struct {
		q          float64
		unit, want string
	}{{396, "transition", "396"}, {2490.79725, "GB-second", "2490.797"}, {0.002173, "GB", "0.002173"}} {
		if got := FormatQuantity(c.q, c.unit); got != c.want {
			t.Errorf("FormatQuantity(%g, %s) = %q, want %q", c.q, c.unit, got, c.want)
		}
	}
}
