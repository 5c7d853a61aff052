// Package payment is the port between the reservation saga and a card payment provider. It
// names what the saga asks for (authorize, confirm a payment method, retrieve, capture, void,
// refund) and the three ways each request can end: it succeeded (and here is the provider's
// state mapped to ours), it failed definitively (Declined, Failed), or nobody knows
// (Uncertain). It imports no provider SDK; the Stripe adapter lives in
// internal/payment/stripeadapter.
package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
)

// State is the payment half of a reservation's state (internal/reservation/states.go): an
// alias of reservation.PaymentState, so results flow into the domain model without conversion.
type State = reservation.PaymentState

// Payment states, re-exported for adapters. A provider only ever reports AUTHORIZING,
// AUTHORIZED, PAID, FAILED, CANCELED and REFUNDED; NOT_STARTED, CAPTURE_PENDING,
// REFUND_PENDING and UNKNOWN_NEEDS_RECONCILIATION are states the saga records about its own
// progress and knowledge (a PaymentIntent cannot show a pending refund apart from a
// succeeded one; RetrieveRefund can).
const (
	StateNotStarted                 = reservation.NotStarted
	StateAuthorizing                = reservation.Authorizing
	StateAuthorized                 = reservation.Authorized
	StateCapturePending             = reservation.CapturePending
	StatePaid                       = reservation.Paid
	StateFailed                     = reservation.Failed
	StateCanceled                   = reservation.Canceled
	StateRefunded                   = reservation.Refunded
	StateRefundPending              = reservation.RefundPending
	StateUnknownNeedsReconciliation = reservation.UnknownNeedsReconciliation
)

// DefaultAuthorizationValidity is how long a card authorization can be captured when the
// provider does not say (Stripe: 7 days for online card payments).
const DefaultAuthorizationValidity = 7 * 24 * time.Hour

// AuthorizationRequest asks for the one authorization that belongs to a reservation.
type AuthorizationRequest struct {
	ReservationID string
	// Amount is in minor units of Currency (cents for "eur"); Currency is ISO 4217, lower case.
	Amount   int64
	Currency string
	// Customer is the provider's customer id (Stripe "cus_…"); optional.
	Customer string
	// PaymentIntentID, when the reservation already recorded one, makes the call retrieve
	// that authorization instead of creating one.
	PaymentIntentID string
	// CorrelationID travels in the provider's metadata so an operator can follow a payment
	// from the dashboard back to the saga's logs.
	CorrelationID string
}

// Validate reports the first problem with the request as a *ValidationError.
func (r AuthorizationRequest) Validate() error {
	switch {
	case r.ReservationID == "":
		return &ValidationError{Field: "ReservationID", Problem: "is empty"}
	case r.Amount <= 0:
		return &ValidationError{Field: "Amount", Problem: fmt.Sprintf("must be positive minor units, got %d", r.Amount)}
	case len(r.Currency) != 3:
		return &ValidationError{Field: "Currency", Problem: fmt.Sprintf("must be a 3-letter ISO code, got %q", r.Currency)}
	}
	return nil
}

// ConfirmPaymentMethodRequest confirms the reservation's authorization with a payment
// method. Attempt numbers start at 1 and grow with every new payment method the buyer tries:
// each attempt has its own idempotency key, so a declined attempt never poisons the next one,
// while a retried Lambda (same attempt) reuses the key and cannot authorize twice.
type ConfirmPaymentMethodRequest struct {
	ReservationID   string
	PaymentIntentID string
	PaymentMethod   string
	Attempt         int
	// ReturnURL is where a buyer lands after a redirect-based authentication (3-D Secure);
	// optional.
	ReturnURL string
}

// Validate reports the first problem with the request as a *ValidationError.
func (r ConfirmPaymentMethodRequest) Validate() error {
	switch {
	case r.ReservationID == "":
		return &ValidationError{Field: "ReservationID", Problem: "is empty"}
	case r.PaymentIntentID == "":
		return &ValidationError{Field: "PaymentIntentID", Problem: "is empty"}
	case r.PaymentMethod == "":
		return &ValidationError{Field: "PaymentMethod", Problem: "is empty"}
	case r.Attempt < 1:
		return &ValidationError{Field: "Attempt", Problem: fmt.Sprintf("must be >= 1, got %d", r.Attempt)}
	}
	return nil
}

// CaptureRequest captures an authorization. Amount 0 captures the full authorized amount.
type CaptureRequest struct {
	ReservationID   string
	PaymentIntentID string
	Amount          int64
}

// CancelRequest voids an authorization that has not been captured. Attempt numbers start at
// 1; each has its own idempotency key. The caller moves to the next attempt only after the
// provider refused a cancel (its refusal is stored under the key and replayed for 24 hours,
// e.g. a cancel refused while the payment was processing), and repeats the attempt after an
// unanswered one, so a retried call can act at most once.
type CancelRequest struct {
	ReservationID   string
	PaymentIntentID string
	Attempt         int
	// Reason is Stripe's cancellation_reason vocabulary: "abandoned", "duplicate",
	// "fraudulent" or "requested_by_customer"; empty sends none.
	Reason string
}

