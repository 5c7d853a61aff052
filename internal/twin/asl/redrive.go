package asl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// RedrivePoint is where a redriven execution resumes: the top-level state the execution closed
// in, and the input that state was entered with. An empty State means the execution closed
// before entering any state, and resumes at StartAt with the execution's input.
type RedrivePoint struct {
	State string
	Input []byte
}

// ErrNotClosed reports a redrive of an execution that is still running.
var ErrNotClosed = errors.New("execution has not closed")

// redrivePoint finds the top-level state an execution closed in. It walks the execution's own
// chain of events back from the last one: Parallel branches and Map iterations chain from their
// parent's events but the parent never chains from theirs, so the walk sees only top-level
// states, and the first StateEntered it meets is the state that was open when the execution
// closed.
func redrivePoint(events []HistoryEvent, root *block) RedrivePoint {
	byID := make(map[int64]HistoryEvent, len(events))
	for _, ev := range events {
		byID[ev.ID] = ev
	}
	if len(events) == 0 {
		return RedrivePoint{}
	}
	for ev, ok := events[len(events)-1], true; ok; ev, ok = byID[ev.PreviousEventID] {
		if !strings.HasSuffix(ev.Type, "StateEntered") {
			continue
		}
		name, _ := ev.Details["name"].(string)
		if _, top := root.States[name]; top {
			input, _ := ev.Details["input"].(string)
			return RedrivePoint{State: name, Input: []byte(input)}
		}
	}
	return RedrivePoint{}
}

// RedrivePoint returns where a redrive of the closed execution would resume.
func (x *Execution) RedrivePoint() RedrivePoint {
	return redrivePoint(x.History(), x.sm.root)
}

// Redrive restarts a closed execution from the state it closed in, as Step Functions'
// RedriveExecution does: the result is a new Execution value with the same ARN, start date,
// definition and input, whose history continues the old one's with an ExecutionRedriven event.
// Retry counters start afresh; a Parallel or Map state that closed the execution runs again
// whole. redriveCount is the number of redrives including this one.
func (e *Engine) Redrive(prev *Execution, redriveCount int64) (*Execution, error) {
	prev.mu.Lock()
	status := prev.status
	// The old events' details are made maps first: they keep the region of the engine that
	// recorded them, and the new execution shares them as every reader of the history does.
	history := prev.historyLocked()
	events := append([]event(nil), prev.events...)
	eventMaps := append([]map[string]any(nil), prev.eventMaps...)
	mockCounts := make(map[string]int, len(prev.mockCounts))
	for k, v := range prev.mockCounts {
		mockCounts[k] = v
	}
	prev.mu.Unlock()
	if status == StatusRunning {
		return nil, fmt.Errorf("redrive %s: %w", prev.ARN, ErrNotClosed)
	}
	now := e.clock.Now()
	x := &Execution{ExecutionSpec: prev.ExecutionSpec, StartDate: prev.StartDate, engine: e, sm: prev.sm, input: prev.input,
		done: make(chan struct{}), status: StatusRunning, events: events, eventMaps: eventMaps, mockCounts: mockCounts}
	x.transitions.Store(prev.transitions.Load())
	prevExe, prevSM := prev.contextMaps()
	x.ctxExe = make(map[string]any, len(prevExe)+1)
	for k, v := range prevExe {
		x.ctxExe[k] = v
	}
	x.ctxExe["RedriveCount"] = redriveCount
	x.ctxExe["RedriveTime"] = isoTime(now)
	x.ctxSM = prevSM
	x.ctx, x.cancel = context.WithCancelCause(context.Background())
	var last int64
	if n := len(events); n > 0 {
		last = int64(n)
	}
	go x.runRedriven(redrivePoint(history, prev.sm.root), last, redriveCount)
	return x, nil
}

// runRedriven is run's counterpart for a redriven execution: it records the redrive and runs on
// from the redrive point.
func (x *Execution) runRedriven(p RedrivePoint, last, redriveCount int64) {
	t := &thread{x: x, ctx: x.ctx, top: true, prev: last}
	t.eventWith(kindExecutionRedriven, details{n: redriveCount})
	if x.sm.TimeoutSeconds > 0 {
		x.timeoutTimer = x.engine.clock.AfterFunc(time.Duration(x.sm.TimeoutSeconds)*time.Second, func() { x.cancel(errExecutionTimedOut) })
	}
	x.engine.log.Info("execution redriven", "execution", x.ARN, "state", p.State, "redriveCount", redriveCount)
	state, input := p.State, x.input
	if state == "" {
		state = x.sm.root.StartAt
	} else if v, err := ParseData(p.Input); err == nil {
		input = v
	}
	out, serr := t.runFrom(x.sm.root, state, input)
	x.afterRun(t, out, serr)
}
