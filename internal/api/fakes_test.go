package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
)

const testMachine = "arn:aws:states:us-east-1:000000000000:stateMachine:reservation"

// reservations is the shared in-memory store (sagatest.MemStore, the domain's rules and the
// DynamoDB store's) with a concurrent writer: beforeCancel, when set, runs at the start of every
// Cancel with the stored reservation, and may move it on in place.
type reservations struct {
	*sagatest.MemStore
	beforeCancel func(*reservation.Reservation)
}

func (s *reservations) Cancel(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	if s.beforeCancel != nil {
		if r, ok := s.Reservation(id); ok {
			s.beforeCancel(&r)
			s.put(r)
		}
	}
	return s.MemStore.Cancel(ctx, id, g)
}

// put stores a reservation as it is (the state the saga's steps left).
func (s *reservations) put(r reservation.Reservation) { sagatest.PutReservation(s.MemStore, r) }

// stored reads a stored reservation (the zero value when there is none).
func (s *reservations) stored(id string) reservation.Reservation {
	r, _ := s.Reservation(id)
	return r
}

// cancelWrites counts the cancels that changed the stored reservation.
func (s *reservations) cancelWrites() int {
	n := 0
	for _, c := range s.Changes() {
		if c.Op == sagatest.OpCancel {
			n++
		}
	}
	return n
}

// fakeCatalog is an in-memory SeatCatalog keyed by event and seat.
type fakeCatalog struct {
	seats map[string]CatalogSeat // key: eventId#seatId
	err   error
}

func (f *fakeCatalog) Seats(_ context.Context, eventID string, seatIDs []string) (map[string]CatalogSeat, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]CatalogSeat{}
	for _, s := range seatIDs {
		if cs, ok := f.seats[eventID+"#"+s]; ok {
			out[s] = cs
		}
	}
	return out, nil
}

func (f *fakeCatalog) EventExists(_ context.Context, eventID string) (bool, error) {
	for k := range f.seats {
		if strings.HasPrefix(k, eventID+"#") {
			return true, nil
		}
	}
	return false, nil
}

var errBoom = errors.New("boom")

// gate is an in-memory admission gate with the DynamoDB gate's rules (inventory.Store.Admit),
// over the seats and reservations of the shared store: a buyer passes when no seat is held by
// someone else or leased to another buyer, the admission record is new or this same request's
// own while still ADMITTED, and the reservation has not been written (else it is the answer).
type gate struct {
	mu      sync.Mutex
	now     func() time.Time
	store   *sagatest.MemStore
	records map[string]reservation.Admission
	leases  map[string]lease // by reservation.SeatKey
	// slots holds each capped admission's place under its customer's cap until its time.
	slots map[string]time.Time
	err   error
	// beforeAdmit, when set, runs at the start of Admit under the gate's lock: a concurrent
	// request getting there first.
	beforeAdmit func(*gate)
	// queueErr, when set, is what QueueStart answers.
	queueErr error
	// beforeQueue, when set, runs as QueueStart is called: another writer moving first.
	beforeQueue func(id string)
	// beforeCancel, when set, runs as CancelAdmission is called: the claim getting there
	// first.
	beforeCancel func(id string)
	// canceled counts the admissions a cancel turned CANCELED; giveBackErr, when set, is what
	// CancelAdmission answers after writing the cancel (the seats or the slot not given back).
	canceled    int
	giveBackErr error
	// backlogMarks counts MarkStartBacklog calls.
	backlogMarks int
	// queued are the inputs of the starts queued for the starter.
	queued []string
	// admitted counts the buyers let through.
	admitted int
}

type lease struct {
	by    string
	until time.Time
}

func newGate(now func() time.Time, store *sagatest.MemStore) *gate {
	return &gate{now: now, store: store, records: map[string]reservation.Admission{}, leases: map[string]lease{},
		slots: map[string]time.Time{}}
}

