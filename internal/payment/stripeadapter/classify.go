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

// Classify turns what stripe-go returned for op into the port's outcome: *payment.Declined
// when the refusal is about the buyer's payment method, *payment.Failed (with a Category)
// for every other definitive refusal, and *payment.Uncertain for anything it cannot prove
// definitive: a guess in that direction would either charge twice or drop money on the floor.
func Classify(op payment.Op, paymentIntentID string, err error) error {
	if err == nil {
		return nil
	}
	var stripeErr *stripe.Error
	if errors.As(err, &stripeErr) {
		return classifyStripeError(op, paymentIntentID, stripeErr)
	}
	var noKey *keyUnavailableError
	if errors.As(err, &noKey) {
		return &payment.Uncertain{Op: op, PaymentIntentID: paymentIntentID, Reason: "credentials_unavailable", Err: err}
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
	// These say "not now" whatever the status: the request was not refused on its merits.
	case e.Code == stripe.ErrorCodeRateLimit || e.Type == errorTypeRateLimit:
		return uncertain("rate_limited")
	case e.Code == stripe.ErrorCodeLockTimeout:
		return uncertain("conflict")
	case isAboutPaymentMethod(e) || isUnknownPaymentMethod(e):
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
		Category:   failureCategory(e),
		Type:       errType,
		Code:       string(e.Code),
		Param:      e.Param,
		Message:    e.Msg,
		RequestID:  e.RequestID,
	}
}

// Error types Stripe documents (or documented) that stripe-go v76 has no constant for. Today
// Stripe answers bad keys with invalid_request_error and HTTP 401, but older API versions and
// other clients name these types, so the classification accepts both.
const (
	errorTypeAuthentication stripe.ErrorType = "authentication_error"
	errorTypePermission     stripe.ErrorType = "permission_error"
	errorTypeRateLimit      stripe.ErrorType = "rate_limit_error"
)

// paymentMethodCodes are the error codes that are about the buyer's payment method or the
// buyer's own authentication: another payment method (or the buyer retrying) can succeed,
// and nothing in our system is wrong. Stripe sends them as card_error or, for some,
// invalid_request_error. The rule for membership is that a working integration sees the code
// only for some buyers; codes that every buyer would meet if our request, configuration or
// account were wrong are system failures and stay out, deliberately:
// payment_method_invalid_parameter(_testmode), payment_method_currency_mismatch,
// payment_method_unsupported_type, payment_method_configuration_failures,
// payment_method_billing_details_address_missing and payment_method_unexpected_state (our
// request or integration), livemode_mismatch, and the SetupIntent and microdeposit codes we
// never trigger. A payment method the provider does not know is the exception (see
// isUnknownPaymentMethod).
var paymentMethodCodes = map[stripe.ErrorCode]bool{
	// The card itself.
	stripe.ErrorCodeCardDeclined:                 true,
	stripe.ErrorCodeCardDeclineRateLimitExceeded: true,
	stripe.ErrorCodeExpiredCard:                  true,
	stripe.ErrorCodeIncorrectCVC:                 true,
	stripe.ErrorCodeIncorrectNumber:              true,
	stripe.ErrorCodeIncorrectZip:                 true,
	stripe.ErrorCodeIncorrectAddress:             true,
	stripe.ErrorCodeInvalidCVC:                   true,
	stripe.ErrorCodeInvalidExpiryMonth:           true,
	stripe.ErrorCodeInvalidExpiryYear:            true,
	stripe.ErrorCodeInvalidNumber:                true,
	stripe.ErrorCodeInsufficientFunds:            true,
	stripe.ErrorCodeProcessingError:              true,
	// The buyer's authentication (3-D Secure).
	stripe.ErrorCodeAuthenticationRequired:             true,
	stripe.ErrorCodePaymentIntentAuthenticationFailure: true,
	stripe.ErrorCodePaymentIntentActionRequired:        true,
	// The buyer's attempt with this method, or the method's fit for this payment.
	stripe.ErrorCodePaymentIntentPaymentAttemptFailed:      true,
	stripe.ErrorCodePaymentIntentPaymentAttemptExpired:     true,
	stripe.ErrorCodePaymentIntentIncompatiblePaymentMethod: true,
	// The payment method's own provider or the buyer's bank.
	stripe.ErrorCodePaymentMethodUnactivated:        true,
	stripe.ErrorCodePaymentMethodProviderDecline:    true,
	stripe.ErrorCodePaymentMethodProviderTimeout:    true,
	stripe.ErrorCodePaymentMethodCustomerDecline:    true,
	stripe.ErrorCodePaymentMethodNotAvailable:       true,
	stripe.ErrorCodePaymentMethodBankAccountBlocked: true,
	stripe.ErrorCodeDebitNotAuthorized:              true,
	stripe.ErrorCodeReferToCustomer:                 true,
}

