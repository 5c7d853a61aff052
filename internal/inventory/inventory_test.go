package inventory_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type fixture struct {
	env     *ddbtest.Env
	store   *inventory.Store
	clock   *clock.Fake
	metrics *metrics.Memory
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	env := ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox(), tables.Admissions())
	c := clock.NewFake(t0)
	m := metrics.NewMemory()
	st, err := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: c.Now, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{env: env, store: st, clock: c, metrics: m}
}

func (f *fixture) seats(t testing.TB, eventID string, ids ...string) {
	t.Helper()
	if err := f.store.CreateSeats(context.Background(), eventID, inventory.SeatsAt(2500, "eur", ids...)); err != nil {
		t.Fatal(err)
	}
}

func request(id, eventID string, seats ...string) reservation.ClaimRequest {
	return reservation.ClaimRequest{ReservationID: id, CustomerID: "cust-" + id, EventID: eventID, SeatIDs: seats,
		Amount: 2500 * int64(len(seats)), Currency: "EUR", HoldDuration: 10 * time.Minute, IdempotencyKey: "key-" + id,
		CorrelationID: "corr-" + id}
}

func (f *fixture) count(t testing.TB, logical string) int {
	t.Helper()
	out, err := f.env.Client.Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(f.env.Names.Of(logical)), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

func (f *fixture) outbox(t testing.TB) []outbox.Envelope {
	t.Helper()
	out, err := f.env.Client.Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(f.env.Names.Of(tables.OutboxTable)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var envs []outbox.Envelope
	for _, item := range out.Items {
		e, err := outbox.FromItem(item)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	return envs
}

func (f *fixture) seat(t testing.TB, eventID, seatID string) reservation.Seat {
	t.Helper()
	s, ok, err := f.store.GetSeat(context.Background(), eventID, seatID)
	if err != nil || !ok {
		t.Fatalf("seat %s/%s: ok=%v err=%v", eventID, seatID, ok, err)
	}
	return s
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestClaimWritesSeatsReservationAndEvent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "A2", "A3")
	res, err := f.store.ClaimDetailed(ctx, request("r1", "show", "A1", "A2"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed || res.Reservation.Inventory != reservation.Held || res.Reservation.Version != 1 {
		t.Fatalf("result %+v", res)
	}
	got := must[reservation.Reservation](t)(f.store.Get(ctx, "r1"))
	if got.Inventory != reservation.Held || got.Payment != reservation.NotStarted || !got.HoldExpiresAt.Equal(t0.Add(10*time.Minute)) ||
		got.Amount != 5000 || got.Currency != "EUR" || len(got.SeatIDs) != 2 || got.RequestHash == "" {
		t.Fatalf("stored reservation %+v", got)
	}
	for _, sid := range []string{"A1", "A2"} {
		s := f.seat(t, "show", sid)
		if s.State != reservation.Held || s.ReservationID != "r1" || !s.HoldExpiresAt.Equal(got.HoldExpiresAt) {
			t.Fatalf("seat %s: %+v", sid, s)
		}
	}
	if s := f.seat(t, "show", "A3"); s.State != reservation.Available {
		t.Fatalf("unclaimed seat %+v", s)
	}
	seatMap := must[[]reservation.Seat](t)(f.store.SeatsOfEvent(ctx, "show"))
	if len(seatMap) != 3 || seatMap[0].SeatID != "A1" || seatMap[0].State != reservation.Held || seatMap[2].State != reservation.Available {
		t.Fatalf("seat map %+v", seatMap)
	}
	envs := f.outbox(t)
	if len(envs) != 1 || envs[0].Type != outbox.SeatsHeld || envs[0].ReservationID != "r1" || envs[0].AggregateVersion != 1 ||
		envs[0].EventID != outbox.EventID("r1", 1, outbox.SeatsHeld) || envs[0].CorrelationID != "corr-r1" {
		t.Fatalf("outbox %+v", envs)
	}
	holds := must[[]reservation.Reservation](t)(f.store.ExpiredHolds(ctx, t0.Add(time.Hour), 0))
	if len(holds) != 1 || holds[0].ID != "r1" {
		t.Fatalf("active-hold index: %+v", holds)
	}
	if early := must[[]reservation.Reservation](t)(f.store.ExpiredHolds(ctx, t0, 0)); len(early) != 0 {
		t.Fatalf("hold listed as expired before its deadline: %+v", early)
	}
}

func TestClaimIsIdempotent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "A2", "A3")
	first, err := f.store.ClaimDetailed(ctx, request("r1", "show", "A1", "A2"))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	again, err := f.store.ClaimDetailed(ctx, request("r1", "show", "A2", "A1"))
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !again.Replayed || again.Reservation.Version != 1 || !again.Reservation.HoldExpiresAt.Equal(first.Reservation.HoldExpiresAt) {
		t.Fatalf("replay result %+v", again)
	}
	different := request("r1", "show", "A3")
	_, err = f.store.Claim(ctx, different)
	var ic *reservation.IdempotencyConflict
	if !errors.As(err, &ic) {
		t.Fatalf("reused key with another request: want *IdempotencyConflict, got %v", err)
	}
	if n := f.count(t, tables.OutboxTable); n != 1 {
		t.Fatalf("%d outbox records after replays, want 1", n)
	}
	if s := f.seat(t, "show", "A3"); s.State != reservation.Available {
		t.Fatalf("conflicting replay touched A3: %+v", s)
	}
	if n := f.metrics.Get(inventory.MetricClaim, metrics.Dim{Name: "outcome", Value: "replayed"}); n != 1 {
		t.Fatalf("replayed claims counted %d", n)
	}
}

func TestCreateSeatsStoresPrice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	err := f.store.CreateSeats(ctx, "show", []inventory.NewSeat{
		{SeatID: "A1", PriceMinor: 4500, Currency: "eur"},
		{SeatID: "B1", PriceMinor: 3000, Currency: "EUR"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for sid, want := range map[string]int64{"A1": 4500, "B1": 3000} {
		s := f.seat(t, "show", sid)
		if s.PriceMinor != want || s.Currency != "EUR" || s.State != reservation.Available {
			t.Fatalf("seat %s: %+v, want price %d EUR", sid, s, want)
		}
	}
	// Creating the event again never reprices a seat.
	if err := f.store.CreateSeats(ctx, "show", inventory.SeatsAt(1, "usd", "A1")); err != nil {
		t.Fatal(err)
	}
	if s := f.seat(t, "show", "A1"); s.PriceMinor != 4500 || s.Currency != "EUR" {
		t.Fatalf("second create repriced A1: %+v", s)
	}
	// The price survives every transition of the seat.
	if _, err := f.store.Claim(ctx, request("r1", "show", "B1")); err != nil {
		t.Fatal(err)
	}
	if s := f.seat(t, "show", "B1"); s.State != reservation.Held || s.PriceMinor != 3000 || s.Currency != "EUR" {
		t.Fatalf("held seat lost its price: %+v", s)
	}
}

func TestCreateSeatsRefusesBadPrices(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good := inventory.NewSeat{SeatID: "OK1", PriceMinor: 2500, Currency: "EUR"}
	cases := []struct {
		name  string
		event string
		bad   inventory.NewSeat
		field string
	}{
		{"missing price", "show", inventory.NewSeat{SeatID: "X1", Currency: "EUR"}, "priceMinor"},
		{"negative price", "show", inventory.NewSeat{SeatID: "X1", PriceMinor: -100, Currency: "EUR"}, "priceMinor"},
		{"missing currency", "show", inventory.NewSeat{SeatID: "X1", PriceMinor: 100}, "currency"},
		{"four-letter currency", "show", inventory.NewSeat{SeatID: "X1", PriceMinor: 100, Currency: "EURO"}, "currency"},
		{"non-letter currency", "show", inventory.NewSeat{SeatID: "X1", PriceMinor: 100, Currency: "€"}, "currency"},
		{"empty seat id", "show", inventory.NewSeat{PriceMinor: 100, Currency: "EUR"}, "seatId"},
		{"seat named twice", "show", good, "seatId"},
		{"no event", "", inventory.NewSeat{SeatID: "X1", PriceMinor: 100, Currency: "EUR"}, "eventId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The good seat comes first: a bad one later in the list must still stop it.
			err := f.store.CreateSeats(ctx, c.event, []inventory.NewSeat{good, c.bad})
			var ve *reservation.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %v", err)
			}
			if !ve.Has(c.field) {
				t.Fatalf("problems %+v do not name %s", ve.Problems, c.field)
			}
		})
	}
	if err := f.store.CreateSeats(ctx, "show", nil); err == nil {
		t.Fatal("no seats accepted")
	}
	if n := f.count(t, tables.SeatsTable); n != 0 {
		t.Fatalf("bad seats wrote %d items", n)
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "A2")
	tooMany := make([]string, 11)
	for i := range tooMany {
		tooMany[i] = "A" + string(rune('a'+i))
	}
	cases := []struct {
		name  string
		req   reservation.ClaimRequest
		field string
	}{
		{"no seats", request("r1", "show"), "seatIds"},
		{"empty seat id", request("r2", "show", "A1", ""), "seatIds"},
		{"duplicate seats", request("r3", "show", "A1", "A1"), "seatIds"},
		{"unknown seat", request("r4", "show", "A1", "Z9"), "seatIds"},
		{"unknown event", request("r5", "nope", "A1"), "eventId"},
		{"too many seats", request("r6", "show", tooMany...), "seatIds"},
		{"zero amount", func() reservation.ClaimRequest { r := request("r7", "show", "A1"); r.Amount = 0; return r }(), "amount"},
		{"negative amount", func() reservation.ClaimRequest { r := request("r8", "show", "A1"); r.Amount = -1; return r }(), "amount"},
		{"zero hold", func() reservation.ClaimRequest { r := request("r9", "show", "A1"); r.HoldDuration = 0; return r }(), "holdDuration"},
		{"bad currency", func() reservation.ClaimRequest { r := request("r10", "show", "A1"); r.Currency = "€"; return r }(), "currency"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.store.Claim(ctx, c.req)
			var ve *reservation.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %v", err)
			}
			if !ve.Has(c.field) {
				t.Fatalf("problems %+v do not name %s", ve.Problems, c.field)
			}
		})
	}
	if n := f.count(t, tables.ReservationsTable) + f.count(t, tables.OutboxTable); n != 0 {
		t.Fatalf("bad input wrote %d records", n)
	}
	for _, sid := range []string{"A1", "A2"} {
		if s := f.seat(t, "show", sid); s.State != reservation.Available || s.Version != 1 {
			t.Fatalf("bad input touched seat %s: %+v", sid, s)
		}
	}
}

