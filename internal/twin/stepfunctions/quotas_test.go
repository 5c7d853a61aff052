package stepfunctions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

const passDef = `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`

// throttled starts a server with quotas on a fake clock, its functions invoked from fns, and
// returns it with its two endpoints.
func throttled(t *testing.T, q stepfunctions.Quotas, fns map[string]asl.Func) (srv *stepfunctions.Server, c *clock.Fake, endpoint, inspection string) {
	t.Helper()
	c = clock.NewFake(epoch)
	srv = stepfunctions.New(stepfunctions.Options{Clock: c, Quotas: &q, Invoker: asl.NewFuncInvoker(fns)})
	endpoint, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if inspection, err = srv.StartInspection("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	return srv, c, endpoint, inspection
}

// pending waits until the fake clock has n calls scheduled, failing the test after 5 s of
// wall time: a throttle that does not wait would otherwise hang it.
func pending(t *testing.T, c *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("nothing waits on the clock: %v", err)
	}
}

// call posts one awsJson1.0 request and returns the status, the error type header and the body.
func call(t *testing.T, endpoint, op string, in any) (int, string, []byte) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AWSStepFunctions."+op)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), out
}

func createMachine(t *testing.T, endpoint, name, def string) string {
	t.Helper()
	status, _, out := call(t, endpoint, "CreateStateMachine", map[string]string{"name": name, "definition": def, "roleArn": "arn:aws:iam::123456789012:role/sfn"})
	if status != http.StatusOK {
		t.Fatalf("CreateStateMachine: %d %s", status, out)
	}
	var created struct{ StateMachineArn string }
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatal(err)
	}
	return created.StateMachineArn
}

// A burst of StartExecution calls gets the bucket's size (1,300 by AWS's default) through and
// the rest ThrottlingException, exactly as Step Functions answers it, without starting an
// execution; the bucket then refills at its rate (300 a second) on the server's clock.
func TestStartExecutionPastItsBucketIsThrottledAndTheBucketRefillsAtItsRate(t *testing.T) {
	q := stepfunctions.DefaultQuotas()
	limit := q.API["StartExecution"]
	if limit != (throttle.Limit{Size: 1300, RefillPerSecond: 300}) {
		t.Fatalf("default StartExecution quota %s, want AWS's 1300 burst, 300/s", limit)
	}
	srv, c, endpoint, _ := throttled(t, q, nil)
	sm := createMachine(t, endpoint, "burst", passDef)
	n := 0
	start := func() (int, string, []byte) {
		n++
		return call(t, endpoint, "StartExecution", map[string]string{"stateMachineArn": sm, "name": fmt.Sprintf("x%d", n)})
	}
	// admitted starts calls until one is throttled and returns how many got through; a server
	// that never throttles fails the test.
	admitted := func() int {
		t.Helper()
		for ok := 0; ; ok++ {
			if ok > 2*limit.Size {
				t.Fatalf("%d calls admitted in a row: StartExecution is not throttled", ok)
			}
			status, code, body := start()
			if status == http.StatusOK {
				continue
			}
			var shape map[string]string
			if err := json.Unmarshal(body, &shape); err != nil {
				t.Fatalf("throttled answer %s: %v", body, err)
			}
			if status != http.StatusBadRequest || code != "ThrottlingException" ||
				shape["__type"] != "ThrottlingException" || shape["message"] != "Rate exceeded" || len(shape) != 2 {
				t.Fatalf("throttled answer %d %q %s, want 400 ThrottlingException {\"__type\",\"message\":\"Rate exceeded\"}", status, code, body)
			}
			return ok
		}
	}
	if got := admitted(); got != limit.Size {
		t.Fatalf("a burst admitted %d StartExecution calls, want the bucket's %d", got, limit.Size)
	}
	if got := len(srv.Executions(sm)); got != limit.Size {
		t.Fatalf("%d executions after the burst, want %d: a throttled call started one", got, limit.Size)
	}
	c.Advance(time.Second)
	if got := admitted(); got != int(limit.RefillPerSecond) {
		t.Fatalf("a second later %d calls admitted, want the refill rate's %g", got, limit.RefillPerSecond)
	}
	c.Advance(10 * time.Millisecond)
	if got := admitted(); got != 3 {
		t.Fatalf("10 ms later %d calls admitted, want 3 at 300/s", got)
	}
	if got := srv.Throttles()["StartExecution"]; got != 3 {
		t.Fatalf("Throttles counts %d StartExecution calls, want the 3 refused", got)
	}
	// Each action has its own bucket: describing is not refused because starting is.
	if status, _, body := call(t, endpoint, "ListExecutions", map[string]string{"stateMachineArn": sm}); status != http.StatusOK {
		t.Fatalf("ListExecutions with the StartExecution bucket empty: %d %s", status, body)
	}
}

