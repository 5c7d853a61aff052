package asl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ohler55/ojg/oj"
)

// TestState statuses, as the Step Functions API names them.
const (
	TestSucceeded   = "SUCCEEDED"
	TestFailed      = "FAILED"
	TestRetriable   = "RETRIABLE"
	TestCaughtError = "CAUGHT_ERROR"
)

// ErrTestStateUnsupported reports a TestState request the service refuses rather than runs: a
// Parallel, Map or callback task without a mock, or a mock for a state that takes none.
var ErrTestStateUnsupported = errors.New("TestState request not supported")

// TestMock stands in for the state's work, as TestState's mock field does: a result (JSON), or
// an error and cause.
type TestMock struct {
	Result    []byte
	HasResult bool
	Error     string
	Cause     string
}

// TestStateInput is a TestState request.
type TestStateInput struct {
	// Definition is one state, or with StateName a whole state machine holding it.
	Definition []byte
	StateName  string
	Input      []byte // JSON; empty means {}
	Mock       *TestMock
	// RetrierRetryCount is how many retries of the matching retrier have already happened.
	RetrierRetryCount int
	RoleARN           string
}

// TestErrorDetails says which Retry or Catch entry handled the state's error.
type TestErrorDetails struct {
	RetryIndex                  *int
	RetryBackoffIntervalSeconds *int
	CatchIndex                  *int
}

// TestStateResult is what TestState answers.
type TestStateResult struct {
	Status    string
	Output    []byte // nil when the state produced none
	Error     string
	Cause     string
	NextState string
	// Inspection holds the data after each processing step the state went through, by the
	// names of the API's inspectionData fields (input, afterInputPath, afterParameters, result,
	// afterResultSelector, afterResultPath), as JSON text.
	Inspection   map[string]string
	ErrorDetails *TestErrorDetails
}

// testStateName names the single state a TestState definition holds; it cannot clash with a
// transition target, which must name a state of a real machine.
const testStateName = "$TestState"

// ParseTestState parses a TestState definition and returns the state to test: the one state
// given, or the state named stateName in the state machine given. A single state's Next,
// Default and Catch targets need not exist.
func ParseTestState(definition []byte, stateName string) (*State, error) {
	if stateName != "" {
		sm, err := Parse(definition)
		if err != nil {
			return nil, err
		}
		if s := findState(sm.root, stateName); s != nil {
			return s, nil
		}
		return nil, &ValidationError{Problems: []Problem{{Code: "SCHEMA_VALIDATION_FAILED", Location: "/States",
			Message: fmt.Sprintf("State '%s' does not exist in the state machine definition", stateName)}}}
	}
	raw, err := oj.Parse(definition)
	if err != nil {
		return nil, &ValidationError{Problems: []Problem{{Code: "INVALID_JSON_DESCRIPTION", Location: "/", Message: fmt.Sprintf("the definition is not valid JSON: %v", err)}}}
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, &ValidationError{Problems: []Problem{{Code: "SCHEMA_VALIDATION_FAILED", Location: "/", Message: "the state definition must be a JSON object"}}}
	}
	// The state is parsed inside a machine whose every transition target is a stand-in
	// terminal state, so the machine's validation applies to the state alone.
	states := map[string]any{testStateName: obj}
	for _, target := range transitionTargets(obj) {
		if target != testStateName {
			states[target] = map[string]any{"Type": "Succeed"}
		}
	}
	machine, _ := oj.Marshal(map[string]any{"StartAt": testStateName, "States": states})
	sm, err := Parse(machine)
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			for i, p := range ve.Problems {
				ve.Problems[i].Location = "/" + strings.TrimPrefix(strings.TrimPrefix(p.Location, "/States/"+testStateName), "/")
			}
		}
		return nil, err
	}
	return sm.root.States[testStateName], nil
}

// transitionTargets lists the states a raw state definition may move to.
func transitionTargets(obj map[string]any) []string {
	var out []string
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	add(obj["Next"])
	add(obj["Default"])
	for _, key := range []string{"Choices", "Catch"} {
		items, _ := obj[key].([]any)
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				add(m["Next"])
			}
		}
	}
	return out
}

func findState(b *block, name string) *State {
	if b == nil {
		return nil
	}
	if s, ok := b.States[name]; ok {
		return s
	}
	for _, s := range b.States {
		for _, br := range s.Branches {
			if found := findState(br, name); found != nil {
				return found
			}
		}
		if found := findState(s.Processor, name); found != nil {
			return found
		}
	}
	return nil
}