// pay performs a payment event on r's stored payment state through the port.
func (f *fixture) pay(t testing.TB, r reservation.Reservation, ev reservation.PaymentEvent, u reservation.PaymentUpdate) reservation.Reservation {
	t.Helper()
	u.ReservationID, u.Guard, u.Event, u.From = r.ID, reservation.GuardOf(r), ev, r.Payment
	return must[reservation.Reservation](t)(f.store.UpdatePayment(context.Background(), u))
}

func TestExpiredHoldReclaim(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "B1", "C1")
	old := must[reservation.Reservation](t)(f.store.Claim(ctx, request("old", "show", "A1")))
	lapsed := must[reservation.Reservation](t)(f.store.Claim(ctx, request("lapsed", "show", "C1")))
	pending := must[reservation.Reservation](t)(f.store.Claim(ctx, request("pending", "show", "B1")))
	pending = must[reservation.Reservation](t)(f.store.StartPayment(ctx, "pending", reservation.GuardOf(pending)))

	// Before the deadline neither seat is claimable.
	f.clock.Advance(10*time.Minute - time.Nanosecond)
	var su *reservation.SeatUnavailable
	if _, err := f.store.Claim(ctx, request("early", "show", "A1")); !errors.As(err, &su) {
		t.Fatalf("live hold claimed: %v", err)
	}
	// At the deadline the HELD seats are claimable; the PAYMENT_PENDING one never is.
	f.clock.Advance(time.Nanosecond)
	if _, err := f.store.Claim(ctx, request("new", "show", "A1")); err != nil {
		t.Fatalf("expired hold not claimable: %v", err)
	}
	if _, err := f.store.Claim(ctx, request("new2", "show", "C1")); err != nil {
		t.Fatalf("expired hold not claimable: %v", err)
	}
	f.clock.Advance(time.Hour)
	if _, err := f.store.Claim(ctx, request("thief", "show", "B1")); !errors.As(err, &su) || su.SeatIDs[0] != "B1" {
		t.Fatalf("PAYMENT_PENDING seat claimed: %v", err)
	}
	if s := f.seat(t, "show", "A1"); s.ReservationID != "new" || s.State != reservation.Held {
		t.Fatalf("reclaimed seat %+v", s)
	}
	if s := f.seat(t, "show", "B1"); s.ReservationID != "pending" || s.State != reservation.PaymentPending {
		t.Fatalf("pending seat %+v", s)
	}

	// The old owner cannot start paying, and its release retires it without touching the seat
	// it lost.
	if _, err := f.store.StartPayment(ctx, "old", reservation.GuardOf(old)); !errors.As(err, new(*reservation.HoldExpired)) {
		t.Fatalf("old owner's payment start: %v", err)
	}
	released := must[reservation.Reservation](t)(f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: "old",
		Guard: reservation.GuardOf(old), Reason: "customer cancelled"}))
	if released.Inventory != reservation.Released || released.Outcome != reservation.OutcomeReleased {
		t.Fatalf("released %+v", released)
	}
	if s := f.seat(t, "show", "A1"); s.ReservationID != "new" || s.State != reservation.Held {
		t.Fatalf("old owner's release touched the reclaimed seat: %+v", s)
	}
	// Confirm needs PAYMENT_PENDING; force the question with a reservation that got that far:
	// its hold has expired, so Confirm refuses even with an authorized payment.
	authorizing := f.pay(t, pending, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_1"})
	authorized := f.pay(t, authorizing, reservation.AuthorizationOK, reservation.PaymentUpdate{})
	if _, err := f.store.Confirm(ctx, "pending", reservation.GuardOf(authorized)); !errors.As(err, new(*reservation.HoldExpired)) {
		t.Fatalf("confirm after deadline: want *HoldExpired, got %v", err)
	}
	// The sweeper retires the other lapsed hold the same way.
	expired := must[reservation.Reservation](t)(f.store.Expire(ctx, "lapsed", reservation.Held, reservation.GuardOf(lapsed)))
	if expired.Inventory != reservation.Released || expired.Outcome != reservation.OutcomeExpired {
		t.Fatalf("expired %+v", expired)
	}
	if s := f.seat(t, "show", "C1"); s.ReservationID != "new2" || s.State != reservation.Held {
		t.Fatalf("expiry freed someone else's seat: %+v", s)
	}
}