// Validate reports the first problem with the request as a *ValidationError.
func (r CancelRequest) Validate() error {
	switch {
	case r.ReservationID == "":
		return &ValidationError{Field: "ReservationID", Problem: "is empty"}
	case r.PaymentIntentID == "":
		return &ValidationError{Field: "PaymentIntentID", Problem: "is empty"}
	case r.Attempt < 1:
		return &ValidationError{Field: "Attempt", Problem: fmt.Sprintf("must be >= 1, got %d", r.Attempt)}
	}
	return nil
}

// RefundRequest returns captured money. Amount 0 refunds everything not yet refunded.
//
// Attempt numbers start at 1 (a value below 1 counts as 1, so callers written before attempts
// existed keep their meaning); each attempt has its own idempotency key. The caller moves to
// the next attempt only after RetrieveRefund showed the attempt's refund FAILED (or
// canceled) at the provider, and repeats the attempt after an unanswered call, so a retried
// call acts at most once and a failed refund never blocks the next one.
type RefundRequest struct {
	ReservationID   string
	PaymentIntentID string
	Amount          int64
	Attempt         int
	// Reason is Stripe's refund reason vocabulary: "duplicate", "fraudulent" or
	// "requested_by_customer"; empty sends none.
	Reason string
}

// EffectiveAttempt is the attempt the request stands for: Attempt, or 1 when it is below 1.
func (r RefundRequest) EffectiveAttempt() int {
	if r.Attempt < 1 {
		return 1
	}
	return r.Attempt
}

// Authorization is the provider's truth about a reservation's payment at the time of a call.
type Authorization struct {
	PaymentIntentID string
	ReservationID   string
	// State is ProviderStatus mapped to our payment states (see the adapter's MapStatus).
	State          State
	ProviderStatus string
	Amount         int64
	Currency       string
	// AmountCapturable is what can still be captured; AmountReceived what was captured;
	// AmountRefunded what the provider accepted to return. At Stripe that includes refunds
	// still pending, which may yet fail and give the money back to the merchant: only
	// RetrieveRefund tells whether a refund succeeded.
	AmountCapturable int64
	AmountReceived   int64
	AmountRefunded   int64
	PaymentMethod    string
	// CaptureBefore is the moment the authorization lapses; zero until it is authorized.
	// The reservation stores it so capture can refuse or alert before it lapses.
	CaptureBefore time.Time
	// NextAction is what the buyer must do while the state is AUTHORIZING with the provider
	// waiting on them ("use_stripe_sdk", "redirect_to_url"); empty otherwise.
	NextAction string
	// LastDecline holds the reason of the last failed attempt, if any.
	LastDecline *Declined
	// ClientSecret lets the buyer's browser complete authentication. It is a secret: never
	// log it.
	ClientSecret string
	Created      time.Time
}

// RefundStatus is a refund's status as the provider reports it. It is an alias of string so
// that Refund.Status stays a plain string for the callers that build messages from it.
type RefundStatus = string

// Refund statuses, as Stripe names them. Only RefundSucceeded means the buyer has the money
// back; RefundPending and RefundRequiresAction may still end failed or canceled, and a
// failed or canceled refund left the money with the merchant.
const (
	RefundPending        RefundStatus = "pending"
	RefundSucceeded      RefundStatus = "succeeded"
	RefundFailed         RefundStatus = "failed"
	RefundCanceled       RefundStatus = "canceled"
	RefundRequiresAction RefundStatus = "requires_action"
)

// Refund is a refund the provider accepted, as it stood when it was read. Accepted is not
// settled: Status says whether the money actually went back.
type Refund struct {
	RefundID        string
	PaymentIntentID string
	ReservationID   string
	Amount          int64
	Currency        string
	// Status is one of the Refund* statuses.
	Status RefundStatus
	// FailureReason is the provider's reason for a failed refund ("expired_or_canceled_card",
	// "lost_or_stolen_card", …); empty otherwise.
	FailureReason string
	// Authorization is the payment after the refund when the adapter could read it back
	// (Refund does, RetrieveRefund does not). Its REFUNDED state and AmountRefunded count a
	// pending refund too.
	Authorization *Authorization
}

