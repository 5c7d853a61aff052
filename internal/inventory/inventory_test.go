package inventory_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/ddblocal/ddbtest"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	env     *ddbtest.Env
	store   *inventory.Store
	clock   *clock
	metrics *metrics.Memory
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	env := ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox())
	c := &clock{now: t0}
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
	res, err := f.store.Claim(ctx, request("r1", "show", "A1", "A2"))
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
	first, err := f.store.Claim(ctx, request("r1", "show", "A1", "A2"))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	again, err := f.store.Claim(ctx, request("r1", "show", "A2", "A1"))
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

func TestExpiredHoldReclaim(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "B1")
	old := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("old", "show", "A1")))
	pending := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("pending", "show", "B1")))
	pendingRes := must[reservation.Reservation](t)(f.store.MarkPaymentPending(ctx, "pending", reservation.GuardOf(pending.Reservation), inventory.PaymentDetails{}))

	// Before the deadline neither seat is claimable.
	f.clock.Advance(10*time.Minute - time.Nanosecond)
	var su *reservation.SeatUnavailable
	if _, err := f.store.Claim(ctx, request("early", "show", "A1")); !errors.As(err, &su) {
		t.Fatalf("live hold claimed: %v", err)
	}
	// At the deadline the HELD seat is claimable; the PAYMENT_PENDING one never is.
	f.clock.Advance(time.Nanosecond)
	if _, err := f.store.Claim(ctx, request("new", "show", "A1")); err != nil {
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

	// The old owner's later moves fail cleanly and change nothing.
	oldRes := old.Reservation
	if _, err := f.store.MarkPaymentPending(ctx, "old", reservation.GuardOf(oldRes), inventory.PaymentDetails{}); !errors.As(err, new(*reservation.HoldExpired)) {
		t.Fatalf("old owner's payment start: %v", err)
	}
	_, err := f.store.Release(ctx, "old", reservation.Held, reservation.GuardOf(oldRes), "customer cancelled")
	var no *reservation.NotOwner
	if !errors.As(err, &no) {
		t.Fatalf("old owner's release: want *NotOwner, got %v", err)
	}
	// Confirm needs PAYMENT_PENDING; force the question with a reservation that got that far:
	// its hold has expired, so Confirm refuses even with an authorized payment.
	authorizing := must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, "pending", reservation.StartAuthorization, reservation.NotStarted, reservation.GuardOf(pendingRes), inventory.PaymentDetails{PaymentIntentID: "pi_1"}))
	authorized := must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, "pending", reservation.AuthorizationOK, reservation.Authorizing, reservation.GuardOf(authorizing), inventory.PaymentDetails{}))
	if _, err := f.store.Confirm(ctx, "pending", reservation.GuardOf(authorized)); !errors.As(err, new(*reservation.HoldExpired)) {
		t.Fatalf("confirm after deadline: want *HoldExpired, got %v", err)
	}
	if s := f.seat(t, "show", "A1"); s.ReservationID != "new" || s.State != reservation.Held {
		t.Fatalf("old owner's moves touched the reclaimed seat: %+v", s)
	}
	if r := must[reservation.Reservation](t)(f.store.Get(ctx, "old")); r.Version != 1 || r.Inventory != reservation.Held {
		t.Fatalf("old reservation changed: %+v", r)
	}
	// The sweeper retires the old reservation without touching the seat it lost.
	expired := must[reservation.Reservation](t)(f.store.Expire(ctx, "old", reservation.Held, reservation.GuardOf(oldRes)))
	if expired.Inventory != reservation.Released || expired.Outcome != reservation.OutcomeExpired {
		t.Fatalf("expired %+v", expired)
	}
	if s := f.seat(t, "show", "A1"); s.ReservationID != "new" {
		t.Fatalf("expiry freed someone else's seat: %+v", s)
	}
}

