package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI admits the first buyer of each seat, refuses later ones at admission unless the
// seat is "contested" (then the saga rejects them), answers a POST's first attempt with 503
// for one buyer to exercise the retry, and moves each admitted reservation
// PENDING -> HELD -> CONFIRMED/PAID (or RELEASED for declines) over successive GETs.
type fakeAPI struct {
	mu        sync.Mutex
	owner     map[string]string
	byKey     map[string]string
	polls     map[string]int
	declined  map[string]bool
	rejected  map[string]bool
	contested string
	failOnce  map[string]bool
	posts     int
	// postsByKey and deletes count what each Idempotency-Key and reservation received.
	postsByKey map[string]int
	deletes    map[string]int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
		w.WriteHeader(401)
		return
	}
	write := func(code int, v any) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case r.Method == "DELETE":
		if f.deletes != nil {
			f.deletes[strings.TrimPrefix(r.URL.Path, "/reservations/")]++
		}
		write(202, map[string]string{"status": "CANCEL_REQUESTED"})
	case r.Method == "POST":
		f.posts++
		key := r.Header.Get("Idempotency-Key")
		if f.postsByKey != nil {
			f.postsByKey[key]++
		}
		if f.failOnce[key] {
			delete(f.failOnce, key)
			write(503, map[string]string{"code": "unavailable"})
			return
		}
		if id, ok := f.byKey[key]; ok {
			write(202, map[string]string{"reservationId": id, "status": "PENDING"})
			return
		}
		var req struct {
			SeatIDs       []string `json:"seatIds"`
			PaymentMethod string   `json:"paymentMethod"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		// The server prices seats; a buyer that states its own price is a bug in the load driver.
		var fields map[string]any
		_ = json.Unmarshal(b, &fields)
		if _, ok := fields["amount"]; ok {
			write(400, map[string]string{"code": "client_priced"})
			return
		}
		seat := req.SeatIDs[0]
		id := "r-" + key
		if _, taken := f.owner[seat]; taken {
			if seat != f.contested {
				write(409, map[string]string{"code": "seats_unavailable"})
				return
			}
			f.rejected[id] = true
		} else {
			f.owner[seat] = id
		}
		f.byKey[key] = id
		f.declined[id] = req.PaymentMethod == PaymentMethods[Declines]
		write(202, map[string]string{"reservationId": id, "status": "PENDING"})
	case r.Method == "GET":
		id := strings.TrimPrefix(r.URL.Path, "/reservations/")
		f.polls[id]++
		n := f.polls[id]
		st := map[string]string{"reservationId": id, "status": "PENDING"}
		switch {
		case f.rejected[id] && n >= 2:
			st["status"] = "REJECTED"
		case f.rejected[id]:
		case n == 1:
			st["status"] = "HELD"
		case n == 2:
			st["status"], st["paymentState"] = "PAYMENT_PENDING", "AUTHORIZING"
		case f.declined[id]:
			st["status"], st["paymentState"] = "RELEASED", "CANCELED"
		case n == 3:
			st["status"], st["paymentState"] = "CONFIRMED", "CAPTURE_PENDING"
		default:
			st["status"], st["paymentState"] = "CONFIRMED", "PAID"
		}
		write(200, st)
	}
}

func TestDriveClassifiesEveryBuyer(t *testing.T) {
	buyers, err := Plan(PlanOptions{Buyers: 40, Seats: []string{"A", "B", "C", "D"}, Mix: Mix{Pays: 3, Declines: 1}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	api := &fakeAPI{owner: map[string]string{}, byKey: map[string]string{}, polls: map[string]int{},
		declined: map[string]bool{}, rejected: map[string]bool{}, contested: "A",
		failOnce: map[string]bool{buyers[0].IdempotencyKey: true}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	var progress int
	run, err := Drive(context.Background(), Options{
		BaseURL: srv.URL, EventID: "ev1", Buyers: buyers, Concurrency: 8,
		Token:        func(c string) (string, error) { return "tok-" + c, nil },
		PollInterval: 2 * time.Millisecond, SettleTimeout: 5 * time.Second,
		Progress: func(done, total int) { progress = done },
	})
	if err != nil {
		t.Fatal(err)
	}
	if progress != 40 {
		t.Fatalf("progress reached %d, want 40", progress)
	}
	s := run.Summarize()
	winners := s.ByOutcome[Confirmed] + s.ByOutcome[Released]
	if winners != 4 {
		t.Fatalf("outcomes %v: want exactly one winner per seat (4)", s.ByOutcome)
	}
	if s.ByOutcome[Failed] != 0 || s.ByOutcome[Unsettled] != 0 || s.ByOutcome[Invalid] != 0 {
		t.Fatalf("outcomes %v: nobody should fail", s.ByOutcome)
	}
	if s.ByOutcome[SagaRejected] == 0 || s.ByOutcome[AdmissionRejected] == 0 {
		t.Fatalf("outcomes %v: want losers both at admission and in the saga", s.ByOutcome)
	}
	if s.Losers()+winners != 40 || s.TurnedAwayEarly() <= 0 || s.TurnedAwayEarly() >= 1 {
		t.Fatalf("losers %d, early share %v", s.Losers(), s.TurnedAwayEarly())
	}
	if len(s.HoldMs) != 4 || len(s.ConfirmMs) != s.ByOutcome[Confirmed] {
		t.Fatalf("hold latencies %d, confirm latencies %d (confirmed %d)", len(s.HoldMs), len(s.ConfirmMs), s.ByOutcome[Confirmed])
	}
	if s.AdmissionCodes["seats_unavailable"] != s.ByOutcome[AdmissionRejected] {
		t.Fatalf("admission codes %v", s.AdmissionCodes)
	}
	// The buyer whose first POST failed retried with the same key and got one reservation.
	if run.Results[0].Outcome == Failed || run.Results[0].PostStatus != 202 && run.Results[0].PostStatus != 409 {
		t.Fatalf("retried buyer: %+v", run.Results[0])
	}
	// Its 503 is counted though the retry got an answer: a buyer saw it.
	if s.Post5xx != 1 || s.Post429 != 0 || s.PostUnanswered != 0 || s.PostsNeverAnswered != 0 || run.Results[0].Post5xx != 1 {
		t.Fatalf("POSTs 5xx %d, 429 %d, unanswered %d, never answered %d; want the one 503 alone",
			s.Post5xx, s.Post429, s.PostUnanswered, s.PostsNeverAnswered)
	}
	if s.Profile != Uniform || s.Concurrency != 8 || s.PeakPostsInFlight < 1 || s.PeakPostsInFlight > 8 {
		t.Fatalf("profile %q, concurrency %d, peak in flight %d; want uniform, 8 and at most 8", s.Profile, s.Concurrency, s.PeakPostsInFlight)
	}
}

func TestPlanIsDeterministicAndValid(t *testing.T) {
	seats := []string{"A1", "A2", "A3", "A4", "A5"}
	a, err := Plan(PlanOptions{Buyers: 50, Seats: seats, SeatsPerBuyer: 2, Mix: Mix{Pays: 1, ThreeDSNo: 1, LateAuth: 1}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Plan(PlanOptions{Buyers: 50, Seats: seats, SeatsPerBuyer: 2, Mix: Mix{Pays: 1, ThreeDSNo: 1, LateAuth: 1}, Seed: 3})
	seen := map[Behaviour]int{}
	for i := range a {
		if a[i].IdempotencyKey != b[i].IdempotencyKey || strings.Join(a[i].SeatIDs, ",") != strings.Join(b[i].SeatIDs, ",") || a[i].Behaviour != b[i].Behaviour {
			t.Fatal("same seed, different plan")
		}
		if len(a[i].SeatIDs) != 2 || a[i].SeatIDs[0] == a[i].SeatIDs[1] {
			t.Fatalf("buyer %+v", a[i])
		}
		seen[a[i].Behaviour]++
	}
	if len(seen) != 3 {
		t.Fatalf("behaviours %v, want all three", seen)
	}
	cases := []struct {
		name string
		o    PlanOptions
	}{
		{"no buyers", PlanOptions{Seats: seats}},
		{"no seats", PlanOptions{Buyers: 1}},
		{"too many seats per buyer", PlanOptions{Buyers: 1, Seats: seats, SeatsPerBuyer: 6}},
		{"unknown behaviour", PlanOptions{Buyers: 1, Seats: seats, Mix: Mix{"teleports": 1}}},
	}
	for _, c := range cases {
		if _, err := Plan(c.o); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// A buyer whose claim failed reads REJECTED as a loser does, but lost no race: once the
// executions' endings mark it, it leaves the losers, and the share turned away before
// StartExecution is judged on the lost races alone.
func TestTurnedAwayEarlyCountsOnlyLostRaces(t *testing.T) {
	results := func(outcomes ...Outcome) []Result {
		out := make([]Result, len(outcomes))
		for i, o := range outcomes {
			out[i] = Result{Outcome: o}
			if o != AdmissionRejected {
				out[i].ReservationID = fmt.Sprintf("r%d", i)
			}
		}
		return out
	}
	cases := []struct {
		name        string
		outcomes    []Outcome
		claimFailed map[string]bool
		wantMoved   int
		wantLosers  int
		wantEarly   float64
	}{
		{"only lost races", []Outcome{AdmissionRejected, AdmissionRejected, AdmissionRejected, SagaRejected, Confirmed},
			nil, 0, 4, 0.75},
		{"failed claims are no losers", []Outcome{AdmissionRejected, AdmissionRejected, AdmissionRejected, SagaRejected, SagaRejected, SagaRejected, Confirmed},
			map[string]bool{"r4": true, "r5": true}, 2, 4, 0.75},
		{"every rejection a failed claim", []Outcome{SagaRejected, SagaRejected, Confirmed},
			map[string]bool{"r0": true, "r1": true}, 2, 0, 0},
		{"only buyers the saga rejected move", []Outcome{AdmissionRejected, SagaRejected, Confirmed},
			map[string]bool{"r2": true}, 0, 2, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := &Run{Results: results(c.outcomes...)}
			if moved := run.MarkClaimFailures(func(id string) bool { return c.claimFailed[id] }); moved != c.wantMoved {
				t.Errorf("moved %d, want %d", moved, c.wantMoved)
			}
			s := run.Summarize()
			if s.Losers() != c.wantLosers || s.TurnedAwayEarly() != c.wantEarly {
				t.Errorf("losers %d, early share %v; want %d, %v", s.Losers(), s.TurnedAwayEarly(), c.wantLosers, c.wantEarly)
			}
			if s.ByOutcome[ClaimFailed] != c.wantMoved {
				t.Errorf("outcomes %v, want %d claim failures", s.ByOutcome, c.wantMoved)
			}
		})
	}
}

// Under customer chaos at rate 1 every buyer sends its POST twice with one key and every
// admitted buyer cancels one to three times; the counts, the results and what the server
// received agree. Without chaos (the control) nobody does either.
func TestDriveMisbehavingCustomersRetryInFlightAndCancel(t *testing.T) {
	for _, on := range []bool{true, false} {
		buyers, err := Plan(PlanOptions{Buyers: 12, Seats: []string{"A", "B", "C", "D"}, Mix: Mix{Pays: 1}, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		api := &fakeAPI{owner: map[string]string{}, byKey: map[string]string{}, polls: map[string]int{},
			declined: map[string]bool{}, rejected: map[string]bool{}, failOnce: map[string]bool{},
			postsByKey: map[string]int{}, deletes: map[string]int{}}
		srv := httptest.NewServer(api)
		var chaos *Injector
		if on {
			chaos = NewInjector(Chaos{CustomerCancel: {Rate: 1}, CustomerRetryInFlight: {Rate: 1}}, 5)
		}
		run, err := Drive(context.Background(), Options{
			BaseURL: srv.URL, EventID: "ev1", Buyers: buyers, Concurrency: 8,
			Token:        func(c string) (string, error) { return "tok-" + c, nil },
			PollInterval: 2 * time.Millisecond, SettleTimeout: 5 * time.Second,
			Chaos: chaos, CancelWindow: 5 * time.Millisecond,
		})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		admitted, deletes := 0, 0
		for _, r := range run.Results {
			if got := api.postsByKey[r.Buyer.IdempotencyKey]; on != (got == 2) || !on && got != 1 {
				t.Errorf("chaos %v: buyer %s's key was POSTed %d times", on, r.Buyer.Customer, got)
			}
			if r.RetriedInFlight != on {
				t.Errorf("chaos %v: RetriedInFlight %v", on, r.RetriedInFlight)
			}
			if r.ReservationID == "" {
				continue
			}
			admitted++
			deletes += r.Cancels
			if on && (r.Cancels < 1 || r.Cancels > 3 || api.deletes[r.ReservationID] != r.Cancels || len(r.CancelStatuses) != r.Cancels) {
				t.Errorf("buyer %s: %d cancels, %v answered, server saw %d", r.Buyer.Customer, r.Cancels, r.CancelStatuses, api.deletes[r.ReservationID])
			}
		}
		got := chaos.Injected()
		if on && (got[CustomerRetryInFlight] != len(buyers) || got[CustomerCancel] != admitted || admitted == 0) {
			t.Errorf("injected %v, want %d retries and %d cancels", got, len(buyers), admitted)
		}
		if !on && (deletes != 0 || len(api.deletes) != 0) {
			t.Errorf("without chaos %d cancels were sent", deletes)
		}
	}
}
