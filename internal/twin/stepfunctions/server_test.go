package stepfunctions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	srv    *stepfunctions.Server
	client *sfn.Client
	clock  *clock.Fake
	tokens chan string // task tokens received by the "request" function
}

func newClient(endpoint string) *sfn.Client {
	return sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, stepfunctions.WithoutHostPrefix)
}

func newEnv(t testing.TB, mocker asl.TaskMocker) *env {
	t.Helper()
	e := &env{clock: clock.NewFake(epoch), tokens: make(chan string, 16)}
	inv := asl.NewFuncInvoker(map[string]asl.Func{
		"echo": func(_ context.Context, p []byte) ([]byte, error) { return p, nil },
		// request hands its task token to the test, as a payment request would to a webhook.
		"request": func(_ context.Context, p []byte) ([]byte, error) {
			var in struct{ Token string }
			if err := json.Unmarshal(p, &in); err != nil {
				return nil, err
			}
			e.tokens <- in.Token
			return []byte(`{"requested":true}`), nil
		},
		"declined": func(context.Context, []byte) ([]byte, error) {
			return nil, &asl.FunctionError{Type: "PaymentDeclined", Message: "card declined"}
		},
	})
	e.srv = stepfunctions.New(stepfunctions.Options{Clock: e.clock, Invoker: inv, Mocker: mocker,
		Substitutions: map[string]string{"EchoArn": "arn:aws:lambda:us-east-1:123456789012:function:echo"}})
	endpoint, err := e.srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	e.client = newClient(endpoint)
	return e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) create(t *testing.T, name, def string) string {
	t.Helper()
	out, err := e.client.CreateStateMachine(ctxT(t), &sfn.CreateStateMachineInput{Name: aws.String(name),
		Definition: aws.String(def), RoleArn: aws.String("arn:aws:iam::123456789012:role/sfn")})
	if err != nil {
		t.Fatalf("CreateStateMachine: %v", err)
	}
	return *out.StateMachineArn
}

func (e *env) start(t *testing.T, smArn, name, input string) string {
	t.Helper()
	out, err := e.client.StartExecution(ctxT(t), &sfn.StartExecutionInput{StateMachineArn: aws.String(smArn), Name: aws.String(name), Input: aws.String(input)})
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	return *out.ExecutionArn
}

func (e *env) finish(t *testing.T, arn string) *sfn.DescribeExecutionOutput {
	t.Helper()
	if err := e.srv.WaitExecution(ctxT(t), arn); err != nil {
		t.Fatalf("execution did not finish: %v", err)
	}
	out, err := e.client.DescribeExecution(ctxT(t), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) token(t *testing.T) string {
	t.Helper()
	select {
	case tok := <-e.tokens:
		return tok
	case <-time.After(10 * time.Second):
		t.Fatal("no task token received")
		return ""
	}
}

func (e *env) history(t *testing.T, arn string) []types.HistoryEvent {
	t.Helper()
	var events []types.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(e.client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 3})
	for p.HasMorePages() {
		pg, err := p.NextPage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, pg.Events...)
	}
	return events
}

func eventTypes(events []types.HistoryEvent) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = string(ev.Type)
	}
	return out
}

func wantAPIError[T error](t *testing.T, err error) {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("want %T, got %v", target, err)
	}
}

const echoDef = `{"StartAt":"Echo","States":{"Echo":{"Type":"Task","Resource":"${EchoArn}","ResultPath":"$.echoed","Next":"Done"},"Done":{"Type":"Succeed"}}}`

const paymentDef = `{
  "StartAt": "Authorize",
  "States": {
    "Authorize": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
      "Parameters": {"FunctionName": "request", "Payload": {"Token.$": "$$.Task.Token", "order.$": "$.order"}},
      "TimeoutSeconds": 300,
      "HeartbeatSeconds": 60,
      "ResultPath": "$.payment",
      "Catch": [
        {"ErrorEquals": ["PaymentDeclined"], "ResultPath": "$.error", "Next": "Declined"},
        {"ErrorEquals": ["States.Timeout", "States.HeartbeatTimeout"], "ResultPath": "$.error", "Next": "TimedOut"}
      ],
      "Next": "Confirmed"
    },
    "Confirmed": {"Type": "Succeed"},
    "Declined": {"Type": "Fail", "Error": "Declined"},
    "TimedOut": {"Type": "Pass", "End": true}
  }
}`

func TestLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "echo", echoDef)
	if again := e.create(t, "echo", echoDef); again != arn {
		t.Fatalf("identical CreateStateMachine returned %s, want %s", again, arn)
	}
	_, err := e.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("echo"), Definition: aws.String(paymentDef), RoleArn: aws.String("r")})
	wantAPIError[*types.StateMachineAlreadyExists](t, err)

	desc, err := e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil || desc.Status != types.StateMachineStatusActive || desc.Type != types.StateMachineTypeStandard || !strings.Contains(*desc.Definition, "function:echo") {
		t.Fatalf("DescribeStateMachine = %+v, %v (substitution applied?)", desc, err)
	}
	list, err := e.client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
	if err != nil || len(list.StateMachines) != 1 || *list.StateMachines[0].Name != "echo" {
		t.Fatalf("ListStateMachines = %+v, %v", list, err)
	}

	xArn := e.start(t, arn, "first", `{"seat":"A1"}`)
	out := e.finish(t, xArn)
	if out.Status != types.ExecutionStatusSucceeded || *out.Output != `{"echoed":{"seat":"A1"},"seat":"A1"}` || out.StopDate == nil {
		t.Fatalf("DescribeExecution = status %s output %v", out.Status, aws.ToString(out.Output))
	}
	if n, _ := e.srv.StateTransitions(xArn); n != 2 || e.srv.TotalStateTransitions(arn) != 2 || e.srv.StateMachineARN("echo") != arn {
		t.Fatalf("state transitions = %d, want 2", n)
	}
	forX, err := e.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(xArn)})
	if err != nil || *forX.StateMachineArn != arn || *forX.Definition != *desc.Definition {
		t.Fatalf("DescribeStateMachineForExecution = %+v, %v", forX, err)
	}

	events := e.history(t, xArn)
	want := []string{"ExecutionStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted",
		"LambdaFunctionSucceeded", "TaskStateExited", "SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"}
	if got := eventTypes(events); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("history\n got %v\nwant %v", got, want)
	}
	// As in Step Functions' histories, the first state's event has previousEventId 0, like
	// ExecutionStarted; every later one names the event before it.
	for i, ev := range events {
		wantPrev := int64(i)
		if i == 1 {
			wantPrev = 0
		}
		if ev.Id != int64(i+1) || ev.PreviousEventId != wantPrev || ev.Timestamp == nil {
			t.Fatalf("event %d: id %d previous %d, want previous %d", i, ev.Id, ev.PreviousEventId, wantPrev)
		}
	}
	if d := events[2].LambdaFunctionScheduledEventDetails; d == nil || !strings.HasSuffix(*d.Resource, "function:echo") || *d.Input != `{"seat":"A1"}` {
		t.Fatalf("LambdaFunctionScheduled details = %+v", d)
	}
	if d := events[8].ExecutionSucceededEventDetails; d == nil || *d.Output != *out.Output {
		t.Fatalf("ExecutionSucceeded details = %+v", d)
	}
	rev, err := e.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(xArn), ReverseOrder: true, MaxResults: 1})
	if err != nil || len(rev.Events) != 1 || rev.Events[0].Type != types.HistoryEventTypeExecutionSucceeded || rev.NextToken == nil {
		t.Fatalf("reverse history = %+v, %v", rev, err)
	}

	failed := e.start(t, arn, "second", `[]`) // ResultPath on an array input fails
	if out := e.finish(t, failed); out.Status != types.ExecutionStatusFailed || *out.Error != asl.ErrResultPathMatchFailure {
		t.Fatalf("second = %s %v", out.Status, aws.ToString(out.Error))
	}
	for _, tc := range []struct {
		filter types.ExecutionStatus
		want   []string
	}{{"", []string{"second", "first"}}, {types.ExecutionStatusSucceeded, []string{"first"}}, {types.ExecutionStatusFailed, []string{"second"}}, {types.ExecutionStatusRunning, nil}} {
		le, err := e.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), StatusFilter: tc.filter})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range le.Executions {
			names = append(names, *x.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Fatalf("ListExecutions(%q) = %v, want %v", tc.filter, names, tc.want)
		}
	}

	if _, err := e.client.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	wantAPIError[*types.StateMachineDoesNotExist](t, err)
}

