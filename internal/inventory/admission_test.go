package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

const lease = 10 * time.Second

func (f *fixture) admission(id string, seats ...string) reservation.AdmissionRequest {
	req := request(id, "ev", seats...)
	return reservation.AdmissionRequest{
		Admission: reservation.Admission{ReservationID: id, CustomerID: req.CustomerID, EventID: "ev", SeatIDs: seats,
			Amount: req.Amount, Currency: "EUR", RequestHash: "hash-" + id},
		LeaseUntil: f.clock.Now().Add(lease),
	}
}

// admitAll sends n buyers, each for seat, through the gate at once and returns the ids let
// through.
func admitAll(t *testing.T, st *inventory.Store, f *fixture, n int, seat string) []string {
	t.Helper()
	var (
		mu       sync.Mutex
		admitted []string
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("buyer-%02d", i)
			res, err := st.Admit(context.Background(), f.admission(id, seat))
			var su *reservation.SeatUnavailable
			switch {
			case err == nil && res.Admitted:
				mu.Lock()
				admitted = append(admitted, id)
				mu.Unlock()
			case errors.As(err, &su):
			default:
				t.Errorf("buyer %s: %+v %v", id, res, err)
			}
		}()
	}
	wg.Wait()
	return admitted
}

// Twenty buyers for one seat at once: the gate's conditional write lets exactly one through.
func TestTheGateLetsOneBuyerThroughPerSeat(t *testing.T) {
	f := newFixture(t)
	f.seats(t, "ev", "A1")
	if got := admitAll(t, f.store, f, 20, "A1"); len(got) != 1 {
		t.Fatalf("%d buyers let through for one seat, want 1: %v", len(got), got)
	}
	if n := f.count(t, tables.AdmissionsTable); n != 1 {
		t.Fatalf("%d admission records, want the one buyer's", n)
	}
}

// The control: the same race with the lease clause dropped from the gate's condition lets
// several buyers through, so the clause is what turns them away.
func TestWithoutTheLeaseClauseTheGateLetsSeveralThrough(t *testing.T) {
	f := newFixture(t)
	f.seats(t, "ev", "A1")
	st := inventory.WithoutAdmissionLease(f.store)
	if got := admitAll(t, st, f, 20, "A1"); len(got) < 2 {
		t.Fatalf("%d buyers let through without the lease clause, want several", len(got))
	}
}

// The claim honours a live lease: another reservation's claim is refused while it lasts, the
// leaseholder's own claim succeeds and ends the lease, and a lease nobody claimed lapses.
func TestTheClaimHonoursTheGatesLease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "ev", "A1", "A2")
	if res, err := f.store.Admit(ctx, f.admission("r-alice", "A1")); err != nil || !res.Admitted {
		t.Fatalf("alice's admission: %+v %v", res, err)
	}
	var su *reservation.SeatUnavailable
	if _, err := f.store.Claim(ctx, request("r-bob", "ev", "A1")); !errors.As(err, &su) {
		t.Fatalf("bob's claim of a seat leased to alice: %v, want SeatUnavailable", err)
	}
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r-alice", "ev", "A1")))
	if _, err := f.store.Admit(ctx, f.admission("r-carol", "A1")); !errors.As(err, &su) {
		t.Fatalf("carol at the gate for alice's held seat: %v, want SeatUnavailable", err)
	}

	// A lease with no claim behind it frees the seat once it lapses.
	if res, err := f.store.Admit(ctx, f.admission("r-dave", "A2")); err != nil || !res.Admitted {
		t.Fatalf("dave's admission: %+v %v", res, err)
	}
	if _, err := f.store.Admit(ctx, f.admission("r-erin", "A2")); !errors.As(err, &su) {
		t.Fatalf("erin during dave's lease: %v, want SeatUnavailable", err)
	}
	f.clock.Advance(lease)
	if res, err := f.store.Admit(ctx, f.admission("r-erin", "A2")); err != nil || !res.Admitted {
		t.Fatalf("erin after dave's lease lapsed: %+v %v", res, err)
	}
}

// Replays at the gate: the same request passes again while it is only admitted, answers the
// held reservation once claimed, and a claim that turned the buyer away is recorded so the
// replay reads REJECTED; another request under the same id is a conflict.
func TestTheGateAnswersReplaysFromItsRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "ev", "A1", "A2")
	alice := f.admission("r-alice", "A1")
	for i := range 2 {
		if res, err := f.store.Admit(ctx, alice); err != nil || !res.Admitted {
			t.Fatalf("alice's try %d: %+v %v", i+1, res, err)
		}
	}
	other := alice
	other.Admission.RequestHash = "another request"
	var ic *reservation.IdempotencyConflict
	if _, err := f.store.Admit(ctx, other); !errors.As(err, &ic) {
		t.Fatalf("another request under alice's id: %v, want IdempotencyConflict", err)
	}
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r-alice", "ev", "A1")))
	if res, err := f.store.Admit(ctx, alice); err != nil || !res.HeldByRequester {
		t.Fatalf("alice's replay after her claim: %+v %v", res, err)
	}

	// Bob is let through, then loses the seat to a claim that got there after his lease lapsed.
	bob := f.admission("r-bob", "A2")
	must[reservation.AdmitResult](t)(f.store.Admit(ctx, bob))
	f.clock.Advance(lease)
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r-carol", "ev", "A2")))
	var su *reservation.SeatUnavailable
	if _, err := f.store.Claim(ctx, request("r-bob", "ev", "A2")); !errors.As(err, &su) {
		t.Fatalf("bob's late claim: %v, want SeatUnavailable", err)
	}
	a, ok, err := f.store.GetAdmission(ctx, "r-bob")
	if err != nil || !ok || a.State != reservation.AdmissionRejected || a.CustomerID != bob.Admission.CustomerID || len(a.SeatIDs) != 1 {
		t.Fatalf("bob's admission after his claim lost: %+v %v %v", a, ok, err)
	}
	if res, err := f.store.Admit(ctx, bob); err != nil || res.Rejected == nil || res.Rejected.State != reservation.AdmissionRejected {
		t.Fatalf("bob's replay: %+v %v", res, err)
	}
}
