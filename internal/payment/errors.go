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
	// OpConfirmPaymentMethod confirms the PaymentIntent with a payment method (Stripe's
	// "confirm"); it is not the saga's Confirm, which sells the seats.
	OpConfirmPaymentMethod Op = "confirm_payment_method"
	OpRetrieve             Op = "retrieve"
	OpCapture              Op = "capture"
	OpCancel               Op = "cancel"
	OpRefund               Op = "refund"
	// OpRetrieveRefund reads a refund back; only it tells whether a refund succeeded.
	OpRetrieveRefund Op = "retrieve_refund"
)

// Declined means the refusal is about the buyer's payment method: the card issuer declined,
// the card details are wrong or expired, the buyer failed authentication, or the method is
// not usable for this payment. It is definitive for the attempt; the buyer may try again with
// another payment method, which is a new attempt with a new idempotency key. Nothing about
// our own system is wrong when a payment is Declined.
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

// CodeUnknownPaymentMethod is the Code of a Declined whose payment method the provider does
// not know (Stripe's resource_missing on the payment_method parameter).
const CodeUnknownPaymentMethod = "resource_missing"

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

// Failed means the provider refused the request itself, for a reason that is not about the
// buyer's payment method, and acted on nothing: our credentials or permissions, invalid
// parameters, an object in the wrong state, an idempotency key reused with other parameters.
// Repeating the same request cannot succeed, and the buyer cannot fix it: a caller must never
// report a Failed outcome to the buyer as a decline (a rotated API key would otherwise
// "decline" every buyer). Category says which kind of system failure it is, for metrics and
// alarms.
type Failed struct {
	Op         Op
	HTTPStatus int
	// Category names the kind of failure; the adapter always sets it.
	Category FailureCategory
	// Type is the provider's error type ("invalid_request_error", "idempotency_error", …)
	// and Code its error code ("payment_intent_unexpected_state", "resource_missing", …).
	Type    string
	Code    string
	Param   string
	Message string
	// RequestID is the provider's request id, for support tickets.
	RequestID string
}

// FailureCategory classifies a *Failed outcome. Each category points at a different owner:
// authentication and permission at the deployment's credentials, invalid_request and
// idempotency at our code, object_state and not_found at the saga's view of the payment.
type FailureCategory string

// Failure categories.
const (
	// FailureAuthentication: the API key is missing, invalid, expired or revoked.
	FailureAuthentication FailureCategory = "authentication"
	// FailurePermission: the key or account may not perform this request.
	FailurePermission FailureCategory = "permission"
	// FailureInvalidRequest: our request is malformed or its parameters are invalid.
	FailureInvalidRequest FailureCategory = "invalid_request"
	// FailureIdempotency: the idempotency key was first used with other parameters.
	FailureIdempotency FailureCategory = "idempotency"
	// FailureObjectState: the payment, charge or account is in a state that refuses the
	// operation (capture after cancel, refund of a refunded charge, …).
	FailureObjectState FailureCategory = "object_state"
	// FailureNotFound: the object does not exist (for this account and mode).
	FailureNotFound FailureCategory = "not_found"
	// FailureOther: any other definitive refusal, such as a 4xx api_error.
	FailureOther FailureCategory = "other"
)

func (e *Failed) Error() string {
	msg := fmt.Sprintf("payment %s failed", e.Op)
	if e.Category != "" {
		msg += " (" + string(e.Category) + ")"
	}
	msg += ": " + e.Type
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
func (e *Failed) NotFound() bool {
	return e.Category == FailureNotFound || e.Code == "resource_missing" || e.HTTPStatus == 404
}

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
	WebhookNotSigned      WebhookReason = "not_signed"
	WebhookInvalidHeader  WebhookReason = "invalid_signature_header"
	WebhookBadSignature   WebhookReason = "bad_signature"
	WebhookStaleTimestamp WebhookReason = "stale_timestamp"
	WebhookMalformedBody  WebhookReason = "malformed_body"
)

func (e *WebhookRejected) Error() string {
	if e.Err == nil {
		return "webhook rejected: " + string(e.Reason)
	}
	return "webhook rejected: " + string(e.Reason) + ": " + e.Err.Error()
}

func (e *WebhookRejected) Unwrap() error { return e.Err }

// WebhookUnverifiable means a webhook's signature could not be checked: its signing secret
// could not be read. Unlike a *WebhookRejected it says nothing about the sender; the webhook
// must change nothing, and the provider should deliver it again later.
type WebhookUnverifiable struct {
	Err error
}

func (e *WebhookUnverifiable) Error() string {
	if e.Err == nil {
		return "webhook not verifiable now"
	}
	return "webhook not verifiable now: " + e.Err.Error()
}

func (e *WebhookUnverifiable) Unwrap() error { return e.Err }

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
