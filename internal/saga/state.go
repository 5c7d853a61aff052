// Package saga holds the reservation saga's step logic: claim, authorize, confirm, capture,
// compensate and reconcile, each run by one Lambda under statemachine/reservation.asl.json.
//
// The execution input is an Input (the api Lambda starts the execution named by the
// reservation id with it). Each step receives the whole execution state (a State: the input
// plus what earlier steps wrote under hold, payment, confirmed, capture, reconcile and
// failure) and returns its own result, which the ASL places at its ResultPath. An execution
// that reaches a business ending (a lost race, a decline, a cancel, an expired hold, a voided
// late payment, a refused capture) succeeds, and its output is that ending's Verdict; only
// the endings a person must look at fail (ending.go, EndingOf).
// The authorize step receives an AuthorizeEvent ({input, taskToken}) and its task completes
// when someone calls SendTaskSuccess with a PaymentOutcome, or SendTaskFailure with the error
// PaymentDeclined (the webhook) or CustomerCanceled (the api's DELETE), or when the step itself
// fails: a retried attempt that finds the payment already authorized returns
// PaymentAlreadyAuthorized, which the ASL catches into "Confirm seats".
//
// Steps talk to the inventory and the payment provider through the narrow interfaces in
// ports.go; every step is idempotent under redelivery and under a crash after its write but
// before its return.
//
// The errors the ASL routes on are listed once, in errors.go's stepErrors, with their ASL name
// and metric outcome. Step Functions matches an error by its Go type name, so the saga returns
// the domain's own *reservation.SeatUnavailable and *reservation.HoldExpired as the routed
// SeatUnavailable and HoldExpired instead of copying them into saga types of the same names:
// two types per name meant two meanings for one ASL name and a mapping to keep in step.
//
// Words: a hold "expires" (reservation.HoldExpired documents the one spelling per concept);
// Confirm is the step that sells the seats, while confirming the PaymentIntent with a payment
// method is payment.Provider's ConfirmPaymentMethod.
package saga

import "time"

// Input is the execution input. Field names are the JSON the api writes.
type Input struct {
	ReservationID  string   `json:"reservationId"`
	EventID        string   `json:"eventId"`
	SeatIDs        []string `json:"seatIds"`
	CustomerID     string   `json:"customerId"`
	Amount         int64    `json:"amount"`
	Currency       string   `json:"currency"`
	IdempotencyKey string   `json:"idempotencyKey"`
	// RequestHash fingerprints the client's request, so a claim replayed with the same key
	// and another body is told apart (optional).
	RequestHash string `json:"requestHash,omitempty"`
	// PaymentMethod, when present, is confirmed server-side by the authorize step (e.g. a
	// saved card, or a test card locally); without it the buyer's browser confirms with the
	// client secret.
	PaymentMethod string `json:"paymentMethod,omitempty"`
	CorrelationID string `json:"correlationId,omitempty"`
	// SlotKey names the customer's hold slot the gate's admission took (empty without a cap);
	// the reservation keeps it so the write that ends the hold gives the slot back.
	SlotKey string `json:"slotKey,omitempty"`
}

// State is what a step receives: the input plus the results of earlier states.
type State struct {
	Input
	Hold      *Hold            `json:"hold,omitempty"`
	Payment   *PaymentOutcome  `json:"payment,omitempty"`
	Confirmed *Confirmation    `json:"confirmed,omitempty"`
	Capture   *CaptureResult   `json:"capture,omitempty"`
	Reconcile *ReconcileResult `json:"reconcile,omitempty"`
	Failure   *Failure         `json:"failure,omitempty"`
	// CompensationFailure is the error of a compensation the state machine gave up on after
	// its retries (a void, refund or release), which sends the execution to reconciliation;
	// Failure keeps the reason the saga was unwinding.
	CompensationFailure *Failure `json:"compensationFailure,omitempty"`
}

// Hold is the claim step's result ($.hold). SecondsLeft feeds the authorize state's
// TimeoutSecondsPath, so waiting for the payment lasts exactly as long as the hold.
type Hold struct {
	ReservationID string    `json:"reservationId"`
	Version       int64     `json:"version"`
	HoldExpiresAt time.Time `json:"holdExpiresAt"`
	SecondsLeft   int64     `json:"secondsLeft"`
}

