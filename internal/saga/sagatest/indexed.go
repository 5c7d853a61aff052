package sagatest

import (
	"context"
	"sort"
	"time"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Operation names of IndexedStore, as MemStore.Fail takes them.
const (
	OpExpiredHolds          = "expiredHolds"
	OpNeedingReconciliation = "needingReconciliation"
	OpExpire                = "expire"
)

// IndexedStore is MemStore with the DynamoDB store's sweeper side (internal/inventory): the two
// sparse indexes, activeHoldsByExpiry (ExpiredHolds: HELD or PAYMENT_PENDING, by deadline) and
// reconcileByAge (NeedingReconciliation: Reservation.Unsettled, by ReconcileSince), and Expire,
// the sweeper's release of a lapsed hold fenced by state, owner and version.
type IndexedStore struct {
	*MemStore
	// BeforeExpire, when set, runs at the start of every Expire, before the store's lock is
	// taken: a concurrent writer may move the reservation on from it (Lock, Reservations).
	BeforeExpire func(id string)
}

// NewIndexedStore returns an empty store reading the time from now.
func NewIndexedStore(now func() time.Time) *IndexedStore {
	return &IndexedStore{MemStore: NewMemStore(now)}
}

// ExpiredHolds lists the reservations whose hold (HELD or PAYMENT_PENDING) ended before
// before, oldest deadline first, at most limit (0: no limit).
func (x *IndexedStore) ExpiredHolds(_ context.Context, before time.Time, limit int) ([]reservation.Reservation, error) {
	return x.list(OpExpiredHolds, limit, func(r reservation.Reservation) (time.Time, bool) {
		return r.HoldExpiresAt, r.HoldActive() && r.HoldExpiresAt.Before(before)
	})
}

// NeedingReconciliation lists the unsettled reservations (Reservation.Unsettled) that joined
// the reconciliation index before before, oldest first, at most limit (0: no limit).
func (x *IndexedStore) NeedingReconciliation(_ context.Context, before time.Time, limit int) ([]reservation.Reservation, error) {
	return x.list(OpNeedingReconciliation, limit, func(r reservation.Reservation) (time.Time, bool) {
		return r.ReconcileSince, r.Unsettled() && r.ReconcileSince.Before(before)
	})
}

// list returns the reservations on an index: key says whether a reservation is listed and
// under which sort key.
func (x *IndexedStore) list(op string, limit int, key func(reservation.Reservation) (time.Time, bool)) ([]reservation.Reservation, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.injected(op); err != nil {
		return nil, err
	}
	type entry struct {
		r reservation.Reservation
		k time.Time
	}
	var entries []entry
	for _, r := range x.res {
		if k, ok := key(r); ok {
			entries = append(entries, entry{r, k})
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].k.Equal(entries[j].k) {
			return entries[i].r.ID < entries[j].r.ID
		}
		return entries[i].k.Before(entries[j].k)
	})
	if limit > 0 && len(entries) > limit {
		entries = entries[:limit]
	}
	out := make([]reservation.Reservation, len(entries))
	for i, e := range entries {
		out[i] = e.r
	}
	return out, nil
}

// Expire retires a HELD or PAYMENT_PENDING reservation in state from whose deadline has passed:
// seats it still owns become AVAILABLE, seats someone else has claimed since are left alone.
// Refused while money may be held and before the deadline, as reservation.ApplyInventory says.
func (x *IndexedStore) Expire(_ context.Context, id string, from reservation.InventoryState, g reservation.Guard) (reservation.Reservation, error) {
	if x.BeforeExpire != nil {
		x.BeforeExpire(id)
	}
	cur, now, err := x.begin(OpExpire, id)
	defer x.mu.Unlock()
	if err != nil {
		return cur, err
	}
	next, err := cur.ApplyInventory(reservation.Expire, from, g, now)
	if err != nil {
		return cur, err
	}
	seats, err := x.seatsFor(cur, reservation.Expire, now)
	if err != nil {
		return cur, err
	}
	c := Change{Op: OpExpire, InventoryEvent: reservation.Expire, Reason: outbox.ReasonHoldExpired}
	return x.commit(c, cur, next, outbox.SeatsReleased, seats, now)
}

// Put stores r as it is, behind the port's back (as some earlier write left it).
func (x *IndexedStore) Put(r reservation.Reservation) { PutReservation(x.MemStore, r) }

// PutReservation stores r in m as it is, behind the port's back: no rule, no outbox record, no
// change recorded (a reservation some earlier write left so, or a concurrent writer).
func PutReservation(m *MemStore, r reservation.Reservation) {
	m.Lock()
	defer m.Unlock()
	m.Reservations()[r.ID] = r
}
