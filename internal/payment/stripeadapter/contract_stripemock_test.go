package stripeadapter_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/twin/stripemock"
)

// recordingTransport notes each request's method, path and idempotency key.
type recordingTransport struct {
	mu   sync.Mutex
	seen []recordedRequest
}

type recordedRequest struct{ Method, Path, IdempotencyKey, Authorization string }

func (t *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen = append(t.seen, recordedRequest{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization")})
	t.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (t *recordingTransport) last() recordedRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[len(t.seen)-1]
}

// TestContractAgainstStripeMock runs every call the adapter makes against stripe-mock, which
// rejects any request that does not match Stripe's OpenAPI description (unknown parameters,
// wrong types, wrong paths). stripe-mock answers with fixtures, so only acceptance and the
// request shape are checked here; behaviour is tested against the simulator.
func TestContractAgainstStripeMock(t *testing.T) {
	mock := stripemock.StartT(t)
	rec := &recordingTransport{}
	api := stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key:        "sk_test_contract",
		BaseURL:    mock.URL,
		HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: rec},
	})
	adapter := stripeadapter.New(api, quietLogger())
	ctx := context.Background()
	const res = "res-contract-1"
	const pi = "pi_contract"

	tests := []struct {
		name     string
		call     func() error
		method   string
		path     string
		wantKey  string
		wantAuth string
	}{
		{"create authorization", func() error {
			_, err := adapter.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{
				ReservationID: res, Amount: 4200, Currency: "eur", Customer: "cus_contract", CorrelationID: "corr-1"})
			return err
		}, "POST", "/v1/payment_intents", res + ":authorize", "Bearer sk_test_contract"},
		{"reuse authorization", func() error {
			_, err := adapter.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{
				ReservationID: res, Amount: 4200, Currency: "eur", PaymentIntentID: pi})
			return err
		}, "GET", "/v1/payment_intents/" + pi, "", "Bearer sk_test_contract"},
		{"confirm", func() error {
			_, err := adapter.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: pi,
				PaymentMethod: "pm_card_visa", Attempt: 2, ReturnURL: "https://example.test/return"})
			return err
		}, "POST", "/v1/payment_intents/" + pi + "/confirm", res + ":confirm:2", "Bearer sk_test_contract"},
		{"retrieve", func() error {
			_, err := adapter.Retrieve(ctx, pi)
			return err
		}, "GET", "/v1/payment_intents/" + pi, "", "Bearer sk_test_contract"},
		{"capture partial", func() error {
			_, err := adapter.Capture(ctx, payment.CaptureRequest{ReservationID: res, PaymentIntentID: pi, Amount: 4000})
			return err
		}, "POST", "/v1/payment_intents/" + pi + "/capture", res + ":capture", "Bearer sk_test_contract"},
		{"cancel", func() error {
			_, err := adapter.Cancel(ctx, payment.CancelRequest{ReservationID: res, PaymentIntentID: pi, Attempt: 3, Reason: "abandoned"})
			return err
		}, "POST", "/v1/payment_intents/" + pi + "/cancel", res + ":cancel:3", "Bearer sk_test_contract"},
		{"refund", func() error {
			_, err := adapter.Refund(ctx, payment.RefundRequest{ReservationID: res, PaymentIntentID: pi, Amount: 100, Reason: "requested_by_customer"})
			return err
		}, "POST", "/v1/refunds", res + ":refund:1", "Bearer sk_test_contract"},
		{"refund, next attempt", func() error {
			_, err := adapter.Refund(ctx, payment.RefundRequest{ReservationID: res, PaymentIntentID: pi, Attempt: 2})
			return err
		}, "POST", "/v1/refunds", res + ":refund:2", "Bearer sk_test_contract"},
		{"retrieve refund", func() error {
			r, err := adapter.RetrieveRefund(ctx, "re_contract")
			if err == nil && (r.RefundID == "" || r.Status == "") {
				err = errors.New("refund decoded without id or status")
			}
			return err
		}, "GET", "/v1/refunds/re_contract", "", "Bearer sk_test_contract"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatalf("stripe-mock rejected the request: %v", err)
			}
			got := rec.last()
			if strings.HasPrefix(tc.name, "refund") {
				// Refund reads the PaymentIntent back; the refund itself came just before.
				rec.mu.Lock()
				got = rec.seen[len(rec.seen)-2]
				rec.mu.Unlock()
			}
			if got.Method != tc.method || got.Path != tc.path || got.IdempotencyKey != tc.wantKey || got.Authorization != tc.wantAuth {
				t.Fatalf("request = %+v, want %s %s key %q", got, tc.method, tc.path, tc.wantKey)
			}
		})
	}

	t.Run("a request outside Stripe's API is rejected", func(t *testing.T) {
		// Proves the contract check can fail: stripe-mock validates against the OpenAPI spec.
		params := &stripe.PaymentIntentParams{Amount: stripe.Int64(100), Currency: stripe.String("eur"),
			CaptureMethod: stripe.String("whenever")}
		params.Context = ctx
		_, err := api.PaymentIntents.New(params)
		var failed *payment.Failed
		if err := stripeadapter.Classify(payment.OpAuthorize, "", err); !errors.As(err, &failed) || failed.HTTPStatus != 400 {
			t.Fatalf("err = %v, want a 400 from stripe-mock", err)
		}
	})
}
