package reservation

// InventoryEvent is something that happens to a reservation's hold on its seats.
type InventoryEvent string

const (
	// Claim holds available seats for a new reservation (the seat side of a new reservation).
	Claim InventoryEvent = "Claim"
	// StartPayment moves a live hold to PAYMENT_PENDING before any money moves; a seat in
	// PAYMENT_PENDING is never claimable by someone else, even past its deadline.
	StartPayment InventoryEvent = "StartPayment"
	// Confirm sells the seats; it needs a live hold and an authorized payment.
	Confirm InventoryEvent = "Confirm"
	// Release gives the seats back (cancel, decline, compensation).
	Release InventoryEvent = "Release"
	// Expire gives back seats whose hold deadline has passed (the sweeper).
	Expire InventoryEvent = "Expire"
	// Reacquire takes the seats back for a payment that succeeded late.
	Reacquire InventoryEvent = "Reacquire"
)

// InventoryEvents lists every inventory event.
func InventoryEvents() []InventoryEvent {
	return []InventoryEvent{Claim, StartPayment, Confirm, Release, Expire, Reacquire}
}

// PaymentEvent is something the payment workflow or the provider reports.
type PaymentEvent string

const (
	StartAuthorization PaymentEvent = "StartAuthorization"
	AuthorizationOK    PaymentEvent = "Authorized"
	PaymentDeclined    PaymentEvent = "Declined"
	RequestCapture     PaymentEvent = "RequestCapture"
	CaptureOK          PaymentEvent = "Captured"
	VoidPayment        PaymentEvent = "Void"
	// RefundPayment records a refund the provider reports succeeded.
	RefundPayment PaymentEvent = "Refund"
	// RequestRefund records a refund the provider accepted but has not settled.
	RequestRefund PaymentEvent = "RequestRefund"
	// RefundFailed records a pending refund the provider reports failed: the money is
	// captured again and the next refund is a new attempt.
	RefundFailed PaymentEvent = "RefundFailed"
	// OutcomeUnknown records a timeout or ambiguous answer after the provider may have acted.
	OutcomeUnknown PaymentEvent = "Unknown"
)

// NotifiesCustomer reports events the customer must hear about: money voided, declined or
// refunded.
func (ev PaymentEvent) NotifiesCustomer() bool {
	switch ev {
	case VoidPayment, PaymentDeclined, RefundPayment:
		return true
	}
	return false
}

// PaymentEvents lists every payment event.
func PaymentEvents() []PaymentEvent {
	return []PaymentEvent{StartAuthorization, AuthorizationOK, PaymentDeclined, RequestCapture, CaptureOK,
		VoidPayment, RefundPayment, RequestRefund, RefundFailed, OutcomeUnknown}
}

// InventoryTransition is one row of the inventory table.
type InventoryTransition struct {
	From  InventoryState
	Event InventoryEvent
	To    InventoryState
}

// PaymentTransition is one row of the payment table.
type PaymentTransition struct {
	From  PaymentState
	Event PaymentEvent
	To    PaymentState
}

// inventoryTable is every legal inventory transition; any pair not listed is refused. Deadline
// and cross-machine guards (GuardsFor*) apply on top.
var inventoryTable = []InventoryTransition{
	{Available, Claim, Held},
	{Held, StartPayment, PaymentPending},
	{PaymentPending, Confirm, Confirmed},
	{Held, Release, Released},
	{PaymentPending, Release, Released},
	// Compensation after a confirmed seat whose capture failed.
	{Confirmed, Release, Released},
	{Held, Expire, Released},
	{PaymentPending, Expire, Released},
	// Late success: the hold ran out (still ours, or released by the sweeper) but the money came.
	{Held, Reacquire, Confirmed},
	{PaymentPending, Reacquire, Confirmed},
	{Released, Reacquire, Confirmed},
}

