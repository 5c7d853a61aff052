package apigateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The observer sees every answered request with its status and resource, including those no
// route matched and those the gateway itself refused, as API Gateway counts them all.
func TestObserverSeesEveryAnsweredRequest(t *testing.T) {
	var seen []Request
	srv := New(Options{
		Invoker: InvokerFunc(func(_ context.Context, _ string, payload []byte) ([]byte, error) {
			if strings.Contains(string(payload), "boom") {
				return nil, &FunctionError{Type: "errorString", Message: "boom"}
			}
			if strings.Contains(string(payload), "down") {
				return nil, errors.New("lambda unreachable")
			}
			return []byte(`{"statusCode":202,"body":"{}"}`), nil
		}),
		Authorizer: &DevAuthorizer{Secret: []byte("s")},
		Routes: []Route{
			{Method: "POST", Resource: "/webhooks/stripe", Function: "webhook"},
			{Method: "GET", Resource: "/reservations/{id}", Function: "api", Authorized: true},
		},
		Observer: func(r Request) { seen = append(seen, r) },
	})
	for _, c := range []struct {
		method, path, body string
		want               Request
	}{
		{"POST", "/webhooks/stripe", "ok", Request{Method: "POST", Resource: "/webhooks/stripe", Status: 202}},
		{"POST", "/webhooks/stripe", "boom", Request{Method: "POST", Resource: "/webhooks/stripe", Status: 502}},
		{"POST", "/webhooks/stripe", "down", Request{Method: "POST", Resource: "/webhooks/stripe", Status: 502}},
		{"GET", "/reservations/r1", "", Request{Method: "GET", Resource: "/reservations/{id}", Status: 401}},
		{"GET", "/nowhere", "", Request{Method: "GET", Status: 403}},
	} {
		seen = nil
		srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
		if len(seen) != 1 {
			t.Fatalf("%s %s: observed %d requests", c.method, c.path, len(seen))
		}
		got := seen[0]
		if got.Latency <= 0 {
			t.Errorf("%s %s: latency %s", c.method, c.path, got.Latency)
		}
		got.Latency = 0
		if got != c.want {
			t.Errorf("%s %s %q: observed %+v, want %+v", c.method, c.path, c.body, got, c.want)
		}
	}
	// Without an observer the answers are the same.
	plain := New(Options{Routes: []Route{{Method: "POST", Resource: "/webhooks/stripe", Function: "webhook"}},
		Invoker: InvokerFunc(func(context.Context, string, []byte) ([]byte, error) { return []byte(`{"statusCode":204}`), nil })})
	rec := httptest.NewRecorder()
	plain.ServeHTTP(rec, httptest.NewRequest("POST", "/webhooks/stripe", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("without an observer: %d", rec.Code)
	}
}