// isAboutPaymentMethod reports whether the refusal is the buyer's: every card_error, and an
// invalid_request_error whose code is in paymentMethodCodes. Other types never are, whatever
// the code: an authentication or idempotency error is ours.
func isAboutPaymentMethod(e *stripe.Error) bool {
	return e.Type == stripe.ErrorTypeCard ||
		e.Type == stripe.ErrorTypeInvalidRequest && paymentMethodCodes[e.Code]
}

// isUnknownPaymentMethod reports a payment method the provider does not know
// (resource_missing on the payment_method parameter). It is the buyer's decline, not a system
// failure: the request is one buyer's, and no retry or reconciliation can make that method
// exist, so holding the seats for it only makes the buyer wait out the hold. A publishable key
// of another account would make every buyer's method unknown; that shows as a rate, which
// payment.CodeUnknownPaymentMethod's metric and its alarm watch, not as one buyer's refusal.
func isUnknownPaymentMethod(e *stripe.Error) bool {
	return e.Type == stripe.ErrorTypeInvalidRequest && e.Code == stripe.ErrorCodeResourceMissing && e.Param == "payment_method"
}

// authenticationCodes and permissionCodes identify credential problems that Stripe may send
// with a 400 rather than a 401 or 403.
var (
	authenticationCodes = map[stripe.ErrorCode]bool{
		stripe.ErrorCodeAPIKeyExpired:         true,
		stripe.ErrorCodePlatformAPIKeyExpired: true,
		stripe.ErrorCodeSecretKeyRequired:     true,
	}
	permissionCodes = map[stripe.ErrorCode]bool{
		stripe.ErrorCodeTestmodeChargesOnly:         true,
		stripe.ErrorCodeNotAllowedOnStandardAccount: true,
		stripe.ErrorCodePlatformAccountRequired:     true,
	}
	// objectStateCodes say the object exists but its state refuses the operation.
	objectStateCodes = map[stripe.ErrorCode]bool{
		stripe.ErrorCodePaymentIntentUnexpectedState:      true,
		stripe.ErrorCodeChargeAlreadyCaptured:             true,
		stripe.ErrorCodeChargeAlreadyRefunded:             true,
		stripe.ErrorCodeChargeDisputed:                    true,
		stripe.ErrorCodeChargeExpiredForCapture:           true,
		stripe.ErrorCodeChargeNotRefundable:               true,
		stripe.ErrorCodeCaptureChargeAuthorizationExpired: true,
		stripe.ErrorCodeCaptureUnauthorizedPayment:        true,
		stripe.ErrorCodeIntentInvalidState:                true,
		stripe.ErrorCodePaymentMethodUnexpectedState:      true,
		stripe.ErrorCodeRefundDisputedPayment:             true,
		stripe.ErrorCodeReturnIntentAlreadyProcessed:      true,
		stripe.ErrorCodeStatusTransitionInvalid:           true,
		stripe.ErrorCodeResourceAlreadyExists:             true,
		stripe.ErrorCodeBalanceInsufficient:               true,
	}
)

// failureCategory names the kind of a definitive refusal that is not the buyer's. Credentials
// come first because a bad key hides every other problem.
func failureCategory(e *stripe.Error) payment.FailureCategory {
	switch {
	case e.Type == errorTypeAuthentication || e.HTTPStatusCode == 401 || authenticationCodes[e.Code]:
		return payment.FailureAuthentication
	case e.Type == errorTypePermission || e.HTTPStatusCode == 403 || permissionCodes[e.Code]:
		return payment.FailurePermission
	case e.Type == stripe.ErrorTypeIdempotency:
		return payment.FailureIdempotency
	case e.Code == stripe.ErrorCodeResourceMissing || e.HTTPStatusCode == 404:
		return payment.FailureNotFound
	case objectStateCodes[e.Code]:
		return payment.FailureObjectState
	case e.Type == stripe.ErrorTypeInvalidRequest:
		return payment.FailureInvalidRequest
	}
	return payment.FailureOther
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
