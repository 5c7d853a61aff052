package asl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Task resource kinds this engine runs.
const (
	resourceLambdaInvoke      = "arn:aws:states:::lambda:invoke"
	resourceLambdaInvokeToken = "arn:aws:states:::lambda:invoke.waitForTaskToken"
)

func isLambdaFunctionARN(r string) bool {
	return strings.HasPrefix(r, "arn:") && strings.Contains(r, ":lambda:") && strings.Contains(r, ":function:")
}

// taskEvents names a resource in history events.
type taskEvents struct {
	t            *thread
	resourceType string
	resource     string
	legacy       bool // a bare Lambda function ARN: LambdaFunction* events
}

// details returns a task event's details: the resource's type and name, and the pairs kv
// (key, value, key, value...), in one map sized for them.
func (te taskEvents) details(kv ...any) map[string]any {
	m := make(map[string]any, 2+len(kv)/2+2)
	m["resourceType"], m["resource"] = te.resourceType, te.resource
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// scheduledJSON records the task's scheduling with its parameters already rendered.
func (te taskEvents) scheduledJSON(paramsJSON string, timeout, heartbeat int) {
	if te.legacy {
		d := map[string]any{"resource": te.resource, "input": paramsJSON, "inputDetails": notTruncated}
		if timeout > 0 {
			d["timeoutInSeconds"] = int64(timeout)
		}
		te.t.event("LambdaFunctionScheduled", "lambdaFunctionScheduledEventDetails", d)
		return
	}
	d := te.details("region", te.t.x.engine.regionValue, "parameters", paramsJSON)
	if timeout > 0 {
		d["timeoutInSeconds"] = int64(timeout)
	}
	if heartbeat > 0 {
		d["heartbeatInSeconds"] = int64(heartbeat)
	}
	te.t.event("TaskScheduled", "taskScheduledEventDetails", d)
}

func (te taskEvents) started() {
	if te.legacy {
		te.t.event("LambdaFunctionStarted", "", nil)
		return
	}
	te.t.event("TaskStarted", "taskStartedEventDetails", te.details())
}

func (te taskEvents) submitted(out any) {
	te.t.event("TaskSubmitted", "taskSubmittedEventDetails", te.details("output", marshalDataString(out), "outputDetails", notTruncated))
}

func (te taskEvents) succeeded(out any) { te.succeededJSON(marshalDataString(out)) }

// succeededJSON records the task's success with its result already rendered.
func (te taskEvents) succeededJSON(outJSON string) {
	if te.legacy {
		te.t.event("LambdaFunctionSucceeded", "lambdaFunctionSucceededEventDetails", map[string]any{"output": outJSON, "outputDetails": notTruncated})
		return
	}
	te.t.event("TaskSucceeded", "taskSucceededEventDetails", te.details("output", outJSON, "outputDetails", notTruncated))
}

func (te taskEvents) failed(e *StateError) {
	timedOut := e.Name == ErrTimeout || e.Name == ErrHeartbeatTimeout
	switch {
	case te.legacy && timedOut:
		te.t.event("LambdaFunctionTimedOut", "lambdaFunctionTimedOutEventDetails", map[string]any{"error": e.Name, "cause": e.Cause})
	case te.legacy:
		te.t.event("LambdaFunctionFailed", "lambdaFunctionFailedEventDetails", map[string]any{"error": e.Name, "cause": e.Cause})
	case timedOut:
		te.t.event("TaskTimedOut", "taskTimedOutEventDetails", te.details("error", e.Name, "cause", e.Cause))
	default:
		te.t.event("TaskFailed", "taskFailedEventDetails", te.details("error", e.Name, "cause", e.Cause))
	}
}

func (t *thread) task(s *State, eff any, ctxObj map[string]any) (any, *StateError) {
	x := t.x
	timeout, heartbeat := s.TimeoutSeconds, s.HeartbeatSeconds
	if s.TimeoutSecondsPath != nil {
		v, err := s.TimeoutSecondsPath.get(eff, ctxObj)
		n, ok := asInt(v)
		if err != nil || !ok || n < 1 {
			return nil, runtimeError("The TimeoutSecondsPath '%s' does not reference a positive integer", s.TimeoutSecondsPath.Raw)
		}
		timeout = n
	}
	if s.HeartbeatSecondsPath != nil {
		v, err := s.HeartbeatSecondsPath.get(eff, ctxObj)
		n, ok := asInt(v)
		if err != nil || !ok || n < 1 {
			return nil, runtimeError("The HeartbeatSecondsPath '%s' does not reference a positive integer", s.HeartbeatSecondsPath.Raw)
		}
		heartbeat = n
	}

	te := taskEvents{t: t}
	waitForToken := false
	switch {
	case s.Resource == resourceLambdaInvoke:
		te.resourceType, te.resource = "lambda", "invoke"
	case s.Resource == resourceLambdaInvokeToken:
		te.resourceType, te.resource = "lambda", "invoke.waitForTaskToken"
		waitForToken = true
	case isLambdaFunctionARN(s.Resource):
		te.resource, te.legacy = s.Resource, true
	default:
		te.resourceType, te.resource = resourceParts(s.Resource)
		waitForToken = strings.HasSuffix(s.Resource, ".waitForTaskToken")
	}

	var token string
	var tw *tokenWait
	if waitForToken {
		token, tw = x.engine.newToken(x)
		if ctxObj != nil { // nil when nothing in the state reads $$.Task.Token
			ctxObj["Task"] = map[string]any{"Token": token}
		}
	}
	params, err := applyTemplate(s.Parameters, eff, ctxObj)
	if err != nil {
		if tw != nil {
			x.engine.closeToken(token, ErrTaskDoesNotExist)
		}
		return nil, err
	}
	deadline := time.Time{}
	if timeout > 0 {
		deadline = x.engine.clock.Now().Add(time.Duration(timeout) * time.Second)
	}
	paramsJSON := marshalDataString(params)
	te.scheduledJSON(paramsJSON, timeout, heartbeat)
	te.started()

	// Mocked responses stand in for the service call, as in Step Functions Local.
	if x.TestCase != "" && x.engine.mocker != nil {
		out, errName, cause, ok := x.engine.mocker.Mock(x.StateMachineName, x.TestCase, s.Name, x.nextMockAttempt(s.Name))
		if ok {
			if tw != nil {
				x.engine.closeToken(token, ErrTaskDoesNotExist)
			}
			if errName != "" {
				serr := &StateError{Name: errName, Cause: cause}
				te.failed(serr)
				return nil, serr
			}
			v, perr := parseData(out)
			if perr != nil {
				serr := runtimeError("mocked response for state '%s' is not valid JSON: %v", s.Name, perr)
				te.failed(serr)
				return nil, serr
			}
			te.succeeded(v)
			return v, nil
		}
	}

	var res outcome
	switch {
	case te.legacy:
		res = t.invokeWithTimeout(deadline, s.Resource, []byte(paramsJSON), false)
	case s.Resource == resourceLambdaInvoke || s.Resource == resourceLambdaInvokeToken:
		fn, payload, perr := lambdaInvokeParams(params)
		if perr != nil {
			res = outcome{err: perr}
			break
		}
		if waitForToken {
			res = t.invokeLambda(t.ctx, fn, payload, true)
			if res.err == nil {
				te.submitted(res.out)
				if t.top {
					// Park without a goroutine; Execution.park arms the wake-ups.
					t.susp = &suspension{t: t, s: s, te: te, token: token, tw: tw, deadline: deadline, heartbeat: heartbeat}
					return nil, errSuspended
				}
				res = t.awaitToken(token, tw, deadline, heartbeat)
			}
			break
		}
		res = t.invokeWithTimeout(deadline, fn, payload, true)
	default:
		res = outcome{err: runtimeError("The resource '%s' is not supported by the local Step Functions engine; mock it with a test case", s.Resource)}
	}
	res = t.finishTask(s, te, token, tw, res)
	return res.out, res.err
}

// finishTask records a task's outcome: it closes the token, notices a stop,
// checks the result's size and writes the task's closing event.
func (t *thread) finishTask(s *State, te taskEvents, token string, tw *tokenWait, res outcome) outcome {
	if tw != nil {
		t.x.engine.closeTokenIfOpen(token, ErrTaskDoesNotExist)
	}
	if t.ctx.Err() != nil {
		return outcome{err: t.aborted()}
	}
	if res.err != nil {
		te.failed(res.err)
		return res
	}
	outJSON := marshalDataString(res.out)
	if n := len(outJSON); n > PayloadLimit {
		serr := &StateError{Name: ErrDataLimitExceeded, Cause: fmt.Sprintf("The task result of state '%s' is %d bytes, over the %d-byte limit", s.Name, n, PayloadLimit)}
		te.failed(serr)
		return outcome{err: serr}
	}
	te.succeededJSON(outJSON)
	return res
}

func resourceParts(r string) (string, string) {
	// arn:aws:states:::service:action
	parts := strings.SplitN(r, ":::", 2)
	if len(parts) == 2 {
		if i := strings.IndexByte(parts[1], ':'); i >= 0 {
			return parts[1][:i], parts[1][i+1:]
		}
	}
	return "unknown", r
}

func lambdaInvokeParams(params any) (string, []byte, *StateError) {
	m, ok := params.(map[string]any)
	if !ok {
		return "", nil, runtimeError("lambda:invoke Parameters must be an object with FunctionName")
	}
	fn, _ := m["FunctionName"].(string)
	if fn == "" {
		return "", nil, &StateError{Name: "Lambda.InvalidParameterValueException", Cause: "FunctionName is required"}
	}
	if q, ok := m["Qualifier"].(string); ok && q != "" && !strings.Contains(FunctionNameFromARN(fn), ":") {
		fn = fn + ":" + q
	}
	payload := []byte("{}")
	if p, ok := m["Payload"]; ok {
		payload = marshalData(p)
	}
	return fn, payload, nil
}

// invokeLambda calls the function; wrap selects the lambda:invoke result shape.
func (t *thread) invokeLambda(ctx context.Context, fn string, payload []byte, wrap bool) outcome {
	inv := t.x.engine.invoker
	if inv == nil {
		return outcome{err: &StateError{Name: "Lambda.SdkClientException", Cause: "no Lambda invoker is configured"}}
	}
	out, fnErr, err := inv.Invoke(ctx, fn, payload)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{err: &StateError{Name: ErrTimeout, Cause: "the task was cancelled"}}
		}
		var te *TaskError
		if errors.As(err, &te) {
			return outcome{err: &StateError{Name: te.Name, Cause: te.Cause}}
		}
		return outcome{err: &StateError{Name: "Lambda.SdkClientException", Cause: err.Error()}}
	}
	if fnErr != nil {
		name := fnErr.Type
		if name == "" {
			name = "Lambda.Unknown"
		}
		return outcome{err: &StateError{Name: name, Cause: fnErr.cause()}}
	}
	v, perr := parseData(out)
	if perr != nil {
		v = string(out)
	}
	if !wrap {
		return outcome{out: v}
	}
	reqID := newUUID()
	return outcome{out: map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         v,
		"SdkHttpMetadata": map[string]any{
			"HttpHeaders": map[string]any{
				"Content-Type":           "application/json",
				"X-Amz-Executed-Version": "$LATEST",
				"x-amzn-RequestId":       reqID,
			},
			"HttpStatusCode": int64(200),
		},
		"SdkResponseMetadata": map[string]any{"RequestId": reqID},
		"StatusCode":          int64(200),
	}}
}