func (g *gate) Admit(_ context.Context, req reservation.AdmissionRequest) (reservation.AdmitResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.beforeAdmit != nil {
		g.beforeAdmit(g)
	}
	if g.err != nil {
		return reservation.AdmitResult{}, g.err
	}
	a, now := req.Admission, g.now()
	if old, ok := g.records[a.ReservationID]; ok && old.RequestHash != a.RequestHash {
		return reservation.AdmitResult{}, &reservation.IdempotencyConflict{ReservationID: a.ReservationID}
	}
	if _, ok := g.store.Reservation(a.ReservationID); ok {
		return reservation.AdmitResult{Claimed: true}, nil
	}
	var taken []string
	for _, id := range a.SeatIDs {
		seat, ok := g.store.Seat(a.EventID, id)
		l := g.leases[reservation.SeatKey(a.EventID, id)]
		switch {
		case !ok:
			return reservation.AdmitResult{}, &reservation.ValidationError{Problems: []reservation.Problem{{Field: "seatIds", Reason: "unknown seats: " + id}}}
		case seat.ReservationID == a.ReservationID && seat.State != reservation.Available:
			return reservation.AdmitResult{Claimed: true}, nil
		case !seat.ClaimableAt(now), l.by != "" && l.by != a.ReservationID && l.until.After(now):
			taken = append(taken, id)
		}
	}
	if old, ok := g.records[a.ReservationID]; ok && (old.RequestHash != a.RequestHash || old.State != reservation.Admitted) {
		if old.RequestHash != a.RequestHash {
			return reservation.AdmitResult{}, &reservation.IdempotencyConflict{ReservationID: a.ReservationID}
		}
		return reservation.AdmitResult{Rejected: &old}, nil
	}
	if len(taken) > 0 {
		return reservation.AdmitResult{}, &reservation.SeatUnavailable{EventID: a.EventID, SeatIDs: taken}
	}
	if req.MaxActive > 0 {
		active := 0
		for id, until := range g.slots {
			if id != a.ReservationID && g.records[id].CustomerID == a.CustomerID && until.After(now) {
				active++
			}
		}
		if active >= req.MaxActive {
			return reservation.AdmitResult{}, &reservation.HoldLimit{CustomerID: a.CustomerID, Limit: req.MaxActive}
		}
		g.slots[a.ReservationID] = req.SlotUntil
	}
	for _, id := range a.SeatIDs {
		g.leases[reservation.SeatKey(a.EventID, id)] = lease{by: a.ReservationID, until: req.LeaseUntil}
	}
	a.State, a.AdmittedAt = reservation.Admitted, now
	g.records[a.ReservationID] = a
	g.admitted++
	return reservation.AdmitResult{Admitted: true}, nil
}

func (g *gate) GetAdmission(_ context.Context, id string) (reservation.Admission, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return reservation.Admission{}, false, g.err
	}
	a, ok := g.records[id]
	return a, ok, nil
}

func (g *gate) QueueStart(_ context.Context, adm reservation.Admission, input string, leaseUntil, _ time.Time) error {
	id := adm.ReservationID
	if g.beforeQueue != nil {
		g.beforeQueue(id)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	if g.queueErr != nil {
		return g.queueErr
	}
	a, ok := g.records[id]
	if !ok || a.State != reservation.Admitted {
		return fmt.Errorf("queue %s: %w", id, inventory.ErrNotAdmitted)
	}
	a.StartQueued = true
	g.records[id] = a
	for _, seat := range adm.SeatIDs {
		if l := g.leases[reservation.SeatKey(adm.EventID, seat)]; l.by == id {
			g.leases[reservation.SeatKey(adm.EventID, seat)] = lease{by: id, until: leaseUntil}
		}
	}
	g.queued = append(g.queued, input)
	return nil
}

func (g *gate) CancelAdmission(_ context.Context, adm reservation.Admission) (reservation.Admission, bool, error) {
	id := adm.ReservationID
	if g.beforeCancel != nil {
		g.beforeCancel(id)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return adm, false, g.err
	}
	if _, ok := g.store.Reservation(id); ok {
		return adm, false, fmt.Errorf("cancel %s: %w", id, inventory.ErrClaimed)
	}
	a, ok := g.records[id]
	if !ok {
		return adm, false, fmt.Errorf("cancel %s: the admission is gone", id)
	}
	wrote := a.State == reservation.Admitted
	if wrote {
		a.State = reservation.AdmissionCanceled
		g.records[id] = a
		g.canceled++
	}
	if a.State == reservation.AdmissionCanceled {
		for _, seat := range a.SeatIDs {
			if l := g.leases[reservation.SeatKey(a.EventID, seat)]; l.by == id {
				delete(g.leases, reservation.SeatKey(a.EventID, seat))
			}
		}
		delete(g.slots, id)
	}
	if g.giveBackErr != nil {
		err := g.giveBackErr
		g.giveBackErr = nil
		return a, wrote, err
	}
	return a, wrote, nil
}

func (g *gate) MarkStartBacklog(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.backlogMarks++
	return nil
}

// reject marks an admission as the claim does when it turns the buyer away.
func (g *gate) reject(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.records[id]
	a.State = reservation.AdmissionRejected
	g.records[id] = a
}
