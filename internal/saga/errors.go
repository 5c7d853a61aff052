package saga

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// The errors a step returns, and the names statemachine/reservation.asl.json routes on. The
// Lambda Go runtime reports an error under its Go type name (the element name for a pointer),
// so a routed error's Go type name is its ASL name, and a handler returns it unwrapped: a
// fmt.Errorf("…: %w") around one reaches Step Functions as "wrapError" and no Retry or Catch
// matches it. Handlers call Routable on their way out.
//
// stepErrors below is the only list of them: each type once, with its ASL name and its
// StepOutcome value. Routable, the metric and the mapping of store and provider errors
// (stepError) all read it, so a new routed error is one entry there.

// Error names as the ASL spells them, for code that needs the string (SendTaskFailure,
// tests); stepErrors ties each to its type, and TestStepErrorNames checks they agree.
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

// outcomeError is the StepOutcome of an error stepErrors does not name.
const outcomeError = "error"

// stepErrors lists every error type a step returns, in precedence order (an error that
// carries several is routed as the first listed). name is the ASL name, "" for the errors
// the ASL does not route by name (its States.ALL catch reconciles them); from lists the store
// and provider errors the type stands for.
var stepErrors = []stepErrorKind{
	// The domain's errors are the routed ones: one type per ASL name (see the package doc).
	kind[*reservation.SeatUnavailable](ErrSeatUnavailable, "seat_unavailable"),
	// The one spelling of "the hold expired" as a reason (see reservation.HoldExpired).
	kind[*reservation.HoldExpired](ErrHoldExpired, outbox.ReasonHoldExpired),
	kind[*PaymentDeclined](ErrPaymentDeclined, "declined",
		from(func(id string, e *payment.Declined, _ error) error {
			return &PaymentDeclined{ReservationID: id, Code: e.Code, Detail: e.Error()}
		})),
	kind[*PaymentUncertain](ErrPaymentUncertain, "uncertain",
		from(func(id string, e *payment.Uncertain, _ error) error {
			return &PaymentUncertain{ReservationID: id, Detail: e.Error()}
		})),
	kind[*PaymentAlreadyAuthorized](ErrPaymentAlreadyAuthorized, "already_authorized"),
	kind[*CustomerCanceled](ErrCustomerCanceled, "customer_canceled"),
	kind[*CaptureFailed](ErrCaptureFailed, "capture_failed"),
	kind[*InvalidRequest](ErrInvalidRequest, "invalid",
		from(func(_ string, e *reservation.ValidationError, _ error) error {
			return &InvalidRequest{Field: "request", Problem: e.Error()}
		}),
		from(func(_ string, e *reservation.IdempotencyConflict, _ error) error {
			return &InvalidRequest{Field: "idempotencyKey", Problem: e.Error()}
		})),
	// Another writer moved the reservation first, or DynamoDB cancelled the transaction:
	// the step reads again and decides anew.
	kind[*TransactionConflict](ErrTransactionConflict, outcomeError,
		from(func(_ string, _ *reservation.StaleVersion, err error) error {
			return &TransactionConflict{Detail: err.Error()}
		}),
		from(func(_ string, _ *reservation.UnexpectedState, err error) error {
			return &TransactionConflict{Detail: err.Error()}
		}),
		func(_ string, err error) error {
			if isTransactionConflict(err) {
				return &TransactionConflict{Detail: err.Error()}
			}
			return nil
		}),
	kind[*TransientError](ErrTransientError, outcomeError),
	kind[*ProviderRefused]("", "provider_refused",
		// The provider refused our request, not the buyer's card (a wrong or rotated key, a
		// permission, a request or object-state problem): telling the buyer "declined" would
		// decline every buyer of the sale. The hold stays protected and reconciliation asks
		// the provider again.
		from(func(id string, e *payment.Failed, _ error) error {
			return &ProviderRefused{ReservationID: id, Category: string(e.Category), Detail: e.Error()}
		})),
	kind[*ConflictError]("", outcomeError,
		from(func(id string, e *reservation.NotFound, _ error) error {
			return &ConflictError{ReservationID: id, Detail: e.Error()}
		})),
	// Not routed by name: the compensation states' States.ALL Catch hands it to
	// reconciliation, which reads its name (ErrSettlementContinues) in $.compensationFailure.
	kind[*SettlementContinues]("", outcomeHandedToReconcile),
}

// stepErrorKind is one entry of stepErrors.
type stepErrorKind struct {
	name    string
	outcome string
	typ     reflect.Type
	// find returns the error of this type in err's chain.
	find func(err error) (error, bool)
	from []translation
}

// translation returns the step error that stands for a store or provider error, or nil.
type translation func(id string, err error) error

func kind[E error](name, outcome string, from ...translation) stepErrorKind {
	return stepErrorKind{name: name, outcome: outcome, typ: reflect.TypeFor[E](), from: from,
		find: func(err error) (error, bool) {
			var e E
			if errors.As(err, &e) {
				return e, true
			}
			return nil, false
		}}
}

func from[E error](f func(id string, e E, err error) error) translation {
	return func(id string, err error) error {
		var e E
		if errors.As(err, &e) {
			return f(id, e, err)
		}
		return nil
	}
}

// classify returns the step error err carries, unwrapped, and its entry.
func classify(err error) (error, stepErrorKind, bool) {
	if err != nil {
		for _, k := range stepErrors {
			if e, ok := k.find(err); ok {
				return e, k, true
			}
		}
	}
	return nil, stepErrorKind{}, false
}

// Routable returns the step error inside err, unwrapped, so the Lambda runtime names it; an
// error that carries none is returned as it is (Step Functions sees its own type name and the
// ASL's States.ALL catches it).
func Routable(err error) error {
	if e, _, ok := classify(err); ok {
		return e
	}
	return err
}

// outcomeOf names err for the StepOutcome metric.
func outcomeOf(err error) string {
	if _, k, ok := classify(err); ok {
		return k.outcome
	}
	return outcomeError
}

// stepError turns a store or provider error into the step error a step returns: one it
// already carries (the domain's routed errors), else the first translation that applies,
// else unknown(err) — a store failure is worth retrying, a provider that did not answer
// leaves the payment uncertain.
func stepError(id string, err error, unknown func(id string, err error) error) error {
	if err == nil {
		return nil
	}
	if e, _, ok := classify(err); ok {
		return e
	}
	for _, k := range stepErrors {
		for _, t := range k.from {
			if e := t(id, err); e != nil {
				return e
			}
		}
	}
	return unknown(id, err)
}

// storeError maps an inventory error; paymentError a provider outcome.
func storeError(id string, err error) error {
	return stepError(id, err, func(_ string, err error) error { return &TransientError{Detail: err.Error()} })
}

func paymentError(id string, err error) error {
	return stepError(id, err, func(id string, err error) error { return &PaymentUncertain{ReservationID: id, Detail: err.Error()} })
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

// ErrSettlementContinues names SettlementContinues, as the state machine's Catch sees it.
const ErrSettlementContinues = "SettlementContinues"

// SettlementContinues means a compensation found that the reservation must not simply be
// unwound (its seats are sold, or a late payment is kept): the settlement goes on in
// reconciliation, which the compensation state's Catch hands it to. It is no failure.
type SettlementContinues struct {
	ReservationID string
	Detail        string
}

func (e *SettlementContinues) Error() string {
	return "reservation " + e.ReservationID + ": settlement goes on in reconciliation: " + e.Detail
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
