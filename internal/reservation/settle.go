package reservation

import (
	"slices"
	"strconv"
	"time"
)

// Settlement is one decision: given what is stored about a reservation and what the provider
// says about its money, what is the one next thing to do so that, at rest, the seats are
// CONFIRMED exactly when the money is captured, and nobody is charged for seats they gave up
// or did not get. The saga's reconcile and compensate steps, the sweeper and the webhook all
// carry out this answer, one action at a time, reading the reservation (and the provider)
// again after each; none of them decides on its own.
//
// The decision first picks a goal. A reservation is unwound (money voided or refunded, seats
// released) when the customer cancelled, when the payment was given up (FAILED, CANCELED,
// REFUNDED, REFUND_PENDING), when the provider says the money can no longer be taken
// (declined, canceled, refunded), when a hold lapsed and the late-success policy does not take
// the seats back, or when confirmed seats lost their authorization. It is sold (seats
// confirmed, money captured) when the provider holds or took the money and the seats are
// confirmed, still held live, or may be reacquired. Otherwise it waits: for the buyer (paying
// during a live hold) or for the provider (processing, a refund pending, or no answer).
//
// Then, money before seats: the stored payment state is brought to the provider's truth
// (through UNKNOWN_NEEDS_RECONCILIATION where the transition table has no direct edge),
// money still held for an unwound reservation is voided or refunded, and only once no money
// is or can be taken are the seats released, in the same write as the payment record where
// one is due.

// Truth is what the provider says about a reservation's money, in the terms the decision
// needs.
type Truth string

const (
	// TruthNotAsked: the caller has not asked the provider yet. The decision answers from the
	// stored states alone where they suffice, else asks for the truth (ActAsk).
	TruthNotAsked Truth = "not_asked"
	// TruthUnavailable: the provider was asked and did not answer.
	TruthUnavailable Truth = "unavailable"
	// TruthNoPayment: no payment exists (the reservation recorded no PaymentIntent).
	TruthNoPayment Truth = "no_payment"
	// TruthAwaitingBuyer: the payment waits for the buyer (a payment method, a confirmation,
	// 3-D Secure). It can be voided.
	TruthAwaitingBuyer Truth = "awaiting_buyer"
	// TruthDeclined: the buyer's payment method was refused; the intent waits for another
	// one and can be voided.
	TruthDeclined Truth = "declined"
	// TruthProcessing: the provider is processing the payment; it cannot be voided now and
	// may still be authorized.
	TruthProcessing Truth = "processing"
	// TruthAuthorized: the money is held and can be captured or voided.
	TruthAuthorized Truth = "authorized"
	// TruthCaptured: the money was taken and not (or no longer, after a failed refund)
	// refunded.
	TruthCaptured Truth = "captured"
	// TruthCanceled: the authorization was voided or lapsed; no money is held.
	TruthCanceled Truth = "canceled"
	// TruthRefundPending: a refund was accepted and has not succeeded yet.
	TruthRefundPending Truth = "refund_pending"
	// TruthRefunded: the money was taken and returned in full.
	TruthRefunded Truth = "refunded"
	// TruthRefundFailed: the reservation's latest refund failed (or was refused): the money is
	// still captured, and the failure must be counted before the next attempt.
	TruthRefundFailed Truth = "refund_failed"
)

// Truths lists every provider truth.
func Truths() []Truth {
	return []Truth{TruthNotAsked, TruthUnavailable, TruthNoPayment, TruthAwaitingBuyer, TruthDeclined,
		TruthProcessing, TruthAuthorized, TruthCaptured, TruthCanceled, TruthRefundPending, TruthRefunded, TruthRefundFailed}
}

// MaxRefundAttempts bounds refunds of one reservation that the provider reports failed; past
// it a person must look (ActEscalate), because retrying the same refund keeps failing.
const MaxRefundAttempts = 3

// Facts is everything the decision reads.
type Facts struct {
	Inventory InventoryState
	Payment   PaymentState
	Truth     Truth
	// HoldLive: the hold's deadline is still ahead (meaningful while HELD or PAYMENT_PENDING).
	HoldLive         bool
	CustomerCanceled bool
	// Unwinding: the payment was declined, voided or refunded once (Reservation.Unwinding).
	Unwinding bool
	Policy    LateSuccessPolicy
	// CaptureDeadlinePassed: the provider's authorization can no longer be captured in
	// time, so a lapsed hold is not reacquired.
	CaptureDeadlinePassed bool
	// SeatsLost: a reacquire found the seats taken by someone else.
	SeatsLost bool
	// RefundAttempts counts refunds the provider reported failed.
	RefundAttempts int
	// WasAuthorized: the payment was authorized at some point (a capture deadline was
	// recorded). It only names the outcome.
	WasAuthorized bool
	// HoldExpired: the seats were given back because the hold lapsed (Outcome EXPIRED). It
	// only names the outcome.
	HoldExpired bool
}