// TestState runs one state on an input, as the Step Functions TestState API does: the state's
// input and output processing, its work (the mock when given, else a Lambda invocation through
// the engine's invoker), and its Retry and Catch decided once, for the retry count given. It
// never waits: a Wait state reports what it would pass on.
func (e *Engine) TestState(ctx context.Context, s *State, in TestStateInput) (TestStateResult, error) {
	if len(in.Input) == 0 {
		in.Input = []byte("{}")
	}
	raw, err := ParseData(in.Input)
	if err != nil {
		return TestStateResult{}, fmt.Errorf("%w: input is not valid JSON: %v", ErrInvalidInput, err)
	}
	if err := checkTestable(s, in.Mock); err != nil {
		return TestStateResult{}, err
	}
	x := &Execution{ExecutionSpec: ExecutionSpec{ARN: "arn:aws:states:" + e.region + ":123456789012:execution:TestState:" + newUUID(),
		Name: "TestState", StateMachineName: "TestState", RoleARN: in.RoleARN, Input: in.Input},
		StartDate: e.clock.Now(), engine: e, input: raw, done: make(chan struct{}), status: StatusRunning}
	x.ctxExe = map[string]any{"Id": x.ARN, "Input": raw, "Name": x.Name, "RoleArn": in.RoleARN, "StartTime": isoTime(x.StartDate), "RedriveCount": int64(0)}
	x.ctxSM = map[string]any{"Id": "arn:aws:states:" + e.region + ":123456789012:stateMachine:TestState", "Name": "TestState"}
	var cancel context.CancelFunc
	x.ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	t := &thread{x: x, ctx: x.ctx}
	r := testRun{t: t, s: s, raw: raw, ctxObj: t.ctxObject(s, x.StartDate, in.RetrierRetryCount), mock: in.Mock,
		inspect: map[string]string{"input": string(MarshalData(raw))}, retries: in.RetrierRetryCount}
	return r.run(), nil
}

// checkTestable refuses what TestState does not run: a mock for a state that does no work,
// and Parallel, Map or callback tasks without one.
func checkTestable(s *State, mock *TestMock) error {
	work := s.Type == "Task" || s.Type == "Parallel" || s.Type == "Map"
	if mock != nil && !work {
		return fmt.Errorf("%w: a mock can only be given for Task, Map or Parallel states, not %s", ErrTestStateUnsupported, s.Type)
	}
	if mock == nil && (s.Type == "Parallel" || s.Type == "Map") {
		return fmt.Errorf("%w: a %s state can only be tested with a mock", ErrTestStateUnsupported, s.Type)
	}
	if mock == nil && s.Type == "Task" && (strings.HasSuffix(s.Resource, ".waitForTaskToken") || strings.HasSuffix(s.Resource, ".sync")) {
		return fmt.Errorf("%w: the resource %s can only be tested with a mock", ErrTestStateUnsupported, s.Resource)
	}
	return nil
}

// testRun carries one TestState evaluation.
type testRun struct {
	t       *thread
	s       *State
	raw     any
	ctxObj  map[string]any
	mock    *TestMock
	inspect map[string]string
	retries int
}

func (r *testRun) note(field string, v any) { r.inspect[field] = string(MarshalData(v)) }

func (r *testRun) failed(serr *StateError) TestStateResult {
	return TestStateResult{Status: TestFailed, Error: serr.Name, Cause: serr.Cause, Inspection: r.inspect}
}

func (r *testRun) succeeded(out any, next string) TestStateResult {
	return TestStateResult{Status: TestSucceeded, Output: MarshalData(out), NextState: next, Inspection: r.inspect}
}

func (r *testRun) next() string {
	if r.s.End {
		return ""
	}
	return r.s.Next
}

func (r *testRun) run() TestStateResult {
	s := r.s
	// Parallel states report no afterInputPath, as Step Functions' own TestState does not.
	eff, serr := inputPath(s, r.raw, r.ctxObj)
	if serr != nil {
		return r.failed(serr)
	}
	switch s.Type {
	case "Pass":
		return r.pass(eff)
	case "Succeed", "Wait":
		r.note("afterInputPath", eff)
		if s.Type == "Wait" {
			if serr := r.checkWait(eff); serr != nil {
				return r.failed(serr)
			}
		}
		out, serr := outputPath(s, eff, r.ctxObj)
		if serr != nil {
			return r.failed(serr)
		}
		return r.succeeded(out, r.next())
	case "Fail":
		r.note("afterInputPath", eff)
		return r.failed(r.t.fail(s, r.raw, r.ctxObj))
	case "Choice":
		r.note("afterInputPath", eff)
		out, next, serr := r.t.choice(s, r.raw, r.ctxObj)
		if serr != nil {
			return r.failed(serr)
		}
		return r.succeeded(out, next)
	}
	return r.work(eff)
}

