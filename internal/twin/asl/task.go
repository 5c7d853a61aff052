package asl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	t      *thread
	arn    string // the state's Resource
	legacy bool   // a bare Lambda function ARN: LambdaFunction* events
}

// taskResourceNames returns the resourceType and resource that name a task's Resource in its
// events, and whether it is a bare Lambda function ARN, whose events are LambdaFunction*.
func taskResourceNames(r string) (resourceType, resource string, legacy bool) {
	switch {
	case r == resourceLambdaInvoke:
		return "lambda", "invoke", false
	case r == resourceLambdaInvokeToken:
		return "lambda", "invoke.waitForTaskToken", false
	case isLambdaFunctionARN(r):
		return "", r, true
	}
	resourceType, resource = resourceParts(r)
	return resourceType, resource, false
}

// details returns a task event's details, which begin with the Resource, followed by the
// strings more.
func (te taskEvents) details(more ...string) details {
	d := details{s: [3]string{te.arn}}
	copy(d.s[1:], more)
	return d
}

// scheduledJSON records the task's scheduling, at now, with its parameters already rendered.
func (te taskEvents) scheduledJSON(now time.Time, paramsJSON string, timeout, heartbeat int) {
	if te.legacy {
		te.t.eventAt(now, kindLambdaScheduled, details{s: [3]string{te.arn, paramsJSON}, n: int64(max(timeout, 0))})
		return
	}
	hb := "" // rare, so kept as text rather than in a field every event would carry
	if heartbeat > 0 {
		hb = strconv.Itoa(heartbeat)
	}
	d := te.details(paramsJSON, hb)
	d.n = int64(max(timeout, 0))
	te.t.eventAt(now, kindTaskScheduled, d)
}

// started records the task's start at now.
func (te taskEvents) started(now time.Time) {
	if te.legacy {
		te.t.eventAt(now, kindLambdaStarted, details{})
		return
	}
	te.t.eventAt(now, kindTaskStarted, te.details())
}

func (te taskEvents) submitted(out any) {
	te.t.eventWith(kindTaskSubmitted, te.details(marshalDataString(out)))
}

// succeededJSON records the task's success with its result already rendered.
func (te taskEvents) succeededJSON(outJSON string) {
	if te.legacy {
		te.t.eventWith(kindLambdaSucceeded, outputDetails(outJSON))
		return
	}
	te.t.eventWith(kindTaskSucceeded, te.details(outJSON))
}

func (te taskEvents) failed(e *StateError) {
	timedOut := e.Name == ErrTimeout || e.Name == ErrHeartbeatTimeout
	switch {
	case te.legacy && timedOut:
		te.t.eventWith(kindLambdaTimedOut, errorDetails(e.Name, e.Cause))
	case te.legacy:
		te.t.eventWith(kindLambdaFailed, errorDetails(e.Name, e.Cause))
	case timedOut:
		te.t.eventWith(kindTaskTimedOut, te.details(e.Name, e.Cause))
	default:
		te.t.eventWith(kindTaskFailed, te.details(e.Name, e.Cause))
	}
}

func (t *thread) task(s *State, eff any, ctxObj map[string]any) (any, *StateError) {
	return t.runTask(s, eff, ctxObj, false)
}

// runTask runs a task state's work. textOK says that the caller takes a result of a bare
// function ARN's task as resultText, which it keeps when the function wrote its result as
// marshalData would: the state's ResultSelector then reads the fields it needs from the text.
func (t *thread) runTask(s *State, eff any, ctxObj map[string]any, textOK bool) (any, *StateError) {
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

	te := taskEvents{t: t, arn: s.Resource}
	_, _, te.legacy = taskResourceNames(s.Resource)
	waitForToken := !te.legacy && strings.HasSuffix(s.Resource, ".waitForTaskToken")

	var token string
	var tw *tokenWait
	if waitForToken {
		token, tw = x.engine.newToken(x)
		if ctxObj != nil { // nil when nothing in the state reads $$.Task.Token
			ctxObj["Task"] = map[string]any{"Token": token}
		}
	}
	// A bare function ARN's task sends its parameters as they are: only their JSON is needed,
	// which the template renders without building the value.
	var params any
	var paramsJSON string
	direct := false
	if te.legacy && s.Parameters != nil {
		paramsJSON, direct = s.Parameters.renderJSON(eff, ctxObj)
	}
	if !direct {
		var err *StateError
		if params, err = applyTemplate(s.Parameters, eff, ctxObj); err != nil {
			if tw != nil {
				x.engine.closeToken(token, ErrTaskDoesNotExist)
			}
			return nil, err
		}
		paramsJSON = marshalDataString(params)
	}
	// Nothing happens between the task's scheduling and its start here: one clock reading
	// serves both, and the deadline counts from it.
	now := x.engine.clock.Now()
	deadline := time.Time{}
	if timeout > 0 {
		deadline = now.Add(time.Duration(timeout) * time.Second)
	}
	te.scheduledJSON(now, paramsJSON, timeout, heartbeat)
	te.started(now)

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
			v, js, perr := parseDataJSON(out)
			if perr != nil {
				serr := runtimeError("mocked response for state '%s' is not valid JSON: %v", s.Name, perr)
				te.failed(serr)
				return nil, serr
			}
			if js == "" {
				js = marshalDataString(v)
			}
			te.succeededJSON(js)
			return v, nil
		}
	}

	var res outcome
	switch {
	case te.legacy:
		res = t.invokeWithTimeout(deadline, s.Resource, []byte(paramsJSON), false, textOK)
	case s.Resource == resourceLambdaInvoke || s.Resource == resourceLambdaInvokeToken:
		fn, payload, perr := lambdaInvokeParams(params)
		if perr != nil {
			res = outcome{err: perr}
			break
		}
		if waitForToken {
			res = t.invokeLambda(t.ctx, fn, payload, true, false)
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
		res = t.invokeWithTimeout(deadline, fn, payload, true, false)
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
	outJSON := res.outJSON
	if outJSON == "" {
		outJSON = marshalDataString(res.out)
	}
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

// invokeLambda calls the function; wrap selects the lambda:invoke result shape, textOK a
// resultText for a result written as marshalData writes JSON (not wrapped).
func (t *thread) invokeLambda(ctx context.Context, fn string, payload []byte, wrap, textOK bool) outcome {
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
	if textOK && !wrap && isCanonicalJSON(out) {
		js := string(out)
		return outcome{out: resultText(js), outJSON: js}
	}
	v, js, perr := parseDataJSON(out)
	if perr != nil {
		v = string(out)
	}
	if !wrap {
		return outcome{out: v, outJSON: js}
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
func (t *thread) invokeWithTimeout(deadline time.Time, fn string, payload []byte, wrap, textOK bool) outcome {
	if deadline.IsZero() {
		return t.invokeLambda(t.ctx, fn, payload, wrap, textOK)
	}
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	ch := make(chan outcome, 1)
	go func() { ch <- t.invokeLambda(ctx, fn, payload, wrap, textOK) }()
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
