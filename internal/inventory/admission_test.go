package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

const lease = 10 * time.Second

// newAdmissionFixture is a fixture whose clock starts now: DynamoDB Local deletes items whose
// TTL has passed on the wall clock, so an admission or hold slot stamped on a clock in the past
// would be collected while the test still relies on it (TTL is only garbage collection; on
// AWS the clock is the wall clock).
func newAdmissionFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.clock.Set(time.Now().UTC().Truncate(time.Second))
	return f
}

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
	f := newAdmissionFixture(t)
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
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1")
	st := inventory.WithoutAdmissionLease(f.store)
	if got := admitAll(t, st, f, 20, "A1"); len(got) < 2 {
		t.Fatalf("%d buyers let through without the lease clause, want several", len(got))
	}
}

// The claim honours a live lease: another reservation's claim is refused while it lasts, the
// leaseholder's own claim succeeds and ends the lease, and a lease nobody claimed lapses.
func TestTheClaimHonoursTheGatesLease(t *testing.T) {
	f := newAdmissionFixture(t)
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
	f := newAdmissionFixture(t)
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
	if res, err := f.store.Admit(ctx, alice); err != nil || !res.Claimed {
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

func capped(req reservation.AdmissionRequest, customer string, until time.Time) reservation.AdmissionRequest {
	req.Admission.CustomerID = customer
	req.MaxActive, req.SlotUntil = 2, until
	return req
}

// Ten reservations of one customer at the gate at once, for ten free seats: the cap of two
// lets exactly two through, however they interleave; the rest are refused HoldLimit.
func TestTheCapLetsACustomerHoldAtMostItsReservationsAtOnce(t *testing.T) {
	f := newAdmissionFixture(t)
	ctx := context.Background()
	seats := []string{"S0", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9"}
	f.seats(t, "ev", seats...)
	until := f.clock.Now().Add(time.Hour)
	var (
		mu              sync.Mutex
		admitted, limit int
		wg              sync.WaitGroup
	)
	for i, seat := range seats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.store.Admit(ctx, capped(f.admission(fmt.Sprintf("r-%d", i), seat), "hoarder", until))
			var hl *reservation.HoldLimit
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case errors.As(err, &hl) && hl.Limit == 2:
				limit++
			default:
				t.Errorf("reservation %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if admitted != 2 || limit != 8 {
		t.Fatalf("%d admitted and %d refused at the cap, want 2 and 8", admitted, limit)
	}
}

// A place under the cap comes back when the claim turns the buyer away, when a hold gives it
// back, and when its time runs out; a retry of an admitted request keeps its own place.
func TestAPlaceUnderTheCapComesBack(t *testing.T) {
	f := newAdmissionFixture(t)
	ctx := context.Background()
	f.seats(t, "ev", "A1", "A2", "A3", "A4", "A5")
	until := f.clock.Now().Add(time.Hour)
	admit := func(id, seat string) error {
		_, err := f.store.Admit(ctx, capped(f.admission(id, seat), "cust", until))
		return err
	}
	var hl *reservation.HoldLimit
	for _, id := range []string{"r-1", "r-2"} {
		if err := admit(id, map[string]string{"r-1": "A1", "r-2": "A2"}[id]); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if err := admit("r-2", "A2"); err != nil {
		t.Fatalf("a retry of r-2 at the cap: %v, want its own place", err)
	}
	if err := admit("r-3", "A3"); !errors.As(err, &hl) {
		t.Fatalf("r-3 at the cap: %v, want HoldLimit", err)
	}

	// r-1 loses its seat in the claim: its place is free.
	f.clock.Advance(lease)
	must[reservation.Reservation](t)(f.store.Claim(ctx, request("r-other", "ev", "A1")))
	var su *reservation.SeatUnavailable
	claim := request("r-1", "ev", "A1")
	claim.CustomerID = "cust"
	if _, err := f.store.Claim(ctx, claim); !errors.As(err, &su) {
		t.Fatalf("r-1's claim: %v, want SeatUnavailable", err)
	}
	if err := admit("r-3", "A3"); err != nil {
		t.Fatalf("r-3 after r-1 was turned away: %v", err)
	}

	// r-2's hold ends and gives its place back.
	a, _, err := f.store.GetAdmission(ctx, "r-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.GiveBackHoldSlot(ctx, "cust", "r-2", a.HoldSlot); err != nil {
		t.Fatal(err)
	}
	if err := admit("r-4", "A4"); err != nil {
		t.Fatalf("r-4 after r-2 gave its place back: %v", err)
	}
	if err := admit("r-5", "A5"); !errors.As(err, &hl) {
		t.Fatalf("r-5 at the cap again: %v, want HoldLimit", err)
	}
	// Giving back a place another reservation has taken since changes nothing.
	if err := f.store.GiveBackHoldSlot(ctx, "cust", "r-2", a.HoldSlot); err != nil {
		t.Fatal(err)
	}
	if err := admit("r-5", "A5"); !errors.As(err, &hl) {
		t.Fatalf("r-5 after a stale give-back: %v, want HoldLimit", err)
	}
	// Once the places' time is over, they are free.
	f.clock.Set(until)
	if err := admit("r-5", "A5"); err != nil {
		t.Fatalf("r-5 after the places' time: %v", err)
	}
}

// Interleavings an attacker or a flaky network produce at the gate and the claim.
func TestTheGateAndTheClaimKeepTheirAnswersUnderRetries(t *testing.T) {
	ctx := context.Background()
	var su *reservation.SeatUnavailable
	var ic *reservation.IdempotencyConflict

	t.Run("a claim retried after it turned the buyer away holds nothing, even once the seats are free", func(t *testing.T) {
		f := newAdmissionFixture(t)
		f.seats(t, "ev", "A1")
		must[reservation.AdmitResult](t)(f.store.Admit(ctx, f.admission("r-bob", "A1")))
		// Bob's start is slow: his lease lapses and alice passes the gate; bob's claim loses
		// to her live lease, and bob is told REJECTED.
		f.clock.Advance(lease)
		must[reservation.AdmitResult](t)(f.store.Admit(ctx, f.admission("r-alice", "A1")))
		if _, err := f.store.Claim(ctx, request("r-bob", "ev", "A1")); !errors.As(err, &su) {
			t.Fatalf("bob's claim against alice's lease: %v", err)
		}
		if a, _, _ := f.store.GetAdmission(ctx, "r-bob"); a.State != reservation.AdmissionRejected {
			t.Fatalf("bob's admission %+v", a)
		}
		// The seat is free again later; bob's claim is retried by the state machine.
		f.clock.Advance(lease)
		if _, err := f.store.Claim(ctx, request("r-bob", "ev", "A1")); !errors.As(err, &su) {
			t.Fatalf("bob's retried claim after REJECTED: %v, want SeatUnavailable", err)
		}
		if s := f.seat(t, "ev", "A1"); s.State != reservation.Available {
			t.Fatalf("seat after the refused retry %+v", s)
		}
	})

	t.Run("another request under a claimed reservation's id is a conflict, not the held reservation", func(t *testing.T) {
		f := newAdmissionFixture(t)
		f.seats(t, "ev", "A1")
		must[reservation.AdmitResult](t)(f.store.Admit(ctx, f.admission("r-alice", "A1")))
		must[reservation.Reservation](t)(f.store.Claim(ctx, request("r-alice", "ev", "A1")))
		other := f.admission("r-alice", "A1")
		other.Admission.RequestHash = "another request"
		if _, err := f.store.Admit(ctx, other); !errors.As(err, &ic) {
			t.Fatalf("another request under alice's id after her claim: %v, want IdempotencyConflict", err)
		}
	})

	t.Run("a queued start keeps its seats leased while it waits", func(t *testing.T) {
		f := newAdmissionFixture(t)
		f.seats(t, "ev", "A1", "A2")
		req := f.admission("r-alice", "A1", "A2")
		must[reservation.AdmitResult](t)(f.store.Admit(ctx, req))
		a, _, err := f.store.GetAdmission(ctx, "r-alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.QueueStart(ctx, a, `{"reservationId":"r-alice"}`, f.clock.Now().Add(time.Hour), f.clock.Now().Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(10 * lease)
		if _, err := f.store.Admit(ctx, f.admission("r-bob", "A2")); !errors.As(err, &su) {
			t.Fatalf("bob for a queued winner's seat: %v, want SeatUnavailable", err)
		}
		if q, _, _ := f.store.GetAdmission(ctx, "r-alice"); !q.StartQueued {
			t.Fatalf("alice's admission %+v is not queued", q)
		}
		// Once claimed, the lease is gone and the seats are the claim's.
		must[reservation.Reservation](t)(f.store.Claim(ctx, request("r-alice", "ev", "A1", "A2")))
	})
}

// claimUnderCap admits id for seat as customer "cust" under a cap of two and claims it with the
// hold slot its admission took, as the saga's Claim does.
func claimUnderCap(t *testing.T, f *fixture, id, seat string, until time.Time) reservation.Reservation {
	t.Helper()
	ctx := context.Background()
	res, err := f.store.Admit(ctx, capped(f.admission(id, seat), "cust", until))
	if err != nil || !res.Admitted {
		t.Fatalf("admit %s: %+v %v", id, res, err)
	}
	claim := request(id, "ev", seat)
	claim.CustomerID = "cust"
	claim.SlotKey = reservation.HoldSlotKey("cust", res.HoldSlot)
	return must[reservation.Reservation](t)(f.store.Claim(ctx, claim))
}

// holdEnd is one way a held reservation's hold ends.
type holdEnd struct {
	name string
	end  func(t *testing.T, f *fixture, r reservation.Reservation)
}

// holdEnds are the ways a hold ends: confirmed, released by a cancel or by the payment's
// update, and expired.
func holdEnds() []holdEnd {
	ctx := context.Background()
	return []holdEnd{
		{"confirmed", func(t *testing.T, f *fixture, r reservation.Reservation) {
			r = must[reservation.Reservation](t)(f.store.StartPayment(ctx, r.ID, reservation.GuardOf(r)))
			for _, ev := range []reservation.PaymentEvent{reservation.StartAuthorization, reservation.AuthorizationOK} {
				r = must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
					Event: ev, From: r.Payment}))
			}
			must[reservation.Reservation](t)(f.store.Confirm(ctx, r.ID, reservation.GuardOf(r)))
		}},
		{"released", func(t *testing.T, f *fixture, r reservation.Reservation) {
			must[reservation.Reservation](t)(f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: r.ID, Guard: reservation.GuardOf(r), Reason: "cancelled"}))
		}},
		{"released by the payment's update", func(t *testing.T, f *fixture, r reservation.Reservation) {
			r = must[reservation.Reservation](t)(f.store.StartPayment(ctx, r.ID, reservation.GuardOf(r)))
			r = must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
				Event: reservation.StartAuthorization, From: r.Payment}))
			must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
				Event: reservation.PaymentDeclined, From: r.Payment, ReleaseSeats: true, Reason: "declined"}))
		}},
		{"expired", func(t *testing.T, f *fixture, r reservation.Reservation) {
			f.clock.Advance(11 * time.Minute)
			must[reservation.Reservation](t)(f.store.Expire(ctx, r.ID, reservation.Held, reservation.GuardOf(r)))
		}},
	}
}