func TestErrors(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "pay", paymentDef)
	missingArn := "arn:aws:states:us-east-1:123456789012:stateMachine:nope"
	cases := []struct {
		name  string
		call  func() error
		check func(t *testing.T, err error)
	}{
		{"InvalidDefinition", func() error {
			_, err := e.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("bad"), RoleArn: aws.String("r"),
				Definition: aws.String(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Missing"}}}`)})
			return err
		}, func(t *testing.T, err error) {
			wantAPIError[*types.InvalidDefinition](t, err)
			if !strings.Contains(err.Error(), "Missing") || !strings.Contains(err.Error(), "/States/A") {
				t.Fatalf("message does not name the state and target: %v", err)
			}
		}},
		{"InvalidDefinition missing substitution", func() error {
			_, err := e.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("bad2"), RoleArn: aws.String("r"),
				Definition: aws.String(`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Nope}","End":true}}}`)})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.InvalidDefinition](t, err) }},
		{"InvalidName", func() error {
			_, err := e.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("has space"), Definition: aws.String(echoDef), RoleArn: aws.String("r")})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.InvalidName](t, err) }},
		{"StateMachineDoesNotExist", func() error {
			_, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(missingArn)})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.StateMachineDoesNotExist](t, err) }},
		{"InvalidArn", func() error {
			_, err := e.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String("not-an-arn")})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.InvalidArn](t, err) }},
		{"ExecutionDoesNotExist", func() error {
			_, err := e.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:123456789012:execution:pay:nope")})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.ExecutionDoesNotExist](t, err) }},
		{"InvalidExecutionInput", func() error {
			_, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String("{not json")})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.InvalidExecutionInput](t, err) }},
		{"InvalidToken", func() error {
			_, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String("garbage"), Output: aws.String("{}")})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.InvalidToken](t, err) }},
		{"TaskDoesNotExist", func() error {
			tok := strings.Repeat("pQ", 32) // well-formed, never issued
			_, err := e.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(tok)})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.TaskDoesNotExist](t, err) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, tc.call()) })
	}
}

func TestNameIdempotency(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "pay", paymentDef)
	first, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("res-1"), Input: aws.String(`{"order":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	tok := e.token(t)
	again, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("res-1"), Input: aws.String(`{"order":1}`)})
	if err != nil || *again.ExecutionArn != *first.ExecutionArn || !again.StartDate.Equal(*first.StartDate) {
		t.Fatalf("same name and input while running: %+v, %v", again, err)
	}
	_, err = e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("res-1"), Input: aws.String(`{"order":2}`)})
	wantAPIError[*types.ExecutionAlreadyExists](t, err)
	if len(e.srv.Executions(arn)) != 1 {
		t.Fatalf("executions = %d, want 1", len(e.srv.Executions(arn)))
	}
	if _, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{"ok":true}`)}); err != nil {
		t.Fatal(err)
	}
	e.finish(t, *first.ExecutionArn)
	_, err = e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("res-1"), Input: aws.String(`{"order":1}`)})
	wantAPIError[*types.ExecutionAlreadyExists](t, err) // a closed execution's name stays taken
}

