// Package lambdahost serves registered Go Lambda handlers over the Lambda Invoke API
// (POST /2015-03-31/functions/{name}/invocations), so that aws-sdk-go-v2/service/lambda — and
// the local Step Functions engine that uses it — invoke the real handlers without AWS.
//
// Handlers run through aws-lambda-go's own plumbing (lambda.NewHandler, and the runtime's
// Function.Invoke for error and panic shaping), so a returned error reaches the caller exactly
// as on AWS: HTTP 200, X-Amz-Function-Error: Unhandled, {"errorType","errorMessage"} with
// errorType the Go type name of the error (a fmt.Errorf("%w") error is "wrapError").
//
// Tests can make a function fail before its handler runs (a Lambda service error), fail after
// it returned (its effects happened, the caller sees an error), or answer slowly.
//
// Concurrency follows Lambda's model (concurrency.go): an account limit, each function's
// reserved concurrency carved out of it, and the rest shared by the other functions; an
// invocation over its pool is refused 429 TooManyRequestsException as Lambda refuses it.
package lambdahost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/seatsaga/seatsaga/internal/twin/serve"
)

// Defaults that hold when Options leave a field zero.
const (
	DefaultRegion         = "us-east-1"
	DefaultAccountID      = "123456789012"
	DefaultMaxConcurrency = 1000 // AWS's default account concurrency quota
	DefaultTimeout        = 30 * time.Second
	// MaxPayloadBytes is Lambda's limit for a synchronous request and response payload.
	MaxPayloadBytes = 6 * 1024 * 1024
)

// Options configure a Host.
type Options struct {
	Region    string
	AccountID string
	// MaxConcurrency is the account's concurrency limit: the invocations in flight across the
	// host, of which each function's reserved concurrency is carved out (see concurrency.go).
	// Excess requests get 429 TooManyRequestsException as on AWS. Zero means
	// DefaultMaxConcurrency; negative, no account limit (reservations still cap their
	// functions).
	MaxConcurrency int
	// Timeout is the function timeout used when Register is not given one: the handler's
	// context deadline, and the point at which the caller gets a Sandbox.Timedout error.
	Timeout time.Duration
	// Logger receives one line per invocation; nil discards.
	Logger *slog.Logger
	// Observer, when set, is told the outcome of every invocation request the host answered
	// for a registered function: what Lambda publishes as the function's AWS/Lambda metrics.
	// It runs on the invocation's goroutine and must not block.
	Observer func(Report)
}

// Report is one invocation request's outcome, as Lambda's metrics count it: Invocations
// counts every run of the function, successful or not, and never a throttled request or one
// refused before the function ran; Errors counts the runs that ended in a function error (the
// handler's error or panic, a timeout, a crash of the runtime); Throttles counts the requests
// a concurrency limit refused; Duration is how long the run took.
type Report struct {
	Function  string
	Invoked   bool
	Error     bool
	Throttled bool
	Duration  time.Duration
}

// FunctionConfig is optional per-function configuration for RegisterWith.
type FunctionConfig struct {
	// Timeout overrides Options.Timeout for this function.
	Timeout time.Duration
	// ReservedConcurrency reserves that many of the account's slots for this function alone
	// and caps it there; the other functions share what is left (0: no reservation, the
	// function runs in the unreserved pool).
	ReservedConcurrency int
}

// Host serves registered handlers over the Lambda Invoke API.
type Host struct {
	opts Options
	log  *slog.Logger
	// unreserved is the pool every function without reserved concurrency runs in.
	unreserved *pool

	mu        sync.RWMutex
	functions map[string]*function

	server serve.Server
}

type function struct {
	name    string
	arn     string
	handler any
	proc    *Process // set instead of fn for a function served by a real process
	timeout time.Duration
	// pool is the function's reservation, or the host's unreserved pool; reserved is the
	// reservation's size (0 for none).
	pool     *pool
	reserved int

	faultMu sync.Mutex
	before  []countedFailure
	after   []countedFailure
	latency time.Duration
	gate    *gate

	requests    atomic.Int64
	invocations atomic.Int64
	errors      atomic.Int64
	throttles   atomic.Int64
	injected    atomic.Int64
}

