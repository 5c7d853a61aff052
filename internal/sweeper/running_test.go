package sweeper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
)

// fakeRunning serves pages of RUNNING executions by token, newest first as Step Functions
// lists them, and records what it was asked.
type fakeRunning struct {
	mu    sync.Mutex
	pages map[string]RunningPage
	fail  map[string]error
	asked []string // page tokens, in order
	arns  []string
}

func newFakeRunning() *fakeRunning {
	return &fakeRunning{pages: map[string]RunningPage{}, fail: map[string]error{}}
}

// run lays out executions started at the given times on pages of size, newest first.
func (f *fakeRunning) run(size int, started ...time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sorted := slices.Clone(started)
	slices.SortFunc(sorted, func(a, b time.Time) int { return b.Compare(a) })
	f.pages = map[string]RunningPage{}
	token := ""
	for i := 0; i < len(sorted); i += size {
		p := RunningPage{Started: sorted[i:min(i+size, len(sorted))]}
		if i+size < len(sorted) {
			p.Next = fmt.Sprintf("page-%d", i/size+1)
		}
		f.pages[token] = p
		token = p.Next
	}
}

func (f *fakeRunning) RunningExecutions(_ context.Context, arn, token string) (RunningPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, token)
	f.arns = append(f.arns, arn)
	if err := f.fail[token]; err != nil {
		return RunningPage{}, err
	}
	return f.pages[token], nil
}

// logTo sends the sweeper's log to buf, as JSON lines.
func logTo(buf *bytes.Buffer) rigOption {
	return func(d *Deps) { d.Logger = slog.New(slog.NewJSONHandler(buf, nil)) }
}

func TestOldestRunningExecutionAge(t *testing.T) {
	ago := func(d time.Duration) time.Time { return t0.Add(-d) }
	cases := []struct {
		name  string
		opts  []rigOption
		setup func(*fakeRunning)
		// want is the published age; unknown means none was published.
		want    int64
		unknown bool
		// wantPages is how many pages the run asked for.
		wantPages int
		wantLog   string
	}{
		{name: "none running: 0 is published", setup: func(f *fakeRunning) {}, want: 0, wantPages: 1},
		{name: "one page: the oldest on it", setup: func(f *fakeRunning) {
			f.run(10, ago(time.Minute), ago(30*time.Minute), ago(5*time.Minute))
		}, want: 1800, wantPages: 1},
		{name: "newest first over several pages: the oldest is on the last", setup: func(f *fakeRunning) {
			f.run(2, ago(time.Minute), ago(2*time.Minute), ago(3*time.Minute), ago(4*time.Minute), ago(2*time.Hour))
		}, want: 7200, wantPages: 3},
		{name: "an execution started after the run began counts as 0 old", setup: func(f *fakeRunning) {
			f.run(10, t0.Add(time.Second))
		}, want: 0, wantPages: 1},
		{name: "the page bound is hit: the oldest seen is published and the stop logged",
			opts: []rigOption{func(d *Deps) { d.RunningPages = 2 }},
			setup: func(f *fakeRunning) {
				f.run(1, ago(time.Minute), ago(2*time.Minute), ago(3*time.Hour))
			}, want: 120, wantPages: 2, wantLog: "stopped listing running executions at the page bound"},
		{name: "the first page fails: nothing published, the error logged", setup: func(f *fakeRunning) {
			f.run(10, ago(time.Minute))
			f.fail[""] = errors.New("ThrottlingException")
		}, unknown: true, wantPages: 1, wantLog: "ThrottlingException"},
		{name: "a later page fails: the newer pages read are not published as the oldest", setup: func(f *fakeRunning) {
			f.run(1, ago(time.Minute), ago(time.Hour))
			f.fail["page-1"] = errors.New("connection reset")
		}, unknown: true, wantPages: 2, wantLog: "connection reset"},
		{name: "no state machine ARN: nothing listed, nothing published",
			opts:  []rigOption{func(d *Deps) { d.StateMachineARN = "" }},
			setup: func(f *fakeRunning) { f.run(10, ago(time.Minute)) }, unknown: true, wantPages: 0, wantLog: "no state machine ARN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			r := newRig(t, append([]rigOption{logTo(&log)}, tc.opts...)...)
			tc.setup(r.running)
			res, err := r.s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.running.asked) != tc.wantPages {
				t.Errorf("asked for pages %q, want %d", r.running.asked, tc.wantPages)
			}
			for _, arn := range r.running.arns {
				if arn != machine {
					t.Errorf("listed the executions of %q, want %q", arn, machine)
				}
			}
			if tc.wantLog != "" && !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("log does not mention %q:\n%s", tc.wantLog, log.String())
			}
			g, published := r.metrics.Last(MetricOldestRunningExecutionAgeSeconds)
			if tc.unknown {
				if published || !res.RunningExecutionsUnknown || res.OldestRunningExecutionAgeSeconds != 0 {
					t.Fatalf("published %+v (%v), result %+v: an unknown age must be left out, not published as 0", g, published, res)
				}
				return
			}
			if !published || g != (metrics.Reading{Value: float64(tc.want), Unit: metrics.UnitSeconds}) {
				t.Fatalf("published %+v (%v), want %d Seconds", g, published, tc.want)
			}
			if res.RunningExecutionsUnknown || res.OldestRunningExecutionAgeSeconds != tc.want {
				t.Fatalf("result %+v, want age %d", res, tc.want)
			}
		})
	}
}