// Every way a hold ends gives its place under the cap back in the write that ends it, not
// when the place's time runs out: the customer may start another reservation at once.
func TestEveryWayAHoldEndsGivesItsPlaceUnderTheCapBack(t *testing.T) {
	ctx := context.Background()
	for _, e := range holdEnds() {
		t.Run(e.name, func(t *testing.T) {
			f := newAdmissionFixture(t)
			f.seats(t, "ev", "A1", "A2", "A3")
			until := f.clock.Now().Add(time.Hour)
			first := claimUnderCap(t, f, "r-1", "A1", until)
			claimUnderCap(t, f, "r-2", "A2", until)
			var hl *reservation.HoldLimit
			if _, err := f.store.Admit(ctx, capped(f.admission("r-3", "A3"), "cust", until)); !errors.As(err, &hl) {
				t.Fatalf("r-3 at the cap: %v, want HoldLimit", err)
			}
			e.end(t, f, first)
			if _, err := f.store.Admit(ctx, capped(f.admission("r-3", "A3"), "cust", until)); err != nil {
				t.Fatalf("r-3 after r-1 %s: %v, want its place", e.name, err)
			}
		})
	}
}

// A claim that comes after its admission's place under the cap passed to another reservation
// of the customer (more than the slot's time after the admission) still holds the seats, keeps
// no place, and its release leaves the other reservations' places alone.
func TestAClaimAfterItsPlacePassedOnHoldsWithoutItAndLeavesTheOthersAlone(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3", "A4", "A5")
	until := f.clock.Now().Add(5 * time.Minute)
	var keys []string
	for _, id := range []string{"r-1", "r-2"} {
		res, err := f.store.Admit(ctx, capped(f.admission(id, map[string]string{"r-1": "A1", "r-2": "A2"}[id]), "cust", until))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, reservation.HoldSlotKey("cust", res.HoldSlot))
	}
	f.clock.Set(until)
	later := f.clock.Now().Add(time.Hour)
	claimUnderCap(t, f, "r-3", "A3", later)
	claimUnderCap(t, f, "r-4", "A4", later)
	late := claimWithSlot(t, f, "r-1", "A1", keys[0])
	if late.Inventory != reservation.Held || late.SlotKey != "" {
		t.Fatalf("r-1's late claim: %s with slot %q, want HELD with none", late.Inventory, late.SlotKey)
	}
	must[reservation.Reservation](t)(f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: late.ID, Guard: reservation.GuardOf(late), Reason: "cancelled"}))
	var hl *reservation.HoldLimit
	if _, err := f.store.Admit(ctx, capped(f.admission("r-5", "A5"), "cust", later)); !errors.As(err, &hl) {
		t.Fatalf("r-5 while r-3 and r-4 hold both places: %v, want HoldLimit", err)
	}
}