func TestFullLifecycleWritesAnEventPerChange(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1", "A2")
	r := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("r1", "show", "A1", "A2"))).Reservation
	r = must[reservation.Reservation](t)(f.store.MarkPaymentPending(ctx, r.ID, reservation.GuardOf(r), inventory.PaymentDetails{TaskToken: "tok", ExecutionARN: "arn:exec"}))
	r = must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, r.ID, reservation.StartAuthorization, reservation.NotStarted, reservation.GuardOf(r), inventory.PaymentDetails{PaymentIntentID: "pi_1"}))
	r = must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, r.ID, reservation.AuthorizationOK, reservation.Authorizing, reservation.GuardOf(r), inventory.PaymentDetails{CaptureBefore: t0.Add(7 * 24 * time.Hour)}))
	stale := r
	r = must[reservation.Reservation](t)(f.store.Confirm(ctx, r.ID, reservation.GuardOf(r)))
	// A replay of the confirm with the old version changes nothing.
	if _, err := f.store.Confirm(ctx, r.ID, reservation.GuardOf(stale)); !errors.As(err, new(*reservation.StaleVersion)) {
		t.Fatalf("stale confirm: %v", err)
	}
	r = must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, r.ID, reservation.RequestCapture, reservation.Authorized, reservation.GuardOf(r), inventory.PaymentDetails{}))
	r = must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, r.ID, reservation.CaptureOK, reservation.CapturePending, reservation.GuardOf(r), inventory.PaymentDetails{}))

	got := must[reservation.Reservation](t)(f.store.Get(ctx, "r1"))
	if got.Inventory != reservation.Confirmed || got.Payment != reservation.Paid || got.Version != 7 ||
		got.PaymentIntentID != "pi_1" || got.TaskToken != "tok" || got.ExecutionARN != "arn:exec" || got.Outcome != reservation.OutcomeConfirmed ||
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
	r := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("r1", "show", "A1"))).Reservation
	cases := []struct {
		name  string
		guard reservation.Guard
		from  reservation.InventoryState
		want  any
	}{
		{"stale version", reservation.Guard{Owner: "r1", Version: 0}, reservation.Held, new(*reservation.StaleVersion)},
		{"foreign owner", reservation.Guard{Owner: "r2", Version: 1}, reservation.Held, new(*reservation.NotOwner)},
		{"wrong prior state", reservation.GuardOf(r), reservation.PaymentPending, new(*reservation.UnexpectedState)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.store.Release(ctx, "r1", c.from, c.guard, "test")
			if err == nil || !errors.As(err, c.want) {
				t.Fatalf("want %T, got %v", c.want, err)
			}
		})
	}
	if _, err := f.store.Release(ctx, "missing", reservation.Held, reservation.Guard{Owner: "missing", Version: 1}, ""); !errors.As(err, new(*reservation.NotFound)) {
		t.Fatalf("release of a missing reservation: %v", err)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.Held || s.ReservationID != "r1" {
		t.Fatalf("refused releases touched the seat: %+v", s)
	}
	released := must[reservation.Reservation](t)(f.store.Release(ctx, "r1", reservation.Held, reservation.GuardOf(r), "customer cancelled"))
	if released.Inventory != reservation.Released || released.Version != 2 {
		t.Fatalf("released %+v", released)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.Available || s.ReservationID != "" {
		t.Fatalf("released seat %+v", s)
	}
	// Released twice: the second is stale.
	if _, err := f.store.Release(ctx, "r1", reservation.Held, reservation.GuardOf(r), "again"); !errors.As(err, new(*reservation.StaleVersion)) {
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
	step := func(r reservation.Reservation, ev reservation.PaymentEvent, from reservation.PaymentState) reservation.Reservation {
		return must[reservation.Reservation](t)(f.store.SetPaymentState(ctx, r.ID, ev, from, reservation.GuardOf(r), inventory.PaymentDetails{}))
	}
	// r1: payment outcome unknown at the deadline, expired by the sweeper, seat still free:
	// reconciliation finds it authorized and the seat is reacquired.
	r1 := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("r1", "show", "A1"))).Reservation
	r1 = must[reservation.Reservation](t)(f.store.MarkPaymentPending(ctx, "r1", reservation.GuardOf(r1), inventory.PaymentDetails{}))
	r1 = step(r1, reservation.StartAuthorization, reservation.NotStarted)
	r1 = step(r1, reservation.OutcomeUnknown, reservation.Authorizing)
	recon := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, t0.Add(time.Second), 0))
	if len(recon) != 1 || recon[0].ID != "r1" {
		t.Fatalf("reconciliation index: %+v", recon)
	}
	f.clock.Advance(11 * time.Minute)
	if _, err := f.store.Expire(ctx, "r1", reservation.PaymentPending, reservation.GuardOf(r1)); !errors.As(err, new(*reservation.GuardFailed)) {
		t.Fatalf("expired while payment unknown: %v", err)
	}
	r1 = step(r1, reservation.AuthorizationOK, reservation.UnknownNeedsReconciliation)
	if recon := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, t0.Add(time.Hour), 0)); len(recon) != 0 {
		t.Fatalf("reconciled reservation still on the index: %+v", recon)
	}
	r1 = must[reservation.Reservation](t)(f.store.Reacquire(ctx, "r1", reservation.PaymentPending, reservation.GuardOf(r1)))
	if r1.Inventory != reservation.Confirmed || r1.Outcome != reservation.OutcomeConfirmedLate {
		t.Fatalf("reacquired %+v", r1)
	}
	if s := f.seat(t, "show", "A1"); s.State != reservation.Confirmed || s.ReservationID != "r1" {
		t.Fatalf("reacquired seat %+v", s)
	}

	// r2: hold expired and released, seat sold to someone else meanwhile: reacquire fails with
	// SeatUnavailable and changes nothing.
	r2 := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("r2", "show", "A2"))).Reservation
	r2 = must[reservation.Reservation](t)(f.store.MarkPaymentPending(ctx, "r2", reservation.GuardOf(r2), inventory.PaymentDetails{}))
	r2 = step(r2, reservation.StartAuthorization, reservation.NotStarted)
	f.clock.Advance(11 * time.Minute)
	r2 = must[reservation.Reservation](t)(f.store.Expire(ctx, "r2", reservation.PaymentPending, reservation.GuardOf(r2)))
	if _, err := f.store.Claim(ctx, request("r3", "show", "A2")); err != nil {
		t.Fatal(err)
	}
	r2 = step(r2, reservation.AuthorizationOK, reservation.Authorizing)
	var su *reservation.SeatUnavailable
	if _, err := f.store.Reacquire(ctx, "r2", reservation.Released, reservation.GuardOf(r2)); !errors.As(err, &su) || su.SeatIDs[0] != "A2" {
		t.Fatalf("reacquire of a sold seat: want *SeatUnavailable, got %v", err)
	}
	if s := f.seat(t, "show", "A2"); s.ReservationID != "r3" || s.State != reservation.Held {
		t.Fatalf("failed reacquire touched the seat: %+v", s)
	}
	if got := must[reservation.Reservation](t)(f.store.Get(ctx, "r2")); got.Version != r2.Version || got.Inventory != reservation.Released {
		t.Fatalf("failed reacquire changed the reservation: %+v", got)
	}
}

