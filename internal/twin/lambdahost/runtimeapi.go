package lambdahost

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Runtime API names, as aws-lambda-go v1.55.1 uses them (lambda/runtime_api_client.go) and the
// Lambda Runtime API 2018-06-01 documents them.
const (
	runtimeAPIPrefix = "/2018-06-01/runtime"

	headerRequestID       = "Lambda-Runtime-Aws-Request-Id"
	headerDeadlineMs      = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN     = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID         = "Lambda-Runtime-Trace-Id"
	headerClientContext   = "Lambda-Runtime-Client-Context"
	headerCognitoIdentity = "Lambda-Runtime-Cognito-Identity"
	// headerErrorType is a header on /error and /init/error, and a trailer on /response when
	// the runtime failed while streaming the response body.
	headerErrorType = "Lambda-Runtime-Function-Error-Type"
	// trailerErrorBody carries the base64 error document of a failed /response body.
	trailerErrorBody = "Lambda-Runtime-Function-Error-Body"
)

// Errors RuntimeAPI.Invoke wraps, so that callers can tell what became of an invocation.
var (
	// ErrNotDelivered says no runtime took the invocation: the caller's context ended or the
	// API was closed while it waited for a GET /invocation/next.
	ErrNotDelivered = errors.New("lambdahost: invocation not delivered to the runtime")
	// ErrTimedOut says the runtime took the invocation but answered nothing by its deadline.
	ErrTimedOut = errors.New("lambdahost: invocation timed out")
	// ErrClosed says the RuntimeAPI was closed.
	ErrClosed = errors.New("lambdahost: runtime API closed")
)

// Invocation is one event delivered through the Runtime API.
type Invocation struct {
	// RequestID is the AWS request id; empty means a new one.
	RequestID string
	// Payload is the event, sent as the body of GET /invocation/next.
	Payload []byte
	// FunctionARN is sent as Lambda-Runtime-Invoked-Function-Arn.
	FunctionARN string
	// Timeout sets the deadline, counted from the moment the runtime takes the event (zero:
	// DefaultTimeout). It is sent as Lambda-Runtime-Deadline-Ms.
	Timeout time.Duration
	// TraceID is sent as Lambda-Runtime-Trace-Id; empty means a new unsampled X-Ray header,
	// since Lambda always sends one.
	TraceID string
	// ClientContext and CognitoIdentity are JSON documents, sent only when present.
	ClientContext   []byte
	CognitoIdentity []byte
}

// Response is what the runtime posted for an invocation.
type Response struct {
	RequestID string
	// Payload is the handler's response, or the error document ({"errorType",
	// "errorMessage", ...}) when ErrorType is set.
	Payload []byte
	// ContentType is the Content-Type the runtime posted.
	ContentType string
	// ErrorType is empty for a success; otherwise the function error's errorType.
	ErrorType string
}

// RuntimeError is an error document a runtime posted to /init/error.
type RuntimeError struct {
	ErrorType    string
	ErrorMessage string
	// Body is the document as posted.
	Body []byte
}

// RuntimeAPI serves the Lambda Runtime API (2018-06-01) for one execution environment on a
// loopback port: it hands events to the runtime's GET /invocation/next long poll and collects
// what the runtime posts back. It holds no process; Process pairs one with a binary.
type RuntimeAPI struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup

	// queue is unbuffered so that an invocation is handed over only to a runtime that is
	// polling at that moment; one that nobody takes can still be withdrawn.
	queue chan *pendingInvocation

	mu       sync.Mutex
	inflight map[string]*pendingInvocation
	initErr  *RuntimeError

	polled      chan struct{}
	polledOnce  sync.Once
	initFailed  chan struct{}
	initErrOnce sync.Once
	closed      chan struct{}
	closeOnce   sync.Once
}

type pendingInvocation struct {
	inv Invocation
	// delivered is closed by the poller that took the invocation, after it set deadline.
	delivered chan struct{}
	deadline  time.Time
	// done receives the runtime's answer; buffered so that an answer nobody waits for any
	// more (the caller gave up) does not block the runtime.
	done chan Response
}