// A hold whose place another reservation has taken since (its slot was given back early) still
// ends, and its end leaves that reservation's place alone.
func TestAHoldEndingAfterItsPlaceWasTakenLeavesThatPlaceAlone(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3", "A4")
	until := f.clock.Now().Add(time.Hour)
	first := claimUnderCap(t, f, "r-1", "A1", until)
	claimUnderCap(t, f, "r-2", "A2", until)
	slot, _ := strconv.Atoi(first.SlotKey[strings.LastIndex(first.SlotKey, "#")+1:])
	if err := f.store.GiveBackHoldSlot(ctx, "cust", "r-1", slot); err != nil {
		t.Fatal(err)
	}
	claimUnderCap(t, f, "r-3", "A3", until)
	released := must[reservation.Reservation](t)(f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: first.ID, Guard: reservation.GuardOf(first), Reason: "cancelled"}))
	if released.Inventory != reservation.Released {
		t.Fatalf("r-1 after its release: %s, want RELEASED", released.Inventory)
	}
	var hl *reservation.HoldLimit
	if _, err := f.store.Admit(ctx, capped(f.admission("r-4", "A4"), "cust", until)); !errors.As(err, &hl) {
		t.Fatalf("r-4 while r-2 and r-3 hold both places: %v, want HoldLimit", err)
	}
}

