package saga

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// fakeStore keeps reservations and seat owners in memory and applies internal/reservation's
// real transition table and guards, so the steps are tested against the same rules the
// DynamoDB adapter enforces.
type fakeStore struct {
	mu     sync.Mutex
	now    func() time.Time
	hold   time.Duration
	res    map[string]reservation.Reservation
	owner  map[string]string // seat id -> reservation id holding it
	events []string          // "op:reason[:notify]" in order, like the outbox
	fail   map[string]error  // op -> error returned once before acting
}

func newFakeStore(now func() time.Time) *fakeStore {
	return &fakeStore{now: now, hold: 10 * time.Minute, res: map[string]reservation.Reservation{}, owner: map[string]string{}, fail: map[string]error{}}
}

func (f *fakeStore) injected(op string) error {
	if err, ok := f.fail[op]; ok {
		delete(f.fail, op)
		return err
	}
	return nil
}

func (f *fakeStore) record(op, reason string, notify bool) {
	e := op + ":" + reason
	if notify {
		e += ":notify"
	}
	f.events = append(f.events, e)
}

func (f *fakeStore) seatTaken(r reservation.Reservation) []string {
	var taken []string
	for _, seat := range r.SeatIDs {
		other, ok := f.owner[seat]
		if !ok || other == r.ID {
			continue
		}
		o := f.res[other]
		if o.Inventory == reservation.Confirmed || o.Inventory == reservation.PaymentPending ||
			(o.Inventory == reservation.Held && o.HoldLive(f.now())) {
			taken = append(taken, seat)
		}
	}
	return taken
}

func (f *fakeStore) Claim(_ context.Context, req reservation.ClaimRequest) (reservation.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected("claim"); err != nil {
		return reservation.Reservation{}, err
	}
	if r, ok := f.res[req.ReservationID]; ok {
		return r, nil
	}
	r := reservation.Reservation{ID: req.ReservationID, CustomerID: req.CustomerID, EventID: req.EventID,
		SeatIDs: slices.Clone(req.SeatIDs), Amount: req.Amount, Currency: req.Currency,
		HoldExpiresAt: f.now().Add(req.HoldDuration), Inventory: reservation.Held, Payment: reservation.NotStarted,
		Version: 1, IdempotencyKey: req.IdempotencyKey, CorrelationID: req.CorrelationID}
	if taken := f.seatTaken(r); len(taken) > 0 {
		return reservation.Reservation{}, &reservation.SeatUnavailable{EventID: req.EventID, SeatIDs: taken}
	}
	for _, seat := range r.SeatIDs {
		f.owner[seat] = r.ID
	}
	f.res[r.ID] = r
	f.record("SeatsHeld", "", false)
	return r, nil
}

func (f *fakeStore) Get(_ context.Context, id string) (reservation.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected("get"); err != nil {
		return reservation.Reservation{}, err
	}
	r, ok := f.res[id]
	if !ok {
		return reservation.Reservation{}, &reservation.NotFound{ReservationID: id}
	}
	return r, nil
}

func (f *fakeStore) inventory(op string, id string, g reservation.Guard, ev reservation.InventoryEvent, reason string, notify bool) (reservation.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(op); err != nil {
		return reservation.Reservation{}, err
	}
	r, ok := f.res[id]
	if !ok {
		return reservation.Reservation{}, &reservation.NotFound{ReservationID: id}
	}
	if ev == reservation.Reacquire {
		if taken := f.seatTaken(r); len(taken) > 0 {
			return r, &reservation.SeatUnavailable{EventID: r.EventID, SeatIDs: taken}
		}
	}
	next, err := r.ApplyInventory(ev, r.Inventory, g, f.now())
	if err != nil {
		return r, err
	}
	for _, seat := range r.SeatIDs {
		switch next.Inventory {
		case reservation.Released:
			if f.owner[seat] == id {
				delete(f.owner, seat)
			}
		default:
			f.owner[seat] = id
		}
	}
	f.res[id] = next
	f.record(string(ev), reason, notify)
	return next, nil
}

func (f *fakeStore) StartPayment(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return f.inventory("startPayment", id, g, reservation.StartPayment, "", false)
}

func (f *fakeStore) Confirm(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return f.inventory("confirm", id, g, reservation.Confirm, "", false)
}