// TestListingRunningExecutionsFailsAloneTheSweepGoesOn: the sweeper still releases what it
// should and publishes the backlog when Step Functions cannot list executions.
func TestListingRunningExecutionsFailsAloneTheSweepGoesOn(t *testing.T) {
	r := newRig(t)
	r.hold("r1", 5*time.Minute, nil)
	r.hold("r2", 10*time.Minute, paying("pi_2"))
	r.rec.outcomes["r2"] = "retry"
	r.running.fail[""] = errors.New("AccessDeniedException")
	res, err := r.s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Released != 1 || res.UnresolvedPayments != 1 || !res.RunningExecutionsUnknown || res.Errors != 0 {
		t.Fatalf("result %+v", res)
	}
	if g := r.gauge(t, MetricUnresolvedPayments); g.Value != 1 {
		t.Fatalf("backlog not published: %+v", g)
	}
	if _, ok := r.metrics.Last(MetricOldestRunningExecutionAgeSeconds); ok {
		t.Fatal("an age was published although the executions could not be listed")
	}
}

// emfLine is one EMF line as CloudWatch reads it.
type emfLine struct {
	AWS struct {
		CloudWatchMetrics []struct {
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// emfUnits reads every EMF line in out and returns each metric's declared units, its values
// and its dimension sets.
func emfUnits(t *testing.T, out *bytes.Buffer) (units map[string][]string, values map[string][]float64, dims map[string][][]string) {
	t.Helper()
	units, values, dims = map[string][]string{}, map[string][]float64{}, map[string][][]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var l emfLine
		var fields map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if err := json.Unmarshal(sc.Bytes(), &fields); err != nil {
			t.Fatal(err)
		}
		for _, d := range l.AWS.CloudWatchMetrics {
			for _, m := range d.Metrics {
				units[m.Name] = append(units[m.Name], m.Unit)
				v, _ := fields[m.Name].(float64)
				values[m.Name] = append(values[m.Name], v)
				dims[m.Name] = d.Dimensions
			}
		}
	}
	return units, values, dims
}

// The backlog figures reach CloudWatch as what they are: counts of things in Count, ages in
// Seconds, whichever recorder mode the function uses, and a buffered recorder holding two runs
// reports the last run's levels, not their sum.
func TestTheBacklogReachesEMFAsGaugesInTheirUnits(t *testing.T) {
	want := map[string]string{
		MetricExpiredHoldsUnreleased:            "Count",
		MetricExpiredHoldOldestAgeSeconds:       "Seconds",
		MetricUnresolvedPayments:                "Count",
		MetricUnresolvedPaymentOldestAgeSeconds: "Seconds",
		MetricReconciliationBacklog:             "Count",
		MetricAuthorizationsNearCaptureDeadline: "Count",
		MetricOldestRunningExecutionAgeSeconds:  "Seconds",
		MetricSweepActions:                      "Count",
	}
	for _, buffered := range []bool{false, true} {
		t.Run(fmt.Sprintf("buffered=%v", buffered), func(t *testing.T) {
			var out bytes.Buffer
			opts := []emf.Option{emf.WithClock(func() time.Time { return t0 }),
				emf.WithDimensions(metrics.Dim{Name: "Service", Value: "sweeper"})}
			if buffered {
				opts = append(opts, emf.Buffered())
			}
			rec := emf.New(&out, "Seatsaga", opts...)
			r := newRig(t, func(d *Deps) { d.Metrics = rec })
			// A hold the saga still owns stays in the backlog, 5 minutes past its deadline.
			r.hold("r1", 5*time.Minute, nil)
			r.execution("r1", "RUNNING")
			// A hold with no execution is released (a SweepActions count).
			r.hold("r2", 5*time.Minute, nil)
			r.running.run(10, t0.Add(-90*time.Second))
			for range 2 {
				if _, err := r.s.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			rec.Flush()
			units, values, dims := emfUnits(t, &out)
			for name, unit := range want {
				if len(units[name]) == 0 {
					t.Errorf("%s: not on any line", name)
				}
				for _, u := range units[name] {
					if u != unit {
						t.Errorf("%s declared in %s, want %s", name, u, unit)
					}
				}
				if !slices.ContainsFunc(dims[name], func(set []string) bool { return len(set) == 0 }) {
					t.Errorf("%s lacks the empty dimension set the alarms read: %v", name, dims[name])
				}
			}
			wantValues := map[string]float64{
				MetricExpiredHoldsUnreleased:      1,
				MetricExpiredHoldOldestAgeSeconds: 300,
				// The expired hold's execution still runs: unreleased, but the saga's.
				MetricReconciliationBacklog:            0,
				MetricOldestRunningExecutionAgeSeconds: 90,
			}
			for name, v := range wantValues {
				got := values[name]
				if buffered && len(got) != 1 {
					t.Errorf("%s: buffered wrote %v, want the one last value", name, got)
				}
				for _, g := range got {
					if g != v {
						t.Errorf("%s = %v, want %v (levels are never summed)", name, got, v)
					}
				}
			}
		})
	}
}