// admitWithTheAPIsSlotTime admits id for seat as customer "cust" under a cap of two with the
// api's slot time (now + lease + hold) and returns the slot key the execution input carries.
func admitWithTheAPIsSlotTime(t *testing.T, f *fixture, id, seat string) string {
	t.Helper()
	res, err := f.store.Admit(context.Background(), capped(f.admission(id, seat), "cust", f.clock.Now().Add(lease+10*time.Minute)))
	if err != nil || !res.Admitted {
		t.Fatalf("admit %s: %+v %v", id, res, err)
	}
	return reservation.HoldSlotKey("cust", res.HoldSlot)
}

func claimWithSlot(t *testing.T, f *fixture, id, seat, slotKey string) reservation.Reservation {
	t.Helper()
	claim := request(id, "ev", seat)
	claim.CustomerID, claim.SlotKey = "cust", slotKey
	return must[reservation.Reservation](t)(f.store.Claim(context.Background(), claim))
}

// A claim that comes late (the Claim state retried a throttled Lambda for half a minute) holds
// the seats for the whole hold from the claim; the slot's own time, counted from the admission,
// must not free the place while that hold is live.
func TestALateClaimKeepsItsPlaceUnderTheCapForAsLongAsItsHold(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3")
	k1 := admitWithTheAPIsSlotTime(t, f, "r-1", "A1")
	f.clock.Advance(30 * time.Second)
	r1 := claimWithSlot(t, f, "r-1", "A1", k1)
	claimWithSlot(t, f, "r-2", "A2", admitWithTheAPIsSlotTime(t, f, "r-2", "A2"))
	f.clock.Advance(10*time.Minute + lease - 30*time.Second)
	if !f.clock.Now().Before(r1.HoldExpiresAt) {
		t.Fatalf("r-1's hold should still be live at %s (deadline %s)", f.clock.Now(), r1.HoldExpiresAt)
	}
	var hl *reservation.HoldLimit
	if _, err := f.store.Admit(ctx, capped(f.admission("r-3", "A3"), "cust", f.clock.Now().Add(time.Hour))); !errors.As(err, &hl) {
		t.Fatalf("r-3 while r-1 and r-2 hold live seats: %v, want HoldLimit", err)
	}
}