// The twin's inspection endpoint serves the same API without spending or obeying the quotas,
// so that reading every execution's history after a sale does not throttle the sale.
func TestTheInspectionEndpointIsNotThrottled(t *testing.T) {
	q := stepfunctions.Quotas{API: map[string]throttle.Limit{"DescribeStateMachine": {Size: 1, RefillPerSecond: 1}}}
	_, _, endpoint, inspection := throttled(t, q, nil)
	sm := createMachine(t, endpoint, "looked-at", passDef)
	for i := range 5 {
		if status, _, body := call(t, inspection, "DescribeStateMachine", map[string]string{"stateMachineArn": sm}); status != http.StatusOK {
			t.Fatalf("inspection call %d: %d %s", i+1, status, body)
		}
	}
	if status, _, _ := call(t, endpoint, "DescribeStateMachine", map[string]string{"stateMachineArn": sm}); status != http.StatusOK {
		t.Fatal("the account's bucket was spent by the inspection calls")
	}
	if status, code, _ := call(t, endpoint, "DescribeStateMachine", map[string]string{"stateMachineArn": sm}); status != http.StatusBadRequest || code != "ThrottlingException" {
		t.Fatalf("second call on the account's endpoint: %d %q, want ThrottlingException", status, code)
	}
}

// When the state-transition bucket is empty an execution waits on the server's clock before
// its next state, and goes on as tokens come back: Step Functions delays throttled transitions,
// it does not fail them.
func TestStateTransitionsWaitWhileTheirBucketIsEmpty(t *testing.T) {
	q := stepfunctions.Quotas{StateTransition: throttle.Limit{Size: 2, RefillPerSecond: 1}}
	srv, c, endpoint, _ := throttled(t, q, nil)
	sm := createMachine(t, endpoint, "four", `{"StartAt":"A","States":{
		"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","Next":"C"},
		"C":{"Type":"Pass","Next":"D"},"D":{"Type":"Pass","End":true}}}`)
	status, _, out := call(t, endpoint, "StartExecution", map[string]string{"stateMachineArn": sm, "name": "slowed"})
	if status != http.StatusOK {
		t.Fatalf("StartExecution: %d %s", status, out)
	}
	x := srv.Executions(sm)[0]
	// waiting returns once the execution is parked on the throttle's timer after n states.
	waiting := func(n int64) {
		t.Helper()
		pending(t, c, 1)
		if got := x.StateTransitions(); got != n {
			t.Fatalf("%d states entered while throttled, want %d", got, n)
		}
		select {
		case <-x.Done():
			t.Fatal("the execution finished with its transitions' bucket empty")
		default:
		}
	}
	waiting(2)
	c.Advance(999 * time.Millisecond)
	waiting(2)
	c.Advance(time.Millisecond)
	waiting(3)
	c.Advance(time.Second)
	if err := x.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if snap := x.Snapshot(); snap.Status != asl.StatusSucceeded || snap.Transits != 4 {
		t.Fatalf("status %s after %d transitions, want SUCCEEDED after 4", snap.Status, snap.Transits)
	}
	if got := srv.Throttles()[stepfunctions.StateTransitionQuota]; got != 2 {
		t.Fatalf("Throttles counts %d transitions that waited, want 2", got)
	}
}

