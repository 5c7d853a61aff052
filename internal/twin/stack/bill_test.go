package stack

import (
	"context"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/sale/bill"
	"github.com/seatsaga/seatsaga/internal/sale/load"
)

// A small sale prints a bill whose every line the sale must have used is priced above zero:
// the state transitions, retries among them (one Lambda service error per saga step makes Step
// Functions retry), Lambda's requests and GB-seconds, DynamoDB's reads and writes on tables
// and indexes, API Gateway's requests, the relay's EventBridge events and the log bytes. (The
// functions read their secrets when they start, before the sale, and cache them, so that line
// may be zero.) The quantities must agree with what the sale's other counts say.
func TestSmallSaleHasAnAWSBill(t *testing.T) {
	st := start(t, Config{Hold: 10 * time.Minute, SweepInterval: -1, PaymentsTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := st.RunSale(ctx, SaleOptions{
		EventID: "billed", Seats: 4, Buyers: 8, SeatsPerBuyer: 1, Seed: 5,
		Mix:         load.Mix{load.Pays: 1},
		Faults:      FaultPlan{LambdaFailBefore: 1},
		Concurrency: 4, PollInterval: 100 * time.Millisecond, BuyerTimeout: time.Minute, SettleTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Settled || !res.Verdict.OK() {
		t.Fatalf("settled %v, verdict:\n%s", res.Settled, res.Verdict)
	}
	fig := res.Figures()
	b, u := fig.AWSBill, fig.AWSUsage
	t.Logf("usage %+v", u)
	for _, l := range b.Lines {
		t.Logf("%-16s %-62s %14.3f %-10s $%.8f", l.Service, l.Item, l.Quantity, l.Unit, l.USD)
	}
	t.Logf("total $%.6f, $%.6f per booking, $%.6f per 1,000 buyers", b.Total, b.PerBooking, b.Per1000Buyers)

	usd := map[string]float64{}
	for _, l := range b.Lines {
		usd[l.Service+": "+l.Item] += l.USD
	}
	for _, line := range []string{
		"Step Functions: Standard state transitions (retries included)",
		"Lambda: requests", "Lambda: duration, arm64",
		"DynamoDB: read request units", "DynamoDB: write request units, tables", "DynamoDB: write request units, indexes",
		"API Gateway: REST API requests",
		"EventBridge: custom events published",
		"CloudWatch Logs: ingested, functions' logs and metrics (measured)",
		"CloudWatch Logs: ingested, Lambda, Step Functions and access logs (estimated)",
	} {
		if usd[line] <= 0 {
			t.Errorf("%s costs $%g: want it priced above zero", line, usd[line])
		}
	}
	if b.Total <= 0 || b.PerBooking <= 0 || b.Per1000Buyers <= 0 || len(b.Dominant) != 3 {
		t.Errorf("bill %+v: want a total, per-booking and per-1,000-buyer costs and three dominant lines", b)
	}

	// The quantities agree with the sale's other counts.
	if u.StateTransitions != int64(fig.Transitions) {
		t.Errorf("%d transitions billed, the figures count %d states entered", u.StateTransitions, fig.Transitions)
	}
	if u.TransitionRetries == 0 {
		t.Errorf("no retried attempt billed, though every saga step failed once before its handler ran")
	}
	var requests int64
	for _, f := range u.Functions {
		requests += f.Requests
		if f.MemoryMB <= 0 || f.BilledMs < f.Requests {
			t.Errorf("function %+v: want its memory and at least a millisecond per request", f)
		}
	}
	if requests != fig.Invocations {
		t.Errorf("%d Lambda requests billed, %d invocations ran", requests, fig.Invocations)
	}
	if u.APIRequests < fig.APIPosts+fig.APIPolls {
		t.Errorf("%d API requests billed, fewer than the %d POSTs and %d polls the api ran", u.APIRequests, fig.APIPosts, fig.APIPolls)
	}
	// Every booking's claim is a transaction: its items cost two units each.
	if u.DynamoDB.TransactionItems == 0 || u.DynamoDB.WriteUnits < 2*float64(u.DynamoDB.TransactionItems) {
		t.Errorf("DynamoDB %+v: want transactions, their items at two write units each", u.DynamoDB)
	}
	var calls int64
	for _, c := range res.Calls {
		if c.Role != "" && c.Service == "dynamodb" {
			calls += c.Count
		}
	}
	if u.DynamoDB.Calls != calls {
		t.Errorf("the meter saw %d DynamoDB calls, the gate let %d through", u.DynamoDB.Calls, calls)
	}
	for table, size := range u.LargestItemBytes {
		if size > bill.WriteUnitBytes {
			t.Logf("the largest %s item is %d bytes: the meter's 1 KB assumption for updated items undercounts", table, size)
		}
	}
}
