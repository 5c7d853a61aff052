package lambdahost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/childproc"
)

// Defaults for ProcessOptions fields left zero.
const (
	// DefaultInitTimeout is Lambda's limit on a function's init phase.
	DefaultInitTimeout = 10 * time.Second
	// DefaultMemoryMB is Lambda's default function memory.
	DefaultMemoryMB = 128
	// DefaultHandler is the handler seatsaga's functions are configured with.
	DefaultHandler = "bootstrap"
)

const (
	// logTailBytes bounds how much of each output stream a Process keeps for reports.
	logTailBytes = 16 << 10
	// stopWait bounds how long Stop waits for a killed process to be reaped.
	stopWait = 5 * time.Second
	// initErrorExitGrace is how long a runtime that posted /init/error gets to exit by itself,
	// so that its own exit status is reported, before it is killed.
	initErrorExitGrace = 2 * time.Second
)

// ErrProcessExited says a Process's binary is no longer running, so it cannot take events.
// Lambda would start a new execution environment; a Process is one environment and does not.
var ErrProcessExited = errors.New("lambdahost: function process has exited")

// ProcessOptions say which binary to run as a function and in what environment.
type ProcessOptions struct {
	// Name is the function name (AWS_LAMBDA_FUNCTION_NAME, the log group and the ARN).
	Name string
	// Path is the executable: a function's built bootstrap.
	Path string
	// Env is the function's configured environment. The process gets exactly these variables
	// plus those Lambda itself sets (see StartProcess); nothing is inherited from this process.
	// The caller adds credentials (AWS_ACCESS_KEY_ID, ...), as the execution role would.
	Env map[string]string
	// Timeout is the function timeout (zero: DefaultTimeout).
	Timeout time.Duration
	// InitTimeout bounds the wait for the runtime loop (zero: DefaultInitTimeout).
	InitTimeout time.Duration
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE (zero: DefaultMemoryMB); it is not enforced.
	MemoryMB int
	// Region and AccountID place the function (zero: DefaultRegion, DefaultAccountID).
	Region    string
	AccountID string
	// Handler is _HANDLER (zero: DefaultHandler).
	Handler string
	// Stdout and Stderr receive the process's output as it is written; nil discards. The
	// last logTailBytes of each are kept regardless, for init failure reports.
	Stdout, Stderr io.Writer
}

// InitError says a function process never reached its runtime loop.
type InitError struct {
	Function string
	Pid      int
	// ErrorType is what Lambda would report: the errorType posted to /init/error,
	// Runtime.ExitError when the process exited, Sandbox.Timedout when it took too long.
	ErrorType    string
	ErrorMessage string
	// Exited says the process ended by itself; ExitCode is its status (-1 when killed by a
	// signal or still running when it was killed).
	Exited    bool
	ExitCode  int
	ExitState string
	// Stdout and Stderr are the tails of the process's output.
	Stdout, Stderr string
}

func (e *InitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lambdahost: function %s did not initialize: %s: %s", e.Function, e.ErrorType, e.ErrorMessage)
	if e.ExitState != "" && !strings.Contains(e.ErrorMessage, e.ExitState) {
		fmt.Fprintf(&b, " (%s)", e.ExitState)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		fmt.Fprintf(&b, "\nstderr:\n%s", s)
	}
	if s := strings.TrimSpace(e.Stdout); s != "" {
		fmt.Fprintf(&b, "\nstdout:\n%s", s)
	}
	return b.String()
}

// Process is one function binary running as an execution environment: it speaks the Runtime
// API to its own RuntimeAPI and handles one event at a time. Concurrent Invoke calls queue.
type Process struct {
	name    string
	arn     string
	timeout time.Duration
	env     []string
	api     *RuntimeAPI
	cmd     *exec.Cmd
	stdout  *tailBuffer
	stderr  *tailBuffer

	// exited is closed, and exitCtx cancelled, once the process was reaped and its output
	// drained.
	exited     chan struct{}
	exitCtx    context.Context
	exitCancel context.CancelFunc

	mu      sync.Mutex
	state   *os.ProcessState
	reaped  bool
	killed  bool
	stopErr error

	stopOnce  sync.Once
	unhookCtx func() bool
}

