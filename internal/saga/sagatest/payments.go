package sagatest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// Payment operation names, as Payments.FailNext, FailAll, LoseResponses and Calls take them.
const (
	PayCreate               = "create"
	PayConfirmPaymentMethod = "confirmPaymentMethod"
	PayRetrieve             = "retrieve"
	PayCapture              = "capture"
	PayCancel               = "cancel"
	PayRefund               = "refund"
	PayRetrieveRefund       = "retrieveRefund"
)

// Payment methods ConfirmPaymentMethod knows: one that authorizes at once, one that asks for 3-D Secure
// (the buyer completes it with Force(pi, "requires_capture")), one that stays processing;
// every other method is declined.
const (
	PaymentMethodAuthorizes = "pm_card_visa"
	PaymentMethodThreeDS    = "pm_3ds"
	PaymentMethodProcessing = "pm_slow"
)

// CaptureBefore is when an authorization Payments makes lapses.
var CaptureBefore = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Payments is the payment provider's port (payment.Provider, the saga's Payments) in memory: a
// PaymentIntent state machine with Stripe's statuses and rules. One PaymentIntent per
// reservation (create reuses it); ConfirmPaymentMethod by payment method; Capture only from
// requires_capture and idempotent once succeeded; Cancel refused once succeeded or processing,
// the refusal replayed to the same attempt's key; Refund per attempt key, refused before a
// capture and once refunded, counted as refunded by the intent while pending, as Stripe's
// amount_refunded is; Retrieve and RetrieveRefund of an unknown id are 404 resource_missing.
//
// Tests seed the provider's truth with Put and move it with Force; FailNext and FailAll inject
// errors before an operation acts, LoseResponses errors after it acted (the answer is lost).
type Payments struct {
	// RefundStatus is the status a new refund starts in: "" succeeds at once,
	// payment.RefundPending waits for SettleRefund.
	RefundStatus payment.RefundStatus

	mu             sync.Mutex
	pis            map[string]*payment.Authorization // by PaymentIntent id
	byRes          map[string]string                 // reservation id -> PaymentIntent id
	next, lost     map[string][]error
	always         map[string]error
	calls          map[string]int
	creates        int
	captures       int
	cancels        int
	refunds        int
	cancelKeys     map[string]error
	cancelAttempts []int
	refundsByID    map[string]payment.Refund
	refundKeys     map[string]string
	refundAttempts []int
}

// NewPayments returns a provider with no PaymentIntents.
func NewPayments() *Payments {
	return &Payments{pis: map[string]*payment.Authorization{}, byRes: map[string]string{}, next: map[string][]error{},
		lost: map[string][]error{}, always: map[string]error{}, calls: map[string]int{}, cancelKeys: map[string]error{},
		refundsByID: map[string]payment.Refund{}, refundKeys: map[string]string{}}
}

// FailNext queues errors for op (a Pay* name), answered one per call, in turn, before the call
// acts.
func (p *Payments) FailNext(op string, errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next[op] = append(p.next[op], errs...)
}

// FailAll makes every call of op answer err before it acts, until FailAll(op, nil).
func (p *Payments) FailAll(op string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		delete(p.always, op)
		return
	}
	p.always[op] = err
}

// LoseResponses queues errors for op answered one per call after the call acted: the provider
// did the work and the answer never arrived. Only Capture, Cancel and Refund act.
func (p *Payments) LoseResponses(op string, errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lost[op] = append(p.lost[op], errs...)
}

// before counts a call of op and returns the error it must answer before acting. p.mu is held.
func (p *Payments) before(op string) error {
	p.calls[op]++
	if q := p.next[op]; len(q) > 0 {
		p.next[op] = q[1:]
		return q[0]
	}
	return p.always[op]
}

// after returns the error that replaces op's answer once it acted, if any. p.mu is held.
func (p *Payments) after(op string) error {
	if q := p.lost[op]; len(q) > 0 {
		p.lost[op] = q[1:]
		return q[0]
	}
	return nil
}

