package reservation

import (
	"fmt"
	"strings"
	"time"
)

// The errors below are the ones callers and the state machine route on. They are returned as
// pointers and unwrapped by the code that detects them (the Lambda runtime names an error after
// its Go type); match them with errors.As:
//
//	var su *reservation.SeatUnavailable
//	if errors.As(err, &su) { ... su.SeatIDs ... }
//
// SeatUnavailable and HoldExpired are also the saga's routed errors of those names
// (internal/saga returns them as they are, and Step Functions matches them by Go type name),
// so renaming either renames an error statemachine/reservation.asl.json routes on.

// SeatUnavailable says that some requested seats are held, pending payment or sold. It is
// definitive: retrying the same claim cannot succeed.
type SeatUnavailable struct {
	EventID string
	SeatIDs []string
	// Why, when set, says why the seats were refused although they may be free: the buyer's
	// admission was decided (turned away earlier, or canceled by the customer).
	Why string
}

func (e *SeatUnavailable) Error() string {
	msg := fmt.Sprintf("seats unavailable for event %s: %s", e.EventID, strings.Join(e.SeatIDs, ", "))
	if e.Why != "" {
		msg += " (" + e.Why + ")"
	}
	return msg
}

// HoldExpired says that a transition or step needing a live hold came at or after its
// deadline (HoldExpiresAt).
//
// "Expired" is the one word for a hold whose deadline passed: HoldExpired (this error, and the
// ASL error name), Expire (the inventory event that gives its seats back), OutcomeExpired (the
// outcome recorded then), SettledExpired (and the saga's reconcile outcome "expired") for a
// reservation that ended that way, and "hold_expired" (outbox.ReasonHoldExpired, the saga's
// StepOutcome) as a reason. Flags that say a release is such a one are named Expired.
type HoldExpired struct {
	ReservationID string
	ExpiredAt     time.Time
	Now           time.Time
	// Reason, when set, says how the caller found the hold expired (e.g. its seats were
	// already given back).
	Reason string
}

func (e *HoldExpired) Error() string {
	msg := fmt.Sprintf("hold of reservation %s expired at %s (now %s)", e.ReservationID,
		e.ExpiredAt.UTC().Format(time.RFC3339Nano), e.Now.UTC().Format(time.RFC3339Nano))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// HoldStillLive says that an expiry came before the hold's deadline.
type HoldStillLive struct {
	ReservationID string
	ExpiresAt     time.Time
	Now           time.Time
}

func (e *HoldStillLive) Error() string {
	return fmt.Sprintf("hold of reservation %s is live until %s (now %s)", e.ReservationID,
		e.ExpiresAt.UTC().Format(time.RFC3339Nano), e.Now.UTC().Format(time.RFC3339Nano))
}

// IllegalTransition says that the transition table has no row for this state and event.
type IllegalTransition struct {
	ReservationID string
	Machine       string // "inventory" or "payment"
	From          string
	Event         string
}

func (e *IllegalTransition) Error() string {
	return fmt.Sprintf("reservation %s: %s event %s is illegal in state %s", e.ReservationID, e.Machine, e.Event, e.From)
}

// StaleVersion says that the caller acted on a version that is no longer current: another
// writer got there first, or the caller replays an old event. Nothing was changed.
type StaleVersion struct {
	ReservationID string
	Expected      int64
	Actual        int64 // 0 when the store could not tell
}

func (e *StaleVersion) Error() string {
	if e.Actual == 0 {
		return fmt.Sprintf("reservation %s: version %d is stale", e.ReservationID, e.Expected)
	}
	return fmt.Sprintf("reservation %s: expected version %d, found %d", e.ReservationID, e.Expected, e.Actual)
}

// NotOwner says that the caller does not own the reservation or seats it tried to change.
type NotOwner struct {
	ReservationID string // what the caller acted for
	Owner         string // who owns it now ("" when nobody does)
	Resource      string // e.g. "reservation r1" or "seat e1#A1"
}

func (e *NotOwner) Error() string {
	owner := e.Owner
	if owner == "" {
		owner = "nobody"
	}
	return fmt.Sprintf("%s is owned by %s, not by reservation %s", e.Resource, owner, e.ReservationID)
}

// UnexpectedState says that the caller expected a different prior state than the current one;
// typically a duplicate or out-of-order message. Nothing was changed.
type UnexpectedState struct {
	ReservationID string
	Machine       string
	Expected      string
	Actual        string
}

func (e *UnexpectedState) Error() string {
	return fmt.Sprintf("reservation %s: expected %s state %s, found %s", e.ReservationID, e.Machine, e.Expected, e.Actual)
}

// GuardFailed says that the table allows the transition but the other state machine forbids it
// now (e.g. Confirm before the payment is authorized, Release while money may be held).
type GuardFailed struct {
	ReservationID string
	Event         string
	Inventory     InventoryState
	Payment       PaymentState
	Reason        string
}

func (e *GuardFailed) Error() string {
	return fmt.Sprintf("reservation %s: %s refused in %s/%s: %s", e.ReservationID, e.Event, e.Inventory, e.Payment, e.Reason)
}

// NotFound says that no reservation has this id.
type NotFound struct {
	ReservationID string
}

func (e *NotFound) Error() string { return "reservation " + e.ReservationID + " not found" }

// IdempotencyConflict says that an idempotency key was reused for a different request.
type IdempotencyConflict struct {
	IdempotencyKey string
	ReservationID  string
}

func (e *IdempotencyConflict) Error() string {
	return fmt.Sprintf("idempotency key %q was already used for a different request (reservation %s)", e.IdempotencyKey, e.ReservationID)
}

// Problem is one thing wrong with a request.
type Problem struct {
	Field  string
	Reason string
}

// ValidationError lists everything wrong with a request; nothing was written.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Reason
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// Has reports whether a problem concerns field.
func (e *ValidationError) Has(field string) bool {
	for _, p := range e.Problems {
		if p.Field == field {
			return true
		}
	}
	return false
}