// A reservation whose payment is pending keeps its seats past the hold's deadline until the
// saga or the sweeper ends it, and keeps its place under the cap as long: only the write that
// ends it gives the place back.
func TestAPaymentPendingPastItsDeadlineKeepsItsPlaceUntilItEnds(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3")
	r1 := claimWithSlot(t, f, "r-1", "A1", admitWithTheAPIsSlotTime(t, f, "r-1", "A1"))
	r1 = must[reservation.Reservation](t)(f.store.StartPayment(ctx, r1.ID, reservation.GuardOf(r1)))
	r2 := claimWithSlot(t, f, "r-2", "A2", admitWithTheAPIsSlotTime(t, f, "r-2", "A2"))
	f.clock.Advance(lease + 10*time.Minute + time.Second)
	var hl *reservation.HoldLimit
	if _, err := f.store.Admit(ctx, capped(f.admission("r-3", "A3"), "cust", f.clock.Now().Add(time.Hour))); !errors.As(err, &hl) {
		t.Fatalf("r-3 while r-1's payment is pending and r-2's hold is not yet swept: %v, want HoldLimit", err)
	}
	// The sweeper expires r-2's lapsed hold: its place comes back, and r-1's stays taken.
	must[reservation.Reservation](t)(f.store.Expire(ctx, r2.ID, reservation.Held, reservation.GuardOf(r2)))
	claimWithSlot(t, f, "r-3", "A3", admitWithTheAPIsSlotTime(t, f, "r-3", "A3"))
	if _, err := f.store.Admit(ctx, capped(f.admission("r-4", "A2"), "cust", f.clock.Now().Add(time.Hour))); !errors.As(err, &hl) {
		t.Fatalf("r-4 while r-1's payment is pending and r-3 holds: %v, want HoldLimit", err)
	}
}

// admitAs admits id for seat as customer "cust" under a cap of two, with the hold slot the api
// read from the admission before (-1: it read none).
func admitAs(f *fixture, id, seat string, prior int, until time.Time) (reservation.AdmitResult, error) {
	req := capped(f.admission(id, seat), "cust", until)
	req.Admission.HoldSlot = prior
	return f.store.Admit(context.Background(), req)
}

// Two POSTs of one request at once both read no admission, so the second reaches the gate
// believing it has no place yet; if the customer's other place came free after the first took
// one, the second must reuse the first's place, not take the free one too: one reservation
// holds one place, and the customer may still start another.
func TestADuplicateAdmissionTakesNoSecondPlaceUnderTheCap(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3")
	until := f.clock.Now().Add(time.Hour)
	other := must[reservation.AdmitResult](t)(admitAs(f, "r-other", "A2", -1, until))
	first := must[reservation.AdmitResult](t)(admitAs(f, "r-1", "A1", -1, until))
	if first.HoldSlot == other.HoldSlot {
		t.Fatalf("r-1 and r-other share place %d", first.HoldSlot)
	}
	// r-other's hold ends between the first admission and its duplicate.
	if err := f.store.GiveBackHoldSlot(ctx, "cust", "r-other", other.HoldSlot); err != nil {
		t.Fatal(err)
	}
	dup, err := admitAs(f, "r-1", "A1", -1, until)
	if err != nil || !dup.Admitted || dup.HoldSlot != first.HoldSlot {
		t.Fatalf("r-1's duplicate: %+v %v, want admitted in place %d again", dup, err, first.HoldSlot)
	}
	if a, _, err := f.store.GetAdmission(ctx, "r-1"); err != nil || a.HoldSlot != first.HoldSlot {
		t.Fatalf("r-1's admission records place %d (%v), want %d", a.HoldSlot, err, first.HoldSlot)
	}
	if _, err := admitAs(f, "r-3", "A3", -1, until); err != nil {
		t.Fatalf("r-3 while r-1 alone holds a place: %v, want the other place", err)
	}
}

