package inventory_test

import (
	"sort"
	"testing"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/storecontract"
)

// TestStoreKeepsTheStoreContract runs the saga's Store port behaviour against the DynamoDB
// store on DynamoDB Local; sagatest runs the same suite against the saga tests' MemStore.
func TestStoreKeepsTheStoreContract(t *testing.T) {
	storecontract.Run(t, func(t *testing.T) storecontract.Harness {
		f := newFixture(t)
		return storecontract.Harness{
			Store:       f.store,
			Now:         f.clock.Now,
			Advance:     f.clock.Advance,
			CreateSeats: func(t *testing.T, eventID string, seatIDs ...string) { f.seats(t, eventID, seatIDs...) },
			Seat:        func(t *testing.T, eventID, seatID string) reservation.Seat { return f.seat(t, eventID, seatID) },
			Records: func(t *testing.T, id string) []outbox.Envelope {
				var envs []outbox.Envelope
				for _, e := range f.outbox(t) {
					if e.ReservationID == id {
						envs = append(envs, e)
					}
				}
				sort.Slice(envs, func(i, j int) bool { return envs[i].AggregateVersion < envs[j].AggregateVersion })
				return envs
			},
		}
	})
}