type countedFailure struct {
	failure Failure
	left    int
}

// New returns a Host with no functions.
func New(opts Options) *Host {
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.AccountID == "" {
		opts.AccountID = DefaultAccountID
	}
	if opts.MaxConcurrency == 0 {
		opts.MaxConcurrency = DefaultMaxConcurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	h := &Host{opts: opts, functions: map[string]*function{}, log: opts.Logger,
		server: serve.Server{Name: "lambdahost", ShutdownTimeout: 2 * time.Second}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.unreserved = newPool(opts.MaxConcurrency, ReasonUnreserved)
	return h
}

// Register serves handler under name with the host's default configuration. handler is anything
// lambda.Start accepts (func(ctx, In) (Out, error) and the other documented shapes, or a
// lambda.Handler). Registering a name again replaces the function and resets its counters.
func (h *Host) Register(name string, handler any) {
	h.RegisterWith(name, handler, FunctionConfig{})
}

// RegisterWith serves handler under name with its own timeout and reserved concurrency.
func (h *Host) RegisterWith(name string, handler any, cfg FunctionConfig) {
	h.register(name, &function{handler: handler, timeout: h.opts.Timeout}, cfg)
}

// register serves f under name, its timeout overridden and its concurrency reserved as cfg
// says, replacing any function of that name.
func (h *Host) register(name string, f *function, cfg FunctionConfig) {
	f.name, f.arn = name, h.FunctionARN(name)
	if cfg.Timeout > 0 {
		f.timeout = cfg.Timeout
	}
	h.mu.Lock()
	h.carve(f, max(cfg.ReservedConcurrency, 0))
	h.mu.Unlock()
}

// FunctionARN returns the ARN under which name is served, for ASL Resource fields and
// definition substitutions.
func (h *Host) FunctionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", h.opts.Region, h.opts.AccountID, name)
}

// Functions returns the registered function names.
func (h *Host) Functions() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	names := make([]string, 0, len(h.functions))
	for n := range h.functions {
		names = append(names, n)
	}
	return names
}

func (h *Host) lookup(name string) *function {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.functions[name]
}

