// Package storecontract is the behaviour every implementation of the saga's Store port must
// have, as one suite: internal/saga/sagatest runs it against MemStore (the store the saga's
// tests use) and internal/inventory against the DynamoDB store on DynamoDB Local, so the saga's
// tests and the product rest on the same rules.
package storecontract

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// Store is the saga's Store port.
type Store = saga.Store

// Harness is one empty store and what the suite needs to look behind its port.
type Harness struct {
	Store Store
	// Now reads the store's clock; Advance moves it forward.
	Now     func() time.Time
	Advance func(d time.Duration)
	// CreateSeats creates AVAILABLE seats of an event.
	CreateSeats func(t *testing.T, eventID string, seatIDs ...string)
	// Seat reads a seat as stored.
	Seat func(t *testing.T, eventID, seatID string) reservation.Seat
	// Records lists the outbox records written for a reservation, in version order.
	Records func(t *testing.T, reservationID string) []outbox.Envelope
}

// Hold is the hold duration of every claim the suite makes.
const Hold = 10 * time.Minute

const event = "ev"

// Run runs every case against a fresh store from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.CreateSeats(t, event, "A1", "A2", "A3")
			c.run(t, &suite{Harness: h, t: t})
		})
	}
}

type suite struct {
	Harness
	t *testing.T
}

var ctx = context.Background()

func request(id string, seats ...string) reservation.ClaimRequest {
	return reservation.ClaimRequest{ReservationID: id, CustomerID: "cust-" + id, EventID: event, SeatIDs: seats,
		Amount: 2500 * int64(len(seats)), Currency: "EUR", HoldDuration: Hold, IdempotencyKey: "key-" + id,
		CorrelationID: "corr-" + id}
}