// Put stores a as the provider's truth about its PaymentIntent (a.PaymentIntentID), replacing
// what was there; it becomes its reservation's PaymentIntent unless the reservation has one
// already (an older intent of the same reservation, say). A missing State is derived from ProviderStatus and a missing ProviderStatus
// from State; the rest is kept as given.
func (p *Payments) Put(a payment.Authorization) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case a.State == "" && a.ProviderStatus != "":
		derived := a
		SetStatus(&derived, a.ProviderStatus)
		a.State, a.ProviderStatus = derived.State, derived.ProviderStatus
	case a.ProviderStatus == "":
		a.ProviderStatus = statusOf(a.State)
	}
	p.pis[a.PaymentIntentID] = &a
	if _, ok := p.byRes[a.ReservationID]; !ok && a.ReservationID != "" {
		p.byRes[a.ReservationID] = a.PaymentIntentID
	}
}

// PutAuthorized stores an authorized PaymentIntent of the reservation for amount (status
// requires_capture), as the provider holds it once the buyer's payment method went through, and
// returns it.
func (p *Payments) PutAuthorized(reservationID, paymentIntentID string, amount int64, currency string) payment.Authorization {
	a := payment.Authorization{PaymentIntentID: paymentIntentID, ReservationID: reservationID, Amount: amount, Currency: currency,
		PaymentMethod: PaymentMethodAuthorizes}
	SetStatus(&a, "requires_capture")
	p.Put(a)
	return a
}

// Force moves a PaymentIntent to a provider status ("requires_capture" when the buyer
// completes 3-D Secure, "canceled", "succeeded", "refunded", "declined", …); it reports
// whether the PaymentIntent exists.
func (p *Payments) Force(paymentIntentID, status string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.pis[paymentIntentID]
	if ok {
		SetStatus(a, status)
	}
	return ok
}

// PaymentIntent returns the provider's truth about a PaymentIntent.
func (p *Payments) PaymentIntent(id string) (payment.Authorization, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.pis[id]
	if !ok {
		return payment.Authorization{}, false
	}
	return *a, true
}

// ForReservation returns the reservation's PaymentIntent.
func (p *Payments) ForReservation(reservationID string) (payment.Authorization, bool) {
	p.mu.Lock()
	id, ok := p.byRes[reservationID]
	p.mu.Unlock()
	if !ok {
		return payment.Authorization{}, false
	}
	return p.PaymentIntent(id)
}

// Calls counts the calls of op, answered or refused.
func (p *Payments) Calls(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}

// Creates counts the PaymentIntents created; Captures, Cancels and Refunds the captures, voids
// and refunds that moved money (repeats replayed by idempotency do not count).
func (p *Payments) Creates() int  { return p.count(&p.creates) }
func (p *Payments) Captures() int { return p.count(&p.captures) }
func (p *Payments) Cancels() int  { return p.count(&p.cancels) }
func (p *Payments) Refunds() int  { return p.count(&p.refunds) }

func (p *Payments) count(n *int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *n
}

// CancelAttempts and RefundAttempts list the attempt numbers sent, in order.
func (p *Payments) CancelAttempts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.cancelAttempts...)
}

func (p *Payments) RefundAttempts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.refundAttempts...)
}

// statusOf is the Stripe status that shows a payment state.
func statusOf(s payment.State) string {
	switch s {
	case payment.StateAuthorized:
		return "requires_capture"
	case payment.StatePaid, payment.StateRefunded:
		return "succeeded"
	case payment.StateCanceled:
		return "canceled"
	case payment.StateFailed:
		return "requires_payment_method"
	case payment.StateAuthorizing:
		return "requires_action"
	}
	return "requires_payment_method"
}

// setStatus moves a to a provider status, with the state and amounts Stripe shows for it.
// SetStatus puts a PaymentIntent in a provider status ("requires_capture", "succeeded",
// "canceled", "refunded", "declined"; anything else is still authorizing), with the port's
// state and amounts to match, as the provider would report it.
func SetStatus(a *payment.Authorization, status string) {
	a.ProviderStatus = status
	switch status {
	case "requires_capture":
		a.State = payment.StateAuthorized
		a.AmountCapturable = a.Amount
		a.CaptureBefore = CaptureBefore
	case "succeeded":
		a.State = payment.StatePaid
		a.AmountCapturable, a.AmountReceived = 0, a.Amount
	case "canceled":
		a.State = payment.StateCanceled
		a.AmountCapturable = 0
	case "refunded":
		a.ProviderStatus, a.State, a.AmountRefunded = "succeeded", payment.StateRefunded, a.Amount
	case "declined":
		// The provider refused the buyer's payment method: the intent waits for another one.
		a.ProviderStatus, a.State = "requires_payment_method", payment.StateFailed
		a.LastDecline = &payment.Declined{Op: payment.OpConfirmPaymentMethod, Code: "card_declined", DeclineCode: "generic_decline"}
	default:
		a.State = payment.StateAuthorizing
	}
}