// A retry whose place passed to another reservation of the customer (its time ran out before
// the execution started) takes another free place, and only that one: a third reservation is
// refused, and a later duplicate keeps the new place.
func TestARetryWhosePlacePassedOnTakesOneOtherPlace(t *testing.T) {
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3")
	until := f.clock.Now().Add(5 * time.Minute)
	lost := must[reservation.AdmitResult](t)(admitAs(f, "r-1", "A1", -1, until))
	f.clock.Set(until)
	later := until.Add(time.Hour)
	if took := must[reservation.AdmitResult](t)(admitAs(f, "r-2", "A2", -1, later)); took.HoldSlot != lost.HoldSlot {
		t.Fatalf("r-2 took place %d, want r-1's lapsed place %d", took.HoldSlot, lost.HoldSlot)
	}
	moved, err := admitAs(f, "r-1", "A1", lost.HoldSlot, later)
	if err != nil || !moved.Admitted || moved.HoldSlot == lost.HoldSlot {
		t.Fatalf("r-1's retry: %+v %v, want admitted in a place other than %d", moved, err, lost.HoldSlot)
	}
	var hl *reservation.HoldLimit
	if _, err := admitAs(f, "r-3", "A3", -1, later); !errors.As(err, &hl) {
		t.Fatalf("r-3 while r-1 and r-2 hold both places: %v, want HoldLimit", err)
	}
	if dup, err := admitAs(f, "r-1", "A1", -1, later); err != nil || dup.HoldSlot != moved.HoldSlot {
		t.Fatalf("r-1's duplicate after the move: %+v %v, want place %d", dup, err, moved.HoldSlot)
	}
}

// A retry of a reservation whose hold has ended, however it ended, is answered from the
// reservation the Claim step wrote: the gate writes nothing, so the retry takes no place under
// the cap (the customer may start two more) and leases no seat.
func TestARetryOfAnEndedReservationIsAnsweredFromItAndTakesNothing(t *testing.T) {
	for _, e := range holdEnds() {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			f := newAdmissionFixture(t)
			f.seats(t, "ev", "A1", "A2", "A3")
			until := f.clock.Now().Add(time.Hour)
			r := claimUnderCap(t, f, "r-1", "A1", until)
			e.end(t, f, r)
			a, _, err := f.store.GetAdmission(ctx, "r-1")
			if err != nil {
				t.Fatal(err)
			}
			until = f.clock.Now().Add(time.Hour)
			res, err := admitAs(f, "r-1", "A1", a.HoldSlot, until)
			if err != nil || !res.Claimed || res.Admitted {
				t.Fatalf("r-1's retry after it was %s: %+v %v, want answered from the reservation", e.name, res, err)
			}
			for _, id := range []string{"r-2", "r-3"} {
				if _, err := admitAs(f, id, map[string]string{"r-2": "A2", "r-3": "A3"}[id], -1, until); err != nil {
					t.Fatalf("%s after r-1's retry: %v, want a place", id, err)
				}
			}
			if f.seat(t, "ev", "A1").State == reservation.Available {
				if _, err := f.store.Admit(ctx, f.admission("r-next", "A1")); err != nil {
					t.Fatalf("another buyer for r-1's freed seat: %v, want admitted (the retry leased nothing)", err)
				}
			}
		})
	}
}

