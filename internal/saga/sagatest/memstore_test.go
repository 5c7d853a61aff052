package sagatest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/internal/saga/storecontract"
)

// TestMemStoreKeepsTheStoreContract runs the port's behaviour against MemStore; the DynamoDB
// store runs the same suite in internal/inventory.
func TestMemStoreKeepsTheStoreContract(t *testing.T) {
	storecontract.Run(t, func(t *testing.T) storecontract.Harness {
		var mu sync.Mutex
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}
		m := sagatest.NewMemStore(clock)
		return storecontract.Harness{
			Store: m,
			Now:   clock,
			Advance: func(d time.Duration) {
				mu.Lock()
				now = now.Add(d)
				mu.Unlock()
			},
			CreateSeats: func(_ *testing.T, eventID string, seatIDs ...string) { m.CreateSeats(eventID, seatIDs...) },
			Seat: func(t *testing.T, eventID, seatID string) reservation.Seat {
				t.Helper()
				s, ok := m.Seat(eventID, seatID)
				if !ok {
					t.Fatalf("no seat %s/%s", eventID, seatID)
				}
				return s
			},
			Records: func(_ *testing.T, id string) []outbox.Envelope { return m.Records(id) },
		}
	})
}
