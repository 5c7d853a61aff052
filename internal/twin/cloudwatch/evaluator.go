package cloudwatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/clock"
)

// InitialReason is the reason of an alarm that has not been evaluated yet, in CloudWatch's
// words.
const InitialReason = "Unchecked: Initial alarm creation"

// DefaultEvaluationInterval is how often CloudWatch evaluates an alarm of a period of a
// minute or more.
const DefaultEvaluationInterval = time.Minute

// Transition is one change of an alarm's state.
type Transition struct {
	Alarm    string
	From, To State
	Time     time.Time
	Reason   string
}

// Status is an alarm as it stands.
type Status struct {
	Alarm alarms.Alarm
	// Series is the metric series the alarm reads, its subject resolved to a dimension value.
	Series Series
	State  State
	// Reason explains the state, as of the last evaluation.
	Reason string
	// Since is when the alarm entered State (the evaluator's start for the initial state).
	Since time.Time
	// Periods are what the last evaluation looked at, newest first.
	Periods []Period
}

// EvaluatorOptions configure an Evaluator.
type EvaluatorOptions struct {
	Store  *Store
	Clock  clock.Clock
	Alarms []alarms.Alarm
	// Dimension names the value of a subject's dimension in this deployment (the state
	// machine's ARN, a function's name, the API's name, a queue's name). Custom metrics have
	// no subject and are read without dimensions.
	Dimension func(alarms.Subject) string
	// Every is how often Start evaluates, on Clock, at multiples of it since the epoch
	// (default DefaultEvaluationInterval).
	Every time.Duration
	// OnTransition is told about every state change, after it is recorded.
	OnTransition func(Transition)
	Logger       *slog.Logger
}

// Evaluator evaluates a set of alarms over a Store on a clock and keeps their states and every
// state change. It is safe for concurrent use.
type Evaluator struct {
	opts   EvaluatorOptions
	since  time.Time
	series []Series

	// evalMu serialises evaluations, so that transitions are recorded and reported in order;
	// OnTransition runs under it, and may read the evaluator.
	evalMu sync.Mutex

	mu       sync.Mutex
	statuses []Status
	history  []Transition
	timer    clock.Timer
	stopped  bool
}

// NewEvaluator returns an evaluator whose alarms are all INSUFFICIENT_DATA, as CloudWatch
// creates them. Periods that ended before now (on the clock) are unknown to it: the data it
// reads starts now.
func NewEvaluator(o EvaluatorOptions) *Evaluator {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Every <= 0 {
		o.Every = DefaultEvaluationInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Store == nil {
		o.Store = NewStore()
	}
	e := &Evaluator{opts: o, since: o.Clock.Now()}
	for _, a := range o.Alarms {
		value := ""
		if o.Dimension != nil && a.Metric.Subject.Dimension() != "" {
			value = o.Dimension(a.Metric.Subject)
		}
		s := SeriesFor(a.Metric, value)
		e.series = append(e.series, s)
		e.statuses = append(e.statuses, Status{Alarm: a, Series: s, State: StateInsufficientData, Reason: InitialReason, Since: e.since})
	}
	return e
}

// SeriesFor is the series an alarm metric reads when its subject's dimension has value: with
// no dimensions for a metric without a subject.
func SeriesFor(m alarms.Metric, value string) Series {
	dim := m.Subject.Dimension()
	if dim == "" {
		return SeriesOf(m.Namespace, m.Name, nil)
	}
	return SeriesOf(m.Namespace, m.Name, map[string]string{dim: value})
}

// Start evaluates every alarm at each multiple of Every on the clock until Stop. A fake clock
// evaluates in the goroutine that advances it.
func (e *Evaluator) Start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || e.timer != nil {
		return
	}
	e.scheduleLocked()
}

// scheduleLocked arms the next evaluation; e.mu is held.
func (e *Evaluator) scheduleLocked() {
	now := e.opts.Clock.Now()
	next := alignDown(now, e.opts.Every).Add(e.opts.Every)
	e.timer = e.opts.Clock.AfterFunc(next.Sub(now), func() {
		e.EvaluateAt(e.opts.Clock.Now())
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.stopped {
			e.scheduleLocked()
		}
	})
}

// Stop ends the evaluations Start scheduled; EvaluateAt still works.
func (e *Evaluator) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	if e.timer != nil {
		e.timer.Stop()
	}
}

// EvaluateNow evaluates every alarm at the clock's time; see EvaluateAt.
func (e *Evaluator) EvaluateNow() []Transition { return e.EvaluateAt(e.opts.Clock.Now()) }

// EvaluateAt evaluates every alarm at t (tests on a fake clock call it after advancing) and
// returns the state changes it caused, in alarm order.
func (e *Evaluator) EvaluateAt(t time.Time) []Transition {
	e.evalMu.Lock()
	defer e.evalMu.Unlock()
	e.mu.Lock()
	previous := make([]State, len(e.statuses))
	for i, s := range e.statuses {
		previous[i] = s.State
	}
	e.mu.Unlock()

	evaluations := make([]Evaluation, len(e.series))
	for i, s := range e.series {
		a := e.opts.Alarms[i]
		to := alignDown(t, max(a.Metric.Period, time.Nanosecond))
		from := to.Add(-time.Duration(max(a.EvaluationPeriods, 1)) * a.Metric.Period)
		evaluations[i] = Evaluate(a, e.opts.Store.Points(s, from, to), t, e.since, previous[i])
	}

	var changed []Transition
	e.mu.Lock()
	for i, ev := range evaluations {
		st := &e.statuses[i]
		st.Reason, st.Periods = ev.Reason, ev.Periods
		if ev.State == st.State {
			continue
		}
		tr := Transition{Alarm: st.Alarm.Name, From: st.State, To: ev.State, Time: t, Reason: ev.Reason}
		st.State, st.Since = ev.State, t
		e.history = append(e.history, tr)
		changed = append(changed, tr)
	}
	e.mu.Unlock()

	for _, tr := range changed {
		level := slog.LevelInfo
		if tr.To == StateAlarm {
			level = slog.LevelWarn
		}
		e.opts.Logger.Log(context.Background(), level, "cloudwatch: alarm state changed", "alarm", tr.Alarm,
			"from", string(tr.From), "to", string(tr.To), "reason", tr.Reason, "at", tr.Time)
		if e.opts.OnTransition != nil {
			e.opts.OnTransition(tr)
		}
	}
	return changed
}

// History returns every state change so far, oldest first.
func (e *Evaluator) History() []Transition {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Transition(nil), e.history...)
}

// Fired returns the changes into ALARM, oldest first: the alarms that would have notified
// someone.
func (e *Evaluator) Fired() []Transition {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Transition
	for _, tr := range e.history {
		if tr.To == StateAlarm {
			out = append(out, tr)
		}
	}
	return out
}

// State returns the named alarm's state, and false for an alarm the evaluator does not have.
func (e *Evaluator) State(name string) (State, bool) {
	s, ok := e.Status(name)
	return s.State, ok
}

// Status returns the named alarm as it stands.
func (e *Evaluator) Status(name string) (Status, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.statuses {
		if s.Alarm.Name == name {
			return s, true
		}
	}
	return Status{}, false
}

// Statuses returns every alarm as it stands, in the order the evaluator was given them.
func (e *Evaluator) Statuses() []Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Status(nil), e.statuses...)
}
