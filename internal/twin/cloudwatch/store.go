// Package cloudwatch is the local stack's CloudWatch: it keeps the metric data points the
// twin's services publish (the functions' embedded-metric-format lines, and the AWS metrics
// the twin produces itself: executions, Lambda invocations, errors and throttles, queue depth
// and age, stream lag, API answers) and evaluates the deployment's alarm definitions
// (internal/alarms) over them on the stack's clock.
package cloudwatch

import (
	"sort"
	"strings"
	"sync"
	"time"
)

// Datum is one data point: a value of a metric series (namespace, name, dimensions) at a time.
type Datum struct {
	Namespace  string
	Name       string
	Dimensions map[string]string
	Value      float64
	Unit       string
	Time       time.Time
}

// Series identifies a metric series: its namespace, name and exact dimension set, as
// CloudWatch does (a datum with dimensions {A} is not in the series without dimensions).
type Series struct {
	Namespace, Name string
	// Dimensions is the canonical "k=v,k=v" form of the dimension set, sorted by key.
	Dimensions string
}

// SeriesOf is the series a namespace, name and dimension set name.
func SeriesOf(namespace, name string, dims map[string]string) Series {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + dims[k]
	}
	return Series{Namespace: namespace, Name: name, Dimensions: strings.Join(parts, ",")}
}

// Store keeps data points by series. It is safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	points map[Series][]Datum
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{points: map[Series][]Datum{}} }

// Put records one data point.
func (s *Store) Put(d Datum) {
	k := SeriesOf(d.Namespace, d.Name, d.Dimensions)
	s.mu.Lock()
	s.points[k] = append(s.points[k], d)
	s.mu.Unlock()
}

// Points returns the series' data points with from <= Time < to, in the order they were put.
func (s *Store) Points(k Series, from, to time.Time) []Datum {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Datum
	for _, d := range s.points[k] {
		if !d.Time.Before(from) && d.Time.Before(to) {
			out = append(out, d)
		}
	}
	return out
}

// SeriesList returns every series that has data, sorted.
func (s *Store) SeriesList() []Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Series, 0, len(s.points))
	for k := range s.points {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Dimensions < b.Dimensions
	})
	return out
}
