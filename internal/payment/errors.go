package payment

import (
	"errors"
	"fmt"
)

// Op names the provider operation an outcome belongs to.
type Op string

// Operations of the port.
const (
	OpAuthorize Op = "authorize"
	OpConfirm   Op = "confirm"
	OpRetrieve  Op = "retrieve"
	OpCapture   Op = "capture"
	OpCancel    Op = "cancel"
	OpRefund    Op = "refund"
)

// Declined means the card issuer (or the buyer's authentication) refused this attempt. It is
// definitive for the attempt; the buyer may try again with another payment method, which is
// a new attempt with a new idempotency key.
type Declined struct {
	Op              Op
	PaymentIntentID string
	// Code is the provider's error code ("card_declined", "expired_card",
	// "payment_intent_authentication_failure", …); DeclineCode the issuer's reason
	// ("generic_decline", "insufficient_funds", …), when given.
	Code        string
	DeclineCode string
	Message     string
	// ProviderStatus is the PaymentIntent's status after the decline, when the provider
	// returned it (usually "requires_payment_method").
	ProviderStatus string
}

func (e *Declined) Error() string {
	msg := fmt.Sprintf("payment %s declined: %s", e.Op, e.Code)
	if e.DeclineCode != "" {
		msg += " (" + e.DeclineCode + ")"
	}
	if e.PaymentIntentID != "" {
		msg += " for " + e.PaymentIntentID
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Failed means the provider refused the request itself and acted on nothing: invalid
// parameters, an object in the wrong state, an idempotency key reused with other parameters,
// bad credentials. Repeating the same request cannot succeed.
type Failed struct {
	Op         Op
	HTTPStatus int
	// Type is the provider's error type ("invalid_request_error", "idempotency_error", …)
	// and Code its error code ("payment_intent_unexpected_state", "resource_missing", …).
	Type    string
	Code    string
	Param   string
	Message string
	// RequestID is the provider's request id, for support tickets.
	RequestID string
}

func (e *Failed) Error() string {
	msg := fmt.Sprintf("payment %s failed: %s", e.Op, e.Type)
	if e.Code != "" {
		msg += "/" + e.Code
	}
	if e.HTTPStatus != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.HTTPStatus)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// NotFound reports whether the provider said the object does not exist.
func (e *Failed) NotFound() bool { return e.Code == "resource_missing" || e.HTTPStatus == 404 }

// Uncertain means nobody knows whether the provider acted: a timeout, a dropped connection,
// a 5xx, rate limiting that outlasted the client's retries, or the same idempotency key
// still in flight. The caller must not guess: record UNKNOWN_NEEDS_RECONCILIATION, then
// retry with the same arguments (same idempotency key) or Retrieve the truth.
type Uncertain struct {
	Op              Op
	PaymentIntentID string
	// Reason is a short machine-friendly cause: "timeout", "connection", "server_error",
	// "rate_limited", "idempotency_key_in_use", "canceled", "unreadable_response".
	Reason     string
	HTTPStatus int
	Err        error
}

func (e *Uncertain) Error() string {
	msg := fmt.Sprintf("payment %s outcome unknown (%s)", e.Op, e.Reason)
	if e.PaymentIntentID != "" {
		msg += " for " + e.PaymentIntentID
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Uncertain) Unwrap() error { return e.Err }

// ValidationError means the caller's request was malformed; nothing was sent.
type ValidationError struct {
	Field   string
	Problem string
}

func (e *ValidationError) Error() string {
	return "payment request invalid: " + e.Field + " " + e.Problem
}

// WebhookRejected means a webhook failed verification; it must change nothing.
type WebhookRejected struct {
	// Reason is one of the WebhookReason constants.
	Reason WebhookReason
	Err    error
}

// WebhookReason says why a webhook was rejected.
type WebhookReason string

// Reasons for rejecting a webhook.
const (
	WebhookNotSigned          WebhookReason = "not_signed"
	WebhookInvalidHeader      WebhookReason = "invalid_signature_header"
	WebhookBadSignature       WebhookReason = "bad_signature"
	WebhookStaleTimestamp     WebhookReason = "stale_timestamp"
	WebhookMalformedBody      WebhookReason = "malformed_body"
	WebhookAPIVersionMismatch WebhookReason = "api_version_mismatch"
)

func (e *WebhookRejected) Error() string {
	if e.Err == nil {
		return "webhook rejected: " + string(e.Reason)
	}
	return "webhook rejected: " + string(e.Reason) + ": " + e.Err.Error()
}

func (e *WebhookRejected) Unwrap() error { return e.Err }

// IsUncertain reports whether err (or anything it wraps) is an *Uncertain outcome.
func IsUncertain(err error) bool {
	var u *Uncertain
	return errors.As(err, &u)
}

// IsDeclined reports whether err (or anything it wraps) is a *Declined outcome.
func IsDeclined(err error) bool {
	var d *Declined
	return errors.As(err, &d)
}
