// Package report writes a self-contained HTML page about one run of the local stack: a summary
// table, the invariant verdict, seats by state over time, latency histograms, outcomes and the
// state-machine graph with how many executions took each edge. The page carries its data and its
// drawing code inline (canvas charts, an SVG graph) and loads nothing, so it opens offline.
//
// After drawing, the page's script sets data-report-state="rendered" and data-charts (the number
// of charts drawn) on <html>; any script error sets data-report-state="error" and lists it in
// #report-errors. scripts/check-report.sh reads those from headless Chromium.
package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/sale/bill"
)

// Row is one line of a table: a label and its value.
type Row struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Count is one bar of a bar chart.
type Count struct {
	Label string `json:"label"`
	N     int    `json:"n"`
}

// BarChart is a titled set of bars.
type BarChart struct {
	Title string  `json:"title"`
	Bars  []Count `json:"bars"`
}

// Sample is the number of seats in each state at one moment of the run.
type Sample struct {
	// At is seconds since the run started (wall clock).
	At     float64        `json:"at"`
	Counts map[string]int `json:"counts"`
}

// AlarmMark is one alarm state change during the run, on the timeline's axis.
type AlarmMark struct {
	// At is seconds since the run started (wall clock), like Sample.At.
	At float64 `json:"at"`
	// StackTime is when it happened on the stack's clock.
	StackTime string `json:"stackTime"`
	Alarm     string `json:"alarm"`
	// From and To are CloudWatch's states (OK, ALARM, INSUFFICIENT_DATA).
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Histogram is a latency distribution in buckets.
type Histogram struct {
	Title   string  `json:"title"`
	Unit    string  `json:"unit"`
	Buckets []Count `json:"buckets"`
	N       int     `json:"n"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
}

// Verdict is the invariant checker's answer as the page shows it.
type Verdict struct {
	Pass  bool
	Lines []string
}

// Report is everything the page shows.
type Report struct {
	Title     string
	Command   string
	Generated time.Time
	Summary   []Row
	Verdict   Verdict
	// SeatStates names the series of the timeline in drawing order (e.g. AVAILABLE, HELD,
	// PAYMENT_PENDING, CONFIRMED).
	SeatStates []string
	Timeline   []Sample
	// Alarms are the alarm state changes, drawn on the timeline and listed below it.
	Alarms     []AlarmMark
	Histograms []Histogram
	Bars       []BarChart
	Graph      *Graph
	// Bill is the run's AWS bill at list prices (nil: the page has no bill section); Usage,
	// when set, is what it priced, for the notes under it.
	Bill  *bill.Bill
	Usage *bill.Usage
}

// NewHistogram buckets values (milliseconds) on a log scale and computes percentiles.
func NewHistogram(title string, valuesMs []float64) Histogram {
	h := Histogram{Title: title, Unit: "ms", N: len(valuesMs)}
	if len(valuesMs) == 0 {
		return h
	}
	sorted := append([]float64(nil), valuesMs...)
	sort.Float64s(sorted)
	h.P50, h.P95, h.P99 = Percentile(sorted, 50), Percentile(sorted, 95), Percentile(sorted, 99)
	lo, hi := sorted[0], sorted[len(sorted)-1]
	if lo > 0 && hi/lo < 20 {
		// A narrow range reads better in even steps than in decades.
		h.Buckets = linearBuckets(sorted, lo, hi, 12)
		return h
	}
	// Bucket edges 1, 2, 5, 10, 20, 50, ... ms up to the maximum.
	var edges []float64
	for e := 1.0; ; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			edges = append(edges, e*m)
		}
		if e*5 >= hi {
			break
		}
	}
	counts := make([]int, len(edges)+1)
	for _, v := range sorted {
		i := sort.SearchFloat64s(edges, v)
		counts[i]++
	}
	first := 0
	for first < len(counts)-1 && counts[first] == 0 {
		first++
	}
	last := len(counts) - 1
	for last > first && counts[last] == 0 {
		last--
	}
	for i := first; i <= last; i++ {
		label := "≤" + fmtMs(edges[min(i, len(edges)-1)])
		if i == len(edges) {
			label = ">" + fmtMs(edges[len(edges)-1])
		}
		h.Buckets = append(h.Buckets, Count{Label: label, N: counts[i]})
	}
	return h
}

// linearBuckets splits [lo, hi] into n equal buckets labelled by their upper edge.
func linearBuckets(sorted []float64, lo, hi float64, n int) []Count {
	width := (hi - lo) / float64(n)
	if width <= 0 {
		return []Count{{Label: "≤" + fmtMs(hi), N: len(sorted)}}
	}
	out := make([]Count, n)
	for i := range out {
		out[i].Label = "≤" + fmtMs(roundNice(lo+width*float64(i+1)))
	}
	for _, v := range sorted {
		i := min(int((v-lo)/width), n-1)
		out[i].N++
	}
	return out
}

// roundNice keeps three significant digits, so bucket labels stay short.
func roundNice(v float64) float64 {
	if v <= 0 {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-2)
	return math.Round(v/p) * p
}

// Percentile returns the p-th percentile (nearest rank) of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank-1, 0), len(sorted)-1)]
}

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%gs", v/1000)
	}
	return fmt.Sprintf("%gms", v)
}

// WriteFile writes the page to path, creating its directory.
func WriteFile(path string, r Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := Write(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Write renders the page.
func Write(w io.Writer, r Report) error {
	data, err := json.Marshal(map[string]any{
		"seatStates": r.SeatStates,
		"timeline":   r.Timeline,
		"alarms":     r.Alarms,
		"histograms": r.Histograms,
		"bars":       r.Bars,
	})
	if err != nil {
		return fmt.Errorf("report: encode data: %w", err)
	}
	view := struct {
		Report
		Data     template.JS
		GraphSVG template.HTML
		When     string
	}{Report: r, Data: template.JS(safeJSON(data)), When: r.Generated.UTC().Format(time.RFC3339)}
	if r.Graph != nil {
		view.GraphSVG = template.HTML(graphSVG(r.Graph))
	}
	if err := page.Execute(w, view); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	return nil
}

// safeJSON keeps a JSON document from closing the script element it sits in.
func safeJSON(b []byte) string {
	s := string(b)
	s = strings.ReplaceAll(s, "<", `\u003c`)
	s = strings.ReplaceAll(s, ">", `\u003e`)
	s = strings.ReplaceAll(s, "&", `\u0026`)
	return s
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// graphSVG draws the state machine: boxes per state (entries in the corner), curves per edge
// with a width that grows with its count and the count written beside it.
func graphSVG(g *Graph) string {
	w, h := g.Size()
	maxCount := 1
	for _, e := range g.Edges {
		maxCount = max(maxCount, e.Count)
	}
	pos := map[string]*Node{}
	for _, n := range g.Nodes {
		pos[n.Name] = n
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="state machine graph">`, w, h, w, h)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>`)
	edges := append([]*Edge(nil), g.Edges...)
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].Count < edges[j].Count })
	for _, e := range edges {
		from, to := pos[e.From], pos[e.To]
		if from == nil || to == nil {
			continue
		}
		x1, y1 := float64(from.X+nodeW/2), float64(from.Y+nodeH)
		x2, y2 := float64(to.X+nodeW/2), float64(to.Y)
		var d string
		var lx, ly float64
		if to.Layer > from.Layer {
			dy := (y2 - y1) / 2
			d = fmt.Sprintf("M%.0f,%.0f C%.0f,%.0f %.0f,%.0f %.0f,%.0f", x1, y1, x1, y1+dy, x2, y2-dy, x2, y2)
			lx, ly = (x1+x2)/2, (y1+y2)/2
		} else {
			// Back or sideways edge: leave from the right side, loop round, enter from above.
			x1, y1 = float64(from.X+nodeW), float64(from.Y+nodeH/2)
			x2, y2 = float64(to.X+nodeW-20), float64(to.Y)
			cx := math.Max(x1, x2) + 60
			d = fmt.Sprintf("M%.0f,%.0f C%.0f,%.0f %.0f,%.0f %.0f,%.0f", x1, y1, cx, y1, cx, y2-40, x2, y2)
			lx, ly = cx-10, (y1+y2)/2
		}
		width := 1.0
		color := "#c8c8c8"
		dash := ""
		if e.Count > 0 {
			width = 1.5 + 6*math.Log1p(float64(e.Count))/math.Log1p(float64(maxCount))
			color = "#2f6db5"
			if e.Kind == "catch" {
				color = "#c0562f"
			}
		}
		if e.Kind == "observed" {
			dash = ` stroke-dasharray="6 4"`
			color = "#8a2be2"
		} else if e.Count == 0 {
			dash = ` stroke-dasharray="3 3"`
		}
		title := fmt.Sprintf("%s → %s (%s%s): %d", e.From, e.To, e.Kind, labelSuffix(e.Label), e.Count)
		fmt.Fprintf(&b, `<path class="edge" d="%s" fill="none" stroke="%s" stroke-width="%.1f"%s marker-end="url(#arrow)"><title>%s</title></path>`,
			d, color, width, dash, esc(title))
		if e.Count > 0 {
			fmt.Fprintf(&b, `<text class="edge-count" x="%.0f" y="%.0f" font-size="12" fill="%s" stroke="white" stroke-width="3" paint-order="stroke">%d</text>`, lx+4, ly, color, e.Count)
		}
	}
	for _, n := range g.Nodes {
		fill := "#f4f7fb"
		switch {
		case n.Type == "Start" || n.Type == "End":
			fill = "#e8e8e8"
		case n.Type == "Succeed":
			fill = "#dff3e0"
		case n.Type == "Fail":
			fill = "#fbe3e0"
		case n.Type == "Choice" || n.Type == "Wait":
			fill = "#fff5d6"
		}
		stroke := "#9aa7b8"
		if n.Count > 0 {
			stroke = "#2f4f7f"
		}
		fmt.Fprintf(&b, `<g class="node"><rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="%s" stroke="%s"/>`, n.X, n.Y, nodeW, nodeH, fill, stroke)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="middle">%s</text>`, n.X+nodeW/2, n.Y+19, esc(clipName(n.Name, 28)))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#555">%s · %d</text><title>%s (%s): entered %d times</title></g>`,
			n.X+nodeW/2, n.Y+36, esc(n.Type), n.Count, esc(n.Name), esc(n.Type), n.Count)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func labelSuffix(l string) string {
	if l == "" {
		return ""
	}
	return ": " + l
}