func missing(op payment.Op) error {
	return &payment.Failed{Op: op, Code: "resource_missing", HTTPStatus: 404}
}

func unexpectedState(op payment.Op) error {
	return &payment.Failed{Op: op, Code: "payment_intent_unexpected_state", HTTPStatus: 400}
}

// CreateOrReuseAuthorization creates the reservation's PaymentIntent, or returns the one it has.
func (p *Payments) CreateOrReuseAuthorization(_ context.Context, req payment.AuthorizationRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.before(PayCreate); err != nil {
		return payment.Authorization{}, err
	}
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	if req.PaymentIntentID != "" {
		if a, ok := p.pis[req.PaymentIntentID]; ok {
			return *a, nil
		}
	}
	if id, ok := p.byRes[req.ReservationID]; ok {
		return *p.pis[id], nil
	}
	p.creates++
	id := fmt.Sprintf("pi_%d", len(p.pis)+1)
	a := &payment.Authorization{PaymentIntentID: id, ReservationID: req.ReservationID, Amount: req.Amount, Currency: req.Currency,
		ClientSecret: id + "_secret"}
	SetStatus(a, "requires_payment_method")
	p.pis[id], p.byRes[req.ReservationID] = a, id
	return *a, nil
}

// ConfirmPaymentMethod confirms a PaymentIntent with the buyer's payment method; an intent
// already past confirmation is returned as it is (the idempotent replay of the confirm that
// moved it).
func (p *Payments) ConfirmPaymentMethod(_ context.Context, req payment.ConfirmPaymentMethodRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.before(PayConfirmPaymentMethod); err != nil {
		return payment.Authorization{}, err
	}
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	a, ok := p.pis[req.PaymentIntentID]
	if !ok {
		return payment.Authorization{}, missing(payment.OpConfirmPaymentMethod)
	}
	if a.ProviderStatus != "requires_payment_method" && a.ProviderStatus != "requires_confirmation" {
		return *a, nil
	}
	a.PaymentMethod = req.PaymentMethod
	switch req.PaymentMethod {
	case PaymentMethodAuthorizes:
		SetStatus(a, "requires_capture")
	case PaymentMethodThreeDS:
		SetStatus(a, "requires_action")
		a.NextAction = "use_stripe_sdk"
	case PaymentMethodProcessing:
		SetStatus(a, "processing")
	default:
		SetStatus(a, "declined")
		return payment.Authorization{}, &payment.Declined{Op: payment.OpConfirmPaymentMethod, PaymentIntentID: a.PaymentIntentID, Code: "card_declined"}
	}
	return *a, nil
}

// Retrieve returns the provider's truth about a PaymentIntent.
func (p *Payments) Retrieve(_ context.Context, id string) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.before(PayRetrieve); err != nil {
		return payment.Authorization{}, err
	}
	a, ok := p.pis[id]
	if !ok {
		return payment.Authorization{}, missing(payment.OpRetrieve)
	}
	return *a, nil
}

// Capture takes an authorized payment; a captured one is returned as it is.
func (p *Payments) Capture(_ context.Context, req payment.CaptureRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.before(PayCapture); err != nil {
		return payment.Authorization{}, err
	}
	a, ok := p.pis[req.PaymentIntentID]
	if !ok {
		return payment.Authorization{}, missing(payment.OpCapture)
	}
	switch a.ProviderStatus {
	case "requires_capture":
		p.captures++
		SetStatus(a, "succeeded")
	case "succeeded":
	default:
		return payment.Authorization{}, unexpectedState(payment.OpCapture)
	}
	if err := p.after(PayCapture); err != nil {
		return payment.Authorization{}, err
	}
	return *a, nil
}