// beforeSecondTransaction runs race ahead of db's second transaction, once: another request
// landing between a gate's first try and its next.
func beforeSecondTransaction(db *countingDB, race func()) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.before = func() {
		db.mu.Lock()
		defer db.mu.Unlock()
		db.before = race
	}
}

// Two admissions of one reservation racing: the first tries a place another reservation has,
// and before it tries the next, that place comes free and the second takes it. The first must
// then stay in the place the second took, not take a second one: the customer keeps a place
// for another reservation.
func TestTwoAdmissionsOfOneReservationRacingTakeOnePlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prior is the place both requests read from the admission (-1: none yet).
		prior int
	}{
		{"neither had read an admission", -1},
		{"both read the place the reservation had lost", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newAdmissionFixture(t)
			f.seats(t, "ev", "A1", "A2", "A3")
			until := f.clock.Now().Add(time.Hour)
			if tc.prior >= 0 {
				// r-1 took place 0 once; it lapsed and r-other has it now.
				short := f.clock.Now().Add(time.Minute)
				must[reservation.AdmitResult](t)(admitAs(f, "r-1", "A1", -1, short))
				f.clock.Set(short)
				until = f.clock.Now().Add(time.Hour)
			}
			other := must[reservation.AdmitResult](t)(admitAs(f, "r-other", "A2", -1, until))
			if other.HoldSlot != 0 {
				t.Fatalf("r-other took place %d, want 0", other.HoldSlot)
			}
			st, db := f.counted(t)
			var second reservation.AdmitResult
			beforeSecondTransaction(db, func() {
				if err := f.store.GiveBackHoldSlot(ctx, "cust", "r-other", other.HoldSlot); err != nil {
					t.Error(err)
				}
				second = must[reservation.AdmitResult](t)(admitAs(f, "r-1", "A1", tc.prior, until))
			})
			req := capped(f.admission("r-1", "A1"), "cust", until)
			req.Admission.HoldSlot = tc.prior
			first, err := st.Admit(ctx, req)
			if err != nil || !first.Admitted || first.HoldSlot != second.HoldSlot {
				t.Fatalf("the first admission: %+v %v, want admitted in the second's place %d", first, err, second.HoldSlot)
			}
			if a, _, err := f.store.GetAdmission(ctx, "r-1"); err != nil || a.HoldSlot != second.HoldSlot {
				t.Fatalf("r-1's admission records place %d (%v), want %d", a.HoldSlot, err, second.HoldSlot)
			}
			if _, err := admitAs(f, "r-3", "A3", -1, until); err != nil {
				t.Fatalf("r-3 while r-1 alone holds a place: %v, want the other place", err)
			}
		})
	}
}

// A start queued after its execution had already claimed (the start's answer was lost, and
// its retry was throttled, so the api queued it) must not shorten the place the claim keeps:
// the reservation's payment is still pending long after the queued start's time, and the
// customer may hold no third reservation meanwhile.
func TestAStartQueuedAfterTheClaimKeepsTheClaimsPlaceUnderTheCap(t *testing.T) {
	ctx := context.Background()
	f := newAdmissionFixture(t)
	f.seats(t, "ev", "A1", "A2", "A3")
	r1 := claimUnderCap(t, f, "r-1", "A1", f.clock.Now().Add(lease+10*time.Minute))
	must[reservation.Reservation](t)(f.store.StartPayment(ctx, r1.ID, reservation.GuardOf(r1)))
	a, _, err := f.store.GetAdmission(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	if err := f.store.QueueStart(ctx, a, `{"reservationId":"r-1"}`, now.Add(time.Hour), now.Add(time.Hour+10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	r2 := claimUnderCap(t, f, "r-2", "A2", f.clock.Now().Add(lease+10*time.Minute))
	must[reservation.Reservation](t)(f.store.StartPayment(ctx, r2.ID, reservation.GuardOf(r2)))
	f.clock.Advance(2 * time.Hour)
	var hl *reservation.HoldLimit
	if _, err := f.store.Admit(ctx, capped(f.admission("r-3", "A3"), "cust", f.clock.Now().Add(time.Hour))); !errors.As(err, &hl) {
		t.Fatalf("r-3 while the payments of r-1 and r-2 are pending: %v, want HoldLimit", err)
	}
}
