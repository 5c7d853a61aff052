// Package emf is a metrics.Recorder that writes CloudWatch embedded metric format (EMF): one
// JSON object per line, which CloudWatch Logs turns into metrics without any API call from the
// function. On Lambda the writer is stdout.
//
// A line looks like
//
//	{"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Seatsaga",
//	  "Dimensions":[["Service","step"]],"Metrics":[{"Name":"ConditionalCheckFailed","Unit":"Count"}]}]},
//	 "Service":"claim","step":"claim","ConditionalCheckFailed":1}
//
// Each metric is declared with its own unit: a count (Count) is in "Count", a gauge (Gauge) in
// the unit its producer gives, e.g. "Seconds" for an age, so that CloudWatch stores it as such
// and an alarm's threshold means what it says.
//
// By default every Count and Gauge writes its own line. A Buffered recorder instead keeps them
// in memory and writes one line per dimension set on Flush, which a handler calls once per
// invocation: counts are summed, a gauge keeps its last value (a level summed over two
// readings would report a backlog that never existed).
package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// Limits CloudWatch puts on one EMF object.
const (
	MaxDimensions       = 30
	MaxMetricsPerObject = 100
)

// UnitCount is the unit of every count this recorder writes; a gauge carries its own.
const UnitCount = string(metrics.UnitCount)

// UnitNone is what CloudWatch calls a value without a unit; a gauge given no unit gets it.
const UnitNone = "None"

// Recorder writes EMF lines to an io.Writer. It is safe for concurrent use.
type Recorder struct {
	w         io.Writer
	namespace string
	now       func() time.Time
	defaults  []metrics.Dim
	buffered  bool
	onError   func(error)

	mu      sync.Mutex
	pending map[string]*pendingSet // dimension-set key → metrics
}

type pendingSet struct {
	dims   []metrics.Dim
	values map[string]value
}

// value is one metric of a line: its number and the unit it is declared with. gauge marks a
// level, which a Buffered recorder replaces instead of adding to.
type value struct {
	n     float64
	unit  string
	gauge bool
}

// Option configures a Recorder.
type Option func(*Recorder)

// WithDimensions adds dimensions to every metric, e.g. Service=<function name>.
func WithDimensions(dims ...metrics.Dim) Option {
	return func(r *Recorder) { r.defaults = append(r.defaults, dims...) }
}

// WithClock sets the clock that stamps each line.
func WithClock(now func() time.Time) Option { return func(r *Recorder) { r.now = now } }

// Buffered makes Count sum, and Gauge keep its last value, in memory until Flush.
func Buffered() Option { return func(r *Recorder) { r.buffered = true } }

// WithErrorHandler receives write and encoding errors; metrics never fail the caller.
func WithErrorHandler(f func(error)) Option { return func(r *Recorder) { r.onError = f } }

