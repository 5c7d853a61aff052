package cloudwatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Limits CloudWatch Logs applies when it extracts metrics from an embedded-metric-format event.
const (
	// MaxEventBytes is the largest log event CloudWatch Logs accepts; a longer line is
	// dropped, and the writer never buffers more than this of a line without its newline.
	MaxEventBytes = 1 << 20
	// MaxDimensionsPerSet and MaxMetricsPerDirective bound one directive.
	MaxDimensionsPerSet    = 30
	MaxMetricsPerDirective = 100
	// MaxValuesPerMetric bounds the array of values one metric member may carry.
	MaxValuesPerMetric = 100
)

// UnitNone is the unit of a metric whose definition names none, as CloudWatch records it.
const UnitNone = "None"

// ErrNotEMF reports a log line that is not an embedded-metric-format document: it is a plain
// log line, which CloudWatch Logs keeps as a log and turns into no metric.
var ErrNotEMF = errors.New("not an embedded metric format document")

// EMFWriter is what CloudWatch Logs does with a function's stdout: it reads the output line by
// line and turns every embedded-metric-format line into data points of the store, one per
// metric, dimension set and value. Other lines (the functions' JSON logs) are ignored, and so
// are malformed EMF lines, which CloudWatch would only count in AWS/Logs. It is safe for
// concurrent use; a line written in pieces is parsed once its newline arrives.
type EMFWriter struct {
	store *Store
	// onReject is told about EMF lines that could not be turned into metrics.
	onReject func(line []byte, err error)

	mu      sync.Mutex
	partial []byte
	// overflow is set while the rest of a line longer than MaxEventBytes is being skipped.
	overflow bool
}

// NewEMFWriter returns a writer that puts what it extracts into store. onReject, when not nil,
// receives each line that looked like EMF but could not be extracted, and why.
func NewEMFWriter(store *Store, onReject func(line []byte, err error)) *EMFWriter {
	return &EMFWriter{store: store, onReject: onReject}
}

// Write implements io.Writer. It never fails: a log sink that failed would make the function's
// metrics the cause of its errors.
func (w *EMFWriter) Write(p []byte) (int, error) {
	n := len(p)
	var lines [][]byte
	w.mu.Lock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.keep(p)
			break
		}
		chunk := p[:i]
		p = p[i+1:]
		if w.overflow {
			w.overflow = false
			continue
		}
		if len(w.partial) > 0 {
			line := append(w.partial, chunk...)
			w.partial = nil
			if len(line) <= MaxEventBytes {
				lines = append(lines, line)
			}
			continue
		}
		if len(chunk) <= MaxEventBytes {
			// The caller may reuse p once Write returns; lines are parsed before that.
			lines = append(lines, chunk)
		}
	}
	w.mu.Unlock()
	// Parsing happens outside the lock: one function's burst of lines does not hold up
	// another's, and the store has its own lock.
	for _, line := range lines {
		w.ingest(line)
	}
	return n, nil
}

// keep buffers the start of a line whose newline has not arrived; w.mu is held.
func (w *EMFWriter) keep(p []byte) {
	if w.overflow {
		return
	}
	if len(w.partial)+len(p) > MaxEventBytes {
		w.partial, w.overflow = nil, true
		return
	}
	w.partial = append(w.partial, p...)
}

// Flush parses a last line that was written without its newline, as CloudWatch Logs ends an
// event when the stream closes.
func (w *EMFWriter) Flush() {
	w.mu.Lock()
	line := w.partial
	w.partial, w.overflow = nil, false
	w.mu.Unlock()
	if len(line) > 0 {
		w.ingest(line)
	}
}

func (w *EMFWriter) ingest(line []byte) {
	data, err := ParseEMF(line)
	if err != nil {
		if !errors.Is(err, ErrNotEMF) && w.onReject != nil {
			w.onReject(line, err)
		}
		return
	}
	for _, d := range data {
		w.store.Put(d)
	}
}

