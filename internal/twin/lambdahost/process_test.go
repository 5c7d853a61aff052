//go:build unix

package lambdahost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// The test functions in testdata are built once per test binary, on first use, so that the
// tests that do not start processes pay nothing.
var testFunctions struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testFunctions.dir != "" {
		_ = os.RemoveAll(testFunctions.dir)
	}
	os.Exit(code)
}

// testBinary returns the path of testdata/<name> built for this machine, with the tag the
// real bootstraps are built with.
func testBinary(t *testing.T, name string) string {
	t.Helper()
	testFunctions.once.Do(func() {
		dir, err := os.MkdirTemp("", "lambdahost-functions-")
		if err != nil {
			testFunctions.err = err
			return
		}
		testFunctions.dir = dir
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", dir+string(filepath.Separator),
			"./testdata/echo", "./testdata/fail", "./testdata/initexit", "./testdata/initerror")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			testFunctions.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if testFunctions.err != nil {
		t.Fatal(testFunctions.err)
	}
	return filepath.Join(testFunctions.dir, name)
}

// startFunction starts testdata/<bin> as a function for the duration of the test.
func startFunction(t *testing.T, bin string, o lambdahost.ProcessOptions) *lambdahost.Process {
	t.Helper()
	o.Path = testBinary(t, bin)
	if o.Name == "" {
		o.Name = bin
	}
	p, err := lambdahost.StartProcess(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// echoAnswer is what testdata/echo answers.
type echoAnswer struct {
	Event        json.RawMessage   `json:"event"`
	RequestID    string            `json:"requestId"`
	FunctionARN  string            `json:"functionArn"`
	FunctionName string            `json:"functionName"`
	DeadlineMs   int64             `json:"deadlineMs"`
	TraceID      string            `json:"traceId"`
	ClientCustom map[string]string `json:"clientCustom"`
	Env          []string          `json:"env"`
	ChildPid     int               `json:"childPid"`
}

func invokeEcho(t *testing.T, p *lambdahost.Process, payload string) echoAnswer {
	t.Helper()
	out, fnErr, err := p.Invoke(t.Context(), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if fnErr != "" {
		t.Fatalf("function error %s: %s", fnErr, out)
	}
	var a echoAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
	return a
}

// waitExited waits for p to end, failing the test if it does not within d.
func waitExited(t *testing.T, p *lambdahost.Process, d time.Duration) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(d):
		t.Fatalf("process %d still running after %s", p.Pid(), d)
	}
}

func TestStartProcessReturnsOnceTheRuntimePollsForAnEvent(t *testing.T) {
	p := startFunction(t, "echo", lambdahost.ProcessOptions{})
	if p.Pid() <= 0 {
		t.Fatalf("pid = %d", p.Pid())
	}
	select {
	case <-p.Exited():
		t.Fatalf("process exited: %s\n%s", p.ExitState(), p.Stderr())
	default:
	}
	if p.ExitState() != "" {
		t.Errorf("ExitState = %q while running", p.ExitState())
	}
}

func TestProcessEchoRoundTripsThroughTheRuntimeAPI(t *testing.T) {
	p := startFunction(t, "echo", lambdahost.ProcessOptions{Name: "claim", Timeout: 7 * time.Second})
	for i := range 3 {
		payload := fmt.Sprintf(`{"seat":"A%d","buyer":{"id":"b-1"}}`, i)
		before := time.Now()
		a := invokeEcho(t, p, payload)
		var got, want any
		_ = json.Unmarshal(a.Event, &got)
		_ = json.Unmarshal([]byte(payload), &want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("event = %s, want %s", a.Event, payload)
		}
		if a.RequestID == "" || a.FunctionARN != p.ARN() || a.FunctionName != "claim" {
			t.Errorf("metadata %q %q %q", a.RequestID, a.FunctionARN, a.FunctionName)
		}
		deadline := time.UnixMilli(a.DeadlineMs)
		if deadline.Before(before.Add(7*time.Second-time.Second)) || deadline.After(time.Now().Add(7*time.Second)) {
			t.Errorf("deadline %s is not the 7s timeout from %s", deadline, before)
		}
		if !strings.HasPrefix(a.TraceID, "Root=1-") {
			t.Errorf("_X_AMZN_TRACE_ID = %q, want an X-Ray header", a.TraceID)
		}
	}

	resp, err := p.InvokeWith(t.Context(), lambdahost.Invocation{
		RequestID:     "11111111-2222-4333-8444-555555555555",
		Payload:       []byte(`{}`),
		TraceID:       "Root=1-00000001-000000000000000000000001;Parent=0000000000000001;Sampled=1",
		ClientContext: []byte(`{"custom":{"tenant":"t-1"}}`),
	})
	if err != nil || resp.ErrorType != "" {
		t.Fatalf("InvokeWith: %v %s %s", err, resp.ErrorType, resp.Payload)
	}
	var a echoAnswer
	if err := json.Unmarshal(resp.Payload, &a); err != nil {
		t.Fatal(err)
	}
	if a.RequestID != "11111111-2222-4333-8444-555555555555" || a.ClientCustom["tenant"] != "t-1" ||
		a.TraceID != "Root=1-00000001-000000000000000000000001;Parent=0000000000000001;Sampled=1" {
		t.Errorf("invocation metadata not passed through: %+v", a)
	}
}

func TestProcessHandlerErrorIsAFunctionErrorWithItsErrorType(t *testing.T) {
	p := startFunction(t, "fail", lambdahost.ProcessOptions{})
	for range 2 { // A returned error leaves the environment in use, as on Lambda.
		out, fnErr, err := p.Invoke(t.Context(), []byte(`{"seat":"A1"}`))
		if err != nil {
			t.Fatal(err)
		}
		var body errorBody
		if err := json.Unmarshal(out, &body); err != nil {
			t.Fatalf("error document %s: %v", out, err)
		}
		if fnErr != "SeatUnavailable" || body.ErrorType != "SeatUnavailable" || body.ErrorMessage != "seat A1 is unavailable" {
			t.Fatalf("got %q %s", fnErr, out)
		}
	}
}

func TestProcessPanicIsAFunctionErrorAndEndsTheProcess(t *testing.T) {
	p := startFunction(t, "fail", lambdahost.ProcessOptions{})
	out, fnErr, err := p.Invoke(t.Context(), []byte(`{"panic":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var body errorBody
	_ = json.Unmarshal(out, &body)
	if fnErr != "string" || body.ErrorMessage != "boom" || len(body.StackTrace) == 0 {
		t.Fatalf("got %q %s", fnErr, out)
	}
	// aws-lambda-go exits after reporting a panic.
	waitExited(t, p, 10*time.Second)
	if _, _, err := p.Invoke(t.Context(), []byte(`{}`)); !errors.Is(err, lambdahost.ErrProcessExited) {
		t.Fatalf("invoke after exit: %v, want ErrProcessExited", err)
	}
}

func TestProcessExitingAtInitIsAnInitErrorWithStatusAndOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p, err := lambdahost.StartProcess(t.Context(), lambdahost.ProcessOptions{
		Name: "initexit", Path: testBinary(t, "initexit"), Stdout: &stdout, Stderr: &stderr,
	})
	if p != nil {
		t.Fatal("StartProcess returned a process for a function that never reached its loop")
	}
	var ie *lambdahost.InitError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *InitError", err)
	}
	if ie.ErrorType != "Runtime.ExitError" || !ie.Exited || ie.ExitCode != 3 || ie.ExitState != "exit status 3" {
		t.Errorf("init error %+v", ie)
	}
	if !strings.Contains(ie.Stderr, "INITEXIT_REQUIRED is not set") || !strings.Contains(ie.Stdout, "loading configuration") {
		t.Errorf("tails: stderr %q stdout %q", ie.Stderr, ie.Stdout)
	}
	if msg := err.Error(); !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "INITEXIT_REQUIRED is not set") {
		t.Errorf("Error() = %q", msg)
	}
	if !strings.Contains(stderr.String(), "INITEXIT_REQUIRED is not set") || !strings.Contains(stdout.String(), "loading configuration") {
		t.Errorf("writers got stdout %q stderr %q", stdout.String(), stderr.String())
	}
	assertGone(t, ie.Pid)

	// The same binary given what it needs reaches the loop.
	startFunction(t, "initexit", lambdahost.ProcessOptions{Env: map[string]string{"INITEXIT_REQUIRED": "1"}})
}

func TestProcessInitErrorPostedToTheRuntimeAPIIsReported(t *testing.T) {
	_, err := lambdahost.StartProcess(t.Context(), lambdahost.ProcessOptions{Name: "initerror", Path: testBinary(t, "initerror")})
	var ie *lambdahost.InitError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *InitError", err)
	}
	if ie.ErrorType != "Runtime.HandlerNotFound" || ie.ErrorMessage != "cannot load the handler" || !ie.Exited || ie.ExitCode != 2 {
		t.Errorf("init error %+v", ie)
	}
}

func TestProcessThatNeverPollsTimesOutAtInitAndIsKilled(t *testing.T) {
	// ECHO_SLEEPER makes testdata/echo sleep instead of starting the runtime.
	_, err := lambdahost.StartProcess(t.Context(), lambdahost.ProcessOptions{
		Name: "sleeper", Path: testBinary(t, "echo"), Env: map[string]string{"ECHO_SLEEPER": "1"},
		InitTimeout: 300 * time.Millisecond,
	})
	var ie *lambdahost.InitError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *InitError", err)
	}
	if ie.ErrorType != "Sandbox.Timedout" || ie.Exited || ie.ExitState != "signal: killed" {
		t.Errorf("init error %+v", ie)
	}
	assertGone(t, ie.Pid)
}

func TestProcessGetsExactlyTheGivenEnvironmentPlusLambdas(t *testing.T) {
	t.Setenv("LAMBDAHOST_PARENT_ONLY", "must not leak")
	env := map[string]string{
		"TABLE_NAME":        "seatsaga-reservations",
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"PATH": "/usr/bin:/bin", // unreserved: the configuration may override it
	}
	p := startFunction(t, "echo", lambdahost.ProcessOptions{Name: "confirm", Env: env, MemoryMB: 256, Region: "eu-west-1"})
	a := invokeEcho(t, p, `{}`)

	got := slices.Sorted(slices.Values(a.Env))
	if !slices.Equal(got, p.Environ()) {
		t.Errorf("child environment\n%q\nwant Environ()\n%q", got, p.Environ())
	}
	values := map[string]string{}
	var names []string
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		values[k] = v
		names = append(names, k)
	}
	want := []string{
		"AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_NAME",
		"AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_INITIALIZATION_TYPE", "AWS_LAMBDA_LOG_GROUP_NAME",
		"AWS_LAMBDA_LOG_STREAM_NAME", "AWS_LAMBDA_RUNTIME_API", "AWS_REGION", "AWS_SECRET_ACCESS_KEY",
		"LAMBDA_RUNTIME_DIR", "LAMBDA_TASK_ROOT", "LANG", "PATH", "TABLE_NAME", "TZ", "_HANDLER",
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("variable names\n%q\nwant\n%q", names, want)
	}
	for k, v := range map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          p.RuntimeAPIAddress(),
		"AWS_LAMBDA_FUNCTION_NAME":        "confirm",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/confirm",
		"AWS_REGION":                      "eu-west-1",
		"AWS_DEFAULT_REGION":              "eu-west-1",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(testBinary(t, "echo")),
		"TZ":                              ":UTC",
		"PATH":                            "/usr/bin:/bin",
		"TABLE_NAME":                      "seatsaga-reservations",
	} {
		if values[k] != v {
			t.Errorf("%s = %q, want %q", k, values[k], v)
		}
	}
	if !strings.HasPrefix(values["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:") {
		t.Errorf("runtime API %q is not on loopback", values["AWS_LAMBDA_RUNTIME_API"])
	}
	if p.ARN() != "arn:aws:lambda:eu-west-1:123456789012:function:confirm" {
		t.Errorf("ARN = %s", p.ARN())
	}
}

func TestStartProcessRefusesVariablesLambdaReserves(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_LAMBDA_RUNTIME_API", "_HANDLER", "TZ", "LAMBDA_TASK_ROOT"} {
		_, err := lambdahost.StartProcess(t.Context(), lambdahost.ProcessOptions{
			Name: "echo", Path: testBinary(t, "echo"), Env: map[string]string{k: "x"},
		})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("Env %s: err = %v, want a refusal naming it", k, err)
		}
	}
}

func TestProcessStopLeavesNoProcessBehind(t *testing.T) {
	p := startFunction(t, "echo", lambdahost.ProcessOptions{})
	a := invokeEcho(t, p, `{"spawn":true}`)
	if a.ChildPid <= 0 {
		t.Fatalf("no child pid in %+v", a)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the process was reaped")
	}
	assertGone(t, p.Pid())
	if runtime.GOOS == "linux" {
		assertGone(t, a.ChildPid)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, _, err := p.Invoke(t.Context(), []byte(`{}`)); !errors.Is(err, lambdahost.ErrProcessExited) {
		t.Errorf("invoke after Stop: %v, want ErrProcessExited", err)
	}
}

func TestProcessStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p, err := lambdahost.StartProcess(ctx, lambdahost.ProcessOptions{Name: "echo", Path: testBinary(t, "echo")})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitExited(t, p, 10*time.Second)
	if err := p.Stop(); err != nil {
		t.Error(err)
	}
}

func TestStartProcessWithAnEndedContextReturnsItsCause(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p, err := lambdahost.StartProcess(ctx, lambdahost.ProcessOptions{Name: "echo", Path: testBinary(t, "echo")})
	if p != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("StartProcess = %v, %v; want no process and context.Canceled", p, err)
	}
}

func TestProcessTimeoutIsSandboxTimedoutAndDiscardsTheProcess(t *testing.T) {
	p := startFunction(t, "echo", lambdahost.ProcessOptions{Timeout: 500 * time.Millisecond})
	out, fnErr, err := p.Invoke(t.Context(), []byte(`{"hang":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var body errorBody
	_ = json.Unmarshal(out, &body)
	if fnErr != "Sandbox.Timedout" || body.ErrorType != "Sandbox.Timedout" ||
		!strings.HasSuffix(body.ErrorMessage, "Error: Task timed out after 0.50 seconds") {
		t.Fatalf("got %q %s", fnErr, out)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("a timed-out process is still running")
	}
	if _, _, err := p.Invoke(t.Context(), []byte(`{}`)); !errors.Is(err, lambdahost.ErrProcessExited) {
		t.Errorf("invoke after timeout: %v, want ErrProcessExited", err)
	}
}

func TestProcessExitDuringAnInvocationIsRuntimeExitError(t *testing.T) {
	p := startFunction(t, "echo", lambdahost.ProcessOptions{})
	out, fnErr, err := p.Invoke(t.Context(), []byte(`{"exit":7}`))
	if err != nil {
		t.Fatal(err)
	}
	var body errorBody
	_ = json.Unmarshal(out, &body)
	if fnErr != "Runtime.ExitError" || !strings.HasSuffix(body.ErrorMessage, "Runtime exited with error: exit status 7") {
		t.Fatalf("got %q %s", fnErr, out)
	}
	if _, _, err := p.Invoke(t.Context(), []byte(`{}`)); !errors.Is(err, lambdahost.ErrProcessExited) {
		t.Errorf("invoke after exit: %v, want ErrProcessExited", err)
	}
}

func TestProcessQueuesConcurrentInvocations(t *testing.T) {
	p := startFunction(t, "echo", lambdahost.ProcessOptions{})
	const n = 8
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, fnErr, err := p.Invoke(t.Context(), fmt.Appendf(nil, `{"i":%d}`, i))
			if err != nil || fnErr != "" {
				t.Errorf("invoke %d: %v %s %s", i, err, fnErr, out)
				return
			}
			var a echoAnswer
			_ = json.Unmarshal(out, &a)
			ids <- a.RequestID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct request ids, want %d", len(seen), n)
	}
}

func TestHostRoutesInvokeToARegisteredProcess(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	h.RegisterProcess("echo", startFunction(t, "echo", lambdahost.ProcessOptions{}), lambdahost.FunctionConfig{})
	h.RegisterProcess("fail", startFunction(t, "fail", lambdahost.ProcessOptions{}), lambdahost.FunctionConfig{})

	out, err := c.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String("echo"), Payload: []byte(`{"seat":"C3"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var a echoAnswer
	if err := json.Unmarshal(out.Payload, &a); err != nil || out.FunctionError != nil {
		t.Fatalf("payload %s, function error %v: %v", out.Payload, aws.ToString(out.FunctionError), err)
	}
	if string(a.Event) != `{"seat":"C3"}` || a.FunctionARN != h.FunctionARN("echo") {
		t.Errorf("answer %+v", a)
	}

	body := invokeFunctionError(t, c, "fail", `{"seat":"D4"}`)
	if body.ErrorType != "SeatUnavailable" || body.ErrorMessage != "seat D4 is unavailable" {
		t.Errorf("error %+v", body)
	}
	if st := h.Stats("fail"); st.Invocations != 1 || st.Errors != 1 {
		t.Errorf("stats %+v", st)
	}

	// Faults apply as to an in-process handler.
	if err := h.FailBefore("echo", 1, lambdahost.FunctionError("Injected", "injected")); err != nil {
		t.Fatal(err)
	}
	if body := invokeFunctionError(t, c, "echo", `{}`); body.ErrorType != "Injected" {
		t.Errorf("injected fault: %+v", body)
	}
}

// assertGone fails the test unless pid has ended. A process this test did not start (the
// child of a function) is reaped by someone else, so it is polled for, boundedly; a zombie
// counts as ended.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if processGone(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d is still running", pid)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	if runtime.GOOS != "linux" {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}
