package console

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/saga"
)

// State statuses on the graph, as Step Functions' console colours them.
const (
	StateNotRun    = ""          // never entered
	StateSucceeded = "succeeded" // entered and left with no error left unhandled
	StateCaught    = "caught"    // left through a Catch: its last attempt failed
	StateFailed    = "failed"    // where the execution failed (or timed out)
	StateRunning   = "running"   // entered, and the execution is still running
	StateAborted   = "aborted"   // entered when the execution was stopped
)

// ExecutionView is one execution as the console shows it.
type ExecutionView struct {
	Execution Summary  `json:"execution"`
	Ending    Ending   `json:"ending"`
	Graph     *Graph   `json:"graph,omitempty"`
	GraphErr  string   `json:"graphError,omitempty"`
	States    []Visit  `json:"states"`
	Taken     []Taken  `json:"taken"`
	Events    []Event  `json:"events"`
	Status    Statuses `json:"stateStatus"`
	// Records is what only this system knows about the reservation the execution is for.
	Records *Records `json:"records,omitempty"`
	// Redrivable says whether Step Functions would accept RedriveExecution (a failed,
	// timed-out or aborted Standard execution).
	Redrivable bool `json:"redrivable"`
}

// Statuses maps each state entered to its status (StateSucceeded ...).
type Statuses map[string]string

// Summary is what DescribeExecution says about an execution.
type Summary struct {
	ARN             string     `json:"executionArn"`
	Name            string     `json:"name"`
	StateMachineARN string     `json:"stateMachineArn"`
	Status          string     `json:"status"`
	Start           time.Time  `json:"startDate"`
	Stop            *time.Time `json:"stopDate,omitempty"`
	DurationMs      *float64   `json:"durationMs,omitempty"`
	Input           string     `json:"input,omitempty"`
	Output          string     `json:"output,omitempty"`
	Error           string     `json:"error,omitempty"`
	Cause           string     `json:"cause,omitempty"`
	RedriveCount    int32      `json:"redriveCount,omitempty"`
	RedriveStatus   string     `json:"redriveStatus,omitempty"`
	RedriveReason   string     `json:"redriveStatusReason,omitempty"`
}

// Ending is the saga's reading of how the execution ended (saga.EndingOf).
type Ending struct {
	Finished    bool   `json:"finished"`
	Outcome     string `json:"outcome,omitempty"`
	NeedsPerson bool   `json:"needsPerson"`
	Cause       string `json:"cause,omitempty"`
}

// Visit is one entry into a state: when, for how long, how many attempts its task took.
type Visit struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Status     string   `json:"status"`
	EnteredMs  float64  `json:"enteredMs"`
	DurationMs *float64 `json:"durationMs,omitempty"`
	Attempts   int      `json:"attempts,omitempty"`
	// Error is the last task error seen in the visit.
	Error string `json:"error,omitempty"`
}

// Taken is a transition the execution took, and how many times.
type Taken struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// Event is one history event with what the console shows beside it.
type Event struct {
	ID         int64   `json:"id"`
	PreviousID int64   `json:"previousEventId,omitempty"`
	Type       string  `json:"type"`
	Timestamp  string  `json:"timestamp"`
	ElapsedMs  float64 `json:"elapsedMs"`
	State      string  `json:"state,omitempty"`
	// DurationMs is, on a StateExited event, the time in the state; on a task's outcome, the
	// attempt's time since it was scheduled; on a retry's scheduling, the backoff since the
	// failure before it.
	DurationMs *float64 `json:"durationMs,omitempty"`
	// Attempt numbers a task's schedulings within a visit (1 is the first; more are retries).
	Attempt    int               `json:"attempt,omitempty"`
	Input      string            `json:"input,omitempty"`
	Output     string            `json:"output,omitempty"`
	Parameters string            `json:"parameters,omitempty"`
	Error      string            `json:"error,omitempty"`
	Cause      string            `json:"cause,omitempty"`
	Resource   string            `json:"resource,omitempty"`
	Details    map[string]string `json:"details,omitempty"`
}