func TestFullLifecycleWritesAnEventPerChange(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "A2")
	r := must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1", "A2")))
	r = must[reservation.Reservation](t)(f.store.StartPayment(ctx, r.ID, reservation.GuardOf(r)))
	r = must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID,
		Guard: reservation.GuardOf(r), TaskToken: "tok"}))
	r = f.pay(t, r, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_1"})
	r = f.pay(t, r, reservation.AuthorizationOK, reservation.PaymentUpdate{CaptureBefore: t0.Add(7 * 24 * time.Hour)})
	stale := r
	r = must[reservation.Reservation](t)(f.store.Confirm(ctx, r.ID, reservation.GuardOf(r)))
	// A replay of the confirm with the old version changes nothing.
	if _, err := f.store.Confirm(ctx, r.ID, reservation.GuardOf(stale)); !errors.As(err, new(*reservation.StaleVersion)) {
		t.Fatalf("stale confirm: %v", err)
	}
	r = f.pay(t, r, reservation.RequestCapture, reservation.PaymentUpdate{})
	r = f.pay(t, r, reservation.CaptureOK, reservation.PaymentUpdate{})

	got := must[reservation.Reservation](t)(f.store.Get(ctx, "r1"))
	if got.Inventory != reservation.Confirmed || got.Payment != reservation.Paid || got.Version != 7 ||
		got.PaymentIntentID != "pi_1" || got.TaskToken != "tok" || got.Outcome != reservation.OutcomeConfirmed ||
		!got.CaptureBefore.Equal(t0.Add(7*24*time.Hour)) {
		t.Fatalf("final reservation %+v", got)
	}
	for _, sid := range got.SeatIDs {
		if s := f.seat(t, "show", sid); s.State != reservation.Confirmed || s.ReservationID != "r1" {
			t.Fatalf("seat %+v", s)
		}
	}
	envs := f.outbox(t)
	versions := map[int64]outbox.Type{}
	for _, e := range envs {
		versions[e.AggregateVersion] = e.Type
	}
	want := map[int64]outbox.Type{1: outbox.SeatsHeld, 2: outbox.PaymentPending, 3: outbox.PaymentStateChanged,
		4: outbox.PaymentAuthorized, 5: outbox.ReservationConfirmed, 6: outbox.PaymentStateChanged, 7: outbox.PaymentCaptured}
	if len(envs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(envs), len(want), versions)
	}
	for v, typ := range want {
		if versions[v] != typ {
			t.Fatalf("version %d event %s, want %s", v, versions[v], typ)
		}
	}
	if holds := must[[]reservation.Reservation](t)(f.store.ExpiredHolds(ctx, t0.Add(time.Hour), 0)); len(holds) != 0 {
		t.Fatalf("confirmed reservation still on the active-hold index: %+v", holds)
	}
}

func TestStaleAndForeignReleaseChangeNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	r := must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	cases := []struct {
		name  string
		guard reservation.Guard
		want  any
	}{
		{"stale version", reservation.Guard{Owner: "r1", Version: 0}, new(*reservation.StaleVersion)},
		{"foreign owner", reservation.Guard{Owner: "r2", Version: 1}, new(*reservation.NotOwner)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: c.guard, Reason: "test"})
			if err == nil || !errors.As(err, c.want) {
				t.Fatalf("want %T, got %v", c.want, err)
			}
		})
	}
	if _, err := f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: "missing", Guard: reservation.Guard{Owner: "missing", Version: 1}}); !errors.As(err, new(*reservation.NotFound)) {
		t.Fatalf("release of a missing reservation: %v", err)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.Held || s.ReservationID != "r1" {
		t.Fatalf("refused releases touched the seat: %+v", s)
	}
	released := must[reservation.Reservation](t)(f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1",
		Guard: reservation.GuardOf(r), Reason: "customer cancelled"}))
	if released.Inventory != reservation.Released || released.Version != 2 {
		t.Fatalf("released %+v", released)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.Available || s.ReservationID != "" {
		t.Fatalf("released seat %+v", s)
	}
	// Released twice: the second is stale.
	if _, err := f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Reason: "again"}); !errors.As(err, new(*reservation.StaleVersion)) {
		t.Fatalf("second release: %v", err)
	}
	if n := f.count(t, tables.OutboxTable); n != 2 {
		t.Fatalf("%d outbox records, want 2 (held, released)", n)
	}
}

