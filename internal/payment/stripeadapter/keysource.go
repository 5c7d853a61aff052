package stripeadapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/form"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/secrets"
)

// keyedBackend sends each request with its key source's current key rather than the key the
// client was built with, so every stripe-go service the *client.API holds follows a rotation
// and the adapter's calls stay as they are. When Stripe refuses the key, the source is
// invalidated and the request is sent once more, with the same idempotency key, if the source
// now yields another key: a refused key means Stripe did not act, so the resend cannot act
// twice.
type keyedBackend struct {
	stripe.Backend
	keys secrets.Source
	log  *slog.Logger
}

func (b *keyedBackend) Call(method, path, _ string, params stripe.ParamsContainer, v stripe.LastResponseSetter) error {
	return b.send(paramsContext(params), func(key string) error {
		return b.Backend.Call(method, path, key, params, v)
	})
}

func (b *keyedBackend) CallStreaming(method, path, _ string, params stripe.ParamsContainer, v stripe.StreamingLastResponseSetter) error {
	return b.send(paramsContext(params), func(key string) error {
		return b.Backend.CallStreaming(method, path, key, params, v)
	})
}

func (b *keyedBackend) CallRaw(method, path, _ string, body *form.Values, params *stripe.Params, v stripe.LastResponseSetter) error {
	return b.send(paramsContext(params), func(key string) error {
		return b.Backend.CallRaw(method, path, key, body, params, v)
	})
}

// CallMultipart resends a copy of the body, since the first attempt may have drained it.
func (b *keyedBackend) CallMultipart(method, path, _, boundary string, body *bytes.Buffer, params *stripe.Params, v stripe.LastResponseSetter) error {
	var raw []byte
	if body != nil {
		raw = bytes.Clone(body.Bytes())
	}
	return b.send(paramsContext(params), func(key string) error {
		return b.Backend.CallMultipart(method, path, key, boundary, bytes.NewBuffer(bytes.Clone(raw)), params, v)
	})
}

func (b *keyedBackend) send(ctx context.Context, call func(key string) error) error {
	key, err := b.keys.Get(ctx)
	if err != nil {
		return &keyUnavailableError{err: err}
	}
	err = call(key)
	if !keyRefused(err) {
		return err
	}
	b.keys.Invalidate()
	fresh, ferr := b.keys.Get(ctx)
	if ferr != nil {
		// The key may have been rotated, but the new one cannot be read: the saga retries
		// later, as it does when no key can be read at all, rather than failing the payment.
		return &keyUnavailableError{err: fmt.Errorf("stripe refused the key, and rereading it failed: %w", ferr)}
	}
	if fresh == key {
		// Nothing newer to try (or the refresh was rate-limited): Stripe's refusal stands.
		return err
	}
	b.log.WarnContext(ctx, "stripe refused the secret key; resending once with the refreshed key")
	return call(fresh)
}

// keyRefused reports whether Stripe refused the request for its credentials, the one refusal
// a newer key can cure.
func keyRefused(err error) bool {
	var e *stripe.Error
	return errors.As(err, &e) && failureCategory(e) == payment.FailureAuthentication
}

// keyUnavailableError means no usable key could be read, so Stripe acted on no request: none
// was sent, or Stripe refused the one sent for its key. Classify makes it Uncertain: the saga
// then retries with backoff, which outlasts a Secrets Manager outage, whereas a Failed would
// end the payment over a problem that is not the payment's.
type keyUnavailableError struct{ err error }

func (e *keyUnavailableError) Error() string { return "stripe key unavailable: " + e.err.Error() }
func (e *keyUnavailableError) Unwrap() error { return e.err }

// paramsContext is the request's context, which stripe-go carries in its params. Like
// stripe-go, it treats a typed nil params as none.
func paramsContext(params stripe.ParamsContainer) context.Context {
	if params == nil {
		return context.Background()
	}
	if rv := reflect.ValueOf(params); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return context.Background()
	}
	if p := params.GetParams(); p != nil && p.Context != nil {
		return p.Context
	}
	return context.Background()
}
