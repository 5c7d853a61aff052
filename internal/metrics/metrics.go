// Package metrics is the small port through which handlers and adapters count what operators
// watch: conditional-check failures, transaction conflicts, throttles, outcomes per step. The
// port is an interface so that domain and adapter code stay free of any metrics backend.
package metrics

import (
	"sort"
	"strings"
	"sync"
)

// Recorder counts named events. Dimensions are low-cardinality labels (step, outcome); never
// reservation ids or anything personal.
type Recorder interface {
	Count(name string, value int64, dims ...Dim)
}

// Dim is one dimension of a metric.
type Dim struct {
	Name, Value string
}

// Discard drops every metric; for callers that have no recorder.
type Discard struct{}

// Count implements Recorder.
func (Discard) Count(string, int64, ...Dim) {}

// Memory keeps counts in memory, keyed by name and dimensions; tests and the local stack read it.
type Memory struct {
	mu     sync.Mutex
	counts map[string]int64
}

// NewMemory returns an empty in-memory recorder.
func NewMemory() *Memory { return &Memory{counts: map[string]int64{}} }

// Count implements Recorder.
func (m *Memory) Count(name string, value int64, dims ...Dim) {
	key := Key(name, dims...)
	m.mu.Lock()
	m.counts[key] += value
	m.mu.Unlock()
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

// Snapshot returns a copy of every count.
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
