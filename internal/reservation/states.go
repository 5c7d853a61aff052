// Package reservation is seatsaga's domain model: inventory and payment states, the transitions
// between them as one table of data, guarded transitions that require the expected prior state,
// owner and version, hold deadlines checked against a clock the caller passes in, claim request
// validation and the errors the saga routes on. It imports no AWS or Stripe package.
package reservation

import (
	"fmt"
	"strings"
)

// InventoryState is the state of a seat or of a reservation's hold on its seats.
type InventoryState string

const (
	Available      InventoryState = "AVAILABLE"
	Held           InventoryState = "HELD"
	PaymentPending InventoryState = "PAYMENT_PENDING"
	Confirmed      InventoryState = "CONFIRMED"
	Released       InventoryState = "RELEASED"
)

// InventoryStates lists every inventory state.
func InventoryStates() []InventoryState {
	return []InventoryState{Available, Held, PaymentPending, Confirmed, Released}
}

// Valid reports whether s is one of the inventory states.
func (s InventoryState) Valid() bool {
	switch s {
	case Available, Held, PaymentPending, Confirmed, Released:
		return true
	}
	return false
}

// ParseInventoryState reads a stored inventory state.
func ParseInventoryState(s string) (InventoryState, error) {
	if st := InventoryState(s); st.Valid() {
		return st, nil
	}
	return "", fmt.Errorf("reservation: unknown inventory state %q", s)
}

// PaymentState is the state of a reservation's money, independent of its seats.
type PaymentState string

const (
	NotStarted     PaymentState = "NOT_STARTED"
	Authorizing    PaymentState = "AUTHORIZING"
	Authorized     PaymentState = "AUTHORIZED"
	CapturePending PaymentState = "CAPTURE_PENDING"
	Paid           PaymentState = "PAID"
	Failed         PaymentState = "FAILED"
	Canceled       PaymentState = "CANCELED"
	Refunded       PaymentState = "REFUNDED"
	// RefundPending: a refund was accepted but the provider has not said it succeeded; a
	// refund can still fail, leaving the money captured.
	RefundPending              PaymentState = "REFUND_PENDING"
	UnknownNeedsReconciliation PaymentState = "UNKNOWN_NEEDS_RECONCILIATION"
)

// PaymentStates lists every payment state.
func PaymentStates() []PaymentState {
	return []PaymentState{NotStarted, Authorizing, Authorized, CapturePending, Paid, Failed, Canceled,
		Refunded, RefundPending, UnknownNeedsReconciliation}
}

// Valid reports whether s is one of the payment states.
func (s PaymentState) Valid() bool {
	switch s {
	case NotStarted, Authorizing, Authorized, CapturePending, Paid, Failed, Canceled, Refunded,
		RefundPending, UnknownNeedsReconciliation:
		return true
	}
	return false
}

// ParsePaymentState reads a stored payment state.
func ParsePaymentState(s string) (PaymentState, error) {
	if st := PaymentState(s); st.Valid() {
		return st, nil
	}
	return "", fmt.Errorf("reservation: unknown payment state %q", s)
}

// MoneyMayBeHeld reports whether the provider may hold or have taken the customer's money in
// this state, so that seats must not be given away without reconciling or refunding first.
func (s PaymentState) MoneyMayBeHeld() bool {
	switch s {
	case CapturePending, Paid, RefundPending, UnknownNeedsReconciliation:
		return true
	}
	return false
}

// Outcome is the business result recorded on a reservation when its inventory settles.
type Outcome string

const (
	OutcomeNone          Outcome = ""
	OutcomeConfirmed     Outcome = "CONFIRMED"
	OutcomeConfirmedLate Outcome = "CONFIRMED_LATE"
	OutcomeReleased      Outcome = "RELEASED"
	OutcomeExpired       Outcome = "EXPIRED"
)

// LateSuccessPolicy says what to do with a payment that succeeds after its hold expired.
type LateSuccessPolicy string

const (
	// LateSuccessReacquire takes the seats back if they are still ours or free, else voids.
	LateSuccessReacquire LateSuccessPolicy = "reacquire"
	// LateSuccessVoid always voids (or refunds) the late payment and tells the customer.
	LateSuccessVoid LateSuccessPolicy = "void"
)

// ParseLateSuccessPolicy reads a policy from configuration (case-insensitive); empty means
// reacquire.
func ParseLateSuccessPolicy(s string) (LateSuccessPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", string(LateSuccessReacquire):
		return LateSuccessReacquire, nil
	case string(LateSuccessVoid):
		return LateSuccessVoid, nil
	}
	return "", fmt.Errorf("reservation: late success policy %q: want %q or %q", s, LateSuccessReacquire, LateSuccessVoid)
}

// String implements fmt.Stringer.
func (p LateSuccessPolicy) String() string { return string(p) }

// UnmarshalText lets the policy be read straight from JSON or flag configuration.
func (p *LateSuccessPolicy) UnmarshalText(b []byte) error {
	v, err := ParseLateSuccessPolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
