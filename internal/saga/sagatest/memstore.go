// Package sagatest holds in-memory test doubles of the saga's ports. MemStore is the reservation
// store the saga's tests run against; internal/saga/storecontract runs the same behaviour
// against it and against the DynamoDB store (internal/inventory), so the saga is tested on the
// rules the product enforces. The package does not import internal/saga, so it builds whatever
// state the saga's own code is in.
package sagatest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Operation names, as Fail and Change use them.
const (
	OpClaim         = "claim"
	OpGet           = "get"
	OpStartPayment  = "startPayment"
	OpConfirm       = "confirm"
	OpRelease       = "release"
	OpReacquire     = "reacquire"
	OpUpdatePayment = "updatePayment"
	OpCancel        = "cancel"
)

// Change is one write MemStore made.
type Change struct {
	Op string
	// InventoryEvent is the inventory event the write performed (reservation.Claim for a
	// claim), if any; PaymentEvent the payment event, if any. A cancel has neither.
	InventoryEvent reservation.InventoryEvent
	PaymentEvent   reservation.PaymentEvent
	// Reservation is the reservation as stored after the write.
	Reservation reservation.Reservation
	// Seats are the seats the write changed, as stored after it.
	Seats []reservation.Seat
	// Record is the outbox record, as the DynamoDB store writes it; nil for a write that kept
	// the version (a detail-only update).
	Record *outbox.Envelope
	// Reason and NotifyCustomer are what the record carries.
	Reason         string
	NotifyCustomer bool
}

// MemStore keeps reservations, seats and outbox records in memory and implements the saga's
// Store port with the domain's rules (reservation's ApplyInventory, ApplyPayment, ApplyUpdate
// and Cancel) and the DynamoDB store's seat rules: a seat is claimable when AVAILABLE or HELD
// past its deadline; a release or expiry gives back only the seats still this reservation's;
// Reacquire takes seats that are ours or free. Every write is all or nothing.
//
// An event MemStore created no seats for (CreateSeats) has every seat id, AVAILABLE until
// claimed; once it has created seats of an event, other seat ids of that event are unknown.
type MemStore struct {
	// Fail holds an error per operation (Op*), returned once in place of the call, before it
	// acts; set it before the store is shared between goroutines.
	Fail map[string]error
	// OnChange, when set, is called with every write as it is made, under the store's lock.
	OnChange func(Change)
	// Limits bound claims; zero fields take reservation.DefaultLimits.
	Limits reservation.Limits

	mu      sync.Mutex
	now     func() time.Time
	res     map[string]reservation.Reservation
	seats   map[string]reservation.Seat // by reservation.SeatKey
	created map[string]bool             // events whose seats were created
	changes []Change
}

// NewMemStore returns an empty store reading the time from now.
func NewMemStore(now func() time.Time) *MemStore {
	return &MemStore{Fail: map[string]error{}, now: now, res: map[string]reservation.Reservation{},
		seats: map[string]reservation.Seat{}, created: map[string]bool{}}
}

// Lock takes the store's lock, which guards the map Reservations returns.
func (m *MemStore) Lock() { m.mu.Lock() }

// Unlock releases the lock Lock took.
func (m *MemStore) Unlock() { m.mu.Unlock() }

// Reservations returns the store's own map of reservations by id, for a test that must change
// a stored reservation behind the port's back (hold Lock while touching it).
func (m *MemStore) Reservations() map[string]reservation.Reservation { return m.res }

// Reservation reads a stored reservation without going through the port (no injected fault).
func (m *MemStore) Reservation(id string) (reservation.Reservation, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.res[id]
	return r, ok
}

// CreateSeats creates AVAILABLE seats of an event; seats that exist are left alone.
func (m *MemStore) CreateSeats(eventID string, seatIDs ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.created[eventID] = true
	for _, id := range seatIDs {
		key := reservation.SeatKey(eventID, id)
		if _, ok := m.seats[key]; !ok {
			m.seats[key] = reservation.Seat{EventID: eventID, SeatID: id, State: reservation.Available, Version: 1}
		}
	}
}

// Seat reads a seat as stored; ok is false for a seat of an event with created seats that is
// not one of them.
func (m *MemStore) Seat(eventID, seatID string) (reservation.Seat, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seat(eventID, seatID)
}

func (m *MemStore) seat(eventID, seatID string) (reservation.Seat, bool) {
	if s, ok := m.seats[reservation.SeatKey(eventID, seatID)]; ok {
		return s, true
	}
	if m.created[eventID] {
		return reservation.Seat{}, false
	}
	return reservation.Seat{EventID: eventID, SeatID: seatID, State: reservation.Available}, true
}

// Changes returns every write so far, in order.
func (m *MemStore) Changes() []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.changes)
}

// Records returns the outbox records written for a reservation, in order.
func (m *MemStore) Records(reservationID string) []outbox.Envelope {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []outbox.Envelope
	for _, c := range m.changes {
		if c.Record != nil && c.Record.ReservationID == reservationID {
			out = append(out, *c.Record)
		}
	}
	return out
}

func (m *MemStore) injected(op string) error {
	if err, ok := m.Fail[op]; ok {
		delete(m.Fail, op)
		return err
	}
	return nil
}

