package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/sale/bill"
	"github.com/seatsaga/seatsaga/statemachine"
)

const miniASL = `{
  "StartAt": "Claim",
  "States": {
    "Claim": {"Type": "Task", "Resource": "arn", "Next": "Pay",
      "Catch": [{"ErrorEquals": ["SeatUnavailable"], "Next": "Rejected"}]},
    "Pay": {"Type": "Task", "Resource": "arn", "Next": "Check",
      "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Reconcile"}]},
    "Reconcile": {"Type": "Task", "Resource": "arn", "Next": "Check"},
    "Check": {"Type": "Choice", "Choices": [{"Variable": "$.ok", "BooleanEquals": true, "Next": "Done"}], "Default": "Reconcile"},
    "Done": {"Type": "Succeed"},
    "Rejected": {"Type": "Fail", "Error": "SeatUnavailable"}
  }
}`

func TestGraphCountsEdges(t *testing.T) {
	g, err := GraphFromASL([]byte(miniASL))
	if err != nil {
		t.Fatal(err)
	}
	g.CountPaths([][]string{
		{"Claim", "Pay", "Check", "Done", EndNode},
		{"Claim", "Pay", "Check", "Done", EndNode},
		{"Claim", "Rejected", EndNode},
		{"Claim", "Pay", "Reconcile", "Check", "Reconcile", "Check", "Done", EndNode},
		{"Claim", "Teleport"},
	})
	count := func(from, to string) int {
		for _, e := range g.Edges {
			if e.From == from && e.To == to {
				return e.Count
			}
		}
		return -1
	}
	cases := []struct {
		from, to string
		want     int
	}{
		{StartNode, "Claim", 5},
		{"Claim", "Pay", 3},
		{"Claim", "Rejected", 1},
		{"Pay", "Reconcile", 1},
		{"Check", "Reconcile", 1},
		{"Reconcile", "Check", 2},
		{"Check", "Done", 3},
		{"Claim", "Teleport", 1},
	}
	for _, c := range cases {
		if got := count(c.from, c.to); got != c.want {
			t.Errorf("edge %s -> %s: %d, want %d", c.from, c.to, got, c.want)
		}
	}
	if g.Unmatched != 1 {
		t.Errorf("unmatched %d, want 1", g.Unmatched)
	}
	if n := g.node("Claim"); n.Layer != 1 || g.node("Done").Layer <= g.node("Pay").Layer {
		t.Errorf("layout: Claim layer %d, Pay %d, Done %d", n.Layer, g.node("Pay").Layer, g.node("Done").Layer)
	}
}

func TestGraphFromTheRealDefinition(t *testing.T) {
	g, err := GraphFromASL(statemachine.Definition())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) < 5 || len(g.Edges) < 5 {
		t.Fatalf("graph too small: %d nodes, %d edges", len(g.Nodes), len(g.Edges))
	}
	for _, name := range statemachine.StateNames() {
		if g.node(name) == nil {
			t.Errorf("state %q has no node", name)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, Report{Title: "t", Graph: g}); err != nil {
		t.Fatal(err)
	}
}

func TestHistogramPercentiles(t *testing.T) {
	var vals []float64
	for i := 1; i <= 1000; i++ {
		vals = append(vals, float64(i))
	}
	h := NewHistogram("x", vals)
	if h.P50 != 500 || h.P95 != 950 || h.P99 != 990 || h.N != 1000 {
		t.Fatalf("p50 %v p95 %v p99 %v n %d", h.P50, h.P95, h.P99, h.N)
	}
	total := 0
	for _, b := range h.Buckets {
		total += b.N
	}
	if total != 1000 {
		t.Fatalf("buckets hold %d values, want 1000: %+v", total, h.Buckets)
	}
	var narrow []float64
	for i := 0; i < 300; i++ {
		narrow = append(narrow, 50000+float64(i*100))
	}
	nh := NewHistogram("narrow", narrow)
	sum := 0
	for _, b := range nh.Buckets {
		sum += b.N
	}
	if len(nh.Buckets) != 12 || sum != 300 || nh.Buckets[0].N == 0 || nh.Buckets[11].N == 0 {
		t.Fatalf("a narrow range gets even buckets: %+v", nh.Buckets)
	}
	if empty := NewHistogram("none", nil); empty.N != 0 || len(empty.Buckets) != 0 {
		t.Fatalf("empty histogram %+v", empty)
	}
}

