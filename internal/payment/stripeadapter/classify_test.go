package stripeadapter_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
)

// cannedServer answers every request with status and body.
func cannedServer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_canned")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func adapterFor(baseURL string, timeout time.Duration) *stripeadapter.Adapter {
	api := stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key: "sk_test_classify", BaseURL: baseURL, HTTPClient: &http.Client{Timeout: timeout}, Logger: quietLogger(),
	})
	return stripeadapter.New(api, quietLogger())
}

func capture(ctx context.Context, a *stripeadapter.Adapter) error {
	_, err := a.Capture(ctx, payment.CaptureRequest{ReservationID: "res-1", PaymentIntentID: "pi_1"})
	return err
}

// TestClassifyStripeErrors sends a real stripe-go request to a server answering with each of
// Stripe's error shapes and checks the outcome the port reports.
func TestClassifyStripeErrors(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		wantKind    string // declined, failed, uncertain
		wantCode    string // Declined.DeclineCode, Failed.Code or Uncertain.Reason
		wantErrType string // Failed.Type
	}{
		{"card_error generic decline", 402,
			`{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline","message":"Your card was declined.","payment_intent":{"id":"pi_1","object":"payment_intent","status":"requires_payment_method"}}}`,
			"declined", "generic_decline", ""},
		{"card_error insufficient funds", 402,
			`{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds."}}`,
			"declined", "insufficient_funds", ""},
		{"authentication failure", 400,
			`{"error":{"type":"invalid_request_error","code":"payment_intent_authentication_failure","message":"The provided PaymentMethod has failed authentication."}}`,
			"declined", "", ""},
		{"invalid_request_error unexpected state", 400,
			`{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state","message":"This PaymentIntent could not be captured because it has a status of canceled."}}`,
			"failed", "payment_intent_unexpected_state", "invalid_request_error"},
		{"invalid_request_error resource missing", 404,
			`{"error":{"type":"invalid_request_error","code":"resource_missing","param":"intent","message":"No such payment_intent: 'pi_1'"}}`,
			"failed", "resource_missing", "invalid_request_error"},
		{"idempotency_error parameters differ", 400,
			`{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`,
			"failed", "", "idempotency_error"},
		{"authentication 401", 401,
			`{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****"}}`,
			"failed", "", "invalid_request_error"},
		{"permission 403", 403,
			`{"error":{"type":"invalid_request_error","message":"The provided key does not have access."}}`,
			"failed", "", "invalid_request_error"},
		{"idempotency_key_in_use 409", 409,
			`{"error":{"type":"invalid_request_error","code":"idempotency_key_in_use","message":"There is currently another in-progress request using this Idempotent Key."}}`,
			"uncertain", "idempotency_key_in_use", ""},
		{"lock timeout 409", 409,
			`{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it."}}`,
			"uncertain", "conflict", ""},
		{"rate_limit 429", 429,
			`{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests hit the API too quickly."}}`,
			"uncertain", "rate_limited", ""},
		{"api_error 500", 500,
			`{"error":{"type":"api_error","message":"Something went wrong on Stripe's end."}}`,
			"uncertain", "server_error", ""},
		{"api_error 502 without JSON", 502, `<html>Bad gateway</html>`, "uncertain", "unreadable_response", ""},
		{"api_error 503", 503,
			`{"error":{"type":"api_error","message":"Service unavailable."}}`,
			"uncertain", "server_error", ""},
		{"2xx body that is not JSON", 200, `not json`, "uncertain", "unreadable_response", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := capture(context.Background(), adapterFor(cannedServer(t, tc.status, tc.body), 2*time.Second))
			assertOutcome(t, err, tc.wantKind, tc.wantCode, tc.wantErrType, tc.status)
		})
	}
}

func assertOutcome(t *testing.T, err error, kind, code, errType string, status int) {
	t.Helper()
	var (
		declined  *payment.Declined
		failed    *payment.Failed
		uncertain *payment.Uncertain
	)
	switch kind {
	case "declined":
		if !errors.As(err, &declined) || declined.DeclineCode != code || declined.Op != payment.OpCapture {
			t.Fatalf("err = %#v, want Declined(%s)", err, code)
		}
	case "failed":
		if !errors.As(err, &failed) || failed.Code != code || failed.Type != errType || failed.HTTPStatus != status {
			t.Fatalf("err = %#v, want Failed(%s/%s, %d)", err, errType, code, status)
		}
		if failed.RequestID != "req_canned" {
			t.Fatalf("request id = %q", failed.RequestID)
		}
	case "uncertain":
		if !errors.As(err, &uncertain) || uncertain.Reason != code || uncertain.PaymentIntentID != "pi_1" {
			t.Fatalf("err = %#v, want Uncertain(%s)", err, code)
		}
	}
	// Exactly one classification holds.
	n := 0
	for _, is := range []bool{errors.As(err, &declined), errors.As(err, &failed), errors.As(err, &uncertain)} {
		if is {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("err %v matches %d outcome types", err, n)
	}
}

// TestClassifyTransportFailures covers failures below Stripe's protocol: all uncertain.
func TestClassifyTransportFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with RST: the client sees "connection reset by peer"
		}
		_ = conn.Close()
	}))
	t.Cleanup(reset.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + ln.Addr().String()
	_ = ln.Close()

	tests := []struct {
		name       string
		baseURL    string
		timeout    time.Duration
		ctx        func() (context.Context, context.CancelFunc)
		wantReason string
	}{
		{"client timeout", slow.URL, 100 * time.Millisecond, background, "timeout"},
		{"context deadline", slow.URL, 5 * time.Second, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, "timeout"},
		{"context canceled", slow.URL, 5 * time.Second, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, "canceled"},
		{"connection reset", reset.URL, 2 * time.Second, background, "connection"},
		{"connection refused", refusedURL, 2 * time.Second, background, "connection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			err := capture(ctx, adapterFor(tc.baseURL, tc.timeout))
			assertOutcome(t, err, "uncertain", tc.wantReason, "", 0)
		})
	}
}

func background() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// TestClassifyNil keeps a nil error nil.
func TestClassifyNil(t *testing.T) {
	if err := stripeadapter.Classify(payment.OpCapture, "pi_1", nil); err != nil {
		t.Fatalf("Classify(nil) = %v", err)
	}
}