// NewRuntimeAPI listens on a free loopback port and serves the Runtime API until Close.
func NewRuntimeAPI() (*RuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lambdahost: runtime API listen: %w", err)
	}
	a := &RuntimeAPI{
		ln:         ln,
		queue:      make(chan *pendingInvocation),
		inflight:   map[string]*pendingInvocation{},
		polled:     make(chan struct{}),
		initFailed: make(chan struct{}),
		closed:     make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimeAPIPrefix+"/invocation/next", a.serveNext)
	mux.HandleFunc("POST "+runtimeAPIPrefix+"/invocation/{id}/response", a.serveResponse)
	mux.HandleFunc("POST "+runtimeAPIPrefix+"/invocation/{id}/error", a.serveError)
	mux.HandleFunc("POST "+runtimeAPIPrefix+"/init/error", a.serveInitError)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRuntimeError(w, http.StatusNotFound, "NotFound", "Unknown Runtime API operation "+r.Method+" "+r.URL.Path)
	})
	// No read or write timeout: GET /invocation/next is a long poll that lasts until an event
	// arrives.
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		_ = a.srv.Serve(ln)
	}()
	return a, nil
}

// Address is the host:port to put in AWS_LAMBDA_RUNTIME_API.
func (a *RuntimeAPI) Address() string { return a.ln.Addr().String() }

// Polled is closed when the first GET /invocation/next arrives: the runtime finished its
// initialisation and reached its loop.
func (a *RuntimeAPI) Polled() <-chan struct{} { return a.polled }

// InitFailed is closed when the runtime posts /init/error; InitError then returns what it posted.
func (a *RuntimeAPI) InitFailed() <-chan struct{} { return a.initFailed }

// InitError returns what the runtime posted to /init/error, or nil.
func (a *RuntimeAPI) InitError() *RuntimeError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.initErr
}

// Invoke hands inv to the next GET /invocation/next and waits for the runtime's answer. It
// returns an error wrapping ErrNotDelivered when no runtime took the event before ctx ended,
// ErrTimedOut when the runtime took it but did not answer by the deadline, or ctx's cause when
// ctx ended after delivery. An event the runtime took stays expected after Invoke gave up, so
// that the runtime's late answer is accepted (and dropped) rather than refused: aws-lambda-go
// exits when a post is refused.
func (a *RuntimeAPI) Invoke(ctx context.Context, inv Invocation) (Response, error) {
	if inv.RequestID == "" {
		inv.RequestID = newRequestID()
	}
	if inv.Timeout <= 0 {
		inv.Timeout = DefaultTimeout
	}
	if inv.TraceID == "" {
		inv.TraceID = newTraceHeader()
	}
	p := &pendingInvocation{inv: inv, delivered: make(chan struct{}), done: make(chan Response, 1)}
	select {
	case a.queue <- p:
	case <-ctx.Done():
		return Response{}, fmt.Errorf("%w: %w", ErrNotDelivered, context.Cause(ctx))
	case <-a.closed:
		return Response{}, fmt.Errorf("%w: %w", ErrNotDelivered, ErrClosed)
	}
	// The poller closes delivered right after it took p, without blocking in between.
	<-p.delivered
	timer := time.NewTimer(time.Until(p.deadline))
	defer timer.Stop()
	select {
	case resp := <-p.done:
		return resp, nil
	case <-timer.C:
		return Response{}, fmt.Errorf("%w after %s (request %s)", ErrTimedOut, inv.Timeout, inv.RequestID)
	case <-ctx.Done():
		return Response{}, fmt.Errorf("lambdahost: invocation %s abandoned: %w", inv.RequestID, context.Cause(ctx))
	case <-a.closed:
		return Response{}, fmt.Errorf("lambdahost: invocation %s: %w", inv.RequestID, ErrClosed)
	}
}

// Close stops serving; pending long polls end and waiting Invoke calls return ErrClosed.
func (a *RuntimeAPI) Close() error {
	var err error
	a.closeOnce.Do(func() {
		close(a.closed)
		err = a.srv.Close()
		a.wg.Wait()
	})
	return err
}

func (a *RuntimeAPI) serveNext(w http.ResponseWriter, r *http.Request) {
	a.polledOnce.Do(func() { close(a.polled) })
	var p *pendingInvocation
	select {
	case p = <-a.queue:
	case <-r.Context().Done():
		return
	case <-a.closed:
		writeRuntimeError(w, http.StatusInternalServerError, "ServiceUnavailable", "runtime API closed")
		return
	}
	p.deadline = time.Now().Add(p.inv.Timeout)
	a.mu.Lock()
	a.inflight[p.inv.RequestID] = p
	a.mu.Unlock()
	close(p.delivered)

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(headerRequestID, p.inv.RequestID)
	h.Set(headerDeadlineMs, strconv.FormatInt(p.deadline.UnixMilli(), 10))
	h.Set(headerFunctionARN, p.inv.FunctionARN)
	h.Set(headerTraceID, p.inv.TraceID)
	if len(p.inv.ClientContext) > 0 {
		h.Set(headerClientContext, string(p.inv.ClientContext))
	}
	if len(p.inv.CognitoIdentity) > 0 {
		h.Set(headerCognitoIdentity, string(p.inv.CognitoIdentity))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(p.inv.Payload)
}

// take removes and returns the in-flight invocation id, or answers the runtime 400 as Lambda
// does for a request id it did not hand out (or that was already answered).
func (a *RuntimeAPI) take(w http.ResponseWriter, id string) *pendingInvocation {
	a.mu.Lock()
	p := a.inflight[id]
	delete(a.inflight, id)
	a.mu.Unlock()
	if p == nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
	}
	return p
}

