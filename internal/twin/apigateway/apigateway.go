// Package apigateway is an HTTP server that plays Amazon API Gateway (REST API, Lambda proxy
// integration) for the local stack: it matches a request to a route, checks the dev bearer
// token where the route needs one, builds the events.APIGatewayProxyRequest API Gateway would
// send (path parameters, headers, query string, request context with the authorizer's claims),
// invokes the route's Lambda function and turns its APIGatewayProxyResponse back into HTTP.
//
// Functions are invoked through an Invoker, in the local stack the Lambda Invoke API of the
// Lambda host, so every request is counted and faulted like any other invocation. A stage
// given a throttle (Options.Throttle, its rate and burst) answers the requests past it 429,
// as API Gateway does, without invoking anything.
//
// Bad input is refused at the edge in the API's JSON error shape ({code, message}): a body over
// API Gateway's 10 MB, or a request whose proxy event would exceed Lambda's 6 MB invocation
// payload (what bites first for a Lambda proxy integration), is a 413 before any invocation; a
// request line or header net/http cannot parse (an invalid percent-escape, a control byte) is a
// 400. See edge.go.
package apigateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// Invoker calls a Lambda function synchronously with a JSON payload. A function error (the
// handler returned an error or panicked) is reported as *FunctionError; any other error means
// the invocation itself failed.
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) ([]byte, error)
}

// FunctionError is a function's own error as Lambda reports it.
type FunctionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Route maps a method and a resource path template to a function.
type Route struct {
	Method string
	// Resource is API Gateway's resource path, e.g. /reservations/{id}.
	Resource string
	Function string
	// Authorized routes require a valid dev bearer token; the claims reach the handler.
	Authorized bool
}

// Options configure a Server.
type Options struct {
	Routes     []Route
	Invoker    Invoker
	Authorizer *DevAuthorizer
	// Stage names the deployment stage in the request context (default "local").
	Stage string
	// Timeout is API Gateway's integration timeout (default 29 s).
	Timeout time.Duration
	// MaxBodyBytes bounds request bodies (default GatewayBodyLimit, API Gateway's 10 MB). The
	// proxy event built from a request is bounded too, by LambdaPayloadLimit, whatever this is.
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Observer, when set, is told about every request answered, whether or not a route
	// matched: what API Gateway publishes as the API's metrics (Count, 4XXError, 5XXError,
	// Latency). It runs on the request's goroutine and must not block.
	Observer func(Request)
	// Throttle, when set, is the stage's throttling: Size its burst limit, RefillPerSecond its
	// rate limit, one token bucket for every method of the stage (its */* method settings).
	// A request past it is answered 429 {"message":"Too Many Requests"}, as API Gateway
	// answers it, and never reaches the function. nil throttles nothing.
	Throttle *throttle.Limit
	// Clock is what the throttle's bucket refills on (default clock.Real{}): the stack's
	// clock, so that under a scaled clock the stage admits its rate per second of that clock.
	Clock clock.Clock
}

// Request is one answered request.
type Request struct {
	Method string
	// Resource is the matched route's resource path, empty when none matched.
	Resource string
	Status   int
	// Latency is from receiving the request to the answer, what API Gateway's Latency
	// measures.
	Latency time.Duration
}

// Server serves the routes.
type Server struct {
	opts  Options
	log   *slog.Logger
	apiID string
	// bucket is Options.Throttle's; nil when the stage is not throttled.
	bucket *throttle.Bucket

	server server
}

