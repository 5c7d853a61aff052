package saga

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
)

// fakeStore is sagatest's MemStore, which applies internal/reservation's rules and the DynamoDB
// store's seat rules (internal/saga/storecontract runs both against the same behaviour), under
// the names these tests use: res and mu reach the stored reservations, fail injects errors,
// owner follows the seats' owners and events logs every outbox record as "event:reason" with
// ":notify" when the customer must hear about it.
type fakeStore struct {
	*sagatest.MemStore
	now    func() time.Time
	mu     sync.Locker
	res    map[string]reservation.Reservation
	fail   map[string]error
	owner  map[string]string // seat id -> reservation id holding it
	events []string
}

func newFakeStore(now func() time.Time) *fakeStore {
	f := &fakeStore{now: now, owner: map[string]string{}}
	// Through f.now, so that a test may swap the clock after construction.
	f.MemStore = sagatest.NewMemStore(func() time.Time { return f.now() })
	f.mu, f.res, f.fail = f.MemStore, f.Reservations(), f.Fail
	f.OnChange = func(c sagatest.Change) {
		for _, seat := range c.Seats {
			if seat.ReservationID == "" {
				delete(f.owner, seat.SeatID)
			} else {
				f.owner[seat.SeatID] = seat.ReservationID
			}
		}
		if c.Record == nil {
			return
		}
		name := string(c.Record.Type)
		switch {
		case c.PaymentEvent != "":
			name = "Payment" + string(c.PaymentEvent)
		case c.InventoryEvent != "" && c.InventoryEvent != reservation.Claim:
			name = string(c.InventoryEvent)
		}
		e := name + ":" + c.Reason
		if c.NotifyCustomer {
			e += ":notify"
		}
		f.events = append(f.events, e)
	}
	return f
}

func (f *fakeStore) get(id string) reservation.Reservation {
	r, _ := f.Reservation(id)
	return r
}

// fakePayments is a small PaymentIntent state machine with a ledger and injectable outcomes.
type fakePayments struct {
	mu       sync.Mutex
	pis      map[string]*payment.Authorization // by PaymentIntent id
	byRes    map[string]string                 // reservation id -> PaymentIntent id
	captures int                               // captures that moved money
	cancels  int
	refunds  int
	creates  int
	// fail queues errors per op ("create", "confirm", "retrieve", "capture", "cancel",
	// "refund"); actAndFail makes the op act and then return its queued error (lost response).
	fail       map[string][]error
	actAndFail map[string]bool
	// cancelKeys holds the refusals stored under cancel idempotency keys, which the
	// provider replays to a cancel with the same key; cancelAttempts lists the attempts sent.
	cancelKeys     map[string]error
	cancelAttempts []int
	// refundsByID holds every refund made, as RetrieveRefund answers about it; refundKeys the
	// refund made under each idempotency key ({reservationId}:refund:{attempt}), which the
	// provider replays; refundAttempts lists the attempts sent. refundStatus is the status a
	// new refund starts in ("" succeeds at once; payment.RefundPending waits for settleRefund).
	refundsByID    map[string]payment.Refund
	refundKeys     map[string]string
	refundAttempts []int
	refundStatus   payment.RefundStatus
}

func newFakePayments() *fakePayments {
	return &fakePayments{pis: map[string]*payment.Authorization{}, byRes: map[string]string{}, fail: map[string][]error{},
		actAndFail: map[string]bool{}, cancelKeys: map[string]error{}, refundsByID: map[string]payment.Refund{},
		refundKeys: map[string]string{}}
}

func (p *fakePayments) take(op string) error {
	if q := p.fail[op]; len(q) > 0 {
		p.fail[op] = q[1:]
		return q[0]
	}
	return nil
}

func (p *fakePayments) setStatus(a *payment.Authorization, status string) {
	sagatest.SetStatus(a, status)
}

func (p *fakePayments) status(reservationID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.pis[p.byRes[reservationID]]; ok {
		return a.ProviderStatus
	}
	return ""
}

func (p *fakePayments) force(reservationID, status string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setStatus(p.pis[p.byRes[reservationID]], status)
}

func (p *fakePayments) CreateOrReuseAuthorization(_ context.Context, req payment.AuthorizationRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.take("create"); err != nil {
		return payment.Authorization{}, err
	}
	if id, ok := p.byRes[req.ReservationID]; ok {
		return *p.pis[id], nil
	}
	p.creates++
	id := fmt.Sprintf("pi_%d", len(p.pis)+1)
	a := &payment.Authorization{PaymentIntentID: id, ReservationID: req.ReservationID, Amount: req.Amount, Currency: req.Currency}
	p.setStatus(a, "requires_payment_method")
	p.pis[id], p.byRes[req.ReservationID] = a, id
	return *a, nil
}

func (p *fakePayments) ConfirmPaymentMethod(_ context.Context, req payment.ConfirmPaymentMethodRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.take("confirm"); err != nil {
		return payment.Authorization{}, err
	}
	a := p.pis[req.PaymentIntentID]
	switch req.PaymentMethod {
	case "pm_card_visa":
		p.setStatus(a, "requires_capture")
	case "pm_3ds":
		p.setStatus(a, "requires_action")
	case "pm_slow":
		p.setStatus(a, "processing")
	default:
		p.setStatus(a, "declined")
		return payment.Authorization{}, &payment.Declined{Op: payment.OpConfirmPaymentMethod, PaymentIntentID: a.PaymentIntentID, Code: "card_declined"}
	}
	return *a, nil
}