func (a *RuntimeAPI) serveResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequest", "could not read the response body: "+err.Error())
		return
	}
	p := a.take(w, id)
	if p == nil {
		return
	}
	resp := Response{RequestID: id, Payload: body, ContentType: r.Header.Get("Content-Type")}
	switch {
	case len(body) > MaxPayloadBytes:
		resp.ErrorType = "Function.ResponseSizeTooLarge"
		resp.Payload = errorPayload(&messages.InvokeResponse_Error{
			Type:    resp.ErrorType,
			Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxPayloadBytes),
		})
		p.done <- resp
		writeRuntimeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("Exceeded maximum allowed payload size (%d bytes).", MaxPayloadBytes))
		return
	case r.Trailer.Get(headerErrorType) != "":
		// The runtime's response reader failed mid-body (aws-lambda-go's errorCapturingReader):
		// the invocation is a function error described by the trailers.
		resp.ErrorType = r.Trailer.Get(headerErrorType)
		doc, err := base64.StdEncoding.DecodeString(r.Trailer.Get(trailerErrorBody))
		if err != nil || !json.Valid(doc) {
			doc = errorPayload(&messages.InvokeResponse_Error{Type: resp.ErrorType})
		}
		resp.Payload, resp.ContentType = doc, "application/json"
	}
	p.done <- resp
	writeAccepted(w)
}

func (a *RuntimeAPI) serveError(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequest", "could not read the error body: "+err.Error())
		return
	}
	p := a.take(w, id)
	if p == nil {
		return
	}
	doc := parseRuntimeError(body, r.Header.Get(headerErrorType))
	p.done <- Response{RequestID: id, Payload: doc.Body, ContentType: "application/json", ErrorType: doc.ErrorType}
	writeAccepted(w)
}

func (a *RuntimeAPI) serveInitError(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequest", "could not read the error body: "+err.Error())
		return
	}
	select {
	case <-a.polled:
		// Lambda refuses an init error from a runtime that already asked for an event.
		writeRuntimeError(w, http.StatusForbidden, "InvalidStateTransition",
			"State transition from Ready to InitError failed for runtime. Error: State transition is not allowed")
		return
	default:
	}
	doc := parseRuntimeError(body, r.Header.Get(headerErrorType))
	a.initErrOnce.Do(func() {
		a.mu.Lock()
		a.initErr = &doc
		a.mu.Unlock()
		close(a.initFailed)
	})
	writeAccepted(w)
}

// parseRuntimeError reads an error document a runtime posted. Lambda passes the document on
// as posted; when there is none it builds one from the Lambda-Runtime-Function-Error-Type
// header. The errorType in the document wins over the header, because aws-lambda-go sends no
// header and the document's errorType is what callers (and Step Functions) see.
func parseRuntimeError(body []byte, headerType string) RuntimeError {
	var doc messages.InvokeResponse_Error
	if len(body) > 0 && json.Valid(body) && json.Unmarshal(body, &doc) == nil {
		typ := doc.Type
		if typ == "" {
			typ = headerType
		}
		if typ == "" {
			typ = "Unhandled"
		}
		return RuntimeError{ErrorType: typ, ErrorMessage: doc.Message, Body: body}
	}
	typ := headerType
	if typ == "" {
		typ = "Unhandled"
	}
	msg := string(body)
	return RuntimeError{ErrorType: typ, ErrorMessage: msg,
		Body: errorPayload(&messages.InvokeResponse_Error{Type: typ, Message: msg})}
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func writeRuntimeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(map[string]string{"errorType": typ, "errorMessage": msg}))
}

// newTraceHeader returns an unsampled X-Ray trace header of the form Lambda sends.
func newTraceHeader() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%x;Parent=%x;Sampled=0", time.Now().Unix(), b[:12], b[12:])
}