// FactsOf fills the stored half of the facts from r at the instant now; the caller adds the
// provider's truth, the policy and what it learned (SeatsLost).
func FactsOf(r Reservation, truth Truth, policy LateSuccessPolicy, t time.Time) Facts {
	return Facts{
		Inventory: r.Inventory, Payment: r.Payment, Truth: truth,
		HoldLive:              r.HoldLive(t),
		CustomerCanceled:      r.CustomerCanceled,
		Unwinding:             r.Unwinding,
		Policy:                policy,
		CaptureDeadlinePassed: !r.CaptureBefore.IsZero() && !t.Before(r.CaptureBefore),
		RefundAttempts:        r.RefundAttempts,
		WasAuthorized:         !r.CaptureBefore.IsZero(),
		HoldExpired:           r.Outcome == OutcomeExpired,
	}
}

// Action is the kind of the next step.
type Action string

const (
	// ActDone: settled; Outcome says how.
	ActDone Action = "done"
	// ActAsk: retrieve the provider's truth and decide again.
	ActAsk Action = "ask"
	// ActRecord: perform payment event Event on the stored state (with ReleaseSeats, give
	// the seats back in the same write; Expired says whether as an expiry).
	ActRecord Action = "record"
	// ActConfirm: sell the seats of a live hold whose payment is authorized.
	ActConfirm Action = "confirm"
	// ActReacquire: take the seats back for money that came after the hold lapsed.
	ActReacquire Action = "reacquire"
	// ActCapture: capture the authorization of confirmed seats.
	ActCapture Action = "capture"
	// ActVoid: cancel the payment at the provider.
	ActVoid Action = "void"
	// ActRefund: refund the captured money (attempt RefundAttempts+1).
	ActRefund Action = "refund"
	// ActRelease: give the seats back (Expired: as an expiry).
	ActRelease Action = "release"
	// ActWait: nothing to do now; Waiting says for whom.
	ActWait Action = "wait"
	// ActEscalate: a person must look; Reason says why.
	ActEscalate Action = "escalate"
)

// Settled names how a settled reservation ended.
type Settled string

const (
	SettledSold          Settled = "sold"
	SettledCanceled      Settled = "canceled"
	SettledDeclined      Settled = "declined"
	SettledExpired       Settled = "expired"
	SettledVoided        Settled = "voided"
	SettledCaptureFailed Settled = "capture_failed"
)

// Waiting names whom an ActWait waits for.
type Waiting string

const (
	WaitBuyer    Waiting = "buyer"
	WaitProvider Waiting = "provider"
)

// Decision is the one next step.
type Decision struct {
	Action Action
	// Event is the payment event of an ActRecord.
	Event PaymentEvent
	// ReleaseSeats, with ActRecord, gives the seats back in the same write.
	ReleaseSeats bool
	// Expired, with ActRelease or ReleaseSeats: the seats go back because the hold lapsed.
	Expired bool
	Outcome Settled
	Waiting Waiting
	Reason  string
}

// Decide is the settlement decision (see the top of this file). It is total: every
// combination of facts has an answer.
func Decide(f Facts) Decision {
	if d, ok := atRest(f); ok {
		return d
	}
	if !slices.Contains(Truths(), f.Truth) {
		// A truth outside the list (the zero value included) says nothing about the money;
		// guessing would release seats while it may be held.
		return Decision{Action: ActEscalate, Reason: "unknown provider truth " + strconv.Quote(string(f.Truth))}
	}
	switch f.Truth {
	case TruthNotAsked:
		return Decision{Action: ActAsk}
	case TruthUnavailable:
		// Recording the unknown keeps the seats protected and puts the reservation on the
		// reconciliation index until the provider answers. Not from FAILED: the decision never
		// releases seats without the provider's answer, and FAILED names the outcome.
		if MayRecordUnknown(f.Payment) {
			return Decision{Action: ActRecord, Event: OutcomeUnknown, Reason: "the provider did not answer"}
		}
		return Decision{Action: ActWait, Waiting: WaitProvider, Reason: "the provider did not answer"}
	case TruthRefundFailed:
		// Count the failed refund first, whatever the goal: the next refund is a new attempt.
		return record(f, RefundFailed, false, false)
	}
	switch goalOf(f) {
	case goalSell:
		return sell(f)
	case goalUnwind:
		return unwind(f)
	}
	return Decision{Action: ActWait, Waiting: WaitBuyer, Reason: "the buyer is paying while the hold lasts"}
}