// A retried attempt is a state transition too, and waits for its token like a state entered.
func TestARetryWaitsForItsStateTransition(t *testing.T) {
	var calls atomic.Int64
	flaky := func(context.Context, []byte) ([]byte, error) {
		if calls.Add(1) == 1 {
			return nil, &asl.FunctionError{Type: "Flaky", Message: "first try fails"}
		}
		return []byte(`{}`), nil
	}
	// One token every four seconds: the retry's one-second interval ends with none due.
	q := stepfunctions.Quotas{StateTransition: throttle.Limit{Size: 1, RefillPerSecond: 0.25}}
	srv, c, endpoint, _ := throttled(t, q, map[string]asl.Func{"flaky": flaky})
	sm := createMachine(t, endpoint, "retried", `{"StartAt":"T","States":{"T":{"Type":"Task",
		"Resource":"arn:aws:lambda:us-east-1:123456789012:function:flaky",
		"Retry":[{"ErrorEquals":["Flaky"],"IntervalSeconds":1,"MaxAttempts":1}],"End":true}}}`)
	if status, _, out := call(t, endpoint, "StartExecution", map[string]string{"stateMachineArn": sm, "name": "r"}); status != http.StatusOK {
		t.Fatalf("StartExecution: %d %s", status, out)
	}
	x := srv.Executions(sm)[0]
	pending(t, c, 1) // the retry's interval
	c.Advance(time.Second)
	pending(t, c, 1) // the retry's transition, three seconds short of a token
	if got := calls.Load(); got != 1 {
		t.Fatalf("%d attempts before the retry's token came, want 1", got)
	}
	c.Advance(3 * time.Second)
	if err := x.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if snap := x.Snapshot(); snap.Status != asl.StatusSucceeded || calls.Load() != 2 {
		t.Fatalf("status %s after %d attempts, want SUCCEEDED after 2", snap.Status, calls.Load())
	}
}

// The AWS SDK for Go v2 reads the throttled answer as an API error with code
// ThrottlingException and message "Rate exceeded", which its own retryer classes as a throttle
// and retries: with one attempt the caller sees the error itself, with the default three the
// server refuses three calls.
func TestTheSDKSeesAThrottledCallAsThrottlingException(t *testing.T) {
	q := stepfunctions.Quotas{API: map[string]throttle.Limit{"StartExecution": {Size: 1, RefillPerSecond: 1}}}
	srv, _, endpoint, _ := throttled(t, q, nil)
	sm := createMachine(t, endpoint, "sdk", passDef)
	client := func(r aws.Retryer) *sfn.Client {
		return sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), Retryer: r})
	}
	// No backoff: the fake clock does not move, so waiting would only slow the test.
	noBackoff := func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	}
	once := client(retry.AddWithMaxAttempts(retry.NewStandard(noBackoff), 1))
	startIn := func(name string) *sfn.StartExecutionInput {
		return &sfn.StartExecutionInput{StateMachineArn: aws.String(sm), Name: aws.String(name)}
	}
	if _, err := once.StartExecution(ctxT(t), startIn("first")); err != nil {
		t.Fatal(err)
	}
	_, err := once.StartExecution(ctxT(t), startIn("second"))
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" || apiErr.ErrorMessage() != "Rate exceeded" {
		t.Fatalf("err = %v, want an API error ThrottlingException: Rate exceeded", err)
	}
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) != aws.TrueTernary {
		t.Fatalf("the SDK does not class %v as a throttle", err)
	}

	before := srv.Throttles()["StartExecution"]
	_, err = client(retry.NewStandard(noBackoff)).StartExecution(ctxT(t), startIn("third"))
	var maxAttempts *retry.MaxAttemptsError
	if !errors.As(err, &maxAttempts) || !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" {
		t.Fatalf("err = %v, want the retryer to give up on ThrottlingException", err)
	}
	if got := srv.Throttles()["StartExecution"] - before; got != int64(retry.DefaultMaxAttempts) {
		t.Fatalf("the default retryer made %d throttled attempts, want %d", got, retry.DefaultMaxAttempts)
	}
}

