package stripeadapter

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/stripe/stripe-go/v76"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// Classify turns what stripe-go returned for op into the port's outcome: *payment.Declined,
// *payment.Failed or *payment.Uncertain. Anything it cannot prove definitive is Uncertain:
// a guess in either direction would either charge twice or drop money on the floor.
func Classify(op payment.Op, paymentIntentID string, err error) error {
	if err == nil {
		return nil
	}
	var stripeErr *stripe.Error
	if errors.As(err, &stripeErr) {
		return classifyStripeError(op, paymentIntentID, stripeErr)
	}
	return &payment.Uncertain{Op: op, PaymentIntentID: paymentIntentID, Reason: transportReason(err), Err: err}
}

func classifyStripeError(op payment.Op, paymentIntentID string, e *stripe.Error) error {
	if paymentIntentID == "" && e.PaymentIntent != nil {
		paymentIntentID = e.PaymentIntent.ID
	}
	uncertain := func(reason string) error {
		return &payment.Uncertain{Op: op, PaymentIntentID: paymentIntentID, Reason: reason, HTTPStatus: e.HTTPStatusCode, Err: e}
	}
	switch {
	// Stripe saves a 5xx under the idempotency key after the endpoint started executing:
	// it may have acted.
	case e.HTTPStatusCode >= 500:
		return uncertain("server_error")
	// 429 arrives here only after stripe-go's retries (rate limit, lock timeout).
	case e.HTTPStatusCode == 429:
		return uncertain("rate_limited")
	case e.Code == stripe.ErrorCodeIdempotencyKeyInUse:
		return uncertain("idempotency_key_in_use")
	case e.HTTPStatusCode == 409:
		return uncertain("conflict")
	case e.Type == stripe.ErrorTypeCard ||
		e.Code == stripe.ErrorCodePaymentIntentAuthenticationFailure ||
		e.Code == stripe.ErrorCodePaymentIntentPaymentAttemptFailed:
		declined := &payment.Declined{
			Op:              op,
			PaymentIntentID: paymentIntentID,
			Code:            string(e.Code),
			DeclineCode:     string(e.DeclineCode),
			Message:         e.Msg,
		}
		if e.PaymentIntent != nil {
			declined.ProviderStatus = string(e.PaymentIntent.Status)
		}
		return declined
	// A 2xx or 3xx that reached the error path means the response was unreadable.
	case e.HTTPStatusCode != 0 && e.HTTPStatusCode < 400:
		return uncertain("unreadable_response")
	}
	errType := string(e.Type)
	if errType == "" {
		errType = "unknown_error"
	}
	return &payment.Failed{
		Op:         op,
		HTTPStatus: e.HTTPStatusCode,
		Type:       errType,
		Code:       string(e.Code),
		Param:      e.Param,
		Message:    e.Msg,
		RequestID:  e.RequestID,
	}
}

// transportReason names a failure that happened below Stripe's error protocol. Every one of
// them leaves the outcome unknown: the request may have been processed before the
// connection broke.
func transportReason(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection"
	case errors.As(err, &netErr):
		return "connection"
	}
	return "unreadable_response"
}