func TestUpdateDetailsKeepsVersion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	r := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("r1", "show", "A1"))).Reservation
	got := must[reservation.Reservation](t)(f.store.UpdateDetails(ctx, "r1", reservation.GuardOf(r), inventory.PaymentDetails{ExecutionARN: "arn:x"}))
	if got.Version != 1 || got.ExecutionARN != "arn:x" {
		t.Fatalf("%+v", got)
	}
	if _, err := f.store.UpdateDetails(ctx, "r1", reservation.Guard{Owner: "r1", Version: 9}, inventory.PaymentDetails{TaskToken: "t"}); !errors.As(err, new(*reservation.StaleVersion)) {
		t.Fatalf("stale details update: %v", err)
	}
	if stored := must[reservation.Reservation](t)(f.store.Get(ctx, "r1")); stored.ExecutionARN != "arn:x" || stored.TaskToken != "" {
		t.Fatalf("stored %+v", stored)
	}
}

// TestCancelAttemptsOnlyGrow checks that refused cancels (and the customer's cancel) are
// recorded without a version bump, survive the next transition's whole-item write, and never
// go back.
func TestCancelAttemptsOnlyGrow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seats(t, "show", "A1")
	r := must[inventory.ClaimResult](t)(f.store.Claim(ctx, request("r1", "show", "A1"))).Reservation
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
		got := must[reservation.Reservation](t)(f.store.UpdateDetails(ctx, "r1", reservation.GuardOf(r), inventory.PaymentDetails{CancelAttempts: s.attempts}))
		if got.CancelAttempts != s.want || got.Version != r.Version {
			t.Fatalf("%s: CancelAttempts %d version %d, want %d version %d", s.name, got.CancelAttempts, got.Version, s.want, r.Version)
		}
	}
	// The customer's cancel is recorded the same way and never cleared.
	got := must[reservation.Reservation](t)(f.store.UpdateDetails(ctx, "r1", reservation.GuardOf(r), inventory.PaymentDetails{CustomerCanceled: true}))
	if !got.CustomerCanceled || got.Version != r.Version {
		t.Fatalf("customer cancel: %+v", got)
	}
	must[reservation.Reservation](t)(f.store.UpdateDetails(ctx, "r1", reservation.GuardOf(r), inventory.PaymentDetails{ExecutionARN: "arn:x"}))
	r = must[reservation.Reservation](t)(f.store.Release(ctx, "r1", reservation.Held, reservation.GuardOf(r), "test"))
	if stored := must[reservation.Reservation](t)(f.store.Get(ctx, "r1")); stored.CancelAttempts != 2 || !stored.CustomerCanceled || stored.Version != r.Version {
		t.Fatalf("after a transition: %+v", stored)
	}
}