// StartProcess starts o.Path as function o.Name and waits until it reached its runtime loop
// (its first GET /invocation/next). The process gets only o.Env plus what Lambda sets for an
// OS-only runtime: AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_FUNCTION_NAME,
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE, AWS_LAMBDA_FUNCTION_VERSION, AWS_LAMBDA_INITIALIZATION_TYPE,
// AWS_LAMBDA_LOG_GROUP_NAME, AWS_LAMBDA_LOG_STREAM_NAME, AWS_REGION, AWS_DEFAULT_REGION,
// _HANDLER, LAMBDA_TASK_ROOT (the binary's directory, also its working directory),
// LAMBDA_RUNTIME_DIR, TZ, and — unless o.Env sets them — LANG and PATH. Env may not set a
// variable Lambda reserves, other than credentials.
//
// If the process posts /init/error, exits, or does not reach the loop within InitTimeout, it
// is stopped and StartProcess returns an *InitError with its exit status and output tails.
// The process is stopped when ctx ends or Stop is called.
func StartProcess(ctx context.Context, o ProcessOptions) (*Process, error) {
	if o.Name == "" || o.Path == "" {
		return nil, errors.New("lambdahost: StartProcess needs a Name and a Path")
	}
	path, err := filepath.Abs(o.Path)
	if err != nil {
		return nil, fmt.Errorf("lambdahost: function %s: %w", o.Name, err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.MemoryMB <= 0 {
		o.MemoryMB = DefaultMemoryMB
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.AccountID == "" {
		o.AccountID = DefaultAccountID
	}
	if o.Handler == "" {
		o.Handler = DefaultHandler
	}
	for k := range o.Env {
		if lambdaReserved[k] {
			return nil, fmt.Errorf("lambdahost: function %s: Env sets %s, which Lambda reserves", o.Name, k)
		}
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("lambdahost: function %s: invalid variable name %q", o.Name, k)
		}
	}

	if ctx.Err() != nil {
		return nil, fmt.Errorf("lambdahost: function %s: %w", o.Name, context.Cause(ctx))
	}

	api, err := NewRuntimeAPI()
	if err != nil {
		return nil, err
	}
	p := &Process{
		name:    o.Name,
		arn:     fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", o.Region, o.AccountID, o.Name),
		timeout: o.Timeout,
		env:     processEnv(o, filepath.Dir(path), api.Address()),
		api:     api,
		stdout:  &tailBuffer{limit: logTailBytes},
		stderr:  &tailBuffer{limit: logTailBytes},
		exited:  make(chan struct{}),
	}
	p.exitCtx, p.exitCancel = context.WithCancel(context.Background())
	if err := p.start(path, o.Stdout, o.Stderr); err != nil {
		_ = api.Close()
		p.exitCancel()
		return nil, fmt.Errorf("lambdahost: function %s: start %s: %w", o.Name, path, err)
	}
	// Started, so from here on every way out either returns p or stops it.
	unhook := context.AfterFunc(ctx, func() { _ = p.Stop() })
	p.mu.Lock()
	p.unhookCtx = unhook
	p.mu.Unlock()

	timer := time.NewTimer(o.InitTimeout)
	defer timer.Stop()
	select {
	case <-api.Polled():
		if ctx.Err() != nil {
			_ = p.Stop()
			return nil, fmt.Errorf("lambdahost: function %s: waiting for init: %w", o.Name, context.Cause(ctx))
		}
		return p, nil
	case <-api.InitFailed():
		doc := api.InitError()
		select {
		case <-p.exited:
		case <-time.After(initErrorExitGrace):
		}
		_ = p.Stop()
		return nil, p.initError(doc.ErrorType, doc.ErrorMessage)
	case <-p.exited:
		_ = p.Stop()
		if ctx.Err() != nil {
			// Stopped because ctx ended, not by itself.
			return nil, fmt.Errorf("lambdahost: function %s: waiting for init: %w", o.Name, context.Cause(ctx))
		}
		return nil, p.initError("Runtime.ExitError", "Runtime exited with error: "+p.exitState())
	case <-timer.C:
		_ = p.Stop()
		return nil, p.initError("Sandbox.Timedout",
			fmt.Sprintf("Init phase did not reach the runtime loop within %.2f seconds", o.InitTimeout.Seconds()))
	case <-ctx.Done():
		_ = p.Stop()
		return nil, fmt.Errorf("lambdahost: function %s: waiting for init: %w", o.Name, context.Cause(ctx))
	}
}

// start launches the binary with only p.env, its output piped through tails to the caller's
// writers, and reaps it in the background.
func (p *Process) start(path string, stdout, stderr io.Writer) error {
	if stdout != nil && stdout == stderr {
		// One writer for both streams must not be written from two goroutines at once.
		w := &lockedWriter{w: stdout}
		stdout, stderr = w, w
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	cmd := exec.Command(path)
	cmd.Env = p.env
	cmd.Dir = filepath.Dir(path)
	cmd.Stdin = nil
	// Files rather than writers, so that Wait returns when the process exits instead of when
	// every holder of the pipes (children it left behind) closes them.
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = sysProcAttr()
	child, err := childproc.Start(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	p.cmd = cmd

	var copies sync.WaitGroup
	drain := func(r *os.File, tail *tailBuffer, user io.Writer) {
		defer copies.Done()
		var w io.Writer = tail
		if user != nil {
			w = io.MultiWriter(tail, user)
		}
		_, _ = io.Copy(w, r)
	}
	copies.Add(2)
	go drain(outR, p.stdout, stdout)
	go drain(errR, p.stderr, stderr)

	go func() {
		<-child.Done()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.reaped = true
		p.mu.Unlock()
		// Lambda discards the whole environment with its runtime, so whatever the function
		// started goes too; that also closes the pipes those children held.
		killLeftovers(cmd.Process.Pid)
		drained := make(chan struct{})
		go func() { copies.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(time.Second):
			// A descendant outside the process group still holds a pipe; stop reading.
			outR.Close()
			errR.Close()
			<-drained
		}
		outR.Close()
		errR.Close()
		close(p.exited)
		p.exitCancel()
	}()
	return nil
}

// Name returns the function name.
func (p *Process) Name() string { return p.name }

// ARN returns the function ARN sent to the runtime with each event.
func (p *Process) ARN() string { return p.arn }

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Timeout returns the function timeout.
func (p *Process) Timeout() time.Duration { return p.timeout }

// Environ returns the environment the process was started with.
func (p *Process) Environ() []string { return slices.Clone(p.env) }

// RuntimeAPIAddress returns the AWS_LAMBDA_RUNTIME_API the process was given.
func (p *Process) RuntimeAPIAddress() string { return p.api.Address() }

// Exited is closed once the process has ended and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitState describes how the process ended ("exit status 1", "signal: killed"), or is empty
// while it runs.
func (p *Process) ExitState() string {
	select {
	case <-p.exited:
		return p.exitState()
	default:
		return ""
	}
}

// Stdout and Stderr return the tails of the process's output so far.
func (p *Process) Stdout() string { return p.stdout.String() }

// Stderr returns the tail of the process's standard error so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Invoke delivers payload as one event (a new request id, the function's timeout) and returns
// what the function answered. A non-empty functionError is the errorType of a function error
// and result is then its error document ({"errorType","errorMessage",...}), as the Invoke API
// returns it with X-Amz-Function-Error. err reports what is not a function outcome: the
// process had already exited, or ctx ended first.
func (p *Process) Invoke(ctx context.Context, payload []byte) (result []byte, functionError string, err error) {
	resp, err := p.InvokeWith(ctx, Invocation{Payload: payload})
	if err != nil {
		return nil, "", err
	}
	return resp.Payload, resp.ErrorType, nil
}

// InvokeWith delivers inv (zero fields filled: a new request id, the function's ARN and
// timeout, "{}" for an empty payload) and returns the function's answer. Outcomes Lambda
// reports as function errors are returned as such: Sandbox.Timedout when the function does not
// answer in time (the process is then stopped, as Lambda discards a timed-out environment) and
// Runtime.ExitError when the process dies during the invocation.
func (p *Process) InvokeWith(ctx context.Context, inv Invocation) (Response, error) {
	if inv.RequestID == "" {
		inv.RequestID = newRequestID()
	}
	if inv.FunctionARN == "" {
		inv.FunctionARN = p.arn
	}
	if inv.Timeout <= 0 {
		inv.Timeout = p.timeout
	}
	if len(bytes.TrimSpace(inv.Payload)) == 0 {
		inv.Payload = []byte("{}")
	}
	if len(inv.Payload) > MaxPayloadBytes {
		return Response{}, fmt.Errorf("lambdahost: function %s: payload of %d bytes exceeds %d", p.name, len(inv.Payload), MaxPayloadBytes)
	}
	if err := p.exitedErr(); err != nil {
		return Response{}, err
	}

	errExited := errors.New("process exited")
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unhook := context.AfterFunc(p.exitCtx, func() { cancel(errExited) })
	defer unhook()

	resp, err := p.api.Invoke(ictx, inv)
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, errExited) && errors.Is(err, ErrNotDelivered):
		return Response{}, p.exitedErr()
	case errors.Is(err, errExited):
		f := Failure{FunctionErrorType: "Runtime.ExitError", Message: "Runtime exited with error: " + p.exitState()}
		return p.failureResponse(inv.RequestID, f), nil
	case errors.Is(err, ErrTimedOut):
		_ = p.Stop()
		return p.failureResponse(inv.RequestID, Timeout(inv.Timeout)), nil
	case errors.Is(err, ErrClosed):
		if exitErr := p.exitedErr(); exitErr != nil {
			return Response{}, exitErr
		}
		return Response{}, fmt.Errorf("lambdahost: function %s stopped: %w", p.name, ErrProcessExited)
	default:
		return Response{}, fmt.Errorf("lambdahost: function %s: %w", p.name, err)
	}
}

func (p *Process) failureResponse(requestID string, f Failure) Response {
	res := f.result(requestID)
	return Response{RequestID: requestID, Payload: res.body, ContentType: "application/json", ErrorType: f.FunctionErrorType}
}

// Stop kills the process and everything it started, waits (boundedly) for it to be reaped and
// closes its Runtime API. It may be called more than once and after the process exited.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		if p.unhookCtx != nil {
			p.unhookCtx()
		}
		if !p.reaped {
			p.killed = true
			killProcess(p.cmd.Process)
		}
		p.mu.Unlock()
		select {
		case <-p.exited:
		case <-time.After(stopWait):
			p.stopErr = fmt.Errorf("lambdahost: function %s (pid %d) did not exit within %s of SIGKILL", p.name, p.Pid(), stopWait)
		}
		if err := p.api.Close(); err != nil && p.stopErr == nil {
			p.stopErr = err
		}
	})
	return p.stopErr
}