func TestLateSuccessReacquire(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "A2")
	step := func(r reservation.Reservation, ev reservation.PaymentEvent) reservation.Reservation {
		return f.pay(t, r, ev, reservation.PaymentUpdate{})
	}
	// r1: payment outcome unknown at the deadline, expired by the sweeper, seat still free:
	// reconciliation finds it authorized and the seat is reacquired.
	r1 := must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	r1 = must[reservation.Reservation](t)(f.store.StartPayment(ctx, "r1", reservation.GuardOf(r1)))
	r1 = step(r1, reservation.StartAuthorization)
	r1 = step(r1, reservation.OutcomeUnknown)
	recon := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, t0.Add(time.Second), 0))
	if len(recon) != 1 || recon[0].ID != "r1" {
		t.Fatalf("reconciliation index: %+v", recon)
	}
	f.clock.Advance(11 * time.Minute)
	if _, err := f.store.Expire(ctx, "r1", reservation.PaymentPending, reservation.GuardOf(r1)); !errors.As(err, new(*reservation.GuardFailed)) {
		t.Fatalf("expired while payment unknown: %v", err)
	}
	r1 = step(r1, reservation.AuthorizationOK)
	if recon := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, t0.Add(time.Hour), 0)); len(recon) != 0 {
		t.Fatalf("reconciled reservation still on the index: %+v", recon)
	}
	r1 = must[reservation.Reservation](t)(f.store.Reacquire(ctx, "r1", reservation.GuardOf(r1)))
	if r1.Inventory != reservation.Confirmed || r1.Outcome != reservation.OutcomeConfirmedLate {
		t.Fatalf("reacquired %+v", r1)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.Confirmed || s.ReservationID != "r1" {
		t.Fatalf("reacquired seat %+v", s)
	}

	// r2: hold expired and released, seat sold to someone else meanwhile: reacquire fails with
	// SeatUnavailable and changes nothing.
	r2 := must[reservation.Reservation](t)(f.store.Claim(ctx, request("r2", "show", "A2")))
	r2 = must[reservation.Reservation](t)(f.store.StartPayment(ctx, "r2", reservation.GuardOf(r2)))
	r2 = step(r2, reservation.StartAuthorization)
	f.clock.Advance(11 * time.Minute)
	r2 = must[reservation.Reservation](t)(f.store.Expire(ctx, "r2", reservation.PaymentPending, reservation.GuardOf(r2)))
	if _, err := f.store.Claim(ctx, request("r3", "show", "A2")); err != nil {
		t.Fatal(err)
	}
	r2 = step(r2, reservation.AuthorizationOK)
	var su *reservation.SeatUnavailable
	if _, err := f.store.Reacquire(ctx, "r2", reservation.GuardOf(r2)); !errors.As(err, &su) || su.SeatIDs[0] != "A2" {
		t.Fatalf("reacquire of a sold seat: want *SeatUnavailable, got %v", err)
	}
	if s := f.seat(t, "show", "A2"); s.ReservationID != "r3" || s.State != reservation.Held {
		t.Fatalf("failed reacquire touched the seat: %+v", s)
	}
	if got := must[reservation.Reservation](t)(f.store.Get(ctx, "r2")); got.Version != r2.Version || got.Inventory != reservation.Released {
		t.Fatalf("failed reacquire changed the reservation: %+v", got)
	}
}

