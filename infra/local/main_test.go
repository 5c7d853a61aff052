package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/sale/report"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/statemachine"
)

func TestParseMix(t *testing.T) {
	cases := []struct {
		name, in string
		want     load.Mix
		err      string
	}{
		{"demo default", defaultsFor("demo").mix, load.Mix{"pays": 55, "declines": 10, "3ds-late": 15, "3ds-never": 10, "late-auth": 10}, ""},
		{"spaces", " pays=1 , declines=0.5 ", load.Mix{"pays": 1, "declines": 0.5}, ""},
		{"unknown", "pays=1,teleports=2", nil, "unknown behaviour"},
		{"no weight", "pays", nil, "not name=weight"},
		{"negative", "pays=-1", nil, "bad weight"},
		{"empty", "", nil, "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMix(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestSaleFlagsScaleTheClock(t *testing.T) {
	f, err := parseSaleFlags("load", []string{"-buyers", "10000", "-seats", "1000", "-scale", "30"})
	if err != nil {
		t.Fatal(err)
	}
	if f.buyers != 10000 || f.seats != 1000 || f.reportPath != "reports/load.html" {
		t.Fatalf("flags %+v", f)
	}
	cfg := stackConfig(f, nil)
	if cfg.Hold != 10*time.Minute || cfg.Payments.LateAuthorizationDelay <= cfg.Hold {
		t.Fatalf("hold %s, late authorization %s: a late authorization must land after the hold", cfg.Hold, cfg.Payments.LateAuthorizationDelay)
	}
	plan := faultPlan(f)
	if plan.ProviderFailBefore != 2 || plan.LambdaFailAfter != 2 || plan.Spread != 20*time.Second {
		t.Fatalf("fault plan %+v", plan)
	}
	f.faultCap = 0
	if plan := faultPlan(f); plan.ProviderFailBefore != 20 || plan.LambdaFailAfter != 10 {
		t.Fatalf("uncapped fault plan %+v", plan)
	}
	if _, err := parseSaleFlags("demo", []string{"-scale", "0"}); err == nil {
		t.Fatal("zero scale accepted")
	}
	if _, err := parseSaleFlags("demo", []string{"extra"}); err == nil {
		t.Fatal("stray argument accepted")
	}
}

func TestPricingFlags(t *testing.T) {
	cases := []struct {
		name     string
		flags    pricingFlags
		wantErr  bool
		describe string // for 60 seats
	}{
		{"tiers by row", pricingFlags{prices: "7500, 5000,2500", row: 20, currency: "eur"}, false, "rows of 20: 75.00 / 50.00 / 25.00 EUR"},
		{"flat", pricingFlags{prices: "5000", row: 10, currency: "EUR"}, false, "50.00 EUR per seat"},
		{"zero price", pricingFlags{prices: "5000,0", row: 10, currency: "EUR"}, true, ""},
		{"not a number", pricingFlags{prices: "50.00", row: 10, currency: "EUR"}, true, ""},
		{"no price", pricingFlags{prices: " , ", row: 10, currency: "EUR"}, true, ""},
		{"bad currency", pricingFlags{prices: "5000", row: 10, currency: "euro"}, true, ""},
		{"no row size", pricingFlags{prices: "5000", row: 0, currency: "EUR"}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.flags.pricing()
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			if err == nil && describePricing(p, 60) != c.describe {
				t.Fatalf("described as %q, want %q", describePricing(p, 60), c.describe)
			}
		})
	}
	f, err := parseSaleFlags("demo", []string{"-price", "4000,2000", "-row", "5", "-currency", "usd"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := stackConfig(f, nil); cfg.Pricing.PriceOf(4) != 4000 || cfg.Pricing.PriceOf(5) != 2000 || cfg.Pricing.CurrencyOrDefault() != "USD" {
		t.Fatalf("stack pricing %+v", cfg.Pricing)
	}
	if _, err := parseSaleFlags("demo", []string{"-price", "-1"}); err == nil {
		t.Fatal("negative price accepted")
	}
}

// The summary and the report count executions by the outcome saga.EndingOf reads from each
// execution, and call "need a person" exactly the executions that failed: a lost race is a
// business outcome of a succeeded execution, the incident the one failure.
func TestSummaryCountsOutcomesAndWhatNeedsAPerson(t *testing.T) {
	trace := func(name, status, output, errName string, states ...string) stack.ExecutionTrace {
		return stack.ExecutionTrace{Name: name, Status: status, States: states, Transitions: len(states),
			Entered: make([]time.Time, len(states)), Exited: make([]time.Time, len(states)), Ending: saga.EndingOf(status, output, errName)}
	}
	res := &stack.SaleResult{Run: &load.Run{}, Traces: []stack.ExecutionTrace{
		trace("sold", "SUCCEEDED", `{"reservationId":"sold","capture":{"paymentIntentId":"pi_1"}}`, "", "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed"),
		trace("lost", "SUCCEEDED", `{"Error":"SeatUnavailable","Cause":"seat S1 is taken"}`, "", "Claim seats", "Rejected: seats taken"),
		trace("lost2", "SUCCEEDED", `{"Error":"SeatUnavailable","Cause":"seat S2 is taken"}`, "", "Claim seats", "Rejected: seats taken"),
		trace("stuck", "FAILED", "", saga.EndClaimFailed, "Claim seats", "Claim failed"),
	}}
	fig := res.Figures()
	var out strings.Builder
	printSummary(&out, "demo", defaultsFor("demo"), res, fig)
	for _, want := range []string{"SeatUnavailable 2, ClaimFailed 1, Confirmed 1", "1 executions (1 failed, timed out or aborted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
	g, err := report.GraphFromASL(statemachine.Definition())
	if err != nil {
		t.Fatal(err)
	}
	r := buildReport("demo", "make demo", defaultsFor("demo"), res, fig, g)
	var bars []report.Count
	for _, b := range r.Bars {
		if b.Title == "Executions by outcome" {
			bars = b.Bars
		}
	}
	if want := []report.Count{{Label: "SeatUnavailable", N: 2}, {Label: "ClaimFailed", N: 1}, {Label: "Confirmed", N: 1}}; !slices.Equal(bars, want) {
		t.Errorf("bars by outcome %v, want %v", bars, want)
	}
}

// -profile picks the arrival profile for demo and load alike: uniform by default, and a hot
// share the seats cannot give or an unknown name is refused before the stack starts.
func TestSaleFlagsProfile(t *testing.T) {
	for _, mode := range []string{"demo", "load"} {
		f, err := parseSaleFlags(mode, nil)
		if err != nil || f.arrival != load.Uniform {
			t.Fatalf("%s: default profile %q, %v; want uniform", mode, f.arrival, err)
		}
		f, err = parseSaleFlags(mode, []string{"-profile", "burst"})
		if err != nil || f.arrival != load.Burst || f.arrival.Concurrency(f.concurrency) < load.BurstConcurrency {
			t.Fatalf("%s: -profile burst gave %q with concurrency %d, %v", mode, f.arrival, f.arrival.Concurrency(f.concurrency), err)
		}
		if f, err = parseSaleFlags(mode, []string{"-profile", "hot", "-hot-share", "0.6"}); err != nil || f.arrival != load.Hot || f.hotShare != 0.6 {
			t.Fatalf("%s: -profile hot -hot-share 0.6 gave %q %g, %v", mode, f.arrival, f.hotShare, err)
		}
	}
	for _, args := range [][]string{{"-profile", "stampede"}, {"-profile", "hot", "-hot-share", "1"}, {"-profile", "hot", "-hot-share", "0.05"}} {
		if _, err := parseSaleFlags("load", args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