func (p *fakePayments) Retrieve(_ context.Context, id string) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.take("retrieve"); err != nil {
		return payment.Authorization{}, err
	}
	a, ok := p.pis[id]
	if !ok {
		return payment.Authorization{}, &payment.Failed{Op: payment.OpRetrieve, Code: "resource_missing", HTTPStatus: 404}
	}
	return *a, nil
}

func (p *fakePayments) Capture(_ context.Context, req payment.CaptureRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.take("capture")
	if err != nil && !p.actAndFail["capture"] {
		return payment.Authorization{}, err
	}
	a := p.pis[req.PaymentIntentID]
	switch a.ProviderStatus {
	case "requires_capture":
		p.captures++
		p.setStatus(a, "succeeded")
	case "succeeded":
	default:
		return payment.Authorization{}, &payment.Failed{Op: payment.OpCapture, Code: "payment_intent_unexpected_state", HTTPStatus: 400}
	}
	if err != nil {
		return payment.Authorization{}, err
	}
	return *a, nil
}

func (p *fakePayments) Cancel(_ context.Context, req payment.CancelRequest) (payment.Authorization, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	p.cancelAttempts = append(p.cancelAttempts, req.Attempt)
	key := fmt.Sprintf("%s:cancel:%d", req.ReservationID, req.Attempt)
	if refusal, ok := p.cancelKeys[key]; ok {
		return payment.Authorization{}, refusal
	}
	if err := p.take("cancel"); err != nil {
		// Injected errors (timeouts, and refusals a test queues) are not stored.
		return payment.Authorization{}, err
	}
	a := p.pis[req.PaymentIntentID]
	switch a.ProviderStatus {
	case "succeeded", "processing":
		refusal := &payment.Failed{Op: payment.OpCancel, Code: "payment_intent_unexpected_state", HTTPStatus: 400}
		p.cancelKeys[key] = refusal
		return payment.Authorization{}, refusal
	case "canceled":
		return *a, nil
	}
	p.cancels++
	p.setStatus(a, "canceled")
	return *a, nil
}

func (p *fakePayments) Refund(_ context.Context, req payment.RefundRequest) (payment.Refund, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refundAttempts = append(p.refundAttempts, req.EffectiveAttempt())
	if err := p.take("refund"); err != nil {
		return payment.Refund{}, err
	}
	key := fmt.Sprintf("%s:refund:%d", req.ReservationID, req.EffectiveAttempt())
	if id, ok := p.refundKeys[key]; ok {
		return p.refundsByID[id], nil
	}
	a := p.pis[req.PaymentIntentID]
	if a.State != payment.StatePaid && a.State != payment.StateRefunded {
		return payment.Refund{}, &payment.Failed{Op: payment.OpRefund, Code: "charge_not_captured", HTTPStatus: 400}
	}
	if a.State == payment.StateRefunded {
		// A new key on money already returned in full (a refund made elsewhere, or one whose
		// key the provider no longer replays): Stripe refuses it.
		return payment.Refund{}, &payment.Failed{Op: payment.OpRefund, Category: payment.FailureObjectState,
			Code: "charge_already_refunded", HTTPStatus: 400}
	}
	status := p.refundStatus
	if status == "" {
		status = payment.RefundSucceeded
	}
	if a.State == payment.StatePaid && status != payment.RefundFailed && status != payment.RefundCanceled {
		p.refunds++
		// Like Stripe's amount_refunded, the intent counts a pending refund as refunded.
		p.setStatus(a, "refunded")
	}
	rf := payment.Refund{RefundID: fmt.Sprintf("re_%d", len(p.refundsByID)+1), PaymentIntentID: a.PaymentIntentID,
		ReservationID: req.ReservationID, Amount: a.Amount, Currency: a.Currency, Status: status}
	p.refundsByID[rf.RefundID], p.refundKeys[key] = rf, rf.RefundID
	return rf, nil
}

// settleRefund ends a pending refund: succeeded, or failed, which leaves the money captured.
func (p *fakePayments) settleRefund(refundID string, status payment.RefundStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rf := p.refundsByID[refundID]
	rf.Status = status
	p.refundsByID[refundID] = rf
	if status != payment.RefundSucceeded {
		a := p.pis[rf.PaymentIntentID]
		p.setStatus(a, "succeeded")
		a.AmountRefunded = 0
	}
}

// RetrieveRefund reads back a refund Refund made ("retrieveRefund" queues errors).
func (p *fakePayments) RetrieveRefund(_ context.Context, refundID string) (payment.Refund, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.take("retrieveRefund"); err != nil {
		return payment.Refund{}, err
	}
	rf, ok := p.refundsByID[refundID]
	if !ok {
		return payment.Refund{}, &payment.Failed{Op: payment.OpRetrieveRefund, Code: "resource_missing", HTTPStatus: 404}
	}
	return rf, nil
}

var errBoom = errors.New("boom")
