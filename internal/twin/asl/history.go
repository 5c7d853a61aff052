package asl

import (
	"strconv"
	"time"
)

// An execution records several history events per state transition. Their details, as the API
// reports them, are maps of boxed values, which cost a map and an allocation per value each; the
// execution keeps the details of the events every transition writes in a few typed fields
// instead, and makes them into the API's map once, when the history is read.

// detailsShape names an event's details keys; the fields of details hold their values.
type detailsShape uint8

const (
	shapeNone             detailsShape = iota // no details
	shapeExecutionStarted                     // roleArn; the input is the execution's
	shapeStateEntered                         // name, input; n is enteredWithExecutionInput for the execution's input
	shapeStateExited                          // name, output
	shapeOutput                               // output
	shapeError                                // error, cause
	shapeLambdaScheduled                      // resource, input, timeoutInSeconds when set
	// The task shapes record the task's Resource, from which resourceType and resource follow.
	shapeTaskScheduled // Resource, parameters, heartbeatInSeconds in decimal when set, timeoutInSeconds when set; region
	shapeTask          // Resource
	shapeTaskOutput    // Resource, output
	shapeTaskError     // Resource, error, cause
	shapeMapIteration  // name, index
	shapeMapStarted    // length
	shapeRedriven      // redriveCount
)

// details are an event's details as recorded: s and n are its shape's string and number
// values in the order the shape's comment lists them.
type details struct {
	s [3]string
	n int64
}

// enteredWithExecutionInput marks the StateEntered event of the state that took the
// execution's input: the execution keeps that input, so its JSON is rendered when read.
const enteredWithExecutionInput = 1

// eventKind is an event's type, the name of its details in the API and their shape: one
// value per kind, shared by its events.
type eventKind struct {
	typ, key string
	shape    detailsShape
}

// event is a history event as the execution stores it, in 96 bytes: its id is its place in
// the history, and its details' shape is its kind's.
type event struct {
	at   time.Time
	kind *eventKind
	prev int64
	details
}

// historyLocked returns the execution's events as the API reports them, making their details
// into maps on first read (kept in eventMaps, so that every reader of the history shares them);
// the caller holds x.mu.
func (x *Execution) historyLocked() []HistoryEvent {
	if len(x.events) == 0 {
		return nil
	}
	if len(x.eventMaps) < len(x.events) {
		x.eventMaps = append(x.eventMaps, make([]map[string]any, len(x.events)-len(x.eventMaps))...)
	}
	out := make([]HistoryEvent, len(x.events))
	for i := range x.events {
		ev := &x.events[i]
		m := x.eventMaps[i]
		if m == nil && ev.kind.shape != shapeNone {
			m = ev.detailsMap(x, ev.kind.shape)
			x.eventMaps[i] = m
			ev.details = details{} // the map holds them now
		}
		out[i] = HistoryEvent{ID: int64(i + 1), PreviousEventID: ev.prev, Timestamp: ev.at, Type: ev.kind.typ, DetailsKey: ev.kind.key, Details: m}
	}
	return out
}

// detailsMap renders recorded details as the API's map; x is the execution that recorded them.
func (d *details) detailsMap(x *Execution, shape detailsShape) map[string]any {
	s, n := &d.s, d.n
	switch shape {
	case shapeExecutionStarted:
		// The input as given, which the execution keeps (its Snapshot's Input), is not copied
		// until the history is read.
		return map[string]any{"input": string(x.Input), "inputDetails": notTruncated, "roleArn": s[0]}
	case shapeStateEntered:
		input := s[1]
		if n == enteredWithExecutionInput {
			input = marshalDataString(x.input)
		}
		return map[string]any{"name": s[0], "input": input, "inputDetails": notTruncated}
	case shapeStateExited:
		return map[string]any{"name": s[0], "output": s[1], "outputDetails": notTruncated}
	case shapeOutput:
		return map[string]any{"output": s[0], "outputDetails": notTruncated}
	case shapeError:
		return map[string]any{"error": s[0], "cause": s[1]}
	case shapeLambdaScheduled:
		m := map[string]any{"resource": s[0], "input": s[1], "inputDetails": notTruncated}
		if n > 0 {
			m["timeoutInSeconds"] = n
		}
		return m
	case shapeTaskScheduled:
		typ, name, _ := taskResourceNames(s[0])
		m := map[string]any{"resourceType": typ, "resource": name, "region": x.engine.regionValue, "parameters": s[1]}
		if n > 0 {
			m["timeoutInSeconds"] = n
		}
		if s[2] != "" {
			hb, _ := strconv.ParseInt(s[2], 10, 64)
			m["heartbeatInSeconds"] = hb
		}
		return m
	case shapeTask:
		typ, name, _ := taskResourceNames(s[0])
		return map[string]any{"resourceType": typ, "resource": name}
	case shapeTaskOutput:
		typ, name, _ := taskResourceNames(s[0])
		return map[string]any{"resourceType": typ, "resource": name, "output": s[1], "outputDetails": notTruncated}
	case shapeTaskError:
		typ, name, _ := taskResourceNames(s[0])
		return map[string]any{"resourceType": typ, "resource": name, "error": s[1], "cause": s[2]}
	case shapeMapIteration:
		return map[string]any{"name": s[0], "index": n}
	case shapeMapStarted:
		return map[string]any{"length": n}
	case shapeRedriven:
		return map[string]any{"redriveCount": n}
	}
	return nil
}

