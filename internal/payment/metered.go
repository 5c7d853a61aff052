package payment

import (
	"context"
	"errors"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// MetricProviderUnavailable counts provider calls whose outcome is unknown because the
// provider did not answer usefully: a timeout, a dropped connection, a 5xx, rate limiting that
// outlasted the client's retries, an unreadable answer. Dimension op, besides the empty set
// the alarm reads.
const MetricProviderUnavailable = "ProviderUnavailable"

// Metered counts the calls of p that found the provider unavailable. The saga absorbs an
// outage (its holds expire, reconciliation and the sweeper settle what was in flight), so
// without this count a provider that is down would be silent.
func Metered(p Provider, m metrics.Recorder) Provider { return metered{p: p, m: m} }

type metered struct {
	p Provider
	m metrics.Recorder
}

// count records err when it says the provider was unavailable. An idempotency key still in
// flight is this system's own concurrency and a canceled call its own deadline: neither is the
// provider's.
func (c metered) count(op Op, err error) {
	var u *Uncertain
	if !errors.As(err, &u) || u.Reason == "idempotency_key_in_use" || u.Reason == "canceled" {
		return
	}
	c.m.Count(MetricProviderUnavailable, 1, metrics.Dim{Name: "op", Value: string(op)})
}

func (c metered) CreateOrReuseAuthorization(ctx context.Context, req AuthorizationRequest) (Authorization, error) {
	a, err := c.p.CreateOrReuseAuthorization(ctx, req)
	c.count(OpAuthorize, err)
	return a, err
}

func (c metered) ConfirmPaymentMethod(ctx context.Context, req ConfirmPaymentMethodRequest) (Authorization, error) {
	a, err := c.p.ConfirmPaymentMethod(ctx, req)
	c.count(OpConfirmPaymentMethod, err)
	return a, err
}

func (c metered) Retrieve(ctx context.Context, id string) (Authorization, error) {
	a, err := c.p.Retrieve(ctx, id)
	c.count(OpRetrieve, err)
	return a, err
}

func (c metered) Capture(ctx context.Context, req CaptureRequest) (Authorization, error) {
	a, err := c.p.Capture(ctx, req)
	c.count(OpCapture, err)
	return a, err
}

func (c metered) Cancel(ctx context.Context, req CancelRequest) (Authorization, error) {
	a, err := c.p.Cancel(ctx, req)
	c.count(OpCancel, err)
	return a, err
}

func (c metered) Refund(ctx context.Context, req RefundRequest) (Refund, error) {
	r, err := c.p.Refund(ctx, req)
	c.count(OpRefund, err)
	return r, err
}

func (c metered) RetrieveRefund(ctx context.Context, id string) (Refund, error) {
	r, err := c.p.RetrieveRefund(ctx, id)
	c.count(OpRetrieveRefund, err)
	return r, err
}