// Handler returns the HTTP handler serving the Invoke API.
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", h.serveInvoke)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAWSError(w, http.StatusNotFound, "UnknownOperationException", "User",
			fmt.Sprintf("Unknown operation %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves until ctx ends or Close is called. It
// returns the endpoint URL to use as the Lambda client's base endpoint.
func (h *Host) Start(ctx context.Context, addr string) (string, error) {
	return h.server.StartContext(ctx, addr, h.Handler())
}

// Close stops the server started by Start. Handlers still running finish in the background.
func (h *Host) Close() error { return h.server.Close() }

// functionName maps what callers may pass as FunctionName — a name, name:qualifier, a partial
// ARN (account:function:name) or a full ARN, with or without qualifier — to the name and the
// qualifier.
func functionName(raw string) (name, qualifier string) {
	parts := strings.Split(raw, ":")
	switch {
	case len(parts) >= 7 && parts[0] == "arn" && parts[5] == "function":
		name = parts[6]
		if len(parts) > 7 {
			qualifier = parts[7]
		}
	case len(parts) >= 3 && parts[1] == "function":
		name = parts[2]
		if len(parts) > 3 {
			qualifier = parts[3]
		}
	case len(parts) == 2:
		name, qualifier = parts[0], parts[1]
	default:
		name = raw
	}
	return name, qualifier
}

func (h *Host) serveInvoke(w http.ResponseWriter, r *http.Request) {
	requestID := newRequestID()
	w.Header().Set("X-Amzn-Requestid", requestID)

	name, qualifier := functionName(r.PathValue("name"))
	if q := r.URL.Query().Get("Qualifier"); q != "" {
		qualifier = q
	}
	f := h.lookup(name)
	if f == nil {
		writeAWSError(w, http.StatusNotFound, "ResourceNotFoundException", "User",
			"Function not found: "+h.FunctionARN(name))
		return
	}
	if qualifier != "" && qualifier != "$LATEST" {
		// The host has one version of each function; an alias or version is the same code.
		h.log.Debug("lambdahost: qualifier served as $LATEST", "function", name, "qualifier", qualifier)
	}

	invocationType := r.Header.Get("X-Amz-Invocation-Type")
	if invocationType == "" {
		invocationType = "RequestResponse"
	}
	switch invocationType {
	case "RequestResponse", "Event", "DryRun":
	default:
		writeAWSError(w, http.StatusBadRequest, "InvalidParameterValueException", "User",
			"1 validation error detected: Value '"+invocationType+"' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]")
		return
	}

	payload, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		writeAWSError(w, http.StatusBadRequest, "InvalidRequestContentException", "User", "Could not read request body")
		return
	}
	if len(payload) > MaxPayloadBytes {
		writeAWSError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "User",
			fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", MaxPayloadBytes))
		return
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = []byte("{}")
	}
	if !json.Valid(payload) {
		writeAWSError(w, http.StatusBadRequest, "InvalidRequestContentException", "User",
			"Could not parse request body into json: Could not parse payload into json")
		return
	}
	var clientContext []byte
	if cc := r.Header.Get("X-Amz-Client-Context"); cc != "" {
		if clientContext, err = base64.StdEncoding.DecodeString(cc); err != nil {
			writeAWSError(w, http.StatusBadRequest, "InvalidRequestContentException", "User",
				"Client context must be a valid Base64-encoded JSON object")
			return
		}
	}
	if invocationType == "DryRun" {
		w.WriteHeader(http.StatusNoContent)
		return
	}

	f.requests.Add(1)
	call := invocation{
		requestID:     requestID,
		traceID:       r.Header.Get("X-Amzn-Trace-Id"),
		payload:       payload,
		clientContext: clientContext,
	}
	if invocationType == "Event" {
		// Asynchronous: Lambda queues the event and runs it when there is capacity, so it is
		// accepted now and never throttled; faults after the handler are invisible to the
		// caller, as on AWS.
		go func() {
			f.pool.acquire()
			defer f.pool.release()
			h.invoke(context.Background(), f, call)
		}()
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !f.pool.tryAcquire() {
		f.throttles.Add(1)
		h.report(Report{Function: f.name, Throttled: true})
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, "TooManyRequestsException", map[string]string{
			"Reason":  f.pool.reason,
			"Type":    "User",
			"message": "Rate Exceeded.",
		})
		return
	}

	defer f.pool.release()
	res := h.invoke(r.Context(), f, call)
	res.write(w)
}

type invocation struct {
	requestID     string
	traceID       string
	payload       []byte
	clientContext []byte
}

// result is what the caller receives: either a service error (status ≠ 200) or a 200 with the
// function's payload, flagged as a function error when functionError is set.
type result struct {
	status        int
	errorCode     string
	body          []byte
	functionError bool
}