// New returns a Server for opts.
func New(opts Options) *Server {
	if opts.Stage == "" {
		opts.Stage = "local"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 29 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = GatewayBodyLimit
	}
	s := &Server{opts: opts, log: opts.Logger, apiID: randomHex(5)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Throttle != nil {
		s.bucket = throttle.New(opts.Clock, *opts.Throttle)
	}
	return s
}

// Start listens on addr (e.g. 127.0.0.1:0) and returns the base URL.
func (s *Server) Start(addr string) (string, error) { return s.server.start(addr, s) }

// Close stops the server, waiting at most a few seconds for requests in flight.
func (s *Server) Close() error { return s.server.close() }

// match finds the route for method and path and extracts the path parameters.
func (s *Server) match(method, path string) (Route, map[string]string, bool) {
	segs := splitPath(path)
	for _, r := range s.opts.Routes {
		if r.Method != method {
			continue
		}
		tmpl := splitPath(r.Resource)
		if len(tmpl) != len(segs) {
			continue
		}
		params := map[string]string{}
		ok := true
		for i, t := range tmpl {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				if segs[i] == "" {
					ok = false
					break
				}
				params[t[1:len(t)-1]] = segs[i]
				continue
			}
			if t != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return r, params, true
		}
	}
	return Route{}, nil, false
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if s.opts.Observer == nil {
		s.serve(w, r, start)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	resource := s.serve(sw, r, start)
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	s.opts.Observer(Request{Method: r.Method, Resource: resource, Status: sw.status, Latency: time.Since(start)})
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// serve answers one request and returns the resource of the route it matched ("" for none).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, start time.Time) string {
	requestID := newRequestID()
	w.Header().Set("X-Amzn-Requestid", requestID)

	route, params, ok := s.match(r.Method, r.URL.EscapedPath())
	if !ok {
		// What API Gateway REST answers for a path or method it has no resource for.
		writeMessage(w, http.StatusForbidden, "Missing Authentication Token")
		return ""
	}
	// The stage's throttle comes before the authorizer: a throttled request costs no
	// authorization and no invocation.
	if s.bucket != nil && !s.bucket.Take() {
		s.log.Debug("apigateway: throttled", "requestId", requestID, "route", route.Method+" "+route.Resource)
		writeMessage(w, http.StatusTooManyRequests, "Too Many Requests")
		return route.Resource
	}
	for k, v := range params {
		// API Gateway passes path parameters URL-decoded.
		if dec, err := url.PathUnescape(v); err == nil {
			params[k] = dec
		}
	}
	var authorizer map[string]any
	if route.Authorized {
		if s.opts.Authorizer == nil {
			writeMessage(w, http.StatusInternalServerError, "Internal server error")
			return route.Resource
		}
		claims, err := s.opts.Authorizer.Verify(r.Header.Get("Authorization"))
		if err != nil {
			s.log.Info("apigateway: unauthorized", "requestId", requestID, "route", route.Method+" "+route.Resource, "reason", err.Error())
			writeMessage(w, http.StatusUnauthorized, "Unauthorized")
			return route.Resource
		}
		authorizer = claims.AuthorizerContext()
	}
	bodyTooLarge := fmt.Sprintf("the request body must be at most %d bytes", s.opts.MaxBodyBytes)
	if r.ContentLength > s.opts.MaxBodyBytes {
		// Refused from its declared length, before a byte of it is read.
		writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, bodyTooLarge)
		return route.Resource
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "the request body could not be read")
		return route.Resource
	}
	if int64(len(body)) > s.opts.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, bodyTooLarge)
		return route.Resource
	}
	ev := s.event(r, route, params, authorizer, body, requestID, start)
	payload, err := json.Marshal(ev)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal server error")
		return route.Resource
	}
	if tooLarge(len(payload)) {
		s.log.Info("apigateway: proxy event over Lambda's payload limit", "requestId", requestID, "route", route.Method+" "+route.Resource,
			"bodyBytes", len(body), "eventBytes", len(payload))
		writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			fmt.Sprintf("the request is too large for its function: with its headers it must stay under %d bytes (Lambda's invocation payload limit)", LambdaPayloadLimit))
		return route.Resource
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	out, err := s.opts.Invoker.Invoke(ctx, route.Function, payload)
	status := 0
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		status = http.StatusGatewayTimeout
		writeMessage(w, status, "Endpoint request timed out")
	case err != nil:
		var fe *FunctionError
		if errors.As(err, &fe) {
			s.log.Warn("apigateway: function error", "requestId", requestID, "function", route.Function, "errorType", fe.Type)
		} else {
			s.log.Warn("apigateway: invoke failed", "requestId", requestID, "function", route.Function, "error", err.Error())
		}
		status = http.StatusBadGateway
		writeMessage(w, status, "Internal server error")
	default:
		status = writeProxyResponse(w, out)
	}
	s.log.Debug("apigateway: request", "requestId", requestID, "method", r.Method, "path", r.URL.Path,
		"function", route.Function, "status", status, "durationMs", time.Since(start).Milliseconds())
	return route.Resource
}

