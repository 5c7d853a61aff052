package stripeadapter_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

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
		name         string
		status       int
		body         string
		wantKind     string // declined, failed, uncertain
		wantCode     string // Declined.DeclineCode, Failed.Code or Uncertain.Reason
		wantErrType  string // Failed.Type
		wantCategory payment.FailureCategory
	}{
		{"card_error generic decline", 402,
			`{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline","message":"Your card was declined.","payment_intent":{"id":"pi_1","object":"payment_intent","status":"requires_payment_method"}}}`,
			"declined", "generic_decline", "", ""},
		{"card_error insufficient funds", 402,
			`{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds."}}`,
			"declined", "insufficient_funds", "", ""},
		{"authentication failure", 400,
			`{"error":{"type":"invalid_request_error","code":"payment_intent_authentication_failure","message":"The provided PaymentMethod has failed authentication."}}`,
			"declined", "", "", ""},
		{"invalid_request_error about the buyer's payment method", 400,
			`{"error":{"type":"invalid_request_error","code":"payment_method_unactivated","message":"The operation cannot be performed as the payment method used has not been activated."}}`,
			"declined", "", "", ""},
		{"invalid_request_error unexpected state", 400,
			`{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state","message":"This PaymentIntent could not be captured because it has a status of canceled."}}`,
			"failed", "payment_intent_unexpected_state", "invalid_request_error", payment.FailureObjectState},
		{"a payment method the provider does not know is the buyer's", 400,
			`{"error":{"type":"invalid_request_error","code":"resource_missing","param":"payment_method","message":"No such PaymentMethod: 'pm_nope'"}}`,
			"declined", "", "", ""},
		{"invalid_request_error resource missing", 404,
			`{"error":{"type":"invalid_request_error","code":"resource_missing","param":"intent","message":"No such payment_intent: 'pi_1'"}}`,
			"failed", "resource_missing", "invalid_request_error", payment.FailureNotFound},
		{"invalid_request_error unknown parameter", 400,
			`{"error":{"type":"invalid_request_error","code":"parameter_unknown","param":"amount","message":"Received unknown parameter: amount"}}`,
			"failed", "parameter_unknown", "invalid_request_error", payment.FailureInvalidRequest},
		{"idempotency_error parameters differ", 400,
			`{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`,
			"failed", "", "idempotency_error", payment.FailureIdempotency},
		{"invalid API key 401", 401,
			`{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****"}}`,
			"failed", "", "invalid_request_error", payment.FailureAuthentication},
		{"authentication_error type", 401,
			`{"error":{"type":"authentication_error","message":"Invalid API Key provided: sk_live_****"}}`,
			"failed", "", "authentication_error", payment.FailureAuthentication},
		{"permission 403", 403,
			`{"error":{"type":"invalid_request_error","message":"The provided key does not have access."}}`,
			"failed", "", "invalid_request_error", payment.FailurePermission},
		{"api_error 400", 400,
			`{"error":{"type":"api_error","message":"Something unusual."}}`,
			"failed", "", "api_error", payment.FailureOther},
		{"idempotency_key_in_use 409", 409,
			`{"error":{"type":"invalid_request_error","code":"idempotency_key_in_use","message":"There is currently another in-progress request using this Idempotent Key."}}`,
			"uncertain", "idempotency_key_in_use", "", ""},
		{"lock timeout 409", 409,
			`{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it."}}`,
			"uncertain", "conflict", "", ""},
		{"rate_limit 429", 429,
			`{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests hit the API too quickly."}}`,
			"uncertain", "rate_limited", "", ""},
		{"api_error 500", 500,
			`{"error":{"type":"api_error","message":"Something went wrong on Stripe's end."}}`,
			"uncertain", "server_error", "", ""},
		{"api_error 502 without JSON", 502, `<html>Bad gateway</html>`, "uncertain", "unreadable_response", "", ""},
		{"api_error 503", 503,
			`{"error":{"type":"api_error","message":"Service unavailable."}}`,
			"uncertain", "server_error", "", ""},
		{"2xx body that is not JSON", 200, `not json`, "uncertain", "unreadable_response", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := capture(context.Background(), adapterFor(cannedServer(t, tc.status, tc.body), 2*time.Second))
			assertOutcome(t, err, tc.wantKind, tc.wantCode, tc.wantErrType, tc.status)
			var failed *payment.Failed
			if errors.As(err, &failed) && failed.Category != tc.wantCategory {
				t.Fatalf("category = %q, want %q", failed.Category, tc.wantCategory)
			}
		})
	}
}