// TestCountersOnlyGrowAndSurviveTransitions checks that refused voids and failed refunds are
// recorded by detail-only updates without a version bump, never go back, and survive the next
// transitions' whole-item writes together with the refund id and the customer's cancel.
func TestCountersOnlyGrowAndSurviveTransitions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	r := must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
	steps := []struct {
		name     string
		attempts int
		want     int
	}{
		{"first refusal", 1, 1},
		{"second refusal", 2, 2},
		{"a stale replay of the first", 1, 2},
		{"nothing to record", 0, 2},
	}
	for _, s := range steps {
		got := must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1",
			Guard: reservation.GuardOf(r), CancelAttempts: s.attempts, RefundAttempts: s.attempts}))
		if got.CancelAttempts != s.want || got.RefundAttempts != s.want || got.Version != r.Version {
			t.Fatalf("%s: CancelAttempts %d RefundAttempts %d version %d, want %d version %d", s.name,
				got.CancelAttempts, got.RefundAttempts, got.Version, s.want, r.Version)
		}
	}
	must[reservation.Reservation](t)(f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: "r1",
		Guard: reservation.GuardOf(r), RefundID: "re_1"}))
	if n := f.count(t, tables.OutboxTable); n != 1 {
		t.Fatalf("detail-only updates wrote %d outbox records beyond the claim's", n-1)
	}
	r = must[reservation.Reservation](t)(f.store.Cancel(ctx, "r1", reservation.GuardOf(r)))
	r = must[reservation.Reservation](t)(f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: "r1", Guard: reservation.GuardOf(r), Reason: "test"}))
	stored := must[reservation.Reservation](t)(f.store.Get(ctx, "r1"))
	if stored.CancelAttempts != 2 || stored.RefundAttempts != 2 || stored.RefundID != "re_1" || !stored.CustomerCanceled || stored.Version != r.Version {
		t.Fatalf("after transitions: %+v", stored)
	}
}