// BuildView reads an execution's description and history (oldest event first) into the
// console's view; graph may be nil when the definition could not be laid out.
func BuildView(desc *sfn.DescribeExecutionOutput, events []sfntypes.HistoryEvent, graph *Graph) *ExecutionView {
	v := &ExecutionView{Graph: graph, Status: Statuses{}, Execution: summaryOf(desc)}
	e := saga.EndingOf(string(desc.Status), aws.ToString(desc.Output), aws.ToString(desc.Error))
	v.Ending = Ending{Finished: e.Finished, Outcome: e.Outcome, NeedsPerson: e.NeedsPerson, Cause: e.Cause}
	switch desc.Status {
	case sfntypes.ExecutionStatusFailed, sfntypes.ExecutionStatusTimedOut, sfntypes.ExecutionStatusAborted:
		v.Redrivable = true
	}
	start := v.Execution.Start
	ms := func(d time.Duration) *float64 { f := float64(d) / float64(time.Millisecond); return &f }
	types := map[string]string{}
	if graph != nil {
		for _, n := range graph.Nodes {
			types[n.Name] = n.Type
		}
	}
	taken := map[[2]string]int{}
	var order [][2]string
	previous := StartNode
	var visit *Visit // the current state's visit
	var scheduled, failedAt time.Time
	closeVisit := func(status string) {
		if visit != nil && visit.Status == StateRunning {
			visit.Status = status
		}
	}
	for _, ev := range events {
		at := aws.ToTime(ev.Timestamp)
		out := Event{ID: ev.Id, PreviousID: ev.PreviousEventId, Type: string(ev.Type),
			Timestamp: at.UTC().Format(time.RFC3339Nano), ElapsedMs: float64(at.Sub(start)) / float64(time.Millisecond)}
		fillDetails(&out, ev)
		switch {
		case ev.StateEnteredEventDetails != nil:
			name := aws.ToString(ev.StateEnteredEventDetails.Name)
			edge := [2]string{previous, name}
			if taken[edge] == 0 {
				order = append(order, edge)
			}
			taken[edge]++
			previous = name
			typ := types[name]
			if typ == "" {
				typ = strings.TrimSuffix(string(ev.Type), "StateEntered")
			}
			v.States = append(v.States, Visit{Name: name, Type: typ, Status: StateRunning, EnteredMs: out.ElapsedMs})
			visit = &v.States[len(v.States)-1]
			scheduled, failedAt = time.Time{}, time.Time{}
		case ev.StateExitedEventDetails != nil:
			if visit != nil {
				visit.DurationMs = ms(time.Duration((out.ElapsedMs - visit.EnteredMs) * float64(time.Millisecond)))
				out.DurationMs = visit.DurationMs
				if visit.Error != "" {
					closeVisit(StateCaught)
				} else {
					closeVisit(StateSucceeded)
				}
			}
		case isScheduled(ev.Type):
			if visit != nil {
				visit.Attempts++
				out.Attempt = visit.Attempts
				if visit.Attempts > 1 && !failedAt.IsZero() {
					out.DurationMs = ms(at.Sub(failedAt))
				}
				// A retried attempt starts clean: only an error of the last attempt sends the
				// state out through a Catch.
				visit.Error = ""
			}
			scheduled = at
		case isTaskOutcome(ev.Type):
			if !scheduled.IsZero() {
				out.DurationMs = ms(at.Sub(scheduled))
			}
			if out.Error != "" && visit != nil {
				visit.Error = out.Error
				failedAt = at
			}
		case ev.Type == sfntypes.HistoryEventTypeExecutionFailed || ev.Type == sfntypes.HistoryEventTypeExecutionTimedOut:
			closeVisit(StateFailed)
		case ev.Type == sfntypes.HistoryEventTypeExecutionAborted:
			closeVisit(StateAborted)
		}
		if visit != nil && out.State == "" && ev.Type != sfntypes.HistoryEventTypeExecutionStarted {
			out.State = visit.Name
		}
		v.Events = append(v.Events, out)
	}
	for _, s := range v.States {
		v.Status[s.Name] = worse(v.Status[s.Name], s.Status)
	}
	for _, edge := range order {
		v.Taken = append(v.Taken, Taken{From: edge[0], To: edge[1], Count: taken[edge]})
	}
	return v
}

