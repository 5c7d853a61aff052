package console

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

var t0 = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

// history builds events one millisecond count after another from the start.
type history struct{ events []sfntypes.HistoryEvent }

func (h *history) add(ms int, typ sfntypes.HistoryEventType, set func(*sfntypes.HistoryEvent)) *history {
	ev := sfntypes.HistoryEvent{Id: int64(len(h.events) + 1), Type: typ, Timestamp: aws.Time(t0.Add(time.Duration(ms) * time.Millisecond))}
	if set != nil {
		set(&ev)
	}
	h.events = append(h.events, ev)
	return h
}

func (h *history) enter(ms int, name string) *history {
	return h.add(ms, sfntypes.HistoryEventTypeTaskStateEntered, func(e *sfntypes.HistoryEvent) {
		e.StateEnteredEventDetails = &sfntypes.StateEnteredEventDetails{Name: aws.String(name), Input: aws.String(`{"a":1}`)}
	})
}

func (h *history) exit(ms int, name string) *history {
	return h.add(ms, sfntypes.HistoryEventTypeTaskStateExited, func(e *sfntypes.HistoryEvent) {
		e.StateExitedEventDetails = &sfntypes.StateExitedEventDetails{Name: aws.String(name), Output: aws.String(`{"b":2}`)}
	})
}

func (h *history) schedule(ms int) *history {
	return h.add(ms, sfntypes.HistoryEventTypeLambdaFunctionScheduled, func(e *sfntypes.HistoryEvent) {
		e.LambdaFunctionScheduledEventDetails = &sfntypes.LambdaFunctionScheduledEventDetails{Resource: aws.String("arn:aws:lambda:us-east-1:1:function:claim"), Input: aws.String(`{}`)}
	})
}

func (h *history) fail(ms int, errName string) *history {
	return h.add(ms, sfntypes.HistoryEventTypeLambdaFunctionFailed, func(e *sfntypes.HistoryEvent) {
		e.LambdaFunctionFailedEventDetails = &sfntypes.LambdaFunctionFailedEventDetails{Error: aws.String(errName), Cause: aws.String("because")}
	})
}

func (h *history) succeed(ms int) *history {
	return h.add(ms, sfntypes.HistoryEventTypeLambdaFunctionSucceeded, func(e *sfntypes.HistoryEvent) {
		e.LambdaFunctionSucceededEventDetails = &sfntypes.LambdaFunctionSucceededEventDetails{Output: aws.String(`{"ok":true}`)}
	})
}

func described(status sfntypes.ExecutionStatus, stopMs int) *sfn.DescribeExecutionOutput {
	d := &sfn.DescribeExecutionOutput{ExecutionArn: aws.String("arn:aws:states:us-east-1:1:execution:m:r_1"), Name: aws.String("r_1"),
		StateMachineArn: aws.String("arn:aws:states:us-east-1:1:stateMachine:m"), Status: status, StartDate: aws.Time(t0),
		Input: aws.String(`{"reservationId":"r_1"}`)}
	if status != sfntypes.ExecutionStatusRunning {
		d.StopDate = aws.Time(t0.Add(time.Duration(stopMs) * time.Millisecond))
	}
	return d
}

func statuses(v *ExecutionView) []string {
	var out []string
	for _, s := range v.States {
		out = append(out, s.Name+"="+s.Status)
	}
	return out
}

// A state's status is read from its last attempt and how the execution went on: left after a
// retried attempt succeeded, it succeeded; left after its last attempt failed, its error was
// caught; still in it when the execution failed, stopped or is running, it failed, was
// aborted, or runs.
func TestStateStatusesFollowTheHistory(t *testing.T) {
	start := func() *history {
		return (&history{}).add(0, sfntypes.HistoryEventTypeExecutionStarted, nil).enter(0, "Claim")
	}
	cases := []struct {
		name   string
		status sfntypes.ExecutionStatus
		events *history
		want   []string
	}{
		{"a retry that succeeds", sfntypes.ExecutionStatusSucceeded,
			start().schedule(1).fail(2, "Lambda.ServiceException").schedule(500).succeed(510).exit(511, "Claim").
				add(512, sfntypes.HistoryEventTypeExecutionSucceeded, nil),
			[]string{"Claim=succeeded"}},
		{"a failure caught into a Fail state", sfntypes.ExecutionStatusFailed,
			start().schedule(1).fail(2, "Boom").exit(3, "Claim").enter(3, "Claim failed").
				add(4, sfntypes.HistoryEventTypeExecutionFailed, nil),
			[]string{"Claim=caught", "Claim failed=failed"}},
		{"an uncaught failure", sfntypes.ExecutionStatusFailed,
			start().schedule(1).fail(2, "Boom").add(3, sfntypes.HistoryEventTypeExecutionFailed, nil),
			[]string{"Claim=failed"}},
		{"a timeout", sfntypes.ExecutionStatusTimedOut,
			start().schedule(1).add(9, sfntypes.HistoryEventTypeExecutionTimedOut, nil),
			[]string{"Claim=failed"}},
		{"a stop", sfntypes.ExecutionStatusAborted,
			start().schedule(1).add(9, sfntypes.HistoryEventTypeExecutionAborted, nil),
			[]string{"Claim=aborted"}},
		{"still running", sfntypes.ExecutionStatusRunning,
			start().schedule(1),
			[]string{"Claim=running"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := BuildView(described(c.status, 20), c.events.events, nil)
			if got := statuses(v); !reflect.DeepEqual(got, c.want) {
				t.Errorf("states %v, want %v", got, c.want)
			}
			wantRedrivable := c.status == sfntypes.ExecutionStatusFailed || c.status == sfntypes.ExecutionStatusTimedOut ||
				c.status == sfntypes.ExecutionStatusAborted
			if v.Redrivable != wantRedrivable {
				t.Errorf("redrivable %v for %s", v.Redrivable, c.status)
			}
		})
	}
}