func (res result) write(w http.ResponseWriter) {
	if res.status != http.StatusOK {
		w.Header().Set("X-Amzn-Errortype", res.errorCode)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if res.functionError {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
	}
	w.WriteHeader(res.status)
	_, _ = w.Write(res.body)
}

func (h *Host) invoke(ctx context.Context, f *function, call invocation) result {
	start := time.Now()
	f.waitAtGate(ctx)
	// A gate is the test's hold in front of the function, not the function's own time.
	ran := time.Now()
	before, after, latency := f.takeFaults()
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if before != nil {
		f.injected.Add(1)
		h.log.Info("lambdahost: fault before handler", "function", f.name, "requestId", call.requestID, "error", before.name())
		res := before.result(call.requestID)
		// A function error before the handler is the runtime failing the run (a crash, a
		// timeout); a 429 is a throttle; any other service error never reached the function.
		h.report(Report{Function: f.name, Invoked: res.functionError, Error: res.functionError,
			Throttled: res.status == http.StatusTooManyRequests, Duration: time.Since(ran)})
		return res
	}

	f.invocations.Add(1)
	var kill Failure
	if after != nil {
		kill = *after
	}
	res := h.run(f, call, kill)
	if res.functionError {
		f.errors.Add(1)
	}
	h.log.Debug("lambdahost: invoked", "function", f.name, "requestId", call.requestID,
		"functionError", res.functionError, "durationMs", time.Since(start).Milliseconds())
	rep := Report{Function: f.name, Invoked: true, Error: res.functionError, Duration: time.Since(ran)}
	if after != nil {
		f.injected.Add(1)
		h.log.Info("lambdahost: fault after handler", "function", f.name, "requestId", call.requestID, "error", after.name())
		res = after.result(call.requestID)
		rep.Error = rep.Error || res.functionError
		h.report(rep)
		return res
	}
	h.report(rep)
	return res
}

func (h *Host) report(r Report) {
	if h.opts.Observer != nil {
		h.opts.Observer(r)
	}
}

// run calls the handler through the runtime's Function.Invoke, which builds the lambdacontext,
// applies the deadline and shapes errors and panics exactly as the Go runtime reports them. A
// handler still running at its timeout is abandoned and the caller told so, as Lambda does. A
// positive kill.KillAfter shorter than the timeout ends the run then instead: the caller's
// answer is the failure that asked for it, and kill.OnKilled is told.
func (h *Host) run(f *function, call invocation, kill Failure) result {
	if f.proc != nil {
		return h.runProcess(f, call)
	}
	limit := f.timeout
	if kill.KillAfter > 0 && kill.KillAfter < limit {
		limit = kill.KillAfter
	}
	deadline := time.Now().Add(limit)
	req := &messages.InvokeRequest{
		Payload:            call.payload,
		RequestId:          call.requestID,
		XAmznTraceId:       call.traceID,
		Deadline:           messages.InvokeRequest_Timestamp{Seconds: deadline.Unix(), Nanos: int64(deadline.Nanosecond())},
		InvokedFunctionArn: f.arn,
		ClientContext:      call.clientContext,
	}
	done := make(chan *messages.InvokeResponse, 1)
	go func() {
		resp := &messages.InvokeResponse{}
		// Each invocation gets a runtime Function of its own: the runtime's RPC Invoke hands
		// back the bytes of a pooled output buffer it has already returned to its pool, so
		// with a shared Function a concurrent invocation would overwrite this one's answer.
		if err := lambda.NewFunction(lambda.NewHandler(f.handler)).Invoke(req, resp); err != nil {
			resp.Error = &messages.InvokeResponse_Error{Type: "Runtime.InvokeError", Message: err.Error()}
		}
		done <- resp
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case resp := <-done:
		if resp.Error != nil {
			return result{status: http.StatusOK, body: errorPayload(resp.Error), functionError: true}
		}
		if len(resp.Payload) > MaxPayloadBytes {
			return result{status: http.StatusOK, functionError: true, body: errorPayload(&messages.InvokeResponse_Error{
				Type:    "Function.ResponseSizeTooLarge",
				Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxPayloadBytes),
			})}
		}
		return result{status: http.StatusOK, body: resp.Payload}
	case <-timer.C:
		if limit < f.timeout {
			if kill.OnKilled != nil {
				kill.OnKilled()
			}
			return result{} // killed: invoke answers with the failure that killed it
		}
		return Timeout(f.timeout).result(call.requestID)
	}
}

func errorPayload(e *messages.InvokeResponse_Error) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(&messages.InvokeResponse_Error{Type: "Runtime.SerializationError", Message: err.Error()})
	}
	return b
}

func writeAWSError(w http.ResponseWriter, status int, code, typ, message string) {
	writeJSON(w, status, code, map[string]string{"Type": typ, "Message": message})
}

func writeJSON(w http.ResponseWriter, status int, code string, body any) {
	b, _ := json.Marshal(body)
	w.Header().Set("X-Amzn-Errortype", code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("lambdahost: marshal %T: %v", v, err))
	}
	return b
}