// worse keeps the status of a state entered more than once that most needs a look.
func worse(a, b string) string {
	rank := map[string]int{StateNotRun: 0, StateSucceeded: 1, StateCaught: 2, StateRunning: 3, StateAborted: 4, StateFailed: 5}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func isScheduled(t sfntypes.HistoryEventType) bool {
	switch t {
	case sfntypes.HistoryEventTypeTaskScheduled, sfntypes.HistoryEventTypeLambdaFunctionScheduled, sfntypes.HistoryEventTypeActivityScheduled:
		return true
	}
	return false
}

func isTaskOutcome(t sfntypes.HistoryEventType) bool {
	switch t {
	case sfntypes.HistoryEventTypeTaskSucceeded, sfntypes.HistoryEventTypeTaskFailed, sfntypes.HistoryEventTypeTaskTimedOut,
		sfntypes.HistoryEventTypeTaskStartFailed, sfntypes.HistoryEventTypeTaskSubmitFailed,
		sfntypes.HistoryEventTypeLambdaFunctionSucceeded, sfntypes.HistoryEventTypeLambdaFunctionFailed,
		sfntypes.HistoryEventTypeLambdaFunctionTimedOut, sfntypes.HistoryEventTypeLambdaFunctionStartFailed,
		sfntypes.HistoryEventTypeActivitySucceeded, sfntypes.HistoryEventTypeActivityFailed, sfntypes.HistoryEventTypeActivityTimedOut:
		return true
	}
	return false
}

func summaryOf(d *sfn.DescribeExecutionOutput) Summary {
	s := Summary{ARN: aws.ToString(d.ExecutionArn), Name: aws.ToString(d.Name), StateMachineARN: aws.ToString(d.StateMachineArn),
		Status: string(d.Status), Start: aws.ToTime(d.StartDate).UTC(), Input: pretty(aws.ToString(d.Input)),
		Output: pretty(aws.ToString(d.Output)), Error: aws.ToString(d.Error), Cause: aws.ToString(d.Cause),
		RedriveCount: aws.ToInt32(d.RedriveCount), RedriveStatus: string(d.RedriveStatus), RedriveReason: aws.ToString(d.RedriveStatusReason)}
	if d.StopDate != nil {
		stop := d.StopDate.UTC()
		s.Stop = &stop
		ms := float64(stop.Sub(s.Start)) / float64(time.Millisecond)
		s.DurationMs = &ms
	}
	return s
}

// fillDetails copies an event's details into out, whichever of the SDK's *EventDetails fields
// carries them: the data fields (input, output, parameters) indented, the rest as text.
func fillDetails(out *Event, ev sfntypes.HistoryEvent) {
	rv := reflect.ValueOf(ev)
	for i := range rv.NumField() {
		f := rv.Field(i)
		if !strings.HasSuffix(rv.Type().Field(i).Name, "EventDetails") || f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		d := f.Elem()
		for j := range d.NumField() {
			name, fv := d.Type().Field(j).Name, d.Field(j)
			text, ok := fieldText(fv)
			if !ok {
				continue
			}
			switch name {
			case "Name":
				out.State = text
			case "Input":
				out.Input = pretty(text)
			case "Output":
				out.Output = pretty(text)
			case "Parameters":
				out.Parameters = pretty(text)
			case "Error":
				out.Error = text
			case "Cause":
				out.Cause = text
			case "Resource":
				out.Resource = text
			default:
				if out.Details == nil {
					out.Details = map[string]string{}
				}
				out.Details[name] = text
			}
		}
	}
}

// fieldText renders a detail field set to a value: strings, numbers and booleans behind the
// SDK's pointers, and nested structures (InputDetails, TaskCredentials …) as JSON.
func fieldText(v reflect.Value) (string, bool) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), v.String() != ""
	case reflect.Struct, reflect.Map, reflect.Slice:
		if v.Kind() == reflect.Struct && v.Type().PkgPath() == "github.com/aws/smithy-go/document" {
			return "", false
		}
		if (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.Len() == 0 {
			return "", false
		}
		b, err := json.Marshal(v.Interface())
		if err != nil || string(b) == "{}" {
			return "", false
		}
		return string(b), true
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Bool, reflect.Float64:
		b, _ := json.Marshal(v.Interface())
		return string(b), true
	}
	return "", false
}

// pretty indents a JSON document and leaves anything else as it is.
func pretty(s string) string {
	if s == "" {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}