// TestClassifyEveryErrorTypeAndCodeFamily is the classification's specification: every error
// type Stripe documents, and each family of codes, decide between Declined (the buyer's
// payment method), Failed with its category (our system) and Uncertain (maybe acted).
func TestClassifyEveryErrorTypeAndCodeFamily(t *testing.T) {
	const (
		declined  = "declined"
		failed    = "failed"
		uncertain = "uncertain"
	)
	type row struct {
		errType  stripe.ErrorType
		code     stripe.ErrorCode
		status   int
		want     string
		category payment.FailureCategory // for failed
		reason   string                  // for uncertain
	}
	invalid := stripe.ErrorTypeInvalidRequest
	families := map[string][]row{
		"every error type without a code": {
			{errType: stripe.ErrorTypeCard, status: 402, want: declined},
			{errType: stripe.ErrorTypeInvalidRequest, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: stripe.ErrorTypeIdempotency, status: 400, want: failed, category: payment.FailureIdempotency},
			{errType: stripe.ErrorTypeAPI, status: 400, want: failed, category: payment.FailureOther},
			{errType: stripe.ErrorTypeAPI, status: 500, want: uncertain, reason: "server_error"},
			{errType: "authentication_error", status: 401, want: failed, category: payment.FailureAuthentication},
			{errType: "permission_error", status: 403, want: failed, category: payment.FailurePermission},
			{errType: "rate_limit_error", status: 429, want: uncertain, reason: "rate_limited"},
			{errType: "rate_limit_error", status: 400, want: uncertain, reason: "rate_limited"},
			{errType: "", status: 400, want: failed, category: payment.FailureOther},
			{errType: "some_future_error", status: 400, want: failed, category: payment.FailureOther},
		},
		"card errors, whatever the code": {
			{errType: stripe.ErrorTypeCard, code: stripe.ErrorCodeCardDeclined, status: 402, want: declined},
			{errType: stripe.ErrorTypeCard, code: stripe.ErrorCodeExpiredCard, status: 402, want: declined},
			{errType: stripe.ErrorTypeCard, code: stripe.ErrorCodeProcessingError, status: 402, want: declined},
			{errType: stripe.ErrorTypeCard, code: "a_code_we_never_heard_of", status: 402, want: declined},
		},
		"payment-method codes under invalid_request_error": {
			{errType: invalid, code: stripe.ErrorCodeCardDeclineRateLimitExceeded, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeExpiredCard, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeIncorrectCVC, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeIncorrectNumber, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeIncorrectZip, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeIncorrectAddress, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeInvalidCVC, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeInvalidExpiryMonth, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeInvalidExpiryYear, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeInvalidNumber, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeInsufficientFunds, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeProcessingError, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeAuthenticationRequired, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentIntentAuthenticationFailure, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentIntentActionRequired, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentIntentPaymentAttemptFailed, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentIntentPaymentAttemptExpired, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentIntentIncompatiblePaymentMethod, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodUnactivated, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodProviderDecline, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodProviderTimeout, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodCustomerDecline, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodNotAvailable, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodBankAccountBlocked, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeDebitNotAuthorized, status: 400, want: declined},
			{errType: invalid, code: stripe.ErrorCodeReferToCustomer, status: 400, want: declined},
		},
		"payment-method codes under a type that is ours are not the buyer's": {
			{errType: stripe.ErrorTypeIdempotency, code: stripe.ErrorCodeExpiredCard, status: 400, want: failed, category: payment.FailureIdempotency},
			{errType: stripe.ErrorTypeAPI, code: stripe.ErrorCodeCardDeclined, status: 400, want: failed, category: payment.FailureOther},
			{errType: "authentication_error", code: stripe.ErrorCodeExpiredCard, status: 401, want: failed, category: payment.FailureAuthentication},
		},
		"payment-method codes that every buyer would meet are ours": {
			{errType: invalid, code: stripe.ErrorCodePaymentMethodInvalidParameter, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodCurrencyMismatch, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodUnsupportedType, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodBillingDetailsAddressMissing, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodeLivemodeMismatch, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodePaymentMethodUnexpectedState, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeResourceMissing, status: 400, want: failed, category: payment.FailureNotFound},
		},
		"credentials": {
			{errType: invalid, status: 401, want: failed, category: payment.FailureAuthentication},
			{errType: invalid, code: stripe.ErrorCodeAPIKeyExpired, status: 401, want: failed, category: payment.FailureAuthentication},
			{errType: invalid, code: stripe.ErrorCodeAPIKeyExpired, status: 400, want: failed, category: payment.FailureAuthentication},
			{errType: invalid, code: stripe.ErrorCodeSecretKeyRequired, status: 400, want: failed, category: payment.FailureAuthentication},
			{errType: invalid, status: 403, want: failed, category: payment.FailurePermission},
			{errType: invalid, code: stripe.ErrorCodeTestmodeChargesOnly, status: 400, want: failed, category: payment.FailurePermission},
		},
		"object state": {
			{errType: invalid, code: stripe.ErrorCodePaymentIntentUnexpectedState, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeChargeAlreadyCaptured, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeChargeAlreadyRefunded, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeChargeExpiredForCapture, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeChargeNotRefundable, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeChargeDisputed, status: 400, want: failed, category: payment.FailureObjectState},
			{errType: invalid, code: stripe.ErrorCodeBalanceInsufficient, status: 400, want: failed, category: payment.FailureObjectState},
		},
		"not found": {
			{errType: invalid, code: stripe.ErrorCodeResourceMissing, status: 404, want: failed, category: payment.FailureNotFound},
			{errType: invalid, status: 404, want: failed, category: payment.FailureNotFound},
		},
		"our own request": {
			{errType: invalid, code: stripe.ErrorCodeParameterMissing, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodeParameterUnknown, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodeParameterInvalidInteger, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodeAmountTooLarge, status: 400, want: failed, category: payment.FailureInvalidRequest},
			{errType: invalid, code: stripe.ErrorCodeAmountTooSmall, status: 400, want: failed, category: payment.FailureInvalidRequest},
		},
		"not now: the provider may or may not act later": {
			{errType: invalid, code: stripe.ErrorCodeIdempotencyKeyInUse, status: 409, want: uncertain, reason: "idempotency_key_in_use"},
			{errType: invalid, code: stripe.ErrorCodeIdempotencyKeyInUse, status: 400, want: uncertain, reason: "idempotency_key_in_use"},
			{errType: invalid, code: stripe.ErrorCodeLockTimeout, status: 409, want: uncertain, reason: "conflict"},
			{errType: invalid, code: stripe.ErrorCodeLockTimeout, status: 400, want: uncertain, reason: "conflict"},
			{errType: invalid, code: stripe.ErrorCodeRateLimit, status: 429, want: uncertain, reason: "rate_limited"},
			{errType: invalid, code: stripe.ErrorCodeRateLimit, status: 400, want: uncertain, reason: "rate_limited"},
			{errType: invalid, status: 409, want: uncertain, reason: "conflict"},
			{errType: stripe.ErrorTypeCard, code: stripe.ErrorCodeCardDeclined, status: 500, want: uncertain, reason: "server_error"},
			{errType: stripe.ErrorTypeAPI, status: 503, want: uncertain, reason: "server_error"},
		},
	}
	for family, rows := range families {
		for _, r := range rows {
			name := family + "/" + string(r.errType) + "/" + string(r.code) + "/" + strconv.Itoa(r.status)
			t.Run(name, func(t *testing.T) {
				err := stripeadapter.Classify(payment.OpConfirmPaymentMethod, "pi_1", &stripe.Error{
					Type: r.errType, Code: r.code, HTTPStatusCode: r.status, Msg: "m", RequestID: "req_1"})
				var (
					d *payment.Declined
					f *payment.Failed
					u *payment.Uncertain
				)
				switch r.want {
				case declined:
					if !errors.As(err, &d) || d.Code != string(r.code) || d.PaymentIntentID != "pi_1" {
						t.Fatalf("got %v, want Declined(%s)", err, r.code)
					}
				case failed:
					if !errors.As(err, &f) || f.Category != r.category || f.Code != string(r.code) || f.HTTPStatus != r.status {
						t.Fatalf("got %v, want Failed category %s", err, r.category)
					}
				case uncertain:
					if !errors.As(err, &u) || u.Reason != r.reason {
						t.Fatalf("got %v, want Uncertain(%s)", err, r.reason)
					}
				}
				if payment.IsDeclined(err) != (r.want == declined) || payment.IsUncertain(err) != (r.want == uncertain) {
					t.Fatalf("%v matches more than one outcome", err)
				}
			})
		}
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