// Cancel voids a PaymentIntent that holds no captured money; a canceled one is returned as it
// is. A refusal is stored under the attempt's key and replayed to it.
func (p *Payments) Cancel(_ context.Context, req payment.CancelRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	p.cancelAttempts = append(p.cancelAttempts, req.Attempt)
	if err := p.before(PayCancel); err != nil {
		return payment.Authorization{}, err
	}
	key := fmt.Sprintf("%s:cancel:%d", req.ReservationID, req.Attempt)
	if refusal, ok := p.cancelKeys[key]; ok {
		return payment.Authorization{}, refusal
	}
	a, ok := p.pis[req.PaymentIntentID]
	if !ok {
		return payment.Authorization{}, missing(payment.OpCancel)
	}
	switch a.ProviderStatus {
	case "succeeded", "processing":
		refusal := unexpectedState(payment.OpCancel)
		p.cancelKeys[key] = refusal
		return payment.Authorization{}, refusal
	case "canceled":
	default:
		p.cancels++
		SetStatus(a, "canceled")
	}
	if err := p.after(PayCancel); err != nil {
		return payment.Authorization{}, err
	}
	return *a, nil
}

// Refund returns captured money, once per attempt key.
func (p *Payments) Refund(_ context.Context, req payment.RefundRequest) (payment.Refund, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refundAttempts = append(p.refundAttempts, req.EffectiveAttempt())
	if err := p.before(PayRefund); err != nil {
		return payment.Refund{}, err
	}
	key := fmt.Sprintf("%s:refund:%d", req.ReservationID, req.EffectiveAttempt())
	if id, ok := p.refundKeys[key]; ok {
		return p.refundsByID[id], nil
	}
	a, ok := p.pis[req.PaymentIntentID]
	if !ok {
		return payment.Refund{}, missing(payment.OpRefund)
	}
	switch a.State {
	case payment.StatePaid:
	case payment.StateRefunded:
		// A new key on money already returned in full: Stripe refuses it.
		return payment.Refund{}, &payment.Failed{Op: payment.OpRefund, Category: payment.FailureObjectState,
			Code: "charge_already_refunded", HTTPStatus: 400}
	default:
		return payment.Refund{}, &payment.Failed{Op: payment.OpRefund, Code: "charge_not_captured", HTTPStatus: 400}
	}
	status := p.RefundStatus
	if status == "" {
		status = payment.RefundSucceeded
	}
	if status != payment.RefundFailed && status != payment.RefundCanceled {
		p.refunds++
		// Like Stripe's amount_refunded, the intent counts a pending refund as refunded.
		SetStatus(a, "refunded")
	}
	rf := payment.Refund{RefundID: fmt.Sprintf("re_%d", len(p.refundsByID)+1), PaymentIntentID: a.PaymentIntentID,
		ReservationID: req.ReservationID, Amount: a.Amount, Currency: a.Currency, Status: status}
	p.refundsByID[rf.RefundID], p.refundKeys[key] = rf, rf.RefundID
	if err := p.after(PayRefund); err != nil {
		return payment.Refund{}, err
	}
	return rf, nil
}

// SettleRefund ends a pending refund: succeeded, or failed or canceled, which leaves the money
// captured. It reports whether the refund exists.
func (p *Payments) SettleRefund(refundID string, status payment.RefundStatus) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	rf, ok := p.refundsByID[refundID]
	if !ok {
		return false
	}
	rf.Status = status
	p.refundsByID[refundID] = rf
	if status != payment.RefundSucceeded {
		a := p.pis[rf.PaymentIntentID]
		SetStatus(a, "succeeded")
		a.AmountRefunded = 0
	}
	return true
}

// RetrieveRefund reads back a refund Refund made.
func (p *Payments) RetrieveRefund(_ context.Context, refundID string) (payment.Refund, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.before(PayRetrieveRefund); err != nil {
		return payment.Refund{}, err
	}
	rf, ok := p.refundsByID[refundID]
	if !ok {
		return payment.Refund{}, missing(payment.OpRetrieveRefund)
	}
	return rf, nil
}