func (s *suite) ok(r reservation.Reservation, err error) reservation.Reservation {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func (s *suite) claim(id string, seats ...string) reservation.Reservation {
	s.t.Helper()
	return s.ok(s.Store.Claim(ctx, request(id, seats...)))
}

func (s *suite) get(id string) reservation.Reservation {
	s.t.Helper()
	return s.ok(s.Store.Get(ctx, id))
}

func (s *suite) pay(r reservation.Reservation, ev reservation.PaymentEvent, u reservation.PaymentUpdate) reservation.Reservation {
	s.t.Helper()
	u.ReservationID, u.Guard, u.Event, u.From = r.ID, reservation.GuardOf(r), ev, r.Payment
	return s.ok(s.Store.UpdatePayment(ctx, u))
}

// paying is a reservation holding seats, PAYMENT_PENDING with its payment AUTHORIZING.
func (s *suite) paying(id string, seats ...string) reservation.Reservation {
	s.t.Helper()
	r := s.claim(id, seats...)
	r = s.ok(s.Store.StartPayment(ctx, id, reservation.GuardOf(r)))
	return s.pay(r, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_" + id})
}

// authorized is a paying reservation whose payment is AUTHORIZED.
func (s *suite) authorized(id string, seats ...string) reservation.Reservation {
	s.t.Helper()
	return s.pay(s.paying(id, seats...), reservation.AuthorizationOK, reservation.PaymentUpdate{CaptureBefore: s.Now().Add(7 * 24 * time.Hour)})
}

// expectSeat checks a seat's state and owner ("" for none).
func (s *suite) expectSeat(seat string, state reservation.InventoryState, owner string) {
	s.t.Helper()
	got := s.Seat(s.t, event, seat)
	if got.State != state || got.ReservationID != owner {
		s.t.Fatalf("seat %s is %s owned by %q, want %s owned by %q", seat, got.State, got.ReservationID, state, owner)
	}
}

// snapshot is a reservation's stored state and its seats, to prove a refused call wrote nothing.
type snapshot struct {
	r       reservation.Reservation
	seats   []reservation.Seat
	records int
}

func (s *suite) snapshot(id string) snapshot {
	s.t.Helper()
	r := s.get(id)
	snap := snapshot{r: r, records: len(s.Records(s.t, id))}
	for _, seat := range r.SeatIDs {
		snap.seats = append(snap.seats, s.Seat(s.t, event, seat))
	}
	return snap
}

// refused checks that err is a T and that nothing changed since before.
func refused[T error](s *suite, err error, before snapshot) T {
	s.t.Helper()
	var want T
	if !errors.As(err, &want) {
		s.t.Fatalf("want %T, got %v", want, err)
	}
	if after := s.snapshot(before.r.ID); !reflect.DeepEqual(after, before) {
		s.t.Fatalf("a refused call changed the store:\n before %+v\n after  %+v", before, after)
	}
	return want
}

// record is the payload of an outbox record the suite reads.
type record struct {
	env  outbox.Envelope
	snap outbox.ReservationSnapshot
}

// last is the newest outbox record of a reservation.
func (s *suite) last(id string) record {
	s.t.Helper()
	envs := s.Records(s.t, id)
	if len(envs) == 0 {
		s.t.Fatalf("no outbox record for %s", id)
	}
	e := envs[len(envs)-1]
	var snap outbox.ReservationSnapshot
	if err := json.Unmarshal(e.Payload, &snap); err != nil {
		s.t.Fatalf("record %s: %v", e.EventID, err)
	}
	return record{env: e, snap: snap}
}

// expectRecord checks the newest record of r: its type, the version r is at, the states r is
// in, the reason and the notify flag.
func (s *suite) expectRecord(r reservation.Reservation, typ outbox.Type, reason string, notify bool) {
	s.t.Helper()
	got := s.last(r.ID)
	e, p := got.env, got.snap
	if e.Type != typ || e.AggregateVersion != r.Version || p.InventoryState != string(r.Inventory) ||
		p.PaymentState != string(r.Payment) || p.Reason != reason || p.NotifyCustomer != notify {
		s.t.Fatalf("newest record %s v%d %s/%s reason %q notify %v, want %s v%d %s/%s reason %q notify %v",
			e.Type, e.AggregateVersion, p.InventoryState, p.PaymentState, p.Reason, p.NotifyCustomer,
			typ, r.Version, r.Inventory, r.Payment, reason, notify)
	}
}

func (s *suite) expectState(r reservation.Reservation, inv reservation.InventoryState, pay reservation.PaymentState, version int64) {
	s.t.Helper()
	if r.Inventory != inv || r.Payment != pay || r.Version != version {
		s.t.Fatalf("%s is %s/%s v%d, want %s/%s v%d", r.ID, r.Inventory, r.Payment, r.Version, inv, pay, version)
	}
	if stored := s.get(r.ID); !reflect.DeepEqual(stored, r) {
		s.t.Fatalf("returned and stored reservations differ:\n returned %+v\n stored   %+v", r, stored)
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s *suite)
}{
	{"claim holds free seats and records SeatsHeld", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1", "A2")
		s.expectState(r, reservation.Held, reservation.NotStarted, 1)
		if !r.HoldExpiresAt.Equal(s.Now().Add(Hold)) || r.Amount != 5000 || r.Currency != "EUR" || r.CorrelationID != "corr-r1" {
			t.Fatalf("claimed %+v", r)
		}
		s.expectSeat("A1", reservation.Held, "r1")
		s.expectSeat("A2", reservation.Held, "r1")
		s.expectSeat("A3", reservation.Available, "")
		s.expectRecord(r, outbox.SeatsHeld, "", false)
	}},
	{"claim loses to a live hold and writes nothing", func(t *testing.T, s *suite) {
		s.claim("r1", "A1")
		s.Advance(Hold - time.Nanosecond)
		_, err := s.Store.Claim(ctx, request("r2", "A2", "A1"))
		var su *reservation.SeatUnavailable
		if !errors.As(err, &su) || !reflect.DeepEqual(su.SeatIDs, []string{"A1"}) {
			t.Fatalf("want *SeatUnavailable for A1, got %v", err)
		}
		if _, err := s.Store.Get(ctx, "r2"); !errors.As(err, new(*reservation.NotFound)) {
			t.Fatalf("the loser's reservation: %v", err)
		}
		s.expectSeat("A1", reservation.Held, "r1")
		s.expectSeat("A2", reservation.Available, "")
		if n := len(s.Records(t, "r2")); n != 0 {
			t.Fatalf("%d records for the loser", n)
		}
	}},
	{"claim takes a HELD seat from its deadline on, never a PAYMENT_PENDING one", func(t *testing.T, s *suite) {
		s.claim("r1", "A1")
		pending := s.claim("r2", "A2")
		s.ok(s.Store.StartPayment(ctx, "r2", reservation.GuardOf(pending)))
		s.Advance(Hold)
		s.claim("r3", "A1")
		s.expectSeat("A1", reservation.Held, "r3")
		s.Advance(time.Hour)
		if _, err := s.Store.Claim(ctx, request("r4", "A2")); !errors.As(err, new(*reservation.SeatUnavailable)) {
			t.Fatalf("PAYMENT_PENDING seat claimed: %v", err)
		}
		s.expectSeat("A2", reservation.PaymentPending, "r2")
	}},
	{"claim replayed with the same key returns the reservation it created", func(t *testing.T, s *suite) {
		first := s.claim("r1", "A1", "A2")
		s.Advance(time.Minute)
		again := s.ok(s.Store.Claim(ctx, request("r1", "A2", "A1")))
		if !reflect.DeepEqual(again, first) {
			t.Fatalf("replay returned %+v, want %+v", again, first)
		}
		if n := len(s.Records(t, "r1")); n != 1 {
			t.Fatalf("%d records after a replay, want 1", n)
		}
	}},
	{"claim with a reused key and another request is an IdempotencyConflict", func(t *testing.T, s *suite) {
		s.claim("r1", "A1")
		before := s.snapshot("r1")
		_, err := s.Store.Claim(ctx, request("r1", "A3"))
		refused[*reservation.IdempotencyConflict](s, err, before)
		s.expectSeat("A3", reservation.Available, "")
	}},
	{"start payment moves a live hold to PAYMENT_PENDING", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1")
		r = s.ok(s.Store.StartPayment(ctx, "r1", reservation.GuardOf(r)))
		s.expectState(r, reservation.PaymentPending, reservation.NotStarted, 2)
		s.expectSeat("A1", reservation.PaymentPending, "r1")
		s.expectRecord(r, outbox.PaymentPending, "", false)
	}},
	{"start payment is refused from the deadline on", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1")
		s.Advance(Hold)
		_, err := s.Store.StartPayment(ctx, "r1", reservation.GuardOf(r))
		refused[*reservation.HoldExpired](s, err, s.snapshot("r1"))
	}},
	{"confirm sells a live authorized hold", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1", "A2")
		r = s.ok(s.Store.Confirm(ctx, "r1", reservation.GuardOf(r)))
		s.expectState(r, reservation.Confirmed, reservation.Authorized, 5)
		if r.Outcome != reservation.OutcomeConfirmed {
			t.Fatalf("outcome %s", r.Outcome)
		}
		s.expectSeat("A1", reservation.Confirmed, "r1")
		s.expectSeat("A2", reservation.Confirmed, "r1")
		s.expectRecord(r, outbox.ReservationConfirmed, "", false)
	}},
	{"confirm is refused from the deadline on", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		s.Advance(Hold)
		_, err := s.Store.Confirm(ctx, "r1", reservation.GuardOf(r))
		refused[*reservation.HoldExpired](s, err, s.snapshot("r1"))
		s.expectSeat("A1", reservation.PaymentPending, "r1")
	}},
	{"confirm is refused once the customer cancelled", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		r = s.ok(s.Store.Cancel(ctx, "r1", reservation.GuardOf(r)))
		_, err := s.Store.Confirm(ctx, "r1", reservation.GuardOf(r))
		refused[*reservation.GuardFailed](s, err, s.snapshot("r1"))
	}},
	{"confirm with a stale guard changes nothing", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		stale := reservation.GuardOf(r)
		stale.Version--
		_, err := s.Store.Confirm(ctx, "r1", stale)
		refused[*reservation.StaleVersion](s, err, s.snapshot("r1"))
	}},
	{"seats and money disagreeing carry the time they started to, until they agree", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		if !r.ReconcileSince.IsZero() {
			t.Fatalf("a live hold carries ReconcileSince %s", r.ReconcileSince)
		}
		s.Advance(time.Minute)
		since := s.Now()
		r = s.ok(s.Store.Confirm(ctx, "r1", reservation.GuardOf(r)))
		if !r.ReconcileSince.Equal(since) || !s.get("r1").ReconcileSince.Equal(since) {
			t.Fatalf("confirmed, not captured: ReconcileSince %s, want %s", r.ReconcileSince, since)
		}
		s.Advance(time.Minute)
		r = s.pay(r, reservation.RequestCapture, reservation.PaymentUpdate{})
		if !s.get("r1").ReconcileSince.Equal(since) {
			t.Fatalf("capture pending: ReconcileSince %s, want %s", s.get("r1").ReconcileSince, since)
		}
		r = s.pay(r, reservation.CaptureOK, reservation.PaymentUpdate{})
		s.expectState(r, reservation.Confirmed, reservation.Paid, 7)
		if !r.ReconcileSince.IsZero() {
			t.Fatalf("sold and paid: ReconcileSince %s", r.ReconcileSince)
		}
	}},
	{"release gives the seats back with the caller's reason and notify flag", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1", "A2")
		r = s.ok(s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Reason: "buyer_left", NotifyCustomer: true}))
		s.expectState(r, reservation.Released, reservation.NotStarted, 2)
		if r.Outcome != reservation.OutcomeReleased {
			t.Fatalf("outcome %s", r.Outcome)
		}
		s.expectSeat("A1", reservation.Available, "")
		s.expectSeat("A2", reservation.Available, "")
		s.expectRecord(r, outbox.SeatsReleased, "buyer_left", true)
		s.claim("r2", "A1")
	}},
	{"release is refused while money may be held", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		_, err := s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Reason: "x"})
		refused[*reservation.GuardFailed](s, err, s.snapshot("r1"))
		s.expectSeat("A1", reservation.PaymentPending, "r1")
	}},
	{"an expiry leaves seats taken by others alone and is refused before the deadline", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1", "A2")
		_, err := s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Expired: true})
		refused[*reservation.HoldStillLive](s, err, s.snapshot("r1"))
		s.Advance(Hold)
		s.claim("r2", "A2")
		r = s.ok(s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Expired: true, Reason: "lapsed"}))
		s.expectState(r, reservation.Released, reservation.NotStarted, 2)
		if r.Outcome != reservation.OutcomeExpired {
			t.Fatalf("outcome %s", r.Outcome)
		}
		s.expectSeat("A1", reservation.Available, "")
		s.expectSeat("A2", reservation.Held, "r2")
		s.expectRecord(r, outbox.SeatsReleased, "lapsed", false)
	}},
	{"reacquire takes back seats that are ours or free", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1", "A2")
		s.Advance(Hold)
		r = s.ok(s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Expired: true}))
		// A2 is held by r2 whose own hold lapses: free again for r1.
		s.claim("r2", "A2")
		s.Advance(Hold)
		r = s.pay(r, reservation.AuthorizationOK, reservation.PaymentUpdate{})
		r = s.ok(s.Store.Reacquire(ctx, "r1", reservation.GuardOf(r)))
		s.expectState(r, reservation.Confirmed, reservation.Authorized, 6)
		if r.Outcome != reservation.OutcomeConfirmedLate {
			t.Fatalf("outcome %s", r.Outcome)
		}
		s.expectSeat("A1", reservation.Confirmed, "r1")
		s.expectSeat("A2", reservation.Confirmed, "r1")
		s.expectRecord(r, outbox.SeatsReacquired, outbox.ReasonLatePayment, false)

		// Still ours: a lapsed PAYMENT_PENDING hold is confirmed in place.
		p := s.authorized("r3", "A3")
		s.Advance(Hold)
		p = s.ok(s.Store.Reacquire(ctx, "r3", reservation.GuardOf(p)))
		s.expectState(p, reservation.Confirmed, reservation.Authorized, 5)
		s.expectSeat("A3", reservation.Confirmed, "r3")
	}},
	{"reacquire of a seat someone holds is SeatUnavailable and changes nothing", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1", "A2")
		s.Advance(Hold)
		r = s.ok(s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Expired: true}))
		s.claim("r2", "A2")
		r = s.pay(r, reservation.AuthorizationOK, reservation.PaymentUpdate{})
		before := s.snapshot("r1")
		_, err := s.Store.Reacquire(ctx, "r1", reservation.GuardOf(r))
		su := refused[*reservation.SeatUnavailable](s, err, before)
		if !reflect.DeepEqual(su.SeatIDs, []string{"A2"}) {
			t.Fatalf("unavailable %v, want [A2]", su.SeatIDs)
		}
		s.expectSeat("A1", reservation.Available, "")
		s.expectSeat("A2", reservation.Held, "r2")
	}},
	{"reacquire is refused once the customer cancelled", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		r = s.ok(s.Store.Cancel(ctx, "r1", reservation.GuardOf(r)))
		s.Advance(Hold)
		_, err := s.Store.Reacquire(ctx, "r1", reservation.GuardOf(r))
		refused[*reservation.GuardFailed](s, err, s.snapshot("r1"))
	}},
	{"a payment event bumps the version once and records its details, reason and notify flag", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1")
		r = s.ok(s.Store.StartPayment(ctx, "r1", reservation.GuardOf(r)))
		r = s.pay(r, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_1", TaskToken: "tok1", Reason: "authorizing"})
		s.expectState(r, reservation.PaymentPending, reservation.Authorizing, 3)
		if r.PaymentIntentID != "pi_1" || r.TaskToken != "tok1" {
			t.Fatalf("details %+v", r)
		}
		s.expectRecord(r, outbox.PaymentStateChanged, "authorizing", false)
		before := s.Now().Add(7 * 24 * time.Hour)
		r = s.pay(r, reservation.AuthorizationOK, reservation.PaymentUpdate{CaptureBefore: before, Reason: "webhook", NotifyCustomer: true})
		s.expectState(r, reservation.PaymentPending, reservation.Authorized, 4)
		if !r.CaptureBefore.Equal(before) || r.PaymentIntentID != "pi_1" {
			t.Fatalf("details %+v", r)
		}
		s.expectRecord(r, outbox.PaymentAuthorized, "webhook", true)
		s.expectSeat("A1", reservation.PaymentPending, "r1")
	}},
	{"an illegal payment event or a wrong prior state changes nothing", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1")
		before := s.snapshot("r1")
		_, err := s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Event: reservation.CaptureOK, From: reservation.Authorizing})
		refused[*reservation.IllegalTransition](s, err, before)
		_, err = s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Event: reservation.AuthorizationOK, From: reservation.NotStarted})
		refused[*reservation.UnexpectedState](s, err, before)
	}},
	{"a payment update with a stale version is StaleVersion and changes nothing", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1")
		stale := reservation.GuardOf(r)
		stale.Version--
		for _, ev := range []reservation.PaymentEvent{reservation.AuthorizationOK, ""} {
			_, err := s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: stale,
				Event: ev, From: reservation.Authorizing, TaskToken: "tok2"})
			refused[*reservation.StaleVersion](s, err, s.snapshot("r1"))
		}
	}},
	{"a detail-only update keeps the version, writes no record and only grows the counters", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1")
		records := len(s.Records(t, "r1"))
		g := reservation.GuardOf(r)
		got := s.ok(s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: g, TaskToken: "tok2",
			CancelAttempts: 2, RefundID: "re_1", RefundAttempts: 1}))
		s.expectState(got, reservation.PaymentPending, reservation.Authorizing, r.Version)
		got = s.ok(s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: g, CancelAttempts: 1}))
		if got.TaskToken != "tok2" || got.CancelAttempts != 2 || got.RefundID != "re_1" || got.RefundAttempts != 1 || got.PaymentIntentID != "pi_r1" {
			t.Fatalf("details %+v", got)
		}
		s.expectState(got, reservation.PaymentPending, reservation.Authorizing, r.Version)
		if n := len(s.Records(t, "r1")); n != records {
			t.Fatalf("%d records written by detail-only updates", n-records)
		}
	}},
	{"a payment event with ReleaseSeats gives the seats back in the same change", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1", "A2")
		r = s.pay(r, reservation.VoidPayment, reservation.PaymentUpdate{ReleaseSeats: true, Reason: "buyer_gone", NotifyCustomer: true})
		s.expectState(r, reservation.Released, reservation.Canceled, 4)
		if r.Outcome != reservation.OutcomeReleased {
			t.Fatalf("outcome %s", r.Outcome)
		}
		s.expectSeat("A1", reservation.Available, "")
		s.expectSeat("A2", reservation.Available, "")
		if n := len(s.Records(t, "r1")); n != 4 {
			t.Fatalf("%d records, want one per version", n)
		}
		s.expectRecord(r, outbox.PaymentVoided, "buyer_gone", true)
	}},
	{"ReleaseSeats as an expiry, with no payment event, bumps the version and leaves seats taken by others alone", func(t *testing.T, s *suite) {
		r := s.claim("r1", "A1", "A2")
		s.Advance(Hold)
		s.claim("r2", "A2")
		r = s.ok(s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			ReleaseSeats: true, Expired: true, Reason: "lapsed"}))
		s.expectState(r, reservation.Released, reservation.NotStarted, 2)
		if r.Outcome != reservation.OutcomeExpired {
			t.Fatalf("outcome %s", r.Outcome)
		}
		s.expectSeat("A1", reservation.Available, "")
		s.expectSeat("A2", reservation.Held, "r2")
		s.expectRecord(r, outbox.SeatsReleased, "lapsed", false)
	}},
	{"ReleaseSeats is refused as a whole when the payment after the event keeps the seats", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1")
		before := s.snapshot("r1")
		_, err := s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Event: reservation.OutcomeUnknown, From: reservation.Authorizing, ReleaseSeats: true, TaskToken: "tok2"})
		refused[*reservation.GuardFailed](s, err, before)
		_, err = s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Event: reservation.VoidPayment, From: reservation.Authorizing, ReleaseSeats: true, Expired: true})
		refused[*reservation.HoldStillLive](s, err, before)
		s.expectSeat("A1", reservation.PaymentPending, "r1")
	}},
	{"a declined payment stays unwinding through UNKNOWN, and a failed refund is counted and forgotten", func(t *testing.T, s *suite) {
		r := s.pay(s.paying("r1", "A1"), reservation.PaymentDeclined, reservation.PaymentUpdate{})
		if !r.Unwinding {
			t.Fatalf("declined: %+v; want Unwinding", r)
		}
		r = s.pay(r, reservation.OutcomeUnknown, reservation.PaymentUpdate{})
		r = s.pay(r, reservation.CaptureOK, reservation.PaymentUpdate{})
		r = s.pay(r, reservation.RequestRefund, reservation.PaymentUpdate{RefundID: "re_1"})
		if stored := s.get("r1"); !stored.Unwinding || stored.RefundID != "re_1" || stored.Payment != reservation.RefundPending {
			t.Fatalf("stored %+v; want REFUND_PENDING, unwinding, refund re_1", stored)
		}
		r = s.pay(r, reservation.RefundFailed, reservation.PaymentUpdate{})
		if stored := s.get("r1"); stored.Payment != reservation.Paid || stored.RefundAttempts != 1 || stored.RefundID != "" || !stored.Unwinding {
			t.Fatalf("after the failed refund: %+v; want PAID, one attempt counted, no refund id, still unwinding", stored)
		}
	}},
	{"cancel is recorded once, and again changes nothing", func(t *testing.T, s *suite) {
		r := s.paying("r1", "A1")
		r = s.ok(s.Store.Cancel(ctx, "r1", reservation.GuardOf(r)))
		s.expectState(r, reservation.PaymentPending, reservation.Authorizing, 4)
		if !r.CustomerCanceled {
			t.Fatalf("cancel not recorded: %+v", r)
		}
		s.expectRecord(r, outbox.ReservationCancelRequested, "", false)
		before := s.snapshot("r1")
		again := s.ok(s.Store.Cancel(ctx, "r1", reservation.GuardOf(r)))
		if !reflect.DeepEqual(again, before.r) {
			t.Fatalf("second cancel returned %+v, want the stored %+v", again, before.r)
		}
		if after := s.snapshot("r1"); !reflect.DeepEqual(after, before) {
			t.Fatalf("second cancel wrote: %+v", after)
		}
		stale := reservation.GuardOf(r)
		stale.Version--
		_, err := s.Store.Cancel(ctx, "r1", stale)
		refused[*reservation.StaleVersion](s, err, before)
		s.expectSeat("A1", reservation.PaymentPending, "r1")
	}},
	{"cancel is refused once the seats are confirmed", func(t *testing.T, s *suite) {
		r := s.authorized("r1", "A1")
		r = s.ok(s.Store.Confirm(ctx, "r1", reservation.GuardOf(r)))
		_, err := s.Store.Cancel(ctx, "r1", reservation.GuardOf(r))
		refused[*reservation.GuardFailed](s, err, s.snapshot("r1"))
	}},
	{"every call on a missing reservation is NotFound", func(t *testing.T, s *suite) {
		g := reservation.Guard{Owner: "nope", Version: 1}
		calls := map[string]func() error{
			"get":           func() error { _, err := s.Store.Get(ctx, "nope"); return err },
			"start payment": func() error { _, err := s.Store.StartPayment(ctx, "nope", g); return err },
			"confirm":       func() error { _, err := s.Store.Confirm(ctx, "nope", g); return err },
			"release": func() error {
				_, err := s.Store.Release(ctx, reservation.ReleaseRequest{ReservationID: "nope", Guard: g})
				return err
			},
			"reacquire": func() error { _, err := s.Store.Reacquire(ctx, "nope", g); return err },
			"update payment": func() error {
				_, err := s.Store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "nope", Guard: g})
				return err
			},
			"cancel": func() error { _, err := s.Store.Cancel(ctx, "nope", g); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.As(err, new(*reservation.NotFound)) {
				t.Errorf("%s: want *NotFound, got %v", name, err)
			}
		}
	}},
}