func TestTaskTokenSuccess(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "pay", paymentDef)
	x := e.start(t, arn, "ok", `{"order":"o-1"}`)
	tok := e.token(t)
	if _, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String("not json")}); err == nil {
		t.Fatal("SendTaskSuccess accepted invalid JSON output")
	} else {
		wantAPIError[*types.InvalidOutput](t, err)
	}
	if _, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{"status":"authorized"}`)}); err != nil {
		t.Fatal(err)
	}
	out := e.finish(t, x)
	if out.Status != types.ExecutionStatusSucceeded || *out.Output != `{"order":"o-1","payment":{"status":"authorized"}}` {
		t.Fatalf("got %s %s", out.Status, aws.ToString(out.Output))
	}
	// A token whose task has closed gets TaskTimedOut, as Step Functions answers.
	_, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{}`)})
	wantAPIError[*types.TaskTimedOut](t, err)

	types_ := eventTypes(e.history(t, x))
	want := "ExecutionStarted,TaskStateEntered,TaskScheduled,TaskStarted,TaskSubmitted,TaskSucceeded,TaskStateExited,SucceedStateEntered,SucceedStateExited,ExecutionSucceeded"
	if strings.Join(types_, ",") != want {
		t.Fatalf("history %v", types_)
	}
	hist := e.history(t, x)
	sched := hist[2].TaskScheduledEventDetails
	if sched == nil || *sched.Resource != "invoke.waitForTaskToken" || *sched.ResourceType != "lambda" || *sched.TimeoutInSeconds != 300 || *sched.HeartbeatInSeconds != 60 || !strings.Contains(*sched.Parameters, tok) {
		t.Fatalf("TaskScheduled details = %+v", sched)
	}
}

func TestTaskTokenFailure(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "pay", paymentDef)
	x := e.start(t, arn, "declined", `{"order":"o-2"}`)
	tok := e.token(t)
	if _, err := e.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(tok), Error: aws.String("PaymentDeclined"), Cause: aws.String("insufficient funds")}); err != nil {
		t.Fatal(err)
	}
	out := e.finish(t, x)
	if out.Status != types.ExecutionStatusFailed || *out.Error != "Declined" {
		t.Fatalf("got %s %v", out.Status, aws.ToString(out.Error))
	}
	hist := e.history(t, x)
	var failed *types.TaskFailedEventDetails
	for _, ev := range hist {
		if ev.TaskFailedEventDetails != nil {
			failed = ev.TaskFailedEventDetails
		}
	}
	if failed == nil || *failed.Error != "PaymentDeclined" || *failed.Cause != "insufficient funds" {
		t.Fatalf("TaskFailed details = %+v", failed)
	}
}

func TestHeartbeatTimeout(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "pay", paymentDef)
	x := e.start(t, arn, "hb", `{"order":"o-3"}`)
	tok := e.token(t)
	if err := e.clock.BlockUntilContext(ctx, 2); err != nil { // task timeout + heartbeat timers
		t.Fatal(err)
	}
	e.clock.Advance(50 * time.Second)
	if _, err := e.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(tok)}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(50 * time.Second) // 100 s since start, 50 s since the heartbeat
	if d, _ := e.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(x)}); d.Status != types.ExecutionStatusRunning {
		t.Fatalf("status after heartbeat = %s, want RUNNING", d.Status)
	}
	e.clock.Advance(10 * time.Second)
	out := e.finish(t, x)
	if out.Status != types.ExecutionStatusSucceeded || !strings.Contains(*out.Output, `"Error":"States.HeartbeatTimeout"`) {
		t.Fatalf("got %s %s", out.Status, aws.ToString(out.Output))
	}
	_, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{}`)})
	wantAPIError[*types.TaskTimedOut](t, err)
	types_ := eventTypes(e.history(t, x))
	if !strings.Contains(strings.Join(types_, ","), "TaskSubmitted,TaskTimedOut,TaskStateExited,PassStateEntered") {
		t.Fatalf("history %v", types_)
	}
}

func TestTaskTimeout(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	def := strings.Replace(paymentDef, `"HeartbeatSeconds": 60,`, "", 1)
	arn := e.create(t, "pay", def)
	x := e.start(t, arn, "slow", `{"order":"o-4"}`)
	tok := e.token(t)
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(299 * time.Second)
	if d, _ := e.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(x)}); d.Status != types.ExecutionStatusRunning {
		t.Fatalf("status before the timeout = %s", d.Status)
	}
	e.clock.Advance(time.Second)
	out := e.finish(t, x)
	if !strings.Contains(aws.ToString(out.Output), `"Error":"States.Timeout"`) {
		t.Fatalf("got %s %s", out.Status, aws.ToString(out.Output))
	}
	_, err := e.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(tok), Error: aws.String("Late")})
	wantAPIError[*types.TaskTimedOut](t, err)
}

func TestStopExecution(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "pay", paymentDef)
	x := e.start(t, arn, "stopme", `{"order":"o-5"}`)
	tok := e.token(t)
	stop, err := e.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(x), Error: aws.String("UserCancelled"), Cause: aws.String("changed mind")})
	if err != nil || stop.StopDate == nil {
		t.Fatalf("StopExecution = %+v, %v", stop, err)
	}
	out := e.finish(t, x)
	if out.Status != types.ExecutionStatusAborted || aws.ToString(out.Error) != "UserCancelled" {
		t.Fatalf("got %s %v", out.Status, aws.ToString(out.Error))
	}
	hist := e.history(t, x)
	last := hist[len(hist)-1]
	if last.Type != types.HistoryEventTypeExecutionAborted || *last.ExecutionAbortedEventDetails.Cause != "changed mind" {
		t.Fatalf("last event %s", last.Type)
	}
	// The stopped execution's task has closed: its token gets TaskTimedOut.
	_, err = e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{}`)})
	wantAPIError[*types.TaskTimedOut](t, err)
	if e.srv.Engine().WaitingTasks() != 0 {
		t.Fatalf("waiting tasks after stop = %d", e.srv.Engine().WaitingTasks())
	}
}