// Provider is the port. Every method returns either a result, or an error that is one of
// *Declined, *Failed, *Uncertain or *ValidationError (match with errors.As). Every method is
// safe to call again after any error with the same arguments: repeated calls use the same
// provider idempotency key and act at most once.
type Provider interface {
	// CreateOrReuseAuthorization returns the reservation's authorization (one per
	// reservation, manual capture), creating it if the request names no existing one.
	CreateOrReuseAuthorization(ctx context.Context, req AuthorizationRequest) (Authorization, error)
	// ConfirmPaymentMethod authorizes the amount with a payment method (Stripe's confirm). It returns the authorization in
	// state AUTHORIZED, or AUTHORIZING when the buyer still has to act (3-D Secure) or the
	// provider is still processing; a declined card is a *Declined error.
	ConfirmPaymentMethod(ctx context.Context, req ConfirmPaymentMethodRequest) (Authorization, error)
	// Retrieve reads the provider's current truth; use it before any consequential action
	// after an Uncertain outcome, and on every webhook.
	Retrieve(ctx context.Context, paymentIntentID string) (Authorization, error)
	Capture(ctx context.Context, req CaptureRequest) (Authorization, error)
	Cancel(ctx context.Context, req CancelRequest) (Authorization, error)
	// Refund asks the provider to return captured money. A nil error means the provider
	// accepted the refund, not that it succeeded: a pending refund can still fail.
	Refund(ctx context.Context, req RefundRequest) (Refund, error)
	// RetrieveRefund reads a refund's current status. It is the only way to learn whether a
	// refund succeeded, because the PaymentIntent counts a pending refund as refunded.
	RetrieveRefund(ctx context.Context, refundID string) (Refund, error)
}

// WebhookVerifier checks a provider's webhook signature and decodes the event.
type WebhookVerifier interface {
	// VerifyWebhook returns the event; a *WebhookRejected error when the webhook is not the
	// provider's or cannot be read; or a *WebhookUnverifiable error when the signature could
	// not be checked now (its secret could not be read). Either way the webhook must change
	// nothing. ctx bounds reading the signing secret.
	VerifyWebhook(ctx context.Context, payload []byte, signatureHeader string) (Event, error)
}

// Event is a verified webhook. It is only a hint that something changed: handlers retrieve
// the payment and act on its current state, which makes duplicates and reordering harmless.
type Event struct {
	ID      string
	Type    string
	Created time.Time
	// PaymentIntentID and ReservationID come from the event's object (a PaymentIntent, or a
	// charge/refund that points to one); either may be empty for unrelated events.
	PaymentIntentID string
	ReservationID   string
	// RefundID is set when the event's object is a refund (refund.failed,
	// charge.refund.updated, …): pass it to RetrieveRefund.
	RefundID string
	// ProviderStatus and State describe the object as it was when the event was created,
	// which may already be stale. For a refund ProviderStatus is the refund's status and
	// State is empty; for a charge, State is REFUNDED once refunds (pending ones included)
	// cover it.
	ProviderStatus string
	State          State
	LiveMode       bool
	// APIVersion is the API version the provider rendered the event for (empty when the
	// event does not say). APIVersionMismatch reports that it differs from the version the
	// adapter pins; such an event is still accepted, since only fields that every version
	// shares are read, but the endpoint's version should be brought in line.
	APIVersion         string
	APIVersionMismatch bool
}

// Unavailable is the provider of a function that is given no payment access (the claim
// function holds no Stripe key: it only holds seats). Every call is refused as a system
// failure naming why, so a miswired function fails loudly and is never read as a decline.
type Unavailable struct {
	Why string
}

var _ Provider = Unavailable{}

func (u Unavailable) refuse(op Op) error {
	return &Failed{Op: op, Type: "unavailable", Category: FailureOther, Message: u.Why}
}

// CreateOrReuseAuthorization implements Provider.
func (u Unavailable) CreateOrReuseAuthorization(context.Context, AuthorizationRequest) (Authorization, error) {
	return Authorization{}, u.refuse(OpAuthorize)
}

// ConfirmPaymentMethod implements Provider.
func (u Unavailable) ConfirmPaymentMethod(context.Context, ConfirmPaymentMethodRequest) (Authorization, error) {
	return Authorization{}, u.refuse(OpConfirmPaymentMethod)
}

// Retrieve implements Provider.
func (u Unavailable) Retrieve(context.Context, string) (Authorization, error) {
	return Authorization{}, u.refuse(OpRetrieve)
}

// Capture implements Provider.
func (u Unavailable) Capture(context.Context, CaptureRequest) (Authorization, error) {
	return Authorization{}, u.refuse(OpCapture)
}

// Cancel implements Provider.
func (u Unavailable) Cancel(context.Context, CancelRequest) (Authorization, error) {
	return Authorization{}, u.refuse(OpCancel)
}

// Refund implements Provider.
func (u Unavailable) Refund(context.Context, RefundRequest) (Refund, error) {
	return Refund{}, u.refuse(OpRefund)
}

// RetrieveRefund implements Provider.
func (u Unavailable) RetrieveRefund(context.Context, string) (Refund, error) {
	return Refund{}, u.refuse(OpRetrieveRefund)
}