// AuthorizeEvent is the authorize Lambda's payload from the waitForTaskToken state.
type AuthorizeEvent struct {
	Input     State  `json:"input"`
	TaskToken string `json:"taskToken"`
}

// AuthorizeResult is what the authorize Lambda returns; the state ignores it (it waits for
// the task token), but the Lambda host and logs show it.
type AuthorizeResult struct {
	ReservationID   string `json:"reservationId"`
	PaymentIntentID string `json:"paymentIntentId"`
	ProviderStatus  string `json:"providerStatus"`
	Version         int64  `json:"version"`
}

// PaymentOutcome is the output a SendTaskSuccess carries for the authorize state ($.payment):
// the webhook sends it once the PaymentIntent is authorized.
type PaymentOutcome struct {
	PaymentIntentID string `json:"paymentIntentId"`
	// State is the payment state after the webhook's guarded transition (AUTHORIZED).
	State   string `json:"state"`
	Version int64  `json:"version,omitempty"`
}

// Confirmation is the confirm step's result ($.confirmed).
type Confirmation struct {
	Version int64 `json:"version"`
}

// CaptureResult is the capture step's result ($.capture).
type CaptureResult struct {
	PaymentIntentID string `json:"paymentIntentId"`
	AmountCaptured  int64  `json:"amountCaptured"`
	Version         int64  `json:"version"`
}

// CompensationResult is the compensate step's result. A compensation state goes straight to
// its business ending, so the ASL's ResultSelector wraps it in that ending's Verdict
// ($.verdict.compensation) and no later step reads it.
type CompensationResult struct {
	// Reason is the error that led here (PaymentDeclined, CustomerCanceled, HoldExpired).
	Reason string `json:"reason"`
	// Payment says what happened to the money: "voided", "refunded" or "none".
	Payment string `json:"payment"`
	// SeatsReleased is false when the seats were no longer ours to release.
	SeatsReleased bool  `json:"seatsReleased"`
	Version       int64 `json:"version"`
}

// Reconcile outcomes; statemachine/reservation.asl.json routes on them.
const (
	OutcomeCapture       = "capture"
	OutcomePaid          = "paid"
	OutcomeVoided        = "voided"
	OutcomeExpired       = "expired"
	OutcomeFailed        = "failed"
	OutcomeCanceled      = "canceled"
	OutcomeCaptureFailed = "capture_failed"
	OutcomeRetry         = "retry"
	OutcomeResume        = "resume"
	OutcomeUnresolved    = "unresolved"
)

// ReconcileResult is the reconcile step's result ($.reconcile).
type ReconcileResult struct {
	Outcome string `json:"outcome"`
	// Attempt counts reconcile runs in this execution; the step bounds the retry loop by it.
	Attempt int `json:"attempt"`
	// Captures counts how often reconcile has sent this execution to "Capture payment"; the
	// capture/reconcile loop is bounded by it rather than by Attempt, so that an
	// authorization found late in the retry loop (e.g. on its last attempt) still gets to
	// capture.
	Captures int `json:"captures,omitempty"`
	// Resumes counts how often reconcile has sent this execution back to waiting for the
	// buyer; Hold is the hold to wait with then (its SecondsLeft is the time left now).
	Resumes int `json:"resumes,omitempty"`
	// CompensationFailureCounted says the failed compensation in $.compensationFailure was
	// counted: the slot stays set for the rest of the execution, the count must not.
	CompensationFailureCounted bool  `json:"compensationFailureCounted,omitempty"`
	Hold                       *Hold `json:"hold,omitempty"`
	// RetryAfterSeconds is how long the ASL waits before the next attempt (outcome retry).
	RetryAfterSeconds int    `json:"retryAfterSeconds,omitempty"`
	ProviderStatus    string `json:"providerStatus,omitempty"`
	Detail            string `json:"detail,omitempty"`
	// Verdict is set with the outcomes that settle the reservation other than sold (expired,
	// failed, canceled, voided, capture_failed): the business ending the ASL routes to outputs
	// it ($.reconcile.verdict), as no state may be added to the path to write it elsewhere.
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Failure is what a Catch stores at $.failure.
type Failure struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}