// The events carry what the console shows beside them: the state, the attempt, the retry's
// backoff, each attempt's and each visit's duration, and the data fields, indented.
func TestEventsCarryAttemptsDurationsAndData(t *testing.T) {
	h := (&history{}).add(0, sfntypes.HistoryEventTypeExecutionStarted, nil).enter(0, "Claim").
		schedule(1).fail(3, "Lambda.ServiceException").schedule(503).succeed(553).exit(554, "Claim")
	v := BuildView(described(sfntypes.ExecutionStatusRunning, 0), h.events, nil)
	ev := v.Events
	if ev[0].State != "" || ev[1].State != "Claim" || ev[5].State != "Claim" {
		t.Errorf("states of the events: %q %q %q", ev[0].State, ev[1].State, ev[5].State)
	}
	if ev[2].Attempt != 1 || ev[4].Attempt != 2 || ev[2].DurationMs != nil {
		t.Errorf("attempts %d, %d; first scheduling's duration %v", ev[2].Attempt, ev[4].Attempt, ev[2].DurationMs)
	}
	if d := ev[4].DurationMs; d == nil || *d != 500 {
		t.Errorf("the retry's backoff is %v, want 500 ms after the failure", d)
	}
	if d := ev[3].DurationMs; d == nil || *d != 2 {
		t.Errorf("the failed attempt took %v, want 2 ms", d)
	}
	if d := ev[5].DurationMs; d == nil || *d != 50 {
		t.Errorf("the retried attempt took %v, want 50 ms", d)
	}
	if d := ev[6].DurationMs; d == nil || *d != 554 {
		t.Errorf("the visit took %v, want 554 ms", d)
	}
	if v.States[0].Attempts != 2 || v.States[0].Error != "" {
		t.Errorf("visit %+v, want two attempts and no error left", v.States[0])
	}
	if ev[1].Input != "{\n  \"a\": 1\n}" || ev[6].Output != "{\n  \"b\": 2\n}" || ev[5].Output != "{\n  \"ok\": true\n}" {
		t.Errorf("data fields %q %q %q", ev[1].Input, ev[6].Output, ev[5].Output)
	}
	if ev[2].Resource != "arn:aws:lambda:us-east-1:1:function:claim" || ev[3].Error != "Lambda.ServiceException" || ev[3].Cause != "because" {
		t.Errorf("resource %q, error %q, cause %q", ev[2].Resource, ev[3].Error, ev[3].Cause)
	}
	if v.Execution.Input != "{\n  \"reservationId\": \"r_1\"\n}" {
		t.Errorf("execution input %q", v.Execution.Input)
	}
}

// The path taken counts each transition, Start's to the first state included, so a loop's
// edge is counted as often as it was taken.
func TestTakenCountsEveryTransition(t *testing.T) {
	h := (&history{}).enter(0, "Wait").exit(1, "Wait").enter(1, "Check").exit(2, "Check").
		enter(2, "Wait").exit(3, "Wait").enter(3, "Check").exit(4, "Check").enter(4, "Done")
	v := BuildView(described(sfntypes.ExecutionStatusSucceeded, 5), h.events, nil)
	want := []Taken{{StartNode, "Wait", 1}, {"Wait", "Check", 2}, {"Check", "Wait", 1}, {"Check", "Done", 1}}
	if !reflect.DeepEqual(v.Taken, want) {
		t.Errorf("taken %v, want %v", v.Taken, want)
	}
	if v.Status["Wait"] != StateSucceeded || v.Status["Done"] != StateRunning {
		t.Errorf("status %v", v.Status)
	}
}

// The saga's ending is read as every reader of executions reads it: a lost race succeeded and
// needs nobody; a failed execution needs a person.
func TestEndingIsTheSagas(t *testing.T) {
	won := described(sfntypes.ExecutionStatusSucceeded, 5)
	won.Output = aws.String(`{"Error":"SeatUnavailable","Cause":"seat S1 is taken"}`)
	if e := BuildView(won, nil, nil).Ending; e.Outcome != "SeatUnavailable" || e.NeedsPerson || !e.Finished {
		t.Errorf("lost race read as %+v", e)
	}
	lost := described(sfntypes.ExecutionStatusFailed, 5)
	lost.Error = aws.String("ClaimFailed")
	if e := BuildView(lost, nil, nil).Ending; !e.NeedsPerson || e.Outcome != "ClaimFailed" {
		t.Errorf("failed execution read as %+v", e)
	}
}
