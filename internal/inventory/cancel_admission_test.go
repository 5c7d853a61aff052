package inventory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// admitCapped lets id through the gate for seat under the cap of two, as customer "cust".
func admitCapped(t *testing.T, f *fixture, id, seat string) reservation.Admission {
	t.Helper()
	ctx := context.Background()
	res, err := f.store.Admit(ctx, capped(f.admission(id, seat), "cust", f.clock.Now().Add(time.Hour)))
	if err != nil || !res.Admitted {
		t.Fatalf("admit %s: %+v %v", id, res, err)
	}
	a, ok, err := f.store.GetAdmission(ctx, id)
	if err != nil || !ok {
		t.Fatalf("read admission %s: %v %v", id, ok, err)
	}
	return a
}

func claimOf(a reservation.Admission) reservation.ClaimRequest {
	claim := request(a.ReservationID, a.EventID, a.SeatIDs...)
	claim.CustomerID = a.CustomerID
	claim.SlotKey = reservation.HoldSlotKey(a.CustomerID, a.HoldSlot)
	return claim
}

// A customer cancels before the claim (a queued start, or a saga not yet at its claim): the
// admission turns CANCELED, the claim that comes after refuses to hold and says why, the
// refusal leaves the cancel on record, and the seat and the customer's place under the cap
// are free at once, long before the lease or the slot would have lapsed.
func TestACancelBeforeTheClaimStopsTheClaimAndFreesTheSeatAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3")
	a := admitCapped(t, f, "r-1", "A1")
	admitCapped(t, f, "r-2", "A2")

	got, wrote, err := f.store.CancelAdmission(ctx, a)
	if err != nil || got.State != reservation.AdmissionCanceled || !wrote {
		t.Fatalf("cancel: %+v %v %v, want CANCELED, written by this call", got, wrote, err)
	}
	var su *reservation.SeatUnavailable
	if _, err := f.store.Claim(ctx, claimOf(a)); !errors.As(err, &su) || su.Why != "the customer canceled before the claim" {
		t.Fatalf("claim after the cancel: %v, want SeatUnavailable saying the customer canceled", err)
	}
	if stored, _, _ := f.store.GetAdmission(ctx, "r-1"); stored.State != reservation.AdmissionCanceled {
		t.Fatalf("admission %s after the refused claim, want CANCELED kept", stored.State)
	}
	// The lease is gone: another buyer passes the gate for A1 within the lease's time.
	if res, err := f.store.Admit(ctx, f.admission("other", "A1")); err != nil || !res.Admitted {
		t.Fatalf("another buyer for the canceled seat: %+v %v, want admitted", res, err)
	}
	// The place is back: with r-2 still admitted, a third reservation fits under the cap of 2.
	if res, err := f.store.Admit(ctx, capped(f.admission("r-3", "A3"), "cust", f.clock.Now().Add(time.Hour))); err != nil || !res.Admitted {
		t.Fatalf("a new reservation after the cancel: %+v %v, want admitted under the cap", res, err)
	}
	// A retry of the canceled POST is answered from the record, never let through again.
	res, err := f.store.Admit(ctx, capped(f.admission("r-1", "A1"), "cust", f.clock.Now().Add(time.Hour)))
	if err != nil || res.Rejected == nil || res.Rejected.State != reservation.AdmissionCanceled {
		t.Fatalf("a retry of the canceled request: %+v %v, want its CANCELED record", res, err)
	}
}

// The claim gets there first: the cancel writes nothing and says so, so the api records the
// cancel on the reservation instead.
func TestACancelAfterTheClaimLeavesItToTheReservation(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1")
	a := admitCapped(t, f, "r-1", "A1")
	must[reservation.Reservation](t)(f.store.Claim(ctx, claimOf(a)))
	if _, _, err := f.store.CancelAdmission(ctx, a); !errors.Is(err, inventory.ErrClaimed) {
		t.Fatalf("cancel after the claim: %v, want ErrClaimed", err)
	}
	if stored, _, _ := f.store.GetAdmission(ctx, "r-1"); stored.State != reservation.Admitted {
		t.Fatalf("admission %s, want ADMITTED untouched", stored.State)
	}
	if seat := f.seat(t, "ev", "A1"); seat.State != reservation.Held || seat.ReservationID != "r-1" {
		t.Fatalf("seat %+v, want still held by r-1", seat)
	}
}

// A repeated cancel answers CANCELED again and gives back again, harmlessly: a DELETE retried
// after one that failed halfway finishes its work. A cancel of an admission the claim already
// turned away answers REJECTED and writes nothing.
func TestACancelRepeatsHarmlesslyAndLeavesARejectionAlone(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2")
	a := admitCapped(t, f, "r-1", "A1")
	for i := range 2 {
		// Only the first call writes the cancel, so it is counted once.
		if got, wrote, err := f.store.CancelAdmission(ctx, a); err != nil || got.State != reservation.AdmissionCanceled || wrote != (i == 0) {
			t.Fatalf("cancel %d: %+v wrote %v, %v", i+1, got, wrote, err)
		}
	}
	b := admitCapped(t, f, "r-2", "A2")
	if err := f.store.RejectAdmission(ctx, "r-2"); err != nil {
		t.Fatal(err)
	}
	if got, wrote, err := f.store.CancelAdmission(ctx, b); err != nil || got.State != reservation.AdmissionRejected || wrote {
		t.Fatalf("cancel of a rejected admission: %+v %v, want REJECTED", got, err)
	}
}

// A queued start canceled before the starter reaches it: the queue's long lease on the seat is
// given back with the admission, so the seat does not wait an hour for a buyer who left.
func TestACanceledQueuedStartGivesItsLongLeaseBack(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1")
	a := admitCapped(t, f, "r-1", "A1")
	now := f.clock.Now()
	if err := f.store.QueueStart(ctx, a, `{"reservationId":"r-1"}`, now.Add(time.Hour), now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * lease)
	var su *reservation.SeatUnavailable
	if _, err := f.store.Admit(ctx, f.admission("other", "A1")); !errors.As(err, &su) {
		t.Fatalf("another buyer while the queued start leases A1: %v, want SeatUnavailable", err)
	}
	if _, _, err := f.store.CancelAdmission(ctx, a); err != nil {
		t.Fatal(err)
	}
	if res, err := f.store.Admit(ctx, f.admission("other", "A1")); err != nil || !res.Admitted {
		t.Fatalf("another buyer after the queued buyer canceled: %+v %v, want admitted", res, err)
	}
}
