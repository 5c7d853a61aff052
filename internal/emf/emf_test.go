package emf_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
)

type line struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	fields map[string]any
}

func parse(t *testing.T, out *bytes.Buffer) []line {
	t.Helper()
	var lines []line
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if err := json.Unmarshal(sc.Bytes(), &l.fields); err != nil {
			t.Fatal(err)
		}
		if len(l.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("line %q: want one metric directive", sc.Text())
		}
		// Every dimension and metric named in the envelope must be a member of the root.
		d := l.AWS.CloudWatchMetrics[0]
		for _, set := range d.Dimensions {
			for _, name := range set {
				if _, ok := l.fields[name].(string); !ok {
					t.Fatalf("line %q: dimension %s is not a string member", sc.Text(), name)
				}
			}
		}
		for _, m := range d.Metrics {
			if _, ok := l.fields[m.Name].(float64); !ok {
				t.Fatalf("line %q: metric %s is not a number member", sc.Text(), m.Name)
			}
		}
		lines = append(lines, l)
	}
	return lines
}

var fixed = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func TestOneLinePerCount(t *testing.T) {
	var out bytes.Buffer
	r := emf.New(&out, "Seatsaga", emf.WithClock(func() time.Time { return fixed }),
		emf.WithDimensions(metrics.Dim{Name: "Service", Value: "claim"}))
	r.Count("ConditionalCheckFailed", 2, metrics.Dim{Name: "op", Value: "claim"})
	r.Count("Throttled", 1)

	lines := parse(t, &out)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2", len(lines))
	}
	first := lines[0]
	d := first.AWS.CloudWatchMetrics[0]
	if first.AWS.Timestamp != fixed.UnixMilli() || d.Namespace != "Seatsaga" {
		t.Fatalf("envelope %+v", first.AWS)
	}
	// The dimensionless set is what the stack's alarms read: the total over every series.
	if !reflect.DeepEqual(d.Dimensions, [][]string{{"Service", "op"}, {}}) {
		t.Fatalf("dimensions %v", d.Dimensions)
	}
	if len(d.Metrics) != 1 || d.Metrics[0].Name != "ConditionalCheckFailed" || d.Metrics[0].Unit != "Count" {
		t.Fatalf("metrics %+v", d.Metrics)
	}
	if first.fields["ConditionalCheckFailed"] != 2.0 || first.fields["op"] != "claim" || first.fields["Service"] != "claim" {
		t.Fatalf("fields %v", first.fields)
	}
	if got := lines[1].AWS.CloudWatchMetrics[0].Dimensions; !reflect.DeepEqual(got, [][]string{{"Service"}, {}}) {
		t.Fatalf("default dimensions only: %v", got)
	}
}

func TestNoDimensionsIsOneEmptySet(t *testing.T) {
	var out bytes.Buffer
	emf.New(&out, "N").Count("Outcome", 1)
	l := parse(t, &out)[0]
	if got := l.AWS.CloudWatchMetrics[0].Dimensions; !reflect.DeepEqual(got, [][]string{{}}) {
		t.Fatalf("dimensions %v, want [[]]", got)
	}
}

func TestBufferedSumsAndFlushesPerDimensionSet(t *testing.T) {
	var out bytes.Buffer
	r := emf.New(&out, "Seatsaga", emf.Buffered())
	r.Count("Outcome", 1, metrics.Dim{Name: "step", Value: "claim"}, metrics.Dim{Name: "outcome", Value: "ok"})
	r.Count("Outcome", 1, metrics.Dim{Name: "outcome", Value: "ok"}, metrics.Dim{Name: "step", Value: "claim"})
	r.Count("Latency", 5, metrics.Dim{Name: "step", Value: "claim"}, metrics.Dim{Name: "outcome", Value: "ok"})
	r.Count("Outcome", 1, metrics.Dim{Name: "step", Value: "confirm"}, metrics.Dim{Name: "outcome", Value: "ok"})
	if out.Len() != 0 {
		t.Fatalf("buffered recorder wrote before Flush: %s", out.String())
	}
	r.Flush()
	lines := parse(t, &out)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want one per dimension set (2)", len(lines))
	}
	claim := lines[0]
	if claim.fields["step"] != "claim" || claim.fields["Outcome"] != 2.0 || claim.fields["Latency"] != 5.0 {
		t.Fatalf("claim line %v", claim.fields)
	}
	if n := len(claim.AWS.CloudWatchMetrics[0].Metrics); n != 2 {
		t.Fatalf("claim line has %d metrics, want 2", n)
	}
	r.Flush()
	if out.Len() != 0 {
		t.Fatalf("second Flush wrote again: %s", out.String())
	}
}

func TestBufferedSplitsAtTheMetricLimit(t *testing.T) {
	var out bytes.Buffer
	r := emf.New(&out, "N", emf.Buffered())
	for i := 0; i < emf.MaxMetricsPerObject+5; i++ {
		r.Count(fmt.Sprintf("m%03d", i), 1)
	}
	r.Flush()
	lines := parse(t, &out)
	if len(lines) != 2 || len(lines[0].AWS.CloudWatchMetrics[0].Metrics) != emf.MaxMetricsPerObject ||
		len(lines[1].AWS.CloudWatchMetrics[0].Metrics) != 5 {
		t.Fatalf("got %d lines", len(lines))
	}
}

