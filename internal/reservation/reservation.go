package reservation

import (
	"slices"
	"time"
)

// Reservation is one customer's attempt to buy seats, with its two independent state fields.
// Amount is in minor units of Currency. Times are UTC.
type Reservation struct {
	ID              string
	CustomerID      string
	EventID         string
	SeatIDs         []string
	Amount          int64
	Currency        string
	HoldExpiresAt   time.Time
	Inventory       InventoryState
	Payment         PaymentState
	Version         int64
	IdempotencyKey  string
	RequestHash     string
	PaymentIntentID string
	TaskToken       string
	ExecutionARN    string
	CorrelationID   string
	Outcome         Outcome
	// CancelAttempts counts the voids the provider refused (e.g. while the payment was still
	// processing). The next void is attempt CancelAttempts+1 with its own idempotency key, so a
	// stored refusal is never replayed to it; a void that went unanswered keeps its attempt.
	CancelAttempts int
	// CustomerCanceled records that the customer asked to cancel. Compensation then owns the
	// reservation: no later provider truth (a late authorization or capture) may confirm,
	// capture or reacquire its seats; it is voided or refunded instead. Once set it stays.
	CustomerCanceled bool
	// Unwinding records that the reservation is being unwound: its payment was declined,
	// voided or refunded (it entered FAILED, CANCELED, REFUND_PENDING or REFUNDED). Like
	// CustomerCanceled it stays once set, so a later provider truth (an authorization after a
	// decline, a refund that failed) is voided or refunded again, never sold, whatever states
	// the payment passes through afterwards (UNKNOWN included).
	Unwinding bool
	// RefundID is the provider's id of the latest refund; only the refund itself says whether
	// it succeeded (a payment looks refunded at the provider while its refund is pending).
	RefundID string
	// RefundAttempts counts refunds the provider reported failed; the next refund is attempt
	// RefundAttempts+1 with its own idempotency key.
	RefundAttempts int
	// CaptureBefore is when the provider's authorization lapses; capture must happen earlier.
	CaptureBefore time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// ReconcileSince is when the payment became UNKNOWN_NEEDS_RECONCILIATION; zero otherwise.
	// A reservation read from the inventory store carries it for every unsettled payment the
	// sweeper must find (Unsettled): then it is when it joined the reconciliation index.
	ReconcileSince time.Time
	// SlotKey names the customer's hold slot (HoldSlotKey) this reservation took at the gate;
	// empty without a cap. The write that ends its hold gives the slot back.
	SlotKey string
}

// Guard is what a caller must know to change a reservation: whom it acts for and the version it
// read. The version is a fencing token: a writer holding an old version changes nothing.
type Guard struct {
	Owner   string
	Version int64
}

// GuardOf returns the guard matching r as it is now.
func GuardOf(r Reservation) Guard { return Guard{Owner: r.ID, Version: r.Version} }

// HoldLive reports whether the hold's deadline is still ahead at now. A hold is live strictly
// before HoldExpiresAt and expired from that instant on, so exactly one of "confirmable" and
// "claimable by others" is true at any instant.
func (r Reservation) HoldLive(now time.Time) bool { return now.Before(r.HoldExpiresAt) }

// HoldActive reports whether r keeps its seats out of others' reach (HELD or PAYMENT_PENDING).
func (r Reservation) HoldActive() bool {
	return r.Inventory == Held || r.Inventory == PaymentPending
}

// Unsettled reports whether r's seats and money disagree while no hold's deadline leads the
// sweeper to it: the payment is UNKNOWN_NEEDS_RECONCILIATION, whatever the seats; or the seats
// are CONFIRMED while the money is not captured; or the seats have left their hold (RELEASED)
// while money is or may still be authorized or taken (AUTHORIZING, AUTHORIZED, CAPTURE_PENDING,
// PAID, REFUND_PENDING). While a hold keeps the seats (HELD, PAYMENT_PENDING), the hold's
// deadline puts it on the expired-holds index instead. At rest, seats are CONFIRMED exactly
// when their money is captured; every reservation for which that is not (yet) true must be
// findable by the sweeper, so that one failed write can never strand a seat or money.
func (r Reservation) Unsettled() bool {
	switch {
	case r.Payment == UnknownNeedsReconciliation:
		return true
	case r.HoldActive():
		return false
	case r.Inventory == Confirmed:
		return r.Payment != Paid
	}
	switch r.Payment {
	case Authorizing, Authorized, CapturePending, Paid, RefundPending:
		return true
	}
	return false
}