func (m *MemStore) limits() reservation.Limits {
	l := m.Limits
	if l.MaxSeats <= 0 {
		l.MaxSeats = reservation.DefaultLimits().MaxSeats
	}
	if l.MaxHold <= 0 {
		l.MinHold, l.MaxHold = reservation.DefaultLimits().MinHold, reservation.DefaultLimits().MaxHold
	}
	return l
}

// commit stores next and the seats, and records the change with its outbox record of type t
// ("" for none).
func (m *MemStore) commit(c Change, cur, next reservation.Reservation, t outbox.Type, seats []reservation.Seat, now time.Time) (reservation.Reservation, error) {
	next.ReconcileSince = reservation.UnsettledSince(cur, next, now)
	if t != "" {
		env, err := outbox.ForReservation(t, next, c.Reason, c.NotifyCustomer)
		if err != nil {
			return cur, err
		}
		c.Record = &env
	}
	for _, s := range seats {
		m.seats[reservation.SeatKey(s.EventID, s.SeatID)] = s
	}
	m.res[next.ID] = next
	c.Reservation, c.Seats = next, seats
	m.changes = append(m.changes, c)
	if m.OnChange != nil {
		m.OnChange(c)
	}
	return next, nil
}

// Claim holds the seats for a new reservation; a replay of the same request returns the
// stored reservation, another request with the same id is a *reservation.IdempotencyConflict.
func (m *MemStore) Claim(_ context.Context, req reservation.ClaimRequest) (reservation.Reservation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected(OpClaim); err != nil {
		return reservation.Reservation{}, err
	}
	now := m.now().UTC()
	r, err := reservation.NewReservation(req, m.limits(), now)
	if err != nil {
		return reservation.Reservation{}, err
	}
	if existing, ok := m.res[r.ID]; ok {
		if existing.RequestHash != r.RequestHash {
			return reservation.Reservation{}, &reservation.IdempotencyConflict{IdempotencyKey: req.IdempotencyKey, ReservationID: r.ID}
		}
		return existing, nil
	}
	var taken, unknown []string
	seats := make([]reservation.Seat, 0, len(r.SeatIDs))
	for _, id := range r.SeatIDs {
		s, ok := m.seat(r.EventID, id)
		switch {
		case !ok:
			unknown = append(unknown, id)
		case !s.ClaimableAt(now):
			taken = append(taken, id)
		}
		s.State, s.ReservationID, s.HoldExpiresAt, s.Version = reservation.Held, r.ID, r.HoldExpiresAt, s.Version+1
		seats = append(seats, s)
	}
	if len(unknown) > 0 {
		return reservation.Reservation{}, &reservation.ValidationError{Problems: []reservation.Problem{
			{Field: "seatIds", Reason: "unknown seats: " + strings.Join(unknown, ", ")}}}
	}
	if len(taken) > 0 {
		return reservation.Reservation{}, &reservation.SeatUnavailable{EventID: r.EventID, SeatIDs: taken}
	}
	return m.commit(Change{Op: OpClaim, InventoryEvent: reservation.Claim}, reservation.Reservation{}, r, outbox.SeatsHeld, seats, now)
}

// Get reads a reservation; *reservation.NotFound when there is none.
func (m *MemStore) Get(_ context.Context, id string) (reservation.Reservation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected(OpGet); err != nil {
		return reservation.Reservation{}, err
	}
	r, ok := m.res[id]
	if !ok {
		return reservation.Reservation{}, &reservation.NotFound{ReservationID: id}
	}
	return r, nil
}

// begin takes the lock, consumes op's injected fault and reads the reservation. The caller
// must call m.mu.Unlock.
func (m *MemStore) begin(op, id string) (reservation.Reservation, time.Time, error) {
	m.mu.Lock()
	if err := m.injected(op); err != nil {
		return reservation.Reservation{}, time.Time{}, err
	}
	r, ok := m.res[id]
	if !ok {
		return reservation.Reservation{}, time.Time{}, &reservation.NotFound{ReservationID: id}
	}
	return r, m.now().UTC(), nil
}

// inventoryTypes are the outbox types of the inventory events.
var inventoryTypes = map[reservation.InventoryEvent]outbox.Type{
	reservation.StartPayment: outbox.PaymentPending,
	reservation.Confirm:      outbox.ReservationConfirmed,
	reservation.Release:      outbox.SeatsReleased,
	reservation.Expire:       outbox.SeatsReleased,
	reservation.Reacquire:    outbox.SeatsReacquired,
}