// ParseEMF extracts the data points of one log line as CloudWatch Logs does: for every metric
// directive of _aws.CloudWatchMetrics, every metric it defines and every dimension set it
// lists (the empty set [] among them, published with no dimensions), one Datum per value of
// the root member named after the metric (a number, or an array of numbers), stamped with
// _aws.Timestamp (milliseconds since the epoch) and the metric's Unit (UnitNone when absent).
//
// A line that is not a JSON object with an _aws member is ErrNotEMF. A line that has one but
// breaks the specification (no timestamp, no namespace, a dimension that names no string
// member, a value that is not numeric) is rejected whole with a reason, as CloudWatch Logs
// rejects it: nothing of it becomes a metric.
func ParseEMF(line []byte) ([]Datum, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, ErrNotEMF
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(line, &root); err != nil {
		if bytes.Contains(line, []byte(`"_aws"`)) {
			return nil, fmt.Errorf("emf: the line is not valid JSON: %w", err)
		}
		return nil, ErrNotEMF
	}
	raw, ok := root["_aws"]
	if !ok {
		return nil, ErrNotEMF
	}
	var meta struct {
		Timestamp         *json.Number `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string      `json:"Namespace"`
			Dimensions [][]string  `json:"Dimensions"`
			Metrics    []emfMetric `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("emf: _aws: %w", err)
	}
	if meta.Timestamp == nil {
		return nil, errors.New("emf: _aws.Timestamp is missing")
	}
	ms, err := meta.Timestamp.Float64()
	if err != nil || ms < 0 || math.IsInf(ms, 0) {
		return nil, fmt.Errorf("emf: _aws.Timestamp %s is not a time in milliseconds", meta.Timestamp.String())
	}
	at := time.UnixMilli(int64(ms)).UTC()
	if meta.CloudWatchMetrics == nil {
		return nil, errors.New("emf: _aws.CloudWatchMetrics is missing")
	}
	memo := map[string]string{}
	str := func(name string) (string, bool) {
		if v, ok := memo[name]; ok {
			return v, true
		}
		member, ok := root[name]
		if !ok {
			return "", false
		}
		var v string
		if json.Unmarshal(member, &v) != nil {
			return "", false
		}
		memo[name] = v
		return v, true
	}

	var out []Datum
	for i, dir := range meta.CloudWatchMetrics {
		if dir.Namespace == "" || len(dir.Namespace) > 255 {
			return nil, fmt.Errorf("emf: directive %d: the namespace must be 1 to 255 characters", i)
		}
		if len(dir.Metrics) > MaxMetricsPerDirective {
			return nil, fmt.Errorf("emf: directive %d: %d metrics, at most %d", i, len(dir.Metrics), MaxMetricsPerDirective)
		}
		sets := dir.Dimensions
		if len(sets) == 0 {
			// A directive listing no dimension set publishes its metrics without dimensions.
			sets = [][]string{{}}
		}
		dimSets := make([]map[string]string, 0, len(sets))
		for _, set := range sets {
			if len(set) > MaxDimensionsPerSet {
				return nil, fmt.Errorf("emf: directive %d: a dimension set of %d, at most %d", i, len(set), MaxDimensionsPerSet)
			}
			dims := make(map[string]string, len(set))
			for _, name := range set {
				v, ok := str(name)
				if !ok {
					return nil, fmt.Errorf("emf: directive %d: dimension %q names no string member", i, name)
				}
				dims[name] = v
			}
			dimSets = append(dimSets, dims)
		}
		for _, m := range dir.Metrics {
			if m.Name == "" {
				return nil, fmt.Errorf("emf: directive %d: a metric without a name", i)
			}
			member, ok := root[m.Name]
			if !ok {
				return nil, fmt.Errorf("emf: metric %q has no member with its value", m.Name)
			}
			values, err := emfValues(member)
			if err != nil {
				return nil, fmt.Errorf("emf: metric %q: %w", m.Name, err)
			}
			unit := m.Unit
			if unit == "" {
				unit = UnitNone
			}
			for _, dims := range dimSets {
				for _, v := range values {
					out = append(out, Datum{Namespace: dir.Namespace, Name: m.Name, Dimensions: dims, Value: v, Unit: unit, Time: at})
				}
			}
		}
	}
	return out, nil
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// emfValues reads a metric member: one number, or an array of 1 to MaxValuesPerMetric numbers.
// JSON null is no number (encoding/json would read it as zero).
func emfValues(member json.RawMessage) ([]float64, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(member))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	bad := fmt.Errorf("the value %s is neither a number nor an array of numbers", clipJSON(member))
	number := func(x any) (float64, bool) {
		n, ok := x.(json.Number)
		if !ok {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	if f, ok := number(v); ok {
		return []float64{f}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, bad
	}
	if len(list) == 0 || len(list) > MaxValuesPerMetric {
		return nil, fmt.Errorf("%d values, want 1 to %d", len(list), MaxValuesPerMetric)
	}
	out := make([]float64, len(list))
	for i, x := range list {
		f, ok := number(x)
		if !ok {
			return nil, bad
		}
		out[i] = f
	}
	return out, nil
}

func clipJSON(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