func (s *Server) event(r *http.Request, route Route, params map[string]string, authorizer map[string]any,
	body []byte, requestID string, at time.Time) events.APIGatewayProxyRequest {
	headers := map[string]string{}
	multiHeaders := map[string][]string{}
	for k, vs := range r.Header {
		headers[k] = vs[len(vs)-1]
		multiHeaders[k] = append([]string(nil), vs...)
	}
	if r.Host != "" {
		headers["Host"] = r.Host
		multiHeaders["Host"] = []string{r.Host}
	}
	var query map[string]string
	var multiQuery map[string][]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		multiQuery = map[string][]string{}
		for k, vs := range q {
			query[k] = vs[len(vs)-1]
			multiQuery[k] = vs
		}
	}
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	ev := events.APIGatewayProxyRequest{
		Resource:                        route.Resource,
		Path:                            r.URL.Path,
		HTTPMethod:                      r.Method,
		Headers:                         headers,
		MultiValueHeaders:               multiHeaders,
		QueryStringParameters:           query,
		MultiValueQueryStringParameters: multiQuery,
		PathParameters:                  params,
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID:        "000000000000",
			ResourceID:       resourceID(route.Resource),
			Stage:            s.opts.Stage,
			RequestID:        requestID,
			ResourcePath:     route.Resource,
			Authorizer:       authorizer,
			HTTPMethod:       r.Method,
			APIID:            s.apiID,
			Path:             "/" + s.opts.Stage + r.URL.Path,
			Protocol:         r.Proto,
			DomainName:       r.Host,
			RequestTime:      at.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			RequestTimeEpoch: at.UnixMilli(),
			Identity: events.APIGatewayRequestIdentity{
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		// API Gateway passes text bodies as they are and binary ones base64-encoded.
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// writeProxyResponse turns a function's APIGatewayProxyResponse into HTTP; a payload that is
// not one is a 502, as API Gateway answers a malformed Lambda proxy response.
func writeProxyResponse(w http.ResponseWriter, out []byte) int {
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode < 100 || resp.StatusCode > 599 {
		writeMessage(w, http.StatusBadGateway, "Internal server error")
		return http.StatusBadGateway
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		dec, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			writeMessage(w, http.StatusBadGateway, "Internal server error")
			return http.StatusBadGateway
		}
		body = dec
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		w.Header().Del(k)
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return resp.StatusCode
}

func writeMessage(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", errorType(status))
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": message})
	_, _ = w.Write(b)
}

func errorType(status int) string {
	switch status {
	case http.StatusForbidden:
		return "MissingAuthenticationTokenException"
	case http.StatusUnauthorized:
		return "UnauthorizedException"
	case http.StatusGatewayTimeout:
		return "IntegrationTimeout"
	case http.StatusTooManyRequests:
		return "TooManyRequestsException"
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge:
		return "BadRequestException"
	}
	return "InternalServerErrorException"
}

func resourceID(resource string) string {
	h := 0
	for _, c := range resource {
		h = h*31 + int(c)
	}
	return fmt.Sprintf("%06x", uint32(h)&0xffffff)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