func clipName(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"usd": bill.FormatUSD, "quantity": bill.FormatQuantity, "share": share,
	"meanMs": func(f bill.FunctionUsage) string {
		return fmt.Sprintf("%.0f", float64(f.BilledMs)/float64(max(f.Requests, 1)))
	},
	"prices": func() []bill.Price { return bill.Prices },
}).Parse(pageHTML))

// share is part's percentage of total.
func share(part, total float64) string {
	if total <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*part/total)
}

const pageHTML = `<!DOCTYPE html>
<html lang="en" data-report-state="loading">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2733;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.meta{color:#5a6573;font-size:12px} code{background:#f1f3f6;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;margin:6px 0} td,th{padding:3px 12px 3px 0;text-align:left;vertical-align:top}
td.v{font-variant-numeric:tabular-nums}
.pass{color:#17692d;font-weight:600}.fail{color:#a8201a;font-weight:600}
.verdict{border-left:4px solid;padding:6px 12px;margin:10px 0;white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px}
.verdict.ok{border-color:#2e9d4c;background:#f0faf2}.verdict.bad{border-color:#c0392b;background:#fdf0ef}
.charts{display:flex;flex-wrap:wrap;gap:18px}
figure{margin:0;border:1px solid #e1e5ea;border-radius:6px;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
#graph-wrap{overflow-x:auto;border:1px solid #e1e5ea;border-radius:6px}
#report-errors{color:#a8201a}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<div class="meta">generated {{.When}}{{if .Command}} · <code>{{.Command}}</code>{{end}}</div>

<h2>Invariants</h2>
<div class="verdict {{if .Verdict.Pass}}ok{{else}}bad{{end}}" id="verdict">{{if .Verdict.Pass}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}}
{{range .Verdict.Lines}}{{.}}
{{end}}</div>

<h2>Summary</h2>
<table id="summary">{{range .Summary}}<tr><th>{{.Label}}</th><td class="v">{{.Value}}</td></tr>{{end}}</table>

{{with .Bill}}<h2>AWS bill</h2>
<p class="meta">What the run used, priced at {{.Region}} list prices of {{.PricesAsOf}} (internal/sale/bill): {{usd .Total}} in all, {{usd .PerBooking}} per booking ({{.Bookings}}), {{usd .Per1000Buyers}} per 1,000 buyers ({{.Buyers}}). No free tier; lines marked estimated are sized from typical records, not measured.</p>
<table id="bill"><tr><th>service</th><th>item</th><th>quantity</th><th>unit</th><th>USD</th><th>share</th></tr>{{$total := .Total}}{{range .Lines}}<tr><td>{{.Service}}</td><td>{{.Item}}</td><td class="v">{{quantity .Quantity .Unit}}</td><td>{{.Unit}}</td><td class="v">{{usd .USD}}</td><td class="v">{{share .USD $total}}</td></tr>{{end}}<tr><th colspan="4">total</th><td class="v"><b>{{usd .Total}}</b></td><td></td></tr></table>
<p class="meta" id="bill-dominant">Dominant: {{range $i, $l := .Dominant}}{{if $i}}; {{end}}{{$l.Service}} {{$l.Item}} {{usd $l.USD}} ({{share $l.USD $total}}){{end}}.</p>
{{with $.Usage}}<p class="meta" id="bill-notes">State transitions: {{.StateTransitions}} states entered and {{.TransitionRetries}} retried attempts. DynamoDB: {{.DynamoDB.Calls}} calls, {{.DynamoDB.TransactionItems}} transaction items at two units each, {{.DynamoDB.FailedWrites}} writes refused by their condition and billed all the same; {{printf "%.0f" .DynamoDB.EstimatedUnits}} of the units are estimated from the requests. Lambda's GB-seconds are priced from the local host's wall time per invocation (mean ms): {{range $i, $f := .Functions}}{{if $i}}, {{end}}{{$f.Name}} {{meanMs $f}}{{end}}.</p>{{end}}
<table class="meta" id="prices"><tr><th>price</th><th>USD per unit</th><th>source</th></tr>{{range prices}}<tr><td>{{.Service}}, {{.Item}}</td><td class="v">{{printf "%.10g" .USD}} per {{.Unit}}</td><td>{{.Source}}{{if not .Verified}} (unverified on AWS's page){{end}}</td></tr>{{end}}</table>
{{end}}
<h2>Seats by state over time</h2>
<div class="charts"><figure><canvas id="timeline" width="900" height="300" data-chart="timeline"></canvas></figure></div>

<h2>Alarms</h2>
<p class="meta">The deployment's CloudWatch alarms, evaluated on the stack's clock over the metrics the run published; red marks on the timeline are alarms firing, green ones clearing.</p>
{{if .Alarms}}<table id="alarms"><tr><th>at</th><th>stack time</th><th>alarm</th><th>change</th><th>reason</th></tr>{{range .Alarms}}<tr class="{{if eq .To "ALARM"}}fail{{end}}"><td class="v">{{printf "%.1f" .At}}s</td><td class="v">{{.StackTime}}</td><td>{{.Alarm}}</td><td>{{.From}} → {{.To}}</td><td>{{.Reason}}</td></tr>{{end}}</table>{{else}}<p id="alarms">No alarm changed state.</p>{{end}}

<h2>Latency</h2>
<div class="charts" id="histograms"></div>

<h2>Outcomes</h2>
<div class="charts" id="bars"></div>

<h2>State machine</h2>
<p class="meta">Each box is a state with the number of times executions entered it; each edge's width and number say how many executions took it. Orange edges are Catch routes; dashed grey ones were never taken.</p>
<div id="graph-wrap">{{.GraphSVG}}</div>
<p class="meta" id="console-note">One execution at a time (its graph with the path it took, its event history, its reservation's items, outbox events and ledger, and Redrive) is in the local Step Functions console: the run that wrote this report has stopped its stack, so run <code>go run ./infra/local up</code> and open the console it prints.</p>

<div id="report-errors"></div>
<script id="report-data" type="application/json">{{.Data}}</script>
<script>
(function(){
  var root = document.documentElement;
  var errors = [];
  function fail(msg){
    errors.push(String(msg));
    root.setAttribute('data-report-state','error');
    document.getElementById('report-errors').textContent = 'Report script error: ' + errors.join('; ');
  }
  window.addEventListener('error', function(e){ fail(e.message || e); });
  var palette = {AVAILABLE:'#9aa7b8', HELD:'#f0a030', PAYMENT_PENDING:'#8e6bd1', CONFIRMED:'#2e9d4c', RELEASED:'#c0392b'};
  var extra = ['#2f6db5','#c0562f','#17a2b8','#6c757d','#e83e8c','#20c997'];
  function color(name, i){ return palette[name] || extra[i % extra.length]; }
  function axes(ctx, w, h, pad){
    ctx.strokeStyle = '#888'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(pad.l, pad.t); ctx.lineTo(pad.l, h-pad.b); ctx.lineTo(w-pad.r, h-pad.b); ctx.stroke();
  }
  function niceMax(v){ if (v <= 0) return 1; var p = Math.pow(10, Math.floor(Math.log10(v))); var m = v / p; return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p; }
  function drawTimeline(canvas, states, samples, alarms){
    var ctx = canvas.getContext('2d'), w = canvas.width, h = canvas.height, pad = {l:50, r:150, t:10, b:30};
    ctx.clearRect(0,0,w,h); ctx.font = '12px sans-serif';
    if (!samples.length){ ctx.fillText('no samples', pad.l+10, h/2); return; }
    var tMax = samples[samples.length-1].at || 1, yMax = 0;
    samples.forEach(function(s){ states.forEach(function(st){ yMax = Math.max(yMax, s.counts[st] || 0); }); });
    yMax = niceMax(yMax);
    axes(ctx, w, h, pad);
    ctx.fillStyle = '#333';
    for (var i = 0; i <= 4; i++){ var v = yMax*i/4, y = h-pad.b-(h-pad.t-pad.b)*i/4; ctx.fillText(v % 1 ? v.toFixed(1) : String(v), 4, y+4); ctx.strokeStyle='#eee'; ctx.beginPath(); ctx.moveTo(pad.l+1,y); ctx.lineTo(w-pad.r,y); ctx.stroke(); }
    for (var j = 0; j <= 5; j++){ var t = tMax*j/5, x = pad.l+(w-pad.l-pad.r)*j/5; ctx.fillText(t.toFixed(1)+'s', x-12, h-10); }
    states.forEach(function(st, k){
      ctx.strokeStyle = color(st, k); ctx.lineWidth = 2; ctx.beginPath();
      samples.forEach(function(s, i){
        var x = pad.l + (w-pad.l-pad.r) * (s.at / tMax), y = h - pad.b - (h-pad.t-pad.b) * ((s.counts[st]||0) / yMax);
        if (i === 0) ctx.moveTo(x,y); else ctx.lineTo(x,y);
      });
      ctx.stroke();
      ctx.fillStyle = color(st, k); ctx.fillRect(w-pad.r+12, pad.t+18*k, 12, 12);
      ctx.fillStyle = '#333'; ctx.fillText(st + ' ' + (samples[samples.length-1].counts[st]||0), w-pad.r+30, pad.t+18*k+10);
    });
    (alarms || []).forEach(function(a, i){
      if (a.to !== 'ALARM' && a.from !== 'ALARM') return;
      var x = pad.l + (w-pad.l-pad.r) * Math.min(a.at / tMax, 1);
      ctx.strokeStyle = a.to === 'ALARM' ? '#c0392b' : '#2e9d4c'; ctx.lineWidth = 1; ctx.setLineDash([4,3]);
      ctx.beginPath(); ctx.moveTo(x, pad.t); ctx.lineTo(x, h-pad.b); ctx.stroke(); ctx.setLineDash([]);
      if (a.to === 'ALARM'){ ctx.fillStyle = '#c0392b'; ctx.fillText(a.alarm, x+3, pad.t+12+12*(i%6)); }
    });
  }
  function drawBars(canvas, bars, fill, note){
    var ctx = canvas.getContext('2d'), w = canvas.width, h = canvas.height, pad = {l:40, r:10, t:note?22:10, b:58};
    ctx.clearRect(0,0,w,h); ctx.font = '11px sans-serif';
    if (note){ ctx.fillStyle='#333'; ctx.fillText(note, pad.l, 14); }
    if (!bars.length){ ctx.fillText('no data', pad.l+10, h/2); return; }
    var yMax = niceMax(Math.max.apply(null, bars.map(function(b){ return b.n; })));
    axes(ctx, w, h, pad);
    var bw = (w-pad.l-pad.r) / bars.length;
    bars.forEach(function(b, i){
      var bh = (h-pad.t-pad.b) * b.n / yMax, x = pad.l + i*bw + 2, y = h-pad.b-bh;
      ctx.fillStyle = fill || color(b.label, i); ctx.fillRect(x, y, Math.max(bw-4,1), bh);
      ctx.fillStyle = '#333'; ctx.fillText(String(b.n), x, y-3);
      ctx.save(); ctx.translate(x+bw/2, h-pad.b+6); ctx.rotate(Math.PI/5); ctx.fillText(b.label, 0, 6); ctx.restore();
    });
    ctx.fillText(String(yMax), 4, pad.t+8);
  }
  function figure(parent, title, id, w, h){
    var f = document.createElement('figure'), c = document.createElement('figcaption'), cv = document.createElement('canvas');
    c.textContent = title; cv.width = w; cv.height = h; cv.id = id; cv.setAttribute('data-chart', id);
    f.appendChild(c); f.appendChild(cv); parent.appendChild(f); return cv;
  }
  try {
    var data = JSON.parse(document.getElementById('report-data').textContent);
    var drawn = 0;
    drawTimeline(document.getElementById('timeline'), data.seatStates || [], data.timeline || [], data.alarms || []); drawn++;
    (data.histograms || []).forEach(function(hg, i){
      var note = hg.n ? ('n=' + hg.n + '  p50 ' + hg.p50.toFixed(1) + hg.unit + '  p95 ' + hg.p95.toFixed(1) + hg.unit + '  p99 ' + hg.p99.toFixed(1) + hg.unit) : 'no samples';
      drawBars(figure(document.getElementById('histograms'), hg.title, 'hist-'+i, 440, 240), hg.buckets || [], '#2f6db5', note); drawn++;
    });
    (data.bars || []).forEach(function(bc, i){
      drawBars(figure(document.getElementById('bars'), bc.title, 'bars-'+i, 440, 260), bc.bars || [], null, ''); drawn++;
    });
    if (document.getElementById('graph')) drawn++;
    root.setAttribute('data-charts', String(drawn));
    if (!errors.length) root.setAttribute('data-report-state', 'rendered');
  } catch (e) { fail(e && e.stack || e); }
})();
</script>
</body>
</html>
`