func TestPageIsSelfContained(t *testing.T) {
	g, err := GraphFromASL([]byte(miniASL))
	if err != nil {
		t.Fatal(err)
	}
	g.CountPaths([][]string{{"Claim", "Pay", "Check", "Done", EndNode}})
	r := Report{
		Title:      "seatsaga demo </script><b>",
		Command:    "go run ./infra/local demo",
		Generated:  time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC),
		Summary:    []Row{{"seats sold", "10"}, {"buyers", "<20>"}},
		Verdict:    Verdict{Pass: true, Lines: []string{"invariants: PASS"}},
		SeatStates: []string{"AVAILABLE", "HELD", "CONFIRMED"},
		Timeline: []Sample{
			{At: 0, Counts: map[string]int{"AVAILABLE": 10}},
			{At: 1.5, Counts: map[string]int{"AVAILABLE": 2, "HELD": 5, "CONFIRMED": 3}},
		},
		Histograms: []Histogram{NewHistogram("time to hold", []float64{3, 5, 8, 13, 120})},
		Bars:       []BarChart{{Title: "outcomes", Bars: []Count{{"Confirmed", 3}, {"Rejected: seats taken </script>", 7}}}},
		Graph:      g,
	}
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// Nothing is loaded from elsewhere.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(page); m != "" {
		t.Fatalf("page references an external resource: %q", m)
	}
	for _, want := range []string{`<svg id="graph"`, `data-chart="timeline"`, `data-report-state`, "seats sold", "PASS", `class="edge"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Data cannot break out of its script element.
	if strings.Count(page, "</script>") != 2 {
		t.Errorf("page has %d </script> tags, want 2 (data escaped)", strings.Count(page, "</script>"))
	}
	if strings.Contains(page, "<b>") {
		t.Error("title not escaped")
	}
}

// The alarms a run fired are listed with when and why, and handed to the timeline's script;
// a run without any says so.
func TestAlarmsAreListedAndMarkedOnTheTimeline(t *testing.T) {
	r := Report{Title: "demo", SeatStates: []string{"HELD"}, Timeline: []Sample{{At: 0, Counts: map[string]int{"HELD": 1}}},
		Alarms: []AlarmMark{
			{At: 12.5, StackTime: "02:10:00", Alarm: "WebhookRejected", From: "OK", To: "ALARM", Reason: "Threshold Crossed: 1 datapoint <b>"},
			{At: 30, StackTime: "02:20:00", Alarm: "WebhookRejected", From: "ALARM", To: "OK", Reason: "Threshold Crossed: back"},
		}}
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<table id="alarms">`, "WebhookRejected", "OK → ALARM", "ALARM → OK", "12.5s", `"alarm":"WebhookRejected"`, "drawTimeline(document.getElementById('timeline'), data.seatStates || [], data.timeline || [], data.alarms || [])"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "datapoint <b>") {
		t.Error("an alarm's reason is not escaped")
	}
	buf.Reset()
	r.Alarms = nil
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "No alarm changed state.") {
		t.Error("a run without alarm changes does not say so")
	}
}

// A run's AWS bill is a table of its lines with the total, the per-booking and per-1,000-buyer
// costs, the dominant lines and the price table's sources; a page without a bill has no such
// section, and the bill adds no script and loads nothing.
func TestBillIsTabled(t *testing.T) {
	b := bill.Compute(bill.Usage{StateTransitions: 4000, APIRequests: 1000,
		Functions: []bill.FunctionUsage{{Name: "api", MemoryMB: 512, Requests: 1000, BilledMs: 20000}}}, 10, 100)
	var buf bytes.Buffer
	u := bill.Usage{StateTransitions: 4000, TransitionRetries: 7,
		Functions: []bill.FunctionUsage{{Name: "api", MemoryMB: 512, Requests: 1000, BilledMs: 20000}}}
	if err := Write(&buf, Report{Title: "demo", Bill: &b, Usage: &u}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<table id="bill">`, "Standard state transitions (retries included)", "REST API requests",
		"$0.1000", "us-east-1", bill.PricesAsOf, `id="bill-dominant"`, "https://aws.amazon.com/step-functions/pricing/",
		"per 1,000 buyers (100)", "7 retried attempts", "api 20"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(page); m != "" {
		t.Fatalf("page references an external resource: %q", m)
	}
	buf.Reset()
	if err := Write(&buf, Report{Title: "demo"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="bill"`) {
		t.Error("a page without a bill has a bill section")
	}
}