// seatsFor changes cur's seats for inventory event ev at now, as the DynamoDB store's seat
// conditions do: it returns the seats to write, or the error the failed conditions make.
func (m *MemStore) seatsFor(cur reservation.Reservation, ev reservation.InventoryEvent, now time.Time) ([]reservation.Seat, error) {
	var out []reservation.Seat
	var failed []string
	for _, id := range cur.SeatIDs {
		s, ok := m.seat(cur.EventID, id)
		ours := ok && s.ReservationID == cur.ID
		switch ev {
		case reservation.StartPayment:
			if !ours || s.State != reservation.Held || !now.Before(s.HoldExpiresAt) {
				failed = append(failed, id)
				continue
			}
			s.State = reservation.PaymentPending
		case reservation.Confirm:
			if !ours || s.State != reservation.PaymentPending || !now.Before(s.HoldExpiresAt) {
				failed = append(failed, id)
				continue
			}
			s.State, s.HoldExpiresAt = reservation.Confirmed, time.Time{}
		case reservation.Release, reservation.Expire:
			// Seats someone else has taken since are left alone.
			if !ours || (s.State != reservation.Held && s.State != reservation.PaymentPending && s.State != reservation.Confirmed) {
				continue
			}
			s.State, s.ReservationID, s.HoldExpiresAt = reservation.Available, "", time.Time{}
		case reservation.Reacquire:
			free := ok && (s.State == reservation.Available || (s.State == reservation.Held && !now.Before(s.HoldExpiresAt)))
			mine := ours && (s.State == reservation.Held || s.State == reservation.PaymentPending)
			if !free && !mine {
				failed = append(failed, id)
				continue
			}
			s.State, s.ReservationID, s.HoldExpiresAt = reservation.Confirmed, cur.ID, time.Time{}
		}
		s.Version++
		out = append(out, s)
	}
	if len(failed) == 0 {
		return out, nil
	}
	if ev == reservation.Reacquire {
		return nil, &reservation.SeatUnavailable{EventID: cur.EventID, SeatIDs: failed}
	}
	return nil, &reservation.NotOwner{ReservationID: cur.ID, Resource: fmt.Sprintf("seats %v of event %s", failed, cur.EventID)}
}

func (m *MemStore) inventory(op, id string, g reservation.Guard, ev reservation.InventoryEvent, reason string, notify bool) (reservation.Reservation, error) {
	cur, now, err := m.begin(op, id)
	defer m.mu.Unlock()
	if err != nil {
		return cur, err
	}
	next, err := cur.ApplyInventory(ev, cur.Inventory, g, now)
	if err != nil {
		return cur, err
	}
	seats, err := m.seatsFor(cur, ev, now)
	if err != nil {
		return cur, err
	}
	if ev == reservation.Reacquire {
		reason = outbox.ReasonLatePayment
	}
	c := Change{Op: op, InventoryEvent: ev, Reason: reason, NotifyCustomer: notify}
	return m.commit(c, cur, next, inventoryTypes[ev], seats, now)
}

// StartPayment moves a live hold HELD -> PAYMENT_PENDING.
func (m *MemStore) StartPayment(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return m.inventory(OpStartPayment, id, g, reservation.StartPayment, "", false)
}

// Confirm moves PAYMENT_PENDING -> CONFIRMED while the hold is live.
func (m *MemStore) Confirm(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return m.inventory(OpConfirm, id, g, reservation.Confirm, "", false)
}

// Release gives the seats back (as an expiry when req.Expired).
func (m *MemStore) Release(_ context.Context, req reservation.ReleaseRequest) (reservation.Reservation, error) {
	ev := reservation.Release
	if req.Expired {
		ev = reservation.Expire
	}
	return m.inventory(OpRelease, req.ReservationID, req.Guard, ev, req.Reason, req.NotifyCustomer)
}

// Reacquire takes the seats back for a payment that succeeded after the hold lapsed.
func (m *MemStore) Reacquire(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return m.inventory(OpReacquire, id, g, reservation.Reacquire, "", false)
}

// UpdatePayment performs u (reservation.Reservation.ApplyUpdate) as one write.
func (m *MemStore) UpdatePayment(_ context.Context, u reservation.PaymentUpdate) (reservation.Reservation, error) {
	cur, now, err := m.begin(OpUpdatePayment, u.ReservationID)
	defer m.mu.Unlock()
	if err != nil {
		return cur, err
	}
	next, err := cur.ApplyUpdate(u, now)
	if err != nil {
		return cur, err
	}
	c := Change{Op: OpUpdatePayment, PaymentEvent: u.Event, Reason: u.Reason, NotifyCustomer: u.NotifyCustomer}
	var t outbox.Type
	var seats []reservation.Seat
	if cur.Inventory != reservation.Released && next.Inventory == reservation.Released {
		c.InventoryEvent = reservation.Release
		if u.Expired {
			c.InventoryEvent = reservation.Expire
		}
		if seats, err = m.seatsFor(cur, c.InventoryEvent, now); err != nil {
			return cur, err
		}
		t = outbox.SeatsReleased
	}
	if u.Event != "" {
		t = outbox.PaymentType(u.Event)
	}
	return m.commit(c, cur, next, t, seats, now)
}

// Cancel records the customer's cancel; a cancel already recorded writes nothing.
func (m *MemStore) Cancel(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	cur, now, err := m.begin(OpCancel, id)
	defer m.mu.Unlock()
	if err != nil {
		return cur, err
	}
	next, err := cur.Cancel(g, now)
	if err != nil || next.Version == cur.Version {
		return cur, err
	}
	return m.commit(Change{Op: OpCancel}, cur, next, outbox.ReservationCancelRequested, nil, now)
}