// exitedErr returns an error wrapping ErrProcessExited once the process is gone.
func (p *Process) exitedErr() error {
	select {
	case <-p.exited:
		return fmt.Errorf("lambdahost: function %s: %w (%s)", p.name, ErrProcessExited, p.exitState())
	default:
		return nil
	}
}

func (p *Process) exitState() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return "running"
	}
	return p.state.String()
}

func (p *Process) initError(errorType, message string) *InitError {
	e := &InitError{
		Function:     p.name,
		Pid:          p.Pid(),
		ErrorType:    errorType,
		ErrorMessage: message,
		ExitCode:     -1,
		Stdout:       p.stdout.String(),
		Stderr:       p.stderr.String(),
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != nil {
		e.ExitState = p.state.String()
		e.ExitCode = p.state.ExitCode()
		e.Exited = !p.killed
	}
	return e
}

// lambdaReserved are the variables Lambda sets itself and refuses in a function's
// configuration, less the credentials, which locally the caller must supply.
var lambdaReserved = map[string]bool{
	"_HANDLER": true, "_X_AMZN_TRACE_ID": true, "AWS_DEFAULT_REGION": true, "AWS_REGION": true,
	"AWS_EXECUTION_ENV": true, "AWS_LAMBDA_FUNCTION_NAME": true, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": true,
	"AWS_LAMBDA_FUNCTION_VERSION": true, "AWS_LAMBDA_INITIALIZATION_TYPE": true,
	"AWS_LAMBDA_LOG_GROUP_NAME": true, "AWS_LAMBDA_LOG_STREAM_NAME": true,
	"AWS_LAMBDA_RUNTIME_API": true, "LAMBDA_TASK_ROOT": true, "LAMBDA_RUNTIME_DIR": true, "TZ": true,
}

// processEnv is the whole environment of a function process: what Lambda sets for an OS-only
// runtime (provided.al2023, which sets no AWS_EXECUTION_ENV), then the configured Env. The
// Lambda-image LD_LIBRARY_PATH is left out: it names directories of that image, and a Go
// bootstrap is static.
func processEnv(o ProcessOptions, taskRoot, runtimeAPI string) []string {
	now := time.Now().UTC()
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        o.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(o.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + o.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      now.Format("2006/01/02") + "/[$LATEST]" + strings.ReplaceAll(newRequestID(), "-", ""),
		"AWS_REGION":                      o.Region,
		"AWS_DEFAULT_REGION":              o.Region,
		"_HANDLER":                        o.Handler,
		"LAMBDA_TASK_ROOT":                taskRoot,
		"LAMBDA_RUNTIME_DIR":              "/var/runtime",
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
	}
	for k, v := range o.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// RegisterProcess serves a running Process under name, so the Invoke API (and the Step
// Functions engine) reach the real binary. Faults, gates, latency, concurrency and counters
// apply as to an in-process handler. cfg.Timeout, when set, overrides the process's timeout
// per invocation. The host does not own p: stop it yourself.
func (h *Host) RegisterProcess(name string, p *Process, cfg FunctionConfig) {
	h.register(name, &function{proc: p, timeout: p.timeout}, cfg)
}

// RunsProcess reports whether name is served by a real process (RegisterProcess), whose side
// effects outside AWS (a notification sent) the host cannot see.
func (h *Host) RunsProcess(name string) bool {
	f := h.lookup(name)
	return f != nil && f.proc != nil
}

// runProcess delivers call to f's process. The invocation is not tied to the caller's request,
// as on Lambda a synchronous invocation runs on when the caller disconnects.
func (h *Host) runProcess(f *function, call invocation) result {
	resp, err := f.proc.InvokeWith(context.Background(), Invocation{
		RequestID:     call.requestID,
		Payload:       call.payload,
		FunctionARN:   f.arn,
		Timeout:       f.timeout,
		TraceID:       call.traceID,
		ClientContext: call.clientContext,
	})
	switch {
	case errors.Is(err, ErrProcessExited):
		// Lambda would start a new environment and, for a binary that fails at init, report
		// its exit as the invocation's function error.
		return Failure{FunctionErrorType: "Runtime.ExitError", Message: "Runtime exited with error: " + f.proc.exitState()}.result(call.requestID)
	case err != nil:
		return result{status: http.StatusInternalServerError, errorCode: "ServiceException",
			body: mustJSON(map[string]string{"Type": "Service", "Message": err.Error()})}
	case resp.ErrorType != "":
		return result{status: http.StatusOK, body: resp.Payload, functionError: true}
	default:
		return result{status: http.StatusOK, body: resp.Payload}
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lockedWriter serialises writes from the two output streams to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