// UnsettledSince is when next, the reservation after a change from prev, joined the set the
// sweeper must find (Unsettled), zero when it is not in it: when the payment became
// UNKNOWN_NEEDS_RECONCILIATION, else when the reservation joined, kept while it stays (e.g.
// AUTHORIZED -> CAPTURE_PENDING), else now. Every store keeps it so that the oldest unsettled
// reservation, which operators alarm on, is the same whichever store holds it.
func UnsettledSince(prev, next Reservation, now time.Time) time.Time {
	switch {
	case !next.Unsettled():
		return time.Time{}
	case next.Payment == UnknownNeedsReconciliation && !next.ReconcileSince.IsZero():
		return next.ReconcileSince.UTC()
	case prev.Unsettled() && !prev.ReconcileSince.IsZero():
		return prev.ReconcileSince.UTC()
	}
	return now.UTC()
}

// Cancel records the customer's cancel: from then on nothing may confirm, reacquire or capture
// the reservation, and settlement voids or refunds it. It is refused once the seats are
// CONFIRMED (a sold seat is not cancellable here). Cancelling again changes nothing: the
// returned reservation keeps its version, which tells the caller there is nothing to write.
func (r Reservation) Cancel(g Guard, now time.Time) (Reservation, error) {
	if err := r.fenced(g); err != nil {
		return r, err
	}
	if r.CustomerCanceled {
		return r, nil
	}
	if r.Inventory == Confirmed {
		return r, &GuardFailed{ReservationID: r.ID, Event: "Cancel", Inventory: r.Inventory, Payment: r.Payment,
			Reason: "the seats are confirmed"}
	}
	next := r.bumped(now)
	next.CustomerCanceled = true
	return next, nil
}

// fenced checks that g acts for r at its current version.
func (r Reservation) fenced(g Guard) error {
	if g.Owner != r.ID {
		return &NotOwner{ReservationID: g.Owner, Owner: r.ID, Resource: "reservation " + r.ID}
	}
	if g.Version != r.Version {
		return &StaleVersion{ReservationID: r.ID, Expected: g.Version, Actual: r.Version}
	}
	return nil
}

func (r Reservation) check(machine, expected, actual string, g Guard) error {
	if err := r.fenced(g); err != nil {
		return err
	}
	if expected != actual {
		return &UnexpectedState{ReservationID: r.ID, Machine: machine, Expected: expected, Actual: actual}
	}
	return nil
}

// ApplyInventory performs ev on r if r is in state from, owned by g.Owner at g.Version, the
// table allows it and its guards hold at now. It returns the changed copy with Version+1; on any
// error r is returned unchanged with a typed error.
func (r Reservation) ApplyInventory(ev InventoryEvent, from InventoryState, g Guard, now time.Time) (Reservation, error) {
	if err := r.check("inventory", string(from), string(r.Inventory), g); err != nil {
		return r, err
	}
	to, ok := NextInventory(r.Inventory, ev)
	if !ok {
		return r, &IllegalTransition{ReservationID: r.ID, Machine: "inventory", From: string(r.Inventory), Event: string(ev)}
	}
	if err := r.inventoryGuard(ev, now); err != nil {
		return r, err
	}
	next := r.bumped(now)
	next.Inventory = to
	switch ev {
	case Confirm:
		next.Outcome = OutcomeConfirmed
	case Reacquire:
		next.Outcome = OutcomeConfirmedLate
	case Release:
		next.Outcome = OutcomeReleased
	case Expire:
		next.Outcome = OutcomeExpired
	}
	return next, nil
}