func TestExecutionTimeout(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "slow", `{"TimeoutSeconds": 900, "StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}`)
	x := e.start(t, arn, "x", `{}`)
	if err := e.clock.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(900 * time.Second)
	out := e.finish(t, x)
	if out.Status != types.ExecutionStatusTimedOut || aws.ToString(out.Error) != asl.ErrTimeout {
		t.Fatalf("got %s %v", out.Status, aws.ToString(out.Error))
	}
}

// stubMocker mocks state "Authorize" for test case "Declined", as a
// MockConfigFile would: attempt 0 throws, and "Charge" returns on every attempt.
type stubMocker struct{ attempts []int }

func (m *stubMocker) Mock(smName, testCase, state string, attempt int) (json.RawMessage, string, string, bool) {
	if smName != "pay" || testCase != "Declined" || state != "Authorize" {
		return nil, "", "", false
	}
	m.attempts = append(m.attempts, attempt)
	return nil, "PaymentDeclined", "mocked decline", true
}

func TestTestCaseSelector(t *testing.T) {
	m := &stubMocker{}
	e := newEnv(t, m)
	arn := e.create(t, "pay", paymentDef)
	x := e.start(t, arn+"#Declined", "mocked", `{"order":"o-6"}`)
	out := e.finish(t, x)
	if out.Status != types.ExecutionStatusFailed || aws.ToString(out.Error) != "Declined" {
		t.Fatalf("got %s %v", out.Status, aws.ToString(out.Error))
	}
	if len(m.attempts) != 1 || m.attempts[0] != 0 {
		t.Fatalf("mock attempts = %v", m.attempts)
	}
	select {
	case <-e.tokens:
		t.Fatal("a mocked state invoked its function")
	default:
	}
	if !strings.HasSuffix(x, ":execution:pay:mocked") {
		t.Fatalf("execution ARN %s", x)
	}
	_, err := newEnv(t, nil).client.StartExecution(ctxT(t), &sfn.StartExecutionInput{StateMachineArn: aws.String(arn + "#Declined")})
	if err == nil {
		t.Fatal("test case accepted without a mock configuration")
	}
}

func TestHistoryPagination(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	arn := e.create(t, "echo", echoDef)
	x := e.start(t, arn, "p", `{}`)
	e.finish(t, x)
	all := e.history(t, x) // pages of 3
	var forward []int64
	var token *string
	for {
		pg, err := e.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(x), MaxResults: 4, NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range pg.Events {
			forward = append(forward, ev.Id)
		}
		if token = pg.NextToken; token == nil {
			break
		}
	}
	if len(forward) != len(all) || fmt.Sprint(forward) != fmt.Sprint([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("pages gave %v", forward)
	}
	_, err := e.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(x), NextToken: aws.String("%%%")})
	wantAPIError[*types.InvalidToken](t, err)
	noData, err := e.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(x), IncludeExecutionData: aws.Bool(false)})
	if err != nil || noData.Events[0].ExecutionStartedEventDetails.Input != nil {
		t.Fatalf("includeExecutionData=false still returned input: %v", err)
	}
}