// invokeWithTimeout runs a synchronous invocation (invokeLambda's), bounded by the task's
// deadline when it has one.
func (t *thread) invokeWithTimeout(deadline time.Time, fn string, payload []byte, wrap bool) outcome {
	if deadline.IsZero() {
		return t.invokeLambda(t.ctx, fn, payload, wrap)
	}
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	ch := make(chan outcome, 1)
	go func() { ch <- t.invokeLambda(ctx, fn, payload, wrap) }()
	timedOut := make(chan struct{})
	timer := t.x.engine.clock.AfterFunc(deadline.Sub(t.x.engine.clock.Now()), func() { close(timedOut) })
	defer timer.Stop()
	select {
	case o := <-ch:
		return o
	case <-timedOut:
		return outcome{err: &StateError{Name: ErrTimeout, Cause: "The task did not complete within its TimeoutSeconds"}}
	case <-t.ctx.Done():
		return outcome{err: t.aborted()}
	}
}

// awaitToken parks the execution until SendTaskSuccess/Failure, the timeout,
// a missed heartbeat, or a stop. Timers are clock callbacks; nothing polls.
func (t *thread) awaitToken(token string, tw *tokenWait, deadline time.Time, heartbeat int) outcome {
	e := t.x.engine
	// expire runs in the timer callback: it closes the token, unless a
	// SendTask* call took it first, and delivers the timeout as the outcome.
	// Deciding in the callback keeps a timeout observed by the clock final.
	expire := func(o outcome) {
		e.tokMu.Lock()
		if e.tokens[token] != tw {
			e.tokMu.Unlock()
			return
		}
		e.retire(token, ErrTaskTimedOut)
		e.tokMu.Unlock()
		tw.result <- o // buffered; the token is closed, so no other sender remains
	}
	if !deadline.IsZero() {
		timer := e.clock.AfterFunc(deadline.Sub(e.clock.Now()), func() { expire(timeoutOutcome()) })
		defer timer.Stop()
	}
	tw.hbMu.Lock()
	tw.hbEvery = time.Duration(heartbeat) * time.Second
	tw.onMissed = func() { expire(heartbeatOutcome()) }
	tw.hbMu.Unlock()
	tw.armHeartbeat(e.clock)
	defer tw.stopHeartbeat()
	select {
	case o := <-tw.result:
		return o
	case <-t.ctx.Done():
		return outcome{err: t.aborted()}
	}
}

func timeoutOutcome() outcome {
	return outcome{err: &StateError{Name: ErrTimeout, Cause: "The task did not complete within its TimeoutSeconds"}}
}

func heartbeatOutcome() outcome {
	return outcome{err: &StateError{Name: ErrHeartbeatTimeout, Cause: "The task did not send a heartbeat within its HeartbeatSeconds"}}
}