// atRest answers the combinations the stored states settle without the provider.
func atRest(f Facts) (Decision, bool) {
	switch {
	case f.Inventory == Confirmed && f.Payment == Paid:
		return done(SettledSold), true
	case f.Inventory != Released:
		return Decision{}, false
	}
	// Released seats: settled once no money is or may be held.
	switch f.Payment {
	case NotStarted, Failed, Canceled, Refunded:
	default:
		return Decision{}, false
	}
	// A truth the caller already has still counts: money found held or taken for released
	// seats is not at rest, whatever the stored state says.
	switch f.Truth {
	case TruthAuthorized, TruthCaptured, TruthRefundPending, TruthRefundFailed, TruthProcessing, TruthAwaitingBuyer, TruthDeclined:
		if f.Payment != NotStarted {
			return Decision{}, false
		}
	}
	return done(outcomeOf(f)), true
}

func done(s Settled) Decision { return Decision{Action: ActDone, Outcome: s} }

// outcomeOf names a settled, released reservation from its history.
func outcomeOf(f Facts) Settled {
	switch {
	case f.CustomerCanceled:
		return SettledCanceled
	case f.Payment == Refunded:
		return SettledVoided
	case f.Payment == Failed && f.WasAuthorized:
		return SettledCaptureFailed
	case f.Payment == Failed:
		return SettledDeclined
	case f.Payment == Canceled && f.WasAuthorized:
		return SettledVoided
	case f.Payment == Canceled && f.HoldExpired:
		return SettledExpired
	case f.Payment == Canceled:
		return SettledDeclined
	}
	return SettledExpired
}

type goal int

const (
	goalWait goal = iota
	goalSell
	goalUnwind
)

// goalOf picks sell, unwind or wait for a reservation that is not at rest.
func goalOf(f Facts) goal {
	givenUp := f.CustomerCanceled || f.Unwinding
	switch f.Payment {
	case Failed, Canceled, Refunded, RefundPending:
		givenUp = true
	}
	if givenUp {
		return goalUnwind
	}
	moneyHeld := f.Truth == TruthAuthorized || f.Truth == TruthCaptured
	switch f.Truth {
	case TruthDeclined, TruthCanceled, TruthRefunded, TruthRefundPending:
		return goalUnwind
	}
	switch {
	case f.Inventory == Confirmed:
		if moneyHeld {
			return goalSell
		}
		// Confirmed seats without an authorization: nothing can be captured any more.
		return goalUnwind
	case f.HoldActiveLive():
		if moneyHeld {
			return goalSell
		}
		return goalWait
	}
	// The hold lapsed (seats still held past the deadline, or already released).
	// The capture deadline matters only for money still to capture.
	tooLate := f.CaptureDeadlinePassed && f.Truth == TruthAuthorized
	if moneyHeld && f.Policy != LateSuccessVoid && !f.SeatsLost && !tooLate {
		return goalSell
	}
	return goalUnwind
}

// HoldActiveLive reports seats held (HELD or PAYMENT_PENDING) with the deadline ahead.
func (f Facts) HoldActiveLive() bool {
	return (f.Inventory == Held || f.Inventory == PaymentPending) && f.HoldLive
}

// sell is the next step towards confirmed seats and captured money; the provider holds or
// took the money (TruthAuthorized or TruthCaptured).
func sell(f Facts) Decision {
	if f.Inventory == Confirmed {
		switch {
		case f.Truth == TruthCaptured:
			return record(f, CaptureOK, false, false)
		case f.Payment == Authorized:
			return Decision{Action: ActRecord, Event: RequestCapture}
		case f.Payment == CapturePending || f.Payment == UnknownNeedsReconciliation:
			return Decision{Action: ActCapture}
		}
		return record(f, AuthorizationOK, false, false)
	}
	// Bring the record to the truth first: the seat writes require it.
	switch {
	case f.Truth == TruthCaptured && f.Payment != Paid:
		return record(f, CaptureOK, false, false)
	case f.Truth == TruthAuthorized && f.Payment != Authorized:
		return record(f, AuthorizationOK, false, false)
	case f.HoldActiveLive() && f.Payment == Authorized:
		return Decision{Action: ActConfirm}
	}
	// Live and paid (captured before confirming), or the hold lapsed: Reacquire confirms
	// seats that are still ours or free.
	return Decision{Action: ActReacquire}
}

