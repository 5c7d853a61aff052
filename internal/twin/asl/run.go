package asl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
)

// thread is one line of control: the execution itself, a Parallel branch or a
// Map iteration. It chains its events through previousEventId.
type thread struct {
	x    *Execution
	ctx  context.Context
	prev int64
	// top marks the execution's own thread, which can park on a task token
	// without a goroutine; susp describes the parked state while unwinding.
	top  bool
	susp *suspension
	// outJSON is the JSON of the output of the state this thread exited last, recorded in
	// its StateExited event: the next state's input, or the thread's result, rendered once.
	outJSON string
	// execInput says that the next state entered takes the execution's input, which the
	// execution keeps: its StateEntered event renders that input's JSON when the history is read.
	execInput bool
}

// errSuspended unwinds the top-level thread when it parks on a task token.
var errSuspended = &StateError{Name: "<suspended>"}

// suspension is what a parked execution needs to carry on: where it stopped
// (block, state, retry counters) and the task it waits for.
type suspension struct {
	t         *thread
	block     *block
	s         *State
	raw       any
	entered   time.Time
	counts    []int
	retries   int
	ctxObj    map[string]any
	te        taskEvents
	token     string
	tw        *tokenWait
	deadline  time.Time
	heartbeat int
}

// resume completes the parked state with the task's outcome and runs on.
func (t *thread) resume(p *suspension, o outcome) (any, *StateError) {
	res := t.finishTask(p.s, p.te, p.token, p.tw, o)
	var out any
	var serr *StateError
	if res.err != nil {
		serr = res.err
	} else {
		out, serr = t.finishAttempt(p.s, p.raw, p.ctxObj, res.out)
	}
	out, next, serr := t.retryLoop(p.s, p.raw, p.entered, p.counts, p.retries, outcome{out: out, err: serr}, true)
	if serr == errSuspended {
		t.susp.block = p.block
		return nil, serr
	}
	out, next, serr = t.exitState(p.s, out, next, serr)
	if serr != nil {
		return nil, serr
	}
	if next == "" {
		return out, nil
	}
	return t.runChain(p.block, next, out, t.outJSON)
}

// event records an event without details.
func (t *thread) event(k *eventKind) int64 { return t.eventWith(k, details{}) }

// eventWith records an event with details of its kind's shape.
func (t *thread) eventWith(k *eventKind, d details) int64 {
	t.prev = t.x.addEvent(t.prev, k, d)
	return t.prev
}

// eventAt is eventWith for an event that happened at now, a clock reading it shares.
func (t *thread) eventAt(now time.Time, k *eventKind, d details) int64 {
	t.prev = t.x.addEventAt(now, t.prev, k, d)
	return t.prev
}

func (t *thread) child(ctx context.Context) *thread {
	return &thread{x: t.x, ctx: ctx, prev: t.prev}
}

// aborted turns a cancelled context into an error that unwinds the run.
func (t *thread) aborted() *StateError {
	if t.ctx.Err() != nil {
		return &StateError{Name: "States.Aborted", Cause: "execution stopped"}
	}
	return nil
}

func (t *thread) runBlock(b *block, input any) (any, *StateError) {
	return t.runFrom(b, b.StartAt, input)
}

func (t *thread) runFrom(b *block, name string, data any) (any, *StateError) {
	return t.runChain(b, name, data, "")
}