func (f *fakeStore) Release(_ context.Context, req ReleaseRequest) (reservation.Reservation, error) {
	ev := reservation.Release
	if req.Expired {
		ev = reservation.Expire
	}
	return f.inventory("release", req.ReservationID, req.Guard, ev, req.Reason, req.NotifyCustomer)
}

func (f *fakeStore) Reacquire(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return f.inventory("reacquire", id, g, reservation.Reacquire, "late_payment", false)
}

func (f *fakeStore) UpdatePayment(_ context.Context, u PaymentUpdate) (reservation.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected("updatePayment"); err != nil {
		return reservation.Reservation{}, err
	}
	r, ok := f.res[u.ReservationID]
	if !ok {
		return reservation.Reservation{}, &reservation.NotFound{ReservationID: u.ReservationID}
	}
	next := r
	if u.Event == "" {
		// Like the inventory store's UpdateDetails: fenced by the version, which it keeps.
		if u.Guard.Version != r.Version {
			return r, &reservation.StaleVersion{ReservationID: r.ID, Expected: u.Guard.Version, Actual: r.Version}
		}
	} else {
		var err error
		if next, err = r.ApplyPayment(u.Event, u.From, u.Guard, f.now()); err != nil {
			return r, err
		}
	}
	if u.PaymentIntentID != "" {
		next.PaymentIntentID = u.PaymentIntentID
	}
	if u.TaskToken != "" {
		next.TaskToken = u.TaskToken
	}
	if !u.CaptureBefore.IsZero() {
		next.CaptureBefore = u.CaptureBefore
	}
	if u.CancelAttempts > next.CancelAttempts {
		next.CancelAttempts = u.CancelAttempts
	}
	if u.CustomerCanceled {
		next.CustomerCanceled = true
	}
	f.res[r.ID] = next
	name := string(u.Event)
	if name == "" {
		name = "Record"
	}
	f.record("Payment"+name, u.Reason, u.NotifyCustomer)
	return next, nil
}

func (f *fakeStore) get(id string) reservation.Reservation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res[id]
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
}

func newFakePayments() *fakePayments {
	return &fakePayments{pis: map[string]*payment.Authorization{}, byRes: map[string]string{}, fail: map[string][]error{},
		actAndFail: map[string]bool{}, cancelKeys: map[string]error{}}
}

func (p *fakePayments) take(op string) error {
	if q := p.fail[op]; len(q) > 0 {
		p.fail[op] = q[1:]
		return q[0]
	}
	return nil
}

func (p *fakePayments) setStatus(a *payment.Authorization, status string) {
	a.ProviderStatus = status
	switch status {
	case "requires_capture":
		a.State = payment.StateAuthorized
		a.AmountCapturable = a.Amount
		a.CaptureBefore = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	case "succeeded":
		a.State = payment.StatePaid
		a.AmountCapturable, a.AmountReceived = 0, a.Amount
	case "canceled":
		a.State = payment.StateCanceled
		a.AmountCapturable = 0
	case "refunded":
		a.ProviderStatus, a.State, a.AmountRefunded = "succeeded", payment.StateRefunded, a.Amount
	default:
		a.State = payment.StateAuthorizing
	}
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

func (p *fakePayments) Confirm(_ context.Context, req payment.ConfirmRequest) (payment.Authorization, error) {
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
		a.LastDecline = &payment.Declined{Op: payment.OpConfirm, Code: "card_declined", DeclineCode: "generic_decline"}
		a.State, a.ProviderStatus = payment.StateFailed, "requires_payment_method"
		return payment.Authorization{}, &payment.Declined{Op: payment.OpConfirm, PaymentIntentID: a.PaymentIntentID, Code: "card_declined"}
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
	if err := p.take("refund"); err != nil {
		return payment.Refund{}, err
	}
	a := p.pis[req.PaymentIntentID]
	if a.State != payment.StatePaid && a.State != payment.StateRefunded {
		return payment.Refund{}, &payment.Failed{Op: payment.OpRefund, Code: "charge_not_captured", HTTPStatus: 400}
	}
	if a.State == payment.StatePaid {
		p.refunds++
		p.setStatus(a, "refunded")
	}
	return payment.Refund{PaymentIntentID: a.PaymentIntentID, Amount: a.Amount, Status: "succeeded"}, nil
}

var errBoom = errors.New("boom")