// New returns a Recorder writing to w under namespace.
func New(w io.Writer, namespace string, opts ...Option) *Recorder {
	r := &Recorder{w: w, namespace: namespace, now: time.Now, onError: func(error) {}, pending: map[string]*pendingSet{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

var _ metrics.Recorder = (*Recorder)(nil)

// Count implements metrics.Recorder: the metric is declared in "Count".
func (r *Recorder) Count(name string, n int64, dims ...metrics.Dim) {
	r.record(name, value{n: float64(n), unit: UnitCount}, dims)
}

// Gauge implements metrics.Recorder: the metric is declared in unit ("None" when empty). A
// value JSON cannot carry (NaN, ±Inf) goes to the error handler and is dropped alone, rather
// than failing the encoding of the line it would share with other metrics.
func (r *Recorder) Gauge(name string, n float64, unit metrics.Unit, dims ...metrics.Dim) {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		r.onError(fmt.Errorf("emf: gauge %s: %v is not a number CloudWatch accepts", name, n))
		return
	}
	u := string(unit)
	if u == "" {
		u = UnitNone
	}
	r.record(name, value{n: n, unit: u, gauge: true}, dims)
}

// record writes v at once, or keeps it until Flush: a count is added to what its name holds, a
// gauge replaces it. A name recorded both ways before one Flush keeps the kind it was last
// recorded as; producers give each name one kind.
func (r *Recorder) record(name string, v value, dims []metrics.Dim) {
	all := r.dimensions(name, dims)
	if !r.buffered {
		r.write(all, map[string]value{name: v})
		return
	}
	key := metrics.Key("", all...)
	r.mu.Lock()
	set := r.pending[key]
	if set == nil {
		set = &pendingSet{dims: all, values: map[string]value{}}
		r.pending[key] = set
	}
	if prev, ok := set.values[name]; ok && !v.gauge && !prev.gauge {
		v.n += prev.n
	}
	set.values[name] = v
	r.mu.Unlock()
}

// Flush writes what a Buffered recorder holds, one line per dimension set (split at
// MaxMetricsPerObject), and empties it. It does nothing for an unbuffered recorder.
func (r *Recorder) Flush() {
	r.mu.Lock()
	pending := r.pending
	r.pending = map[string]*pendingSet{}
	r.mu.Unlock()
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set := pending[k]
		names := make([]string, 0, len(set.values))
		for n := range set.values {
			names = append(names, n)
		}
		sort.Strings(names)
		for len(names) > 0 {
			chunk := names[:min(len(names), MaxMetricsPerObject)]
			names = names[len(chunk):]
			values := make(map[string]value, len(chunk))
			for _, n := range chunk {
				values[n] = set.values[n]
			}
			r.write(set.dims, values)
		}
	}
}

// dimensions merges the defaults with the call's dimensions (the call wins on a clash), drops
// empty names and names equal to the metric's (they would share one JSON member), sorts them,
// and keeps at most MaxDimensions.
func (r *Recorder) dimensions(metric string, dims []metrics.Dim) []metrics.Dim {
	byName := map[string]string{}
	for _, d := range r.defaults {
		byName[d.Name] = d.Value
	}
	for _, d := range dims {
		byName[d.Name] = d.Value
	}
	out := make([]metrics.Dim, 0, len(byName))
	for n, v := range byName {
		if n == "" || n == metric || n == "_aws" {
			continue
		}
		out = append(out, metrics.Dim{Name: n, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) > MaxDimensions {
		out = out[:MaxDimensions]
	}
	return out
}

// The envelope, as CloudWatch documents it.
type metadata struct {
	Timestamp         int64             `json:"Timestamp"`
	CloudWatchMetrics []metricDirective `json:"CloudWatchMetrics"`
}

type metricDirective struct {
	Namespace  string             `json:"Namespace"`
	Dimensions [][]string         `json:"Dimensions"`
	Metrics    []metricDefinition `json:"Metrics"`
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

func (r *Recorder) write(dims []metrics.Dim, values map[string]value) {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	dimNames := make([]string, 0, len(dims))
	line := make(map[string]any, len(dims)+len(values)+1)
	for _, d := range dims {
		if _, clash := values[d.Name]; clash {
			continue
		}
		dimNames = append(dimNames, d.Name)
		line[d.Name] = d.Value
	}
	defs := make([]metricDefinition, 0, len(names))
	for _, n := range names {
		defs = append(defs, metricDefinition{Name: n, Unit: values[n].unit})
		line[n] = values[n].n
	}
	// Besides the series per dimension set, every metric is also published with no dimensions,
	// so that one alarm watches the total across functions, steps and operations.
	dimensionSets := [][]string{dimNames}
	if len(dimNames) > 0 {
		dimensionSets = append(dimensionSets, []string{})
	}
	line["_aws"] = metadata{
		Timestamp: r.now().UnixMilli(),
		CloudWatchMetrics: []metricDirective{{
			Namespace:  r.namespace,
			Dimensions: dimensionSets,
			Metrics:    defs,
		}},
	}
	b, err := json.Marshal(line)
	if err != nil {
		r.onError(fmt.Errorf("emf: encode %s: %w", strings.Join(names, ","), err))
		return
	}
	b = append(b, '\n')
	r.mu.Lock()
	_, err = r.w.Write(b)
	r.mu.Unlock()
	if err != nil {
		r.onError(fmt.Errorf("emf: write: %w", err))
	}
}
