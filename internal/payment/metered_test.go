package payment

import (
	"context"
	"errors"
	"testing"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// stubProvider answers every call with err.
type stubProvider struct{ err error }

func (s stubProvider) CreateOrReuseAuthorization(context.Context, AuthorizationRequest) (Authorization, error) {
	return Authorization{}, s.err
}
func (s stubProvider) ConfirmPaymentMethod(context.Context, ConfirmPaymentMethodRequest) (Authorization, error) {
	return Authorization{}, s.err
}
func (s stubProvider) Retrieve(context.Context, string) (Authorization, error) {
	return Authorization{}, s.err
}
func (s stubProvider) Capture(context.Context, CaptureRequest) (Authorization, error) {
	return Authorization{}, s.err
}
func (s stubProvider) Cancel(context.Context, CancelRequest) (Authorization, error) {
	return Authorization{}, s.err
}
func (s stubProvider) Refund(context.Context, RefundRequest) (Refund, error) { return Refund{}, s.err }
func (s stubProvider) RetrieveRefund(context.Context, string) (Refund, error) {
	return Refund{}, s.err
}

func TestMeteredCountsOnlyTheProviderBeingUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int64
	}{
		{"answered", nil, 0},
		{"timeout", &Uncertain{Reason: "timeout"}, 1},
		{"5xx", &Uncertain{Reason: "server_error", HTTPStatus: 500}, 1},
		{"rate limited past the retries", &Uncertain{Reason: "rate_limited", HTTPStatus: 429}, 1},
		{"wrapped", errors.Join(errors.New("context"), &Uncertain{Reason: "connection"}), 1},
		{"our own key still in flight", &Uncertain{Reason: "idempotency_key_in_use"}, 0},
		{"our own deadline", &Uncertain{Reason: "canceled"}, 0},
		{"a decline is the buyer's", &Declined{Code: "card_declined"}, 0},
		{"a refusal is ours", &Failed{Category: FailureAuthentication}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := metrics.NewMemory()
			p := Metered(stubProvider{err: tc.err}, mem)
			ctx := context.Background()
			p.CreateOrReuseAuthorization(ctx, AuthorizationRequest{})
			p.ConfirmPaymentMethod(ctx, ConfirmPaymentMethodRequest{})
			p.Retrieve(ctx, "pi_1")
			p.Capture(ctx, CaptureRequest{})
			p.Cancel(ctx, CancelRequest{})
			p.Refund(ctx, RefundRequest{})
			p.RetrieveRefund(ctx, "re_1")
			if got := mem.Total(MetricProviderUnavailable); got != 7*tc.want {
				t.Errorf("%s = %d over the seven operations, want %d", MetricProviderUnavailable, got, 7*tc.want)
			}
			if got := mem.Get(MetricProviderUnavailable, metrics.Dim{Name: "op", Value: string(OpCapture)}); got != tc.want {
				t.Errorf("capture counted %d, want %d", got, tc.want)
			}
		})
	}
}