// Past the open-executions quota a start is refused ExecutionLimitExceeded, as Step Functions
// answers it, and starts nothing; once a running execution closes there is room again. A start
// refused for its name does not count, nor does a closed execution.
func TestAStartPastTheOpenExecutionsQuotaIsRefusedUntilOneCloses(t *testing.T) {
	if got := stepfunctions.DefaultQuotas().OpenExecutions; got != 1_000_000 {
		t.Fatalf("default open executions %d, want AWS's 1,000,000", got)
	}
	srv, _, endpoint, _ := throttled(t, stepfunctions.Quotas{OpenExecutions: 2}, nil)
	waits := createMachine(t, endpoint, "waits", `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":600,"End":true}}}`)
	passes := createMachine(t, endpoint, "passes", passDef)
	start := func(sm, name string) (int, string) {
		status, code, _ := call(t, endpoint, "StartExecution", map[string]string{"stateMachineArn": sm, "name": name})
		return status, code
	}
	// A closed execution leaves its place.
	if status, _ := start(passes, "p1"); status != http.StatusOK {
		t.Fatalf("start p1: %d", status)
	}
	for deadline := time.Now().Add(5 * time.Second); len(srv.Executions(passes)) == 0 || srv.Executions(passes)[0].Snapshot().Status == asl.StatusRunning; {
		if time.Now().After(deadline) {
			t.Fatal("the Pass execution did not close")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, name := range []string{"w1", "w2"} {
		if status, code := start(waits, name); status != http.StatusOK {
			t.Fatalf("start %s: %d %s", name, status, code)
		}
	}
	if status, code := start(waits, "w1"); status != http.StatusOK {
		t.Fatalf("the same start again: %d %s, want the running one back", status, code)
	}
	status, code, body := call(t, endpoint, "StartExecution", map[string]string{"stateMachineArn": waits, "name": "w3"})
	if status != http.StatusBadRequest || code != "ExecutionLimitExceeded" {
		t.Fatalf("a third open execution: %d %q %s, want 400 ExecutionLimitExceeded", status, code, body)
	}
	if n := len(srv.Executions(waits)); n != 2 {
		t.Fatalf("%d executions after the refused start, want 2", n)
	}
	first := srv.Executions(waits)[0]
	if status, _, out := call(t, endpoint, "StopExecution", map[string]string{"executionArn": first.ARN}); status != http.StatusOK {
		t.Fatalf("stop: %d %s", status, out)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if status, _ := start(waits, "w3"); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no room once an execution closed")
		}
	}
}

// A quota set while the server runs takes the next call: a run that tightened StartExecution
// gives it back, and the calls after are admitted by the new, full bucket.
func TestAQuotaSetWhileServingBindsTheNextCall(t *testing.T) {
	tight := stepfunctions.Quotas{API: map[string]throttle.Limit{"StartExecution": {Size: 1, RefillPerSecond: 0.001}}}
	srv, _, endpoint, _ := throttled(t, tight, nil)
	sm := createMachine(t, endpoint, "given-back", passDef)
	start := func(name string) int {
		status, _, _ := call(t, endpoint, "StartExecution", map[string]string{"stateMachineArn": sm, "name": name})
		return status
	}
	if a, b := start("a"), start("b"); a != http.StatusOK || b != http.StatusBadRequest {
		t.Fatalf("under the tight quota: %d then %d; want 200 then the throttle", a, b)
	}
	srv.SetAPIQuotas(map[string]throttle.Limit{"StartExecution": {Size: 3, RefillPerSecond: 0.001}})
	for _, name := range []string{"c", "d", "e"} {
		if got := start(name); got != http.StatusOK {
			t.Fatalf("start %s after the quota was given back: %d", name, got)
		}
	}
	if got := start("f"); got != http.StatusBadRequest {
		t.Fatalf("past the new bucket: %d; want the throttle", got)
	}
}