func TestDimensionNamedLikeTheMetricIsDropped(t *testing.T) {
	var out bytes.Buffer
	emf.New(&out, "N").Count("step", 1, metrics.Dim{Name: "step", Value: "claim"}, metrics.Dim{Name: "", Value: "x"})
	l := parse(t, &out)[0]
	if got := l.AWS.CloudWatchMetrics[0].Dimensions; !reflect.DeepEqual(got, [][]string{{}}) {
		t.Fatalf("dimensions %v", got)
	}
	if l.fields["step"] != 1.0 {
		t.Fatalf("metric value lost: %v", l.fields)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorsGoToTheHandlerNotTheCaller(t *testing.T) {
	var got error
	emf.New(failingWriter{}, "N", emf.WithErrorHandler(func(err error) { got = err })).Count("x", 1)
	if got == nil {
		t.Fatal("write error not reported")
	}
}

func TestConcurrentCountsProduceWholeLines(t *testing.T) {
	var out bytes.Buffer
	r := emf.New(&out, "N")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				r.Count("x", 1, metrics.Dim{Name: "g", Value: "v"})
			}
		}()
	}
	wg.Wait()
	if n := len(parse(t, &out)); n != 400 {
		t.Fatalf("got %d lines, want 400", n)
	}
}

// units maps each metric the line declares to its unit.
func (l line) units() map[string]string {
	out := map[string]string{}
	for _, m := range l.AWS.CloudWatchMetrics[0].Metrics {
		out[m.Name] = m.Unit
	}
	return out
}

func TestGaugesDeclareTheirOwnUnit(t *testing.T) {
	var out bytes.Buffer
	r := emf.New(&out, "Seatsaga", emf.WithDimensions(metrics.Dim{Name: "Service", Value: "sweeper"}))
	r.Gauge("OldestAgeSeconds", 300, metrics.UnitSeconds)
	r.Gauge("Backlog", 3, metrics.UnitCount)
	r.Gauge("Ratio", 0.5, "")
	r.Count("Actions", 2)

	lines := parse(t, &out)
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want one per call (4)", len(lines))
	}
	want := []struct {
		name, unit string
		value      float64
	}{{"OldestAgeSeconds", "Seconds", 300}, {"Backlog", "Count", 3}, {"Ratio", "None", 0.5}, {"Actions", "Count", 2}}
	for i, w := range want {
		l := lines[i]
		if got := l.units(); len(got) != 1 || got[w.name] != w.unit {
			t.Errorf("line %d declares %v, want %s in %s", i, got, w.name, w.unit)
		}
		if l.fields[w.name] != w.value {
			t.Errorf("line %d: %s = %v, want %v", i, w.name, l.fields[w.name], w.value)
		}
		// Alarms read the dimensionless series, gauges included.
		if got := l.AWS.CloudWatchMetrics[0].Dimensions; !reflect.DeepEqual(got, [][]string{{"Service"}, {}}) {
			t.Errorf("line %d: dimensions %v", i, got)
		}
	}
}

func TestBufferedKeepsAGaugesLastValueAndSumsCounts(t *testing.T) {
	var out bytes.Buffer
	r := emf.New(&out, "Seatsaga", emf.Buffered())
	r.Gauge("OldestAgeSeconds", 600, metrics.UnitSeconds)
	r.Gauge("OldestAgeSeconds", 120, metrics.UnitSeconds)
	r.Gauge("Backlog", 4, metrics.UnitCount)
	r.Gauge("Backlog", 1, metrics.UnitCount)
	r.Count("Actions", 1)
	r.Count("Actions", 1)
	r.Flush()

	lines := parse(t, &out)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want one for the one dimension set", len(lines))
	}
	l := lines[0]
	if l.fields["OldestAgeSeconds"] != 120.0 || l.fields["Backlog"] != 1.0 || l.fields["Actions"] != 2.0 {
		t.Fatalf("gauges must keep their last value and counts add up: %v", l.fields)
	}
	if got, want := l.units(), map[string]string{"OldestAgeSeconds": "Seconds", "Backlog": "Count", "Actions": "Count"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("units %v, want %v", got, want)
	}
}

func TestANonFiniteGaugeIsReportedAndSparesTheRestOfItsLine(t *testing.T) {
	var out bytes.Buffer
	var errs []error
	r := emf.New(&out, "N", emf.Buffered(), emf.WithErrorHandler(func(err error) { errs = append(errs, err) }))
	r.Count("Actions", 1)
	r.Gauge("Age", math.NaN(), metrics.UnitSeconds)
	r.Gauge("Other", math.Inf(1), metrics.UnitSeconds)
	r.Flush()
	lines := parse(t, &out)
	if len(errs) != 2 || len(lines) != 1 || lines[0].fields["Actions"] != 1.0 {
		t.Fatalf("errors %v, lines %d", errs, len(lines))
	}
	if _, ok := lines[0].fields["Age"]; ok {
		t.Fatalf("a NaN gauge was written: %v", lines[0].fields)
	}
}

func BenchmarkCount(b *testing.B) {
	r := emf.New(io.Discard, "N", emf.WithDimensions(metrics.Dim{Name: "Service", Value: "claim"}))
	for i := 0; i < b.N; i++ {
		r.Count("ConditionalCheckFailed", 1, metrics.Dim{Name: "op", Value: "claim"})
	}
}