// runChain runs states from name until one ends the block; dataJSON is data's JSON when
// the caller has it (the previous state's output), else empty.
func (t *thread) runChain(b *block, name string, data any, dataJSON string) (any, *StateError) {
	for {
		if err := t.aborted(); err != nil {
			return nil, err
		}
		s := b.States[name]
		out, next, err := t.enterState(s, data, dataJSON)
		if err == errSuspended {
			t.susp.block = b
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		if next == "" {
			return out, nil
		}
		name, data, dataJSON = next, out, t.outJSON
	}
}

func (t *thread) ctxObject(s *State, entered time.Time, retries int) map[string]any {
	exe, sm := t.x.contextMaps()
	return map[string]any{
		"Execution":    exe,
		"StateMachine": sm,
		"State":        map[string]any{"Name": s.Name, "EnteredTime": isoTime(entered), "RetryCount": int64(retries)},
	}
}

// admitTransition waits until Options.BeforeTransition lets the thread make its next state
// transition; it fails only when the execution was stopped meanwhile.
func (t *thread) admitTransition() *StateError {
	if f := t.x.engine.beforeTransition; f != nil && f(t.ctx) != nil {
		return &StateError{Name: "States.Aborted", Cause: "execution stopped"}
	}
	return nil
}

func (t *thread) runState(s *State, input any) (out any, next string, serr *StateError) {
	return t.enterState(s, input, "")
}

// enterState runs a state; inputJSON is input's JSON when the caller has it, else empty.
func (t *thread) enterState(s *State, input any, inputJSON string) (out any, next string, serr *StateError) {
	if err := t.admitTransition(); err != nil {
		return nil, "", err
	}
	t.x.transitions.Add(1)
	entered := t.x.engine.clock.Now()
	d := details{s: [3]string{s.Name, inputJSON}}
	switch {
	case t.execInput:
		t.execInput = false
		d.n = enteredWithExecutionInput
	case inputJSON == "":
		d.s[1] = marshalDataString(input)
	}
	// The state was entered when its event says it was: one clock reading serves both.
	t.prev = t.x.addEventAt(entered, t.prev, stateKind(enteredKinds, s.Type, "StateEntered", "stateEnteredEventDetails", shapeStateEntered), d)
	switch s.Type {
	case "Pass":
		out, serr = t.pass(s, input, t.contextFor(s, entered, 0))
	case "Choice":
		out, next, serr = t.choice(s, input, t.contextFor(s, entered, 0))
	case "Wait":
		out, serr = t.wait(s, input, t.contextFor(s, entered, 0))
	case "Succeed":
		out, serr = t.succeed(s, input, t.contextFor(s, entered, 0))
	case "Fail":
		return nil, "", t.fail(s, input, t.contextFor(s, entered, 0))
	case "Task", "Parallel", "Map":
		// Each attempt builds its own context object, with its retry count.
		out, next, serr = t.withRetry(s, input, entered)
	}
	return t.exitState(s, out, next, serr)
}

// exitState checks the state's output and records its exit.
func (t *thread) exitState(s *State, out any, next string, serr *StateError) (any, string, *StateError) {
	if serr != nil {
		return nil, "", serr
	}
	if s.Type != "Choice" && next == "" && !s.End && s.Type != "Succeed" {
		next = s.Next
	}
	outJSON := marshalDataString(out)
	if len(outJSON) > PayloadLimit {
		return nil, "", &StateError{Name: ErrDataLimitExceeded, Cause: fmt.Sprintf("The state/task '%s' returned a result with a size exceeding the maximum number of bytes service limit.", s.Name)}
	}
	t.eventWith(stateKind(exitedKinds, s.Type, "StateExited", "stateExitedEventDetails", shapeStateExited),
		details{s: [3]string{s.Name, outJSON}})
	t.outJSON = outJSON
	return out, next, nil
}

// Input and output processing, in the order the specification gives.

func inputPath(s *State, raw, ctxObj any) (any, *StateError) {
	return applyPath(s.InputPath, raw, ctxObj, "InputPath")
}

func outputPath(s *State, v, ctxObj any) (any, *StateError) {
	return applyPath(s.OutputPath, v, ctxObj, "OutputPath")
}

func applyPath(p optPath, v, ctxObj any, field string) (any, *StateError) {
	if p.Null {
		return map[string]any{}, nil
	}
	if p.Path == nil {
		return v, nil
	}
	out, err := p.Path.get(v, ctxObj)
	if err != nil {
		return nil, runtimeError("Invalid path '%s' : The %s could not be found in the input '%s'", p.Path.Raw, field, truncate(marshalData(v)))
	}
	return out, nil
}

func applyTemplate(tm *template, v, ctxObj any) (any, *StateError) {
	if tm == nil {
		return v, nil
	}
	return templateResult(tm.eval(v, ctxObj))
}

// applyTemplateText is applyTemplate for data given as text (template.evalText).
func applyTemplateText(tm *template, text string, ctxObj any) (any, *StateError) {
	return templateResult(tm.evalText(text, ctxObj))
}

// templateResult passes a template's value on, and its error as the state error it is.
func templateResult(out any, err error) (any, *StateError) {
	if err != nil {
		var se *StateError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, runtimeError("%v", err)
	}
	return out, nil
}

func resultPath(p optPath, raw, result any) (any, *StateError) {
	if p.Null {
		return raw, nil
	}
	if p.Path == nil {
		return result, nil
	}
	out, err := setAt(raw, p.Path, result)
	if err != nil {
		return nil, &StateError{Name: ErrResultPathMatchFailure, Cause: err.Error()}
	}
	return out, nil
}

func truncate(b []byte) string {
	if len(b) > 256 {
		return string(b[:256]) + "..."
	}
	return string(b)
}

func (t *thread) pass(s *State, raw any, ctxObj map[string]any) (any, *StateError) {
	eff, err := inputPath(s, raw, ctxObj)
	if err != nil {
		return nil, err
	}
	result := eff
	if s.hasResult {
		result = s.Result
	} else if s.Parameters != nil {
		if result, err = applyTemplate(s.Parameters, eff, ctxObj); err != nil {
			return nil, err
		}
	}
	out, err := resultPath(s.ResultPath, raw, result)
	if err != nil {
		return nil, err
	}
	return outputPath(s, out, ctxObj)
}

func (t *thread) choice(s *State, raw any, ctxObj map[string]any) (any, string, *StateError) {
	eff, err := inputPath(s, raw, ctxObj)
	if err != nil {
		return nil, "", err
	}
	next := s.Default
	for _, r := range s.Choices {
		ok, rerr := r.eval(eff, ctxObj)
		if rerr != nil {
			var se *StateError
			if errors.As(rerr, &se) {
				return nil, "", se
			}
			return nil, "", runtimeError("%v", rerr)
		}
		if ok {
			next = r.Next
			break
		}
	}
	if next == "" {
		return nil, "", &StateError{Name: ErrNoChoiceMatched, Cause: fmt.Sprintf("No Choice Rules matched and no Default was specified in the Choice state '%s'", s.Name)}
	}
	out, err := outputPath(s, eff, ctxObj)
	return out, next, err
}

func (t *thread) wait(s *State, raw any, ctxObj map[string]any) (any, *StateError) {
	eff, err := inputPath(s, raw, ctxObj)
	if err != nil {
		return nil, err
	}
	now := t.x.engine.clock.Now()
	var d time.Duration
	switch {
	case s.Seconds != nil:
		d = time.Duration(*s.Seconds * float64(time.Second))
	case s.Timestamp != nil:
		d = s.Timestamp.Sub(now)
	case s.SecondsPath != nil:
		v, perr := s.SecondsPath.get(eff, ctxObj)
		f, ok := toFloat(v)
		if perr != nil || !ok || f < 0 {
			return nil, runtimeError("The SecondsPath parameter '%s' does not reference a valid non-negative number", s.SecondsPath.Raw)
		}
		d = time.Duration(f * float64(time.Second))
	case s.TimestampPath != nil:
		v, perr := s.TimestampPath.get(eff, ctxObj)
		str, _ := v.(string)
		ts, terr := parseTimestamp(str)
		if perr != nil || terr != nil {
			return nil, runtimeError("The TimestampPath parameter '%s' does not reference a valid ISO-8601 timestamp", s.TimestampPath.Raw)
		}
		d = ts.Sub(now)
	}
	if d > 0 {
		if clock.Sleep(t.ctx, t.x.engine.clock, d) != nil {
			return nil, t.aborted()
		}
	}
	return outputPath(s, eff, ctxObj)
}

func (t *thread) succeed(s *State, raw any, ctxObj map[string]any) (any, *StateError) {
	eff, err := inputPath(s, raw, ctxObj)
	if err != nil {
		return nil, err
	}
	return outputPath(s, eff, ctxObj)
}

func (t *thread) fail(s *State, raw any, ctxObj map[string]any) *StateError {
	name, cause := s.Error, s.Cause
	if s.ErrorPath != nil {
		v, err := s.ErrorPath.get(raw, ctxObj)
		str, ok := v.(string)
		if err != nil || !ok {
			return runtimeError("The ErrorPath '%s' of Fail state '%s' does not resolve to a string", s.ErrorPath.Raw, s.Name)
		}
		name = str
	}
	if s.CausePath != nil {
		v, err := s.CausePath.get(raw, ctxObj)
		str, ok := v.(string)
		if err != nil || !ok {
			return runtimeError("The CausePath '%s' of Fail state '%s' does not resolve to a string", s.CausePath.Raw, s.Name)
		}
		cause = str
	}
	return &StateError{Name: name, Cause: cause}
}

// withRetry runs a Task, Parallel or Map state's work with its Retry and Catch.
func (t *thread) withRetry(s *State, raw any, entered time.Time) (any, string, *StateError) {
	return t.retryLoop(s, raw, entered, make([]int, len(s.Retry)), 0, outcome{}, false)
}

// retryLoop runs attempts until one succeeds, a catcher takes the error or
// the error escapes; have says that the first attempt's outcome is given
// (a resumed task).
func (t *thread) retryLoop(s *State, raw any, entered time.Time, counts []int, retries int, first outcome, have bool) (any, string, *StateError) {
	for {
		var out any
		var serr *StateError
		if have {
			out, serr, have = first.out, first.err, false
		} else {
			ctxObj := t.contextFor(s, entered, retries)
			out, serr = t.attempt(s, raw, ctxObj)
			if serr == errSuspended {
				t.susp.raw, t.susp.entered, t.susp.counts, t.susp.retries = raw, entered, counts, retries
				return nil, "", serr
			}
		}
		if serr == nil {
			return out, "", nil
		}
		if t.ctx.Err() != nil {
			return nil, "", t.aborted()
		}
		retried := false
		for i, r := range s.Retry {
			if !errorMatches(r.ErrorEquals, serr.Name) {
				continue
			}
			if counts[i] < r.MaxAttempts {
				d := r.Delay(counts[i])
				if r.JitterFull {
					d = time.Duration(t.x.engine.jitter() * float64(d))
				}
				counts[i]++
				retries++
				if clock.Sleep(t.ctx, t.x.engine.clock, d) != nil {
					return nil, "", t.aborted()
				}
				// A retry is a state transition to Step Functions, throttled as one.
				if err := t.admitTransition(); err != nil {
					return nil, "", err
				}
				retried = true
			}
			break
		}
		if retried {
			continue
		}
		for _, c := range s.Catch {
			if !errorMatches(c.ErrorEquals, serr.Name) {
				continue
			}
			errOut := map[string]any{"Error": serr.Name, "Cause": serr.Cause}
			out, rerr := resultPath(c.ResultPath, raw, errOut)
			if rerr != nil {
				return nil, "", rerr
			}
			return out, c.Next, nil
		}
		return nil, "", serr
	}
}

// attempt runs one try of a Task, Parallel or Map state, input to output.
func (t *thread) attempt(s *State, raw any, ctxObj map[string]any) (any, *StateError) {
	eff, err := inputPath(s, raw, ctxObj)
	if err != nil {
		return nil, err
	}
	var result any
	switch s.Type {
	case "Task":
		result, err = t.runTask(s, eff, ctxObj, s.ResultSelector.textOK())
	case "Parallel":
		result, err = t.parallel(s, eff, ctxObj)
	case "Map":
		result, err = t.mapState(s, eff, ctxObj)
	}
	if err == errSuspended {
		t.susp.ctxObj = ctxObj
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return t.finishAttempt(s, raw, ctxObj, result)
}

// finishAttempt applies ResultSelector, ResultPath and OutputPath to a result.
func (t *thread) finishAttempt(s *State, raw any, ctxObj map[string]any, result any) (any, *StateError) {
	var err *StateError
	if text, ok := result.(resultText); ok {
		result, err = applyTemplateText(s.ResultSelector, string(text), ctxObj)
	} else {
		result, err = applyTemplate(s.ResultSelector, result, ctxObj)
	}
	if err != nil {
		return nil, err
	}
	out, err := resultPath(s.ResultPath, raw, result)
	if err != nil {
		return nil, err
	}
	return outputPath(s, out, ctxObj)
}

func (t *thread) parallel(s *State, eff any, ctxObj map[string]any) (any, *StateError) {
	in, err := applyTemplate(s.Parameters, eff, ctxObj)
	if err != nil {
		return nil, err
	}
	t.event(kindParallelStarted)
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	results := make([]any, len(s.Branches))
	var firstErr *StateError
	var once sync.Once
	var wg sync.WaitGroup
	for i, b := range s.Branches {
		wg.Add(1)
		bt := t.child(ctx)
		goRun(funcJob(func() {
			defer wg.Done()
			out, berr := bt.runBlock(b, in)
			if berr != nil {
				once.Do(func() { firstErr = berr; cancel() })
				return
			}
			results[i] = out
		}))
	}
	wg.Wait()
	if t.ctx.Err() != nil {
		return nil, t.aborted()
	}
	if firstErr != nil {
		t.event(kindParallelFailed)
		return nil, firstErr
	}
	t.event(kindParallelSucceeded)
	return results, nil
}

func (t *thread) mapState(s *State, eff any, ctxObj map[string]any) (any, *StateError) {
	itemsV, err := applyPath(s.ItemsPath, eff, ctxObj, "ItemsPath")
	if err != nil {
		return nil, err
	}
	items, ok := itemsV.([]any)
	if !ok {
		return nil, runtimeError("Map state '%s': the ItemsPath did not resolve to a JSON array", s.Name)
	}
	inputs := make([]any, len(items))
	for i, item := range items {
		if s.ItemSelector == nil {
			inputs[i] = item
			continue
		}
		ictx := make(map[string]any, len(ctxObj)+1)
		for k, v := range ctxObj {
			ictx[k] = v
		}
		ictx["Map"] = map[string]any{"Item": map[string]any{"Index": int64(i), "Value": item}}
		if inputs[i], err = applyTemplate(s.ItemSelector, eff, ictx); err != nil {
			return nil, err
		}
	}
	t.eventWith(kindMapStarted, details{n: int64(len(items))})
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	limit := s.MaxConcurrency
	if limit <= 0 || limit > len(items) {
		limit = len(items)
	}
	sem := make(chan struct{}, max(limit, 1))
	results := make([]any, len(items))
	var firstErr *StateError
	var once sync.Once
	var wg sync.WaitGroup
	var evMu sync.Mutex // iteration events chain from MapStateStarted in start order
	for i := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		it := t.child(ctx)
		evMu.Lock()
		it.eventWith(kindMapIterationStarted, mapIterationDetails(s.Name, i))
		evMu.Unlock()
		goRun(funcJob(func() {
			defer wg.Done()
			defer func() { <-sem }()
			out, ierr := it.runBlock(s.Processor, inputs[i])
			if ierr != nil {
				if ctx.Err() == nil {
					it.eventWith(kindMapIterationFailed, mapIterationDetails(s.Name, i))
				} else {
					it.eventWith(kindMapIterationAborted, mapIterationDetails(s.Name, i))
				}
				once.Do(func() { firstErr = ierr; cancel() })
				return
			}
			it.eventWith(kindMapIterationSucceeded, mapIterationDetails(s.Name, i))
			results[i] = out
		}))
	}
	wg.Wait()
	if t.ctx.Err() != nil {
		return nil, t.aborted()
	}
	if firstErr != nil {
		t.event(kindMapFailed)
		return nil, firstErr
	}
	t.event(kindMapSucceeded)
	return results, nil
}