// TestNotCanceledIsInTheWriteCondition proves that Confirm, Reacquire and a capture request are
// refused by DynamoDB itself once the customer cancelled, not only by the version fence: the
// cancel flag is written behind the store's back, keeping version and revision, so only the
// condition on customerCanceled can stop the write.
func TestNotCanceledIsInTheWriteCondition(t *testing.T) {
	ctx := context.Background()
	// sneakCancel sets customerCanceled on the stored item without touching version or revision.
	sneakCancel := func(t *testing.T, f *fixture, id string) {
		t.Helper()
		_, err := f.env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(f.env.Names.Of(tables.ReservationsTable)),
			Key:                       map[string]types.AttributeValue{tables.AttrReservationID: &types.AttributeValueMemberS{Value: id}},
			UpdateExpression:          aws.String("SET customerCanceled = :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// authorized is r1 holding A1, PAYMENT_PENDING with its payment authorized.
	authorized := func(t *testing.T, f *fixture) reservation.Reservation {
		f.seats(t, "show", "A1")
		r := must[reservation.Reservation](t)(f.store.Claim(ctx, request("r1", "show", "A1")))
		r = must[reservation.Reservation](t)(f.store.StartPayment(ctx, "r1", reservation.GuardOf(r)))
		r = f.pay(t, r, reservation.StartAuthorization, reservation.PaymentUpdate{PaymentIntentID: "pi_1"})
		return f.pay(t, r, reservation.AuthorizationOK, reservation.PaymentUpdate{})
	}
	cases := []struct {
		name string
		// setup returns the reservation as the writer read it, before the sneaked cancel.
		setup func(t *testing.T, f *fixture) reservation.Reservation
		write func(f *fixture, r reservation.Reservation) error
	}{
		{name: "confirm", setup: authorized, write: func(f *fixture, r reservation.Reservation) error {
			_, err := f.store.Confirm(ctx, r.ID, reservation.GuardOf(r))
			return err
		}},
		{name: "reacquire", setup: func(t *testing.T, f *fixture) reservation.Reservation {
			r := authorized(t, f)
			f.clock.Advance(11 * time.Minute)
			return r
		}, write: func(f *fixture, r reservation.Reservation) error {
			_, err := f.store.Reacquire(ctx, r.ID, reservation.GuardOf(r))
			return err
		}},
		{name: "capture request", setup: func(t *testing.T, f *fixture) reservation.Reservation {
			r := authorized(t, f)
			return must[reservation.Reservation](t)(f.store.Confirm(ctx, r.ID, reservation.GuardOf(r)))
		}, write: func(f *fixture, r reservation.Reservation) error {
			_, err := f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
				Event: reservation.RequestCapture, From: reservation.Authorized})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r := tc.setup(t, f)
			// The writer decides on what it read before the cancel landed: the domain lets the
			// write through and only the condition can refuse it.
			m := metrics.NewMemory()
			writer, err := inventory.New(inventory.Config{Client: &staleReads{DynamoDB: f.env.Client, item: f.rawItem(t, r.ID)},
				Names: f.env.Names, Now: f.clock.Now, Metrics: m, MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			sneakCancel(t, f, r.ID)
			before := f.rawItem(t, r.ID)
			seatBefore := f.seat(t, "show", "A1")
			outboxBefore := f.count(t, tables.OutboxTable)
			if err := tc.write(&fixture{env: f.env, store: writer, clock: f.clock}, r); err == nil {
				t.Fatal("the write landed on a cancelled reservation")
			}
			if n := m.Total(inventory.MetricConditionalCheckFailed); n != 1 {
				t.Fatalf("%d conditional check failures, want the write refused by its condition", n)
			}
			if after := f.rawItem(t, r.ID); !reflect.DeepEqual(after, before) {
				t.Fatalf("reservation changed:\n before %v\n after  %v", before, after)
			}
			if s := f.seat(t, "show", "A1"); s != seatBefore {
				t.Fatalf("seat changed: %+v -> %+v", seatBefore, s)
			}
			if n := f.count(t, tables.OutboxTable); n != outboxBefore {
				t.Fatalf("%d outbox records written", n-outboxBefore)
			}
			// The same write from a store that reads the cancel is refused by the domain.
			if err := tc.write(f, must[reservation.Reservation](t)(f.store.Get(ctx, r.ID))); !errors.As(err, new(*reservation.GuardFailed)) {
				t.Fatalf("after reading the cancel: want *GuardFailed, got %v", err)
			}
		})
	}
}

// rawItem reads a reservation item as stored.
func (f *fixture) rawItem(t testing.TB, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.env.Names.Of(tables.ReservationsTable)), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tables.AttrReservationID: &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// staleReads answers reservation reads with item, as a writer sees the reservation when it
// read just before another write landed; every other call goes to DynamoDB.
type staleReads struct {
	inventory.DynamoDB
	item map[string]types.AttributeValue
}

func (s *staleReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if _, ok := in.Key[tables.AttrReservationID]; ok {
		return &dynamodb.GetItemOutput{Item: s.item}, nil
	}
	return s.DynamoDB.GetItem(ctx, in, opts...)
}
