// Package metrics is the small port through which handlers and adapters count what operators
// watch: conditional-check failures, transaction conflicts, throttles, outcomes per step, and
// the figures a scheduled job measures (a backlog, the age of its oldest item). The port is an
// interface so that domain and adapter code stay free of any metrics backend.
package metrics

import (
	"sort"
	"strings"
	"sync"
)

// Recorder counts named events and publishes measured values. Dimensions are low-cardinality
// labels (step, outcome); never reservation ids or anything personal.
//
// Count and Gauge differ in how values of one period combine: counts are increments and add
// up, while a gauge is a level measured at one moment (how many holds are unreleased, how old
// the oldest is), so adding two readings would report a backlog that never existed. Gauge is
// part of the interface rather than an optional extension so that every recorder has to say
// what it does with a level, instead of a caller silently falling back to Count.
type Recorder interface {
	Count(name string, value int64, dims ...Dim)
	// Gauge publishes value, in unit, as the level of name now. A recorder never sums gauges:
	// it keeps the last value or publishes each one as its own data point.
	Gauge(name string, value float64, unit Unit, dims ...Dim)
}

// Unit is the unit of a published value, spelled as CloudWatch names it, so that an alarm's
// threshold is read in the unit the producer meant.
type Unit string

// The units seatsaga publishes in.
const (
	// UnitCount is a number of things: events counted, or items in a backlog.
	UnitCount Unit = "Count"
	// UnitSeconds is a duration, e.g. the age of the oldest item in a backlog.
	UnitSeconds Unit = "Seconds"
)

// Dim is one dimension of a metric.
type Dim struct {
	Name, Value string
}

var (
	_ Recorder = Discard{}
	_ Recorder = (*Memory)(nil)
)

// Discard drops every metric; for callers that have no recorder.
type Discard struct{}

// Count implements Recorder.
func (Discard) Count(string, int64, ...Dim) {}

// Gauge implements Recorder.
func (Discard) Gauge(string, float64, Unit, ...Dim) {}

// Memory keeps counts and gauges in memory, keyed by name and dimensions; tests and the local
// stack read it. Counts add up; a gauge keeps its last reading.
type Memory struct {
	mu     sync.Mutex
	counts map[string]int64
	gauges map[string]Reading
}

// Reading is a gauge's last published value and its unit.
type Reading struct {
	Value float64
	Unit  Unit
}

// NewMemory returns an empty in-memory recorder.
func NewMemory() *Memory { return &Memory{counts: map[string]int64{}, gauges: map[string]Reading{}} }

// Count implements Recorder.
func (m *Memory) Count(name string, value int64, dims ...Dim) {
	key := Key(name, dims...)
	m.mu.Lock()
	m.counts[key] += value
	m.mu.Unlock()
}

// Gauge implements Recorder: the reading replaces the previous one of the same name and
// dimensions.
func (m *Memory) Gauge(name string, value float64, unit Unit, dims ...Dim) {
	key := Key(name, dims...)
	m.mu.Lock()
	m.gauges[key] = Reading{Value: value, Unit: unit}
	m.mu.Unlock()
}

// Last returns the last reading of a gauge for a name and exact set of dimensions, and whether
// one was published at all (a gauge left out and one published as 0 are different things to
// an alarm that treats missing data as breaching).
func (m *Memory) Last(name string, dims ...Dim) (Reading, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.gauges[Key(name, dims...)]
	return r, ok
}

// Get returns the count for a name and exact set of dimensions.
func (m *Memory) Get(name string, dims ...Dim) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[Key(name, dims...)]
}

// Total returns the count for a name summed over every dimension set.
func (m *Memory) Total(name string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum int64
	for k, v := range m.counts {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// Snapshot returns a copy of every count (gauges are read with Last).
func (m *Memory) Snapshot() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// Key renders a metric name with its dimensions in a stable order: name{a=1,b=2}.
func Key(name string, dims ...Dim) string {
	if len(dims) == 0 {
		return name
	}
	sorted := append([]Dim(nil), dims...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, d := range sorted {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.Name)
		b.WriteByte('=')
		b.WriteString(d.Value)
	}
	b.WriteByte('}')
	return b.String()
}
