package saga

import (
	"errors"
	"fmt"
	"strings"
)

// The error types below are the names statemachine/reservation.asl.json routes on. The Lambda
// Go runtime reports an error under its Go type name (the element name for a pointer), so a
// handler must return them unwrapped: a fmt.Errorf("…: %w") around one reaches Step Functions
// as "wrapError" and no Retry or Catch can match it. Handlers call Routable on their way out.

// SeatUnavailable means at least one requested seat is held or sold by someone else. The ASL
// never retries it: the buyer lost the race.
type SeatUnavailable struct {
	ReservationID string
	SeatIDs       []string
}

func (e *SeatUnavailable) Error() string {
	if len(e.SeatIDs) == 0 {
		return "seats unavailable for reservation " + e.ReservationID
	}
	return fmt.Sprintf("seats unavailable for reservation %s: %s", e.ReservationID, strings.Join(e.SeatIDs, ", "))
}

// HoldExpired means the hold's deadline passed before the step could act on it.
type HoldExpired struct {
	ReservationID string
	Detail        string
}

func (e *HoldExpired) Error() string {
	return fmt.Sprintf("hold of reservation %s expired: %s", e.ReservationID, e.Detail)
}

// PaymentDeclined means the provider refused the payment definitively. Never retried.
type PaymentDeclined struct {
	ReservationID string
	Code          string
	Detail        string
}

func (e *PaymentDeclined) Error() string {
	return fmt.Sprintf("payment of reservation %s declined (%s): %s", e.ReservationID, e.Code, e.Detail)
}

// PaymentUncertain means nobody knows whether the provider acted. The ASL retries the step
// (same idempotency key) and then reconciles against the provider's truth.
type PaymentUncertain struct {
	ReservationID string
	Detail        string
}

func (e *PaymentUncertain) Error() string {
	return fmt.Sprintf("payment of reservation %s uncertain: %s", e.ReservationID, e.Detail)
}

// PaymentAlreadyAuthorized means a new attempt of the authorize state (after the previous one
// failed, e.g. crashed after its write) found the payment already AUTHORIZED: the webhook
// reported to the earlier attempt's task token, which died with that attempt, and no webhook
// will report to this attempt's one. It is not a failure: the ASL catches it and goes on to
// confirm the seats (Confirm reads the reservation from the store, not the Catch's output), so
// only the api and webhook need to call SendTask*. Never retried.
type PaymentAlreadyAuthorized struct {
	ReservationID   string
	PaymentIntentID string
	// Version is the reservation's version when the step found it authorized.
	Version int64
}

func (e *PaymentAlreadyAuthorized) Error() string {
	return fmt.Sprintf("payment of reservation %s already authorized (PaymentIntent %s, version %d)", e.ReservationID, e.PaymentIntentID, e.Version)
}

// CustomerCanceled is the error name the api's DELETE sends with SendTaskFailure; the saga
// then voids and releases. Steps never return it; it is here so every routed name is in one
// place.
type CustomerCanceled struct {
	ReservationID string
}

func (e *CustomerCanceled) Error() string {
	return "reservation " + e.ReservationID + " canceled by the customer"
}

// CaptureFailed means the provider refused the capture definitively. By the time the step
// returns it, the capture-failure policy has run: seats released, payment FAILED, customer
// notified through the outbox.
type CaptureFailed struct {
	ReservationID string
	Detail        string
}

func (e *CaptureFailed) Error() string {
	return fmt.Sprintf("capture of reservation %s failed: %s", e.ReservationID, e.Detail)
}

// InvalidRequest means the execution input failed validation; nothing was written.
type InvalidRequest struct {
	Field   string
	Problem string
}

func (e *InvalidRequest) Error() string { return "invalid request: " + e.Field + " " + e.Problem }

// TransactionConflict means DynamoDB cancelled a transaction because another one touched the
// same items; retrying soon is expected to succeed.
type TransactionConflict struct {
	Detail string
}

func (e *TransactionConflict) Error() string { return "transaction conflict: " + e.Detail }

// TransientError is any other failure worth retrying: throttling, timeouts, a store or
// provider that did not answer.
type TransientError struct {
	Detail string
}

func (e *TransientError) Error() string { return "transient: " + e.Detail }

// ConflictError means the reservation is in a state this step cannot act on (another actor
// moved it, or the input names a reservation that is not ours). Not routed by name: it ends
// in the ASL's States.ALL catch, which reconciles.
type ConflictError struct {
	ReservationID string
	Detail        string
}

func (e *ConflictError) Error() string {
	return "reservation " + e.ReservationID + " in unexpected state: " + e.Detail
}

// ProviderRefused means the payment provider refused the system's own request definitively
// (authentication, permission, an invalid request or object state), not the buyer's payment
// method. Not routed by name: it ends in the ASL's States.ALL catch, which reconciles while the
// hold keeps the seats; the step counts it (MetricProviderRefusals) so an operator sees it.
type ProviderRefused struct {
	ReservationID string
	Category      string
	Detail        string
}

func (e *ProviderRefused) Error() string {
	return "the payment provider refused the request for reservation " + e.ReservationID + " (" + e.Category + "): " + e.Detail
}

// Error names as the ASL spells them.
const (
	ErrSeatUnavailable          = "SeatUnavailable"
	ErrHoldExpired              = "HoldExpired"
	ErrPaymentDeclined          = "PaymentDeclined"
	ErrPaymentUncertain         = "PaymentUncertain"
	ErrPaymentAlreadyAuthorized = "PaymentAlreadyAuthorized"
	ErrCustomerCanceled         = "CustomerCanceled"
	ErrCaptureFailed            = "CaptureFailed"
	ErrInvalidRequest           = "InvalidRequest"
	ErrTransactionConflict      = "TransactionConflict"
	ErrTransientError           = "TransientError"
)

// Routable returns the routed error inside err, unwrapped, so the Lambda runtime names it; an
// error that carries none is returned as it is (Step Functions sees its own type name and the
// ASL's States.ALL catches it).
func Routable(err error) error {
	if err == nil {
		return nil
	}
	var (
		seat     *SeatUnavailable
		expired  *HoldExpired
		declined *PaymentDeclined
		unsure   *PaymentUncertain
		already  *PaymentAlreadyAuthorized
		canceled *CustomerCanceled
		capture  *CaptureFailed
		invalid  *InvalidRequest
		conflict *TransactionConflict
		trans    *TransientError
	)
	switch {
	case errors.As(err, &seat):
		return seat
	case errors.As(err, &expired):
		return expired
	case errors.As(err, &declined):
		return declined
	case errors.As(err, &unsure):
		return unsure
	case errors.As(err, &already):
		return already
	case errors.As(err, &canceled):
		return canceled
	case errors.As(err, &capture):
		return capture
	case errors.As(err, &invalid):
		return invalid
	case errors.As(err, &conflict):
		return conflict
	case errors.As(err, &trans):
		return trans
	}
	return err
}