// paymentTable is every legal payment transition; any pair not listed is refused.
var paymentTable = []PaymentTransition{
	{NotStarted, StartAuthorization, Authorizing},
	{Authorizing, AuthorizationOK, Authorized},
	{Authorizing, PaymentDeclined, Failed},
	{Authorizing, VoidPayment, Canceled},
	{Authorizing, OutcomeUnknown, UnknownNeedsReconciliation},
	{Authorized, RequestCapture, CapturePending},
	{Authorized, VoidPayment, Canceled},
	{Authorized, OutcomeUnknown, UnknownNeedsReconciliation},
	// The authorization lapsed or was voided before confirmed seats were captured.
	{Authorized, PaymentDeclined, Failed},
	{CapturePending, CaptureOK, Paid},
	{CapturePending, PaymentDeclined, Failed},
	{CapturePending, OutcomeUnknown, UnknownNeedsReconciliation},
	{Paid, RefundPayment, Refunded},
	{Paid, RequestRefund, RefundPending},
	{Paid, OutcomeUnknown, UnknownNeedsReconciliation},
	{RefundPending, RefundPayment, Refunded},
	{RefundPending, RefundFailed, Paid},
	// A refund's failure may be learnt before its pending state was recorded, or while the
	// payment is unknown: it is counted from there too.
	{Paid, RefundFailed, Paid},
	{UnknownNeedsReconciliation, RefundFailed, Paid},
	{RefundPending, OutcomeUnknown, UnknownNeedsReconciliation},
	// A recorded decline is not the last word: compensation may later find (or fail to learn)
	// that the provider still held or took money, and that truth must be recordable.
	{Failed, VoidPayment, Canceled},
	{Failed, RefundPayment, Refunded},
	{Failed, OutcomeUnknown, UnknownNeedsReconciliation},
	// Reconciliation records the provider's truth, whatever it turns out to be.
	{UnknownNeedsReconciliation, AuthorizationOK, Authorized},
	{UnknownNeedsReconciliation, PaymentDeclined, Failed},
	{UnknownNeedsReconciliation, CaptureOK, Paid},
	{UnknownNeedsReconciliation, VoidPayment, Canceled},
	{UnknownNeedsReconciliation, RefundPayment, Refunded},
	{UnknownNeedsReconciliation, RequestRefund, RefundPending},
}

var (
	inventoryNext = map[InventoryState]map[InventoryEvent]InventoryState{}
	paymentNext   = map[PaymentState]map[PaymentEvent]PaymentState{}
)

func init() {
	for _, t := range inventoryTable {
		if inventoryNext[t.From] == nil {
			inventoryNext[t.From] = map[InventoryEvent]InventoryState{}
		}
		if _, dup := inventoryNext[t.From][t.Event]; dup {
			panic("reservation: duplicate inventory transition " + string(t.From) + "/" + string(t.Event))
		}
		inventoryNext[t.From][t.Event] = t.To
	}
	for _, t := range paymentTable {
		if paymentNext[t.From] == nil {
			paymentNext[t.From] = map[PaymentEvent]PaymentState{}
		}
		if _, dup := paymentNext[t.From][t.Event]; dup {
			panic("reservation: duplicate payment transition " + string(t.From) + "/" + string(t.Event))
		}
		paymentNext[t.From][t.Event] = t.To
	}
}

// InventoryTransitions returns a copy of the inventory table.
func InventoryTransitions() []InventoryTransition {
	return append([]InventoryTransition(nil), inventoryTable...)
}

// PaymentTransitions returns a copy of the payment table.
func PaymentTransitions() []PaymentTransition {
	return append([]PaymentTransition(nil), paymentTable...)
}

// NextInventory looks up the table only (no guards): the state ev leads to from s.
func NextInventory(s InventoryState, ev InventoryEvent) (InventoryState, bool) {
	to, ok := inventoryNext[s][ev]
	return to, ok
}

// NextPayment looks up the table only (no guards): the state ev leads to from s.
func NextPayment(s PaymentState, ev PaymentEvent) (PaymentState, bool) {
	to, ok := paymentNext[s][ev]
	return to, ok
}