func (r *testRun) pass(eff any) TestStateResult {
	s := r.s
	var result any
	if s.hasResult {
		result = s.Result
		r.note("result", result)
	} else {
		r.note("afterInputPath", eff)
		var serr *StateError
		if result, serr = applyTemplate(s.Parameters, eff, r.ctxObj); serr != nil {
			return r.failed(serr)
		}
		r.note("afterParameters", result)
	}
	r.note("afterResultSelector", result)
	return r.finish(result)
}

// finish applies ResultPath and OutputPath to a result.
func (r *testRun) finish(result any) TestStateResult {
	out, serr := resultPath(r.s.ResultPath, r.raw, result)
	if serr != nil {
		return r.handle(serr)
	}
	r.note("afterResultPath", out)
	if out, serr = outputPath(r.s, out, r.ctxObj); serr != nil {
		return r.handle(serr)
	}
	return r.succeeded(out, r.next())
}

// work runs a Task, Parallel or Map state's work, mocked or real.
func (r *testRun) work(eff any) TestStateResult {
	s := r.s
	if s.Type != "Parallel" {
		r.note("afterInputPath", eff)
	}
	if s.Type == "Task" && strings.HasSuffix(s.Resource, ".waitForTaskToken") {
		r.ctxObj["Task"] = map[string]any{"Token": newUUID()}
	}
	var result any
	if r.mock != nil {
		if s.Type == "Task" {
			params, serr := applyTemplate(s.Parameters, eff, r.ctxObj)
			if serr != nil {
				return r.handle(serr)
			}
			r.note("afterParameters", params)
		}
		if !r.mock.HasResult {
			return r.handle(&StateError{Name: r.mock.Error, Cause: r.mock.Cause})
		}
		v, err := ParseData(r.mock.Result)
		if err != nil {
			return r.failed(runtimeError("the mocked result is not valid JSON: %v", err))
		}
		result = v
	} else {
		params, serr := applyTemplate(s.Parameters, eff, r.ctxObj)
		if serr != nil {
			return r.handle(serr)
		}
		r.note("afterParameters", params)
		if result, serr = r.t.task(s, eff, r.ctxObj); serr != nil {
			return r.handle(serr)
		}
	}
	if s.Type == "Task" {
		r.note("result", result)
	}
	result, serr := applyTemplate(s.ResultSelector, result, r.ctxObj)
	if serr != nil {
		return r.handle(serr)
	}
	r.note("afterResultSelector", result)
	return r.finish(result)
}

// handle decides a state error once, as the state's Retry and Catch would: RETRIABLE when a
// retrier has attempts left after the retries already made, CAUGHT_ERROR when a catcher takes
// it, FAILED otherwise.
func (r *testRun) handle(serr *StateError) TestStateResult {
	s := r.s
	for i, rt := range s.Retry {
		if !errorMatches(rt.ErrorEquals, serr.Name) {
			continue
		}
		if r.retries < rt.MaxAttempts {
			index, backoff := i, int(rt.Delay(r.retries).Seconds())
			res := r.failed(serr)
			res.Status = TestRetriable
			res.ErrorDetails = &TestErrorDetails{RetryIndex: &index, RetryBackoffIntervalSeconds: &backoff}
			return res
		}
		break
	}
	for i, c := range s.Catch {
		if !errorMatches(c.ErrorEquals, serr.Name) {
			continue
		}
		out, rerr := resultPath(c.ResultPath, r.raw, map[string]any{"Error": serr.Name, "Cause": serr.Cause})
		if rerr != nil {
			return r.failed(rerr)
		}
		r.note("afterResultPath", out)
		index := i
		return TestStateResult{Status: TestCaughtError, Output: MarshalData(out), Error: serr.Name, Cause: serr.Cause,
			NextState: c.Next, Inspection: r.inspect, ErrorDetails: &TestErrorDetails{CatchIndex: &index}}
	}
	return r.failed(serr)
}

// checkWait reports a Wait state whose path fields do not resolve, without waiting.
func (r *testRun) checkWait(eff any) *StateError {
	s := r.s
	switch {
	case s.SecondsPath != nil:
		v, err := s.SecondsPath.get(eff, r.ctxObj)
		if f, ok := toFloat(v); err != nil || !ok || f < 0 {
			return runtimeError("The SecondsPath parameter '%s' does not reference a valid non-negative number", s.SecondsPath.Raw)
		}
	case s.TimestampPath != nil:
		v, err := s.TimestampPath.get(eff, r.ctxObj)
		str, _ := v.(string)
		if _, terr := parseTimestamp(str); err != nil || terr != nil {
			return runtimeError("The TimestampPath parameter '%s' does not reference a valid ISO-8601 timestamp", s.TimestampPath.Raw)
		}
	}
	return nil
}