func errorDetails(name, cause string) details { return details{s: [3]string{name, cause}} }

func outputDetails(outJSON string) details { return details{s: [3]string{outJSON}} }

func mapIterationDetails(state string, index int) details {
	return details{s: [3]string{state}, n: int64(index)}
}

// The kinds of the events the engine records.
var (
	kindExecutionStarted      = &eventKind{"ExecutionStarted", "executionStartedEventDetails", shapeExecutionStarted}
	kindExecutionSucceeded    = &eventKind{"ExecutionSucceeded", "executionSucceededEventDetails", shapeOutput}
	kindExecutionFailed       = &eventKind{"ExecutionFailed", "executionFailedEventDetails", shapeError}
	kindExecutionAborted      = &eventKind{"ExecutionAborted", "executionAbortedEventDetails", shapeError}
	kindExecutionTimedOut     = &eventKind{"ExecutionTimedOut", "executionTimedOutEventDetails", shapeError}
	kindExecutionRedriven     = &eventKind{"ExecutionRedriven", "executionRedrivenEventDetails", shapeRedriven}
	kindTaskScheduled         = &eventKind{"TaskScheduled", "taskScheduledEventDetails", shapeTaskScheduled}
	kindTaskStarted           = &eventKind{"TaskStarted", "taskStartedEventDetails", shapeTask}
	kindTaskSubmitted         = &eventKind{"TaskSubmitted", "taskSubmittedEventDetails", shapeTaskOutput}
	kindTaskSucceeded         = &eventKind{"TaskSucceeded", "taskSucceededEventDetails", shapeTaskOutput}
	kindTaskFailed            = &eventKind{"TaskFailed", "taskFailedEventDetails", shapeTaskError}
	kindTaskTimedOut          = &eventKind{"TaskTimedOut", "taskTimedOutEventDetails", shapeTaskError}
	kindLambdaScheduled       = &eventKind{"LambdaFunctionScheduled", "lambdaFunctionScheduledEventDetails", shapeLambdaScheduled}
	kindLambdaStarted         = &eventKind{"LambdaFunctionStarted", "", shapeNone}
	kindLambdaSucceeded       = &eventKind{"LambdaFunctionSucceeded", "lambdaFunctionSucceededEventDetails", shapeOutput}
	kindLambdaFailed          = &eventKind{"LambdaFunctionFailed", "lambdaFunctionFailedEventDetails", shapeError}
	kindLambdaTimedOut        = &eventKind{"LambdaFunctionTimedOut", "lambdaFunctionTimedOutEventDetails", shapeError}
	kindParallelStarted       = &eventKind{"ParallelStateStarted", "", shapeNone}
	kindParallelSucceeded     = &eventKind{"ParallelStateSucceeded", "", shapeNone}
	kindParallelFailed        = &eventKind{"ParallelStateFailed", "", shapeNone}
	kindMapStarted            = &eventKind{"MapStateStarted", "mapStateStartedEventDetails", shapeMapStarted}
	kindMapSucceeded          = &eventKind{"MapStateSucceeded", "", shapeNone}
	kindMapFailed             = &eventKind{"MapStateFailed", "", shapeNone}
	kindMapIterationStarted   = &eventKind{"MapIterationStarted", "mapIterationStartedEventDetails", shapeMapIteration}
	kindMapIterationSucceeded = &eventKind{"MapIterationSucceeded", "mapIterationSucceededEventDetails", shapeMapIteration}
	kindMapIterationFailed    = &eventKind{"MapIterationFailed", "mapIterationFailedEventDetails", shapeMapIteration}
	kindMapIterationAborted   = &eventKind{"MapIterationAborted", "mapIterationAbortedEventDetails", shapeMapIteration}
)

// enteredKinds and exitedKinds are every state type's StateEntered and StateExited kinds.
var enteredKinds, exitedKinds = stateEventKinds("StateEntered", "stateEnteredEventDetails", shapeStateEntered),
	stateEventKinds("StateExited", "stateExitedEventDetails", shapeStateExited)

func stateEventKinds(suffix, key string, shape detailsShape) map[string]*eventKind {
	m := make(map[string]*eventKind, len(allowedFields))
	for typ := range allowedFields {
		m[typ] = &eventKind{typ + suffix, key, shape}
	}
	return m
}

// stateKind returns a state type's kind in kinds, or makes one for a type it lacks.
func stateKind(kinds map[string]*eventKind, typ, suffix, key string, shape detailsShape) *eventKind {
	if k, ok := kinds[typ]; ok {
		return k
	}
	return &eventKind{typ + suffix, key, shape}
}