// seatsMayGo is the payment states in which seats may be given back: no money is or may be held.
func seatsMayGo(p PaymentState) bool {
	switch p {
	case NotStarted, Authorizing, Failed, Canceled, Refunded:
		return true
	}
	return false
}

func (r Reservation) inventoryGuard(ev InventoryEvent, now time.Time) error {
	refuse := func(reason string) error {
		return &GuardFailed{ReservationID: r.ID, Event: string(ev), Inventory: r.Inventory, Payment: r.Payment, Reason: reason}
	}
	switch ev {
	case StartPayment:
		if !r.HoldLive(now) {
			return &HoldExpired{ReservationID: r.ID, ExpiredAt: r.HoldExpiresAt, Now: now}
		}
		if r.Payment != NotStarted {
			return refuse("payment already started")
		}
	case Confirm:
		if r.CustomerCanceled {
			return refuse("the customer canceled")
		}
		if !r.HoldLive(now) {
			return &HoldExpired{ReservationID: r.ID, ExpiredAt: r.HoldExpiresAt, Now: now}
		}
		if r.Payment != Authorized {
			return refuse("payment is not authorized")
		}
	case Reacquire:
		if r.CustomerCanceled {
			return refuse("the customer canceled")
		}
		if r.Payment != Authorized && r.Payment != Paid {
			return refuse("only an authorized or paid payment reacquires seats")
		}
	case Expire:
		if r.HoldLive(now) {
			return &HoldStillLive{ReservationID: r.ID, ExpiresAt: r.HoldExpiresAt, Now: now}
		}
		fallthrough
	case Release:
		if !seatsMayGo(r.Payment) {
			return refuse("money may be held: void, refund or reconcile first")
		}
	}
	return nil
}

// ApplyPayment performs ev on r's payment state, with the same guard rules as ApplyInventory.
func (r Reservation) ApplyPayment(ev PaymentEvent, from PaymentState, g Guard, now time.Time) (Reservation, error) {
	if err := r.check("payment", string(from), string(r.Payment), g); err != nil {
		return r, err
	}
	to, ok := NextPayment(r.Payment, ev)
	if !ok {
		return r, &IllegalTransition{ReservationID: r.ID, Machine: "payment", From: string(r.Payment), Event: string(ev)}
	}
	switch ev {
	case StartAuthorization:
		// Money moves only for seats nobody else can claim meanwhile.
		if r.Inventory != PaymentPending {
			return r, &GuardFailed{ReservationID: r.ID, Event: string(ev), Inventory: r.Inventory, Payment: r.Payment,
				Reason: "seats are not PAYMENT_PENDING"}
		}
	case RequestCapture:
		if r.CustomerCanceled {
			return r, &GuardFailed{ReservationID: r.ID, Event: string(ev), Inventory: r.Inventory, Payment: r.Payment,
				Reason: "the customer canceled"}
		}
		if r.Inventory != Confirmed {
			return r, &GuardFailed{ReservationID: r.ID, Event: string(ev), Inventory: r.Inventory, Payment: r.Payment,
				Reason: "seats are not confirmed"}
		}
	}
	next := r.bumped(now)
	next.Payment = to
	switch to {
	case Failed, Canceled, RefundPending, Refunded:
		next.Unwinding = true
	}
	if ev == RefundFailed {
		// The failed refund is counted and forgotten: the next one is a new attempt with a
		// key and an id of its own.
		next.RefundAttempts++
		next.RefundID = ""
	}
	if to == UnknownNeedsReconciliation {
		next.ReconcileSince = now.UTC()
	} else {
		next.ReconcileSince = time.Time{}
	}
	return next, nil
}

func (r Reservation) bumped(now time.Time) Reservation {
	next := r
	next.SeatIDs = slices.Clone(r.SeatIDs)
	next.Version = r.Version + 1
	next.UpdatedAt = now.UTC()
	return next
}
