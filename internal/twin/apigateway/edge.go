package apigateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/seatsaga/seatsaga/internal/twin/serve"
)

// Payload limits of a Lambda proxy integration. API Gateway accepts request bodies up to 10 MB,
// but it sends a Lambda function the whole proxy event (the body, base64-encoded when it is not
// text, with every header and the request context), and Lambda refuses a synchronous invocation
// whose payload is over 6 MB. Lambda's limit is the one that bites first, so the stand-in
// refuses what Lambda would refuse instead of invoking with it.
const (
	// GatewayBodyLimit is API Gateway's own limit on a request body.
	GatewayBodyLimit = 10 << 20
	// LambdaPayloadLimit is Lambda's limit on a synchronous invocation's payload (the
	// lambdahost enforces the same figure on its Invoke API).
	LambdaPayloadLimit = 6 << 20
)

// Codes of the errors the stand-in answers in the API's JSON error shape ({code, message}, see
// internal/api/errors.go): refusals a client can act on, which the deployed stack gives the
// same shape (the WAF's custom responses, infra/stack/waf.go).
const (
	CodeBodyTooLarge   = "body_too_large"
	CodeBadRequest     = "bad_request"
	CodeHeadersTooLong = "headers_too_large"
)

// writeError answers status with the API's JSON error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", errorType(status))
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(code, message))
}

func errorBody(code, message string) []byte {
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, message})
	return b
}

// listener hands out connections whose net/http-made error answers are rewritten into the
// API's JSON error shape. net/http refuses a request line or header it cannot parse (an invalid
// percent-escape in the path, a control byte in a header) with a text/plain answer written
// straight to the connection, before any handler runs; without this a client of the stand-in
// would meet a shape no other answer has.
type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c}, nil
}

type conn struct{ net.Conn }

// netHTTPErrorHeaders is what net/http writes after the status line of its own error answers.
// A handler's answer never starts this way: net/http writes a handler's headers sorted, so
// Connection would come before Content-Type, and with a Date.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *conn) Write(b []byte) (int, error) {
	if out, ok := rewriteNetHTTPError(b); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// rewriteNetHTTPError turns one of net/http's own error answers into the same status with a
// JSON body; ok is false for anything else, which is written as it is.
func rewriteNetHTTPError(b []byte) ([]byte, bool) {
	rest, found := bytes.CutPrefix(b, []byte("HTTP/1.1 "))
	if !found {
		return nil, false
	}
	statusLine, _, found := bytes.Cut(rest, []byte(netHTTPErrorHeaders))
	if !found || bytes.Contains(statusLine, []byte("\r\n")) || len(statusLine) < 3 {
		return nil, false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	code, message := CodeBadRequest, "the request line or a header is malformed (an invalid percent-escape in the path, or a control character in a header)"
	if status == http.StatusRequestHeaderFieldsTooLarge {
		code, message = CodeHeadersTooLong, "the request's headers are too large"
	} else if status != http.StatusBadRequest {
		message = "the request cannot be served: " + string(statusLine[3:])
	}
	body := errorBody(code, message)
	out := fmt.Appendf(nil, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nX-Amzn-Errortype: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		statusLine, errorType(status), len(body))
	return append(out, body...), true
}

// server runs the stand-in's http.Server on a listener of its own (listener above), which
// serve.Server cannot take, with serve's timeouts and its bounded Close.
type server struct {
	mu   sync.Mutex
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

func (s *server) start(addr string, h http.Handler) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", fmt.Errorf("apigateway: %w", serve.ErrStarted)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("apigateway: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: serve.DefaultReadHeaderTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(listener{ln})
	}()
	s.srv, s.ln, s.done = srv, ln, done
	return "http://" + ln.Addr().String(), nil
}

// close waits up to serve.DefaultShutdownTimeout for requests in flight, then cuts them off.
func (s *server) close() error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), serve.DefaultShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = srv.Close()
	}
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// tooLarge reports whether a proxy event of n bytes is more than Lambda accepts.
func tooLarge(n int) bool { return n > LambdaPayloadLimit }