// unwind is the next step towards released seats and no money taken.
func unwind(f Facts) Decision {
	seatsOut := f.Inventory != Released
	// A lapsed hold goes back as an expiry even after a cancel: its seats may already be
	// claimed by someone else, which an expiry leaves alone and a release refuses.
	expired := (f.Inventory == Held || f.Inventory == PaymentPending) && !f.HoldLive
	switch f.Truth {
	case TruthDeclined:
		// Record the decline first: FAILED is the durable fact that the saga gave up, which
		// a later authorization of the same intent must not overturn. Not from UNKNOWN: an
		// unanswered void records UNKNOWN again, and each retry would flip the two.
		if f.Payment == Authorizing {
			return record(f, PaymentDeclined, false, false)
		}
		return Decision{Action: ActVoid}
	case TruthAuthorized:
		// Record the authorization before voiding it: the record then says money was held
		// (capture deadline included), which names the outcome "voided" and tells the
		// customer their late payment was returned. Not from UNKNOWN, as for a decline.
		if f.Payment == Authorizing {
			return record(f, AuthorizationOK, false, false)
		}
		return Decision{Action: ActVoid}
	case TruthAwaitingBuyer:
		return Decision{Action: ActVoid}
	case TruthProcessing:
		// It cannot be voided now. Seats of a payment still authorizing may go back (a late
		// authorization is then voided); once the payment is recorded otherwise they stay
		// protected until the provider settles it.
		if seatsOut && f.Payment == Authorizing {
			return Decision{Action: ActRelease, Expired: expired, Reason: "the payment is still processing"}
		}
		return Decision{Action: ActWait, Waiting: WaitProvider, Reason: "the payment is still processing"}
	case TruthCaptured:
		switch {
		case f.Payment == RefundPending:
			return record(f, RefundFailed, false, false)
		case f.Payment != Paid:
			return record(f, CaptureOK, false, false)
		case f.RefundAttempts >= MaxRefundAttempts:
			return Decision{Action: ActEscalate, Reason: "refunds keep failing"}
		}
		return Decision{Action: ActRefund}
	case TruthRefundPending:
		if f.Payment != RefundPending {
			return record(f, RequestRefund, false, false)
		}
		return Decision{Action: ActWait, Waiting: WaitProvider, Reason: "the refund is pending"}
	case TruthRefunded:
		if f.Payment != Refunded {
			return record(f, RefundPayment, seatsOut, expired)
		}
	case TruthCanceled:
		if f.Payment != Canceled && f.Payment != Failed {
			ev := VoidPayment
			if f.Inventory == Confirmed {
				// Confirmed seats whose authorization is gone: the capture failed.
				ev = PaymentDeclined
			}
			return record(f, ev, seatsOut, expired)
		}
	case TruthNoPayment:
		if f.Payment != NotStarted && f.Payment != Failed && f.Payment != Canceled && f.Payment != Refunded {
			return Decision{Action: ActEscalate, Reason: "a payment is recorded but the provider has none"}
		}
	}
	if !seatsOut {
		return done(outcomeOf(f))
	}
	if !seatsMayGo(f.Payment) {
		return Decision{Action: ActEscalate, Reason: "seats cannot go back in payment state " + string(f.Payment)}
	}
	return Decision{Action: ActRelease, Expired: expired}
}

// record performs ev where the table allows it from the stored state, or first moves to
// UNKNOWN_NEEDS_RECONCILIATION, whose exits take any outcome. Seats go back in the same
// write only where the recorded state lets them.
func record(f Facts, ev PaymentEvent, release, expired bool) Decision {
	got, ok := recordable(f.Payment, ev)
	if !ok {
		return Decision{Action: ActEscalate, Reason: "no way to record " + string(ev) + " from " + string(f.Payment)}
	}
	d := Decision{Action: ActRecord, Event: got}
	if got == ev && release {
		if to, _ := NextPayment(f.Payment, ev); seatsMayGo(to) {
			d.ReleaseSeats, d.Expired = true, expired
		}
	}
	return d
}

// MayRecordUnknown reports whether an unanswered provider call is recorded as
// UNKNOWN_NEEDS_RECONCILIATION from payment state p: where the table allows it, but never from
// FAILED, which names the outcome (the decision releases nothing without the provider's answer).
func MayRecordUnknown(p PaymentState) bool {
	_, ok := NextPayment(p, OutcomeUnknown)
	return ok && p != Failed
}

// recordable returns ev when the table has it from p, else OutcomeUnknown when that leads to a
// state from which ev is possible.
func recordable(p PaymentState, ev PaymentEvent) (PaymentEvent, bool) {
	if _, ok := NextPayment(p, ev); ok {
		return ev, true
	}
	if _, ok := NextPayment(p, OutcomeUnknown); ok {
		if _, ok := NextPayment(UnknownNeedsReconciliation, ev); ok {
			return OutcomeUnknown, true
		}
	}
	return "", false
}
