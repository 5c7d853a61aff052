package api

import (
	"context"
	"errors"
	"strings"

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
