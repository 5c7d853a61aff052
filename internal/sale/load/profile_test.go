package load

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// seatList numbers n seats as stack.SeatIDs does, best first.
func seatList(n int) []string {
	width := len(fmt.Sprint(n))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("S%0*d", width, i+1)
	}
	return out
}

// planDigest renders what a plan gives each buyer, arrival apart, and hashes it.
func planDigest(buyers []Buyer) string {
	var sb strings.Builder
	for _, b := range buyers {
		fmt.Fprintf(&sb, "%s|%s|%s|%s|%s\n", b.Customer, b.IdempotencyKey, strings.Join(b.SeatIDs, ","), b.Behaviour, b.PaymentMethod)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(sb.String())))
}

var (
	loadMix = Mix{Pays: 70, Declines: 10, ThreeDS: 10, ThreeDSNo: 5, LateAuth: 5}
	demoMix = Mix{Pays: 55, Declines: 10, ThreeDS: 15, ThreeDSNo: 10, LateAuth: 10}
)

// The digests below were taken from Plan as it was before profiles existed (the commit
// 421b0fa), for load's 2,000 / 200 sale, demo's default sale and a crowd wanting two seats
// each. Uniform is that generator: it must give the very same crowd for the same seed, and
// so must the empty profile, which every caller that names none gets. A burst changes only
// when buyers arrive, so it gives the same crowd too.
func TestUniformIsTheGeneratorBeforeProfiles(t *testing.T) {
	cases := []struct {
		name   string
		o      PlanOptions
		digest string
		first  []string // the first buyers' seats, as a reader can check them
	}{
		{"load 2000/200", PlanOptions{Buyers: 2000, Seats: seatList(200), Mix: loadMix, Seed: 1},
			"7ff2d8c8fff5b7be8cfd7fa26d9c932e9045367a6bd3abbe9007f7e96e4cc21d", []string{"S161", "S012", "S082"}},
		{"demo 400/60", PlanOptions{Buyers: 400, Seats: seatList(60), Mix: demoMix, Seed: 1},
			"0b6e5e1a21fd2779ce7fe8f4dde00ff918e8e27e2a271500d36db88659fed821", []string{"S46", "S31", "S52"}},
		{"two seats each", PlanOptions{Buyers: 50, Seats: []string{"A1", "A2", "A3", "A4", "A5"}, SeatsPerBuyer: 2, Mix: Mix{Pays: 1, ThreeDSNo: 1, LateAuth: 1}, Seed: 3},
			"d2a056b23c178b02989aed565ff79b54a91c16b66d07b193a4015874353b90e9", []string{"A3,A4", "A1,A5", "A1,A2"}},
	}
	for _, c := range cases {
		for _, p := range []Profile{"", Uniform, Burst} {
			t.Run(c.name+"/"+string(p), func(t *testing.T) {
				o := c.o
				o.Profile = p
				buyers, err := Plan(o)
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range c.first {
					if got := strings.Join(buyers[i].SeatIDs, ","); got != want {
						t.Errorf("buyer %d wants %s, want %s", i, got, want)
					}
				}
				if got := planDigest(buyers); got != c.digest {
					t.Errorf("plan digest %s, want %s: the crowd is not the one the generator made before profiles", got, c.digest)
				}
				if p != Burst {
					for _, b := range buyers {
						if b.Arrival != 0 {
							t.Fatalf("%s arrives at %s: uniform buyers all arrive at the start", b.Customer, b.Arrival)
						}
					}
				}
			})
		}
	}
}

// Each profile generates what it promises, judged on load's 2,000 buyers for 200 seats: the
// share of first choices on the best tenth of the seats (a tenth with no skew, HotShare with
// it), when the buyers arrive, and how many POSTs the client lets be in flight. Every check
// is one the other profiles fail: uniform's share is far from 0.8 or 0.5, hot's from 0.1, and
// only a burst spreads arrivals over the window and raises the concurrency.
func TestProfilesGenerateWhatTheyPromise(t *testing.T) {
	const buyers, seats, tolerance = 2000, 200, 0.03
	cases := []struct {
		profile  Profile
		hotShare float64
		// wantTopShare is the share of first choices on the best 20 seats.
		wantTopShare float64
		// burst: every arrival within BurstWindow and spread over most of it; otherwise all
		// at the start.
		burst bool
		// wantConcurrency is what the profile drives with when 64 were asked.
		wantConcurrency int
	}{
		{Uniform, 0, 0.1, false, 64},
		{Hot, 0, DefaultHotShare, false, 64},
		{Hot, 0.5, 0.5, false, 64},
		{Hot, 0.95, 0.95, false, 64},
		{Burst, 0, 0.1, true, BurstConcurrency},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %g", c.profile, c.hotShare), func(t *testing.T) {
			o := PlanOptions{Buyers: buyers, Seats: seatList(seats), Mix: loadMix, Seed: 1, Profile: c.profile, HotShare: c.hotShare}
			plan, err := Plan(o)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Plan(o)
			if planDigest(plan) != planDigest(again) || plan[len(plan)-1].Arrival != again[len(again)-1].Arrival {
				t.Fatal("same seed, different plan")
			}
			index := map[string]int{}
			for i, s := range o.Seats {
				index[s] = i
			}
			wanted := make([]int, seats)
			top := 0
			var latest time.Duration
			for _, b := range plan {
				k := index[b.SeatIDs[0]]
				wanted[k]++
				if k < seats/10 {
					top++
				}
				latest = max(latest, b.Arrival)
			}
			if share := float64(top) / buyers; math.Abs(share-c.wantTopShare) > tolerance {
				t.Errorf("the best tenth of the seats got %.3f of the first choices, want %.2f ± %.2f", share, c.wantTopShare, tolerance)
			}
			if c.profile == Hot && !(wanted[0] > wanted[seats/10-1] && wanted[seats/10-1] > wanted[seats/2]) {
				t.Errorf("first choices of seats 1, %d and %d: %d, %d, %d; want each seat wanted more than those behind it, as a Zipf-like skew does",
					seats/10, seats/2, wanted[0], wanted[seats/10-1], wanted[seats/2])
			}
			switch {
			case c.burst && (latest >= BurstWindow || latest < BurstWindow/2):
				t.Errorf("last arrival at %s, want within %s and spread over most of it", latest, BurstWindow)
			case !c.burst && latest != 0:
				t.Errorf("last arrival at %s, want everyone at the start", latest)
			}
			if got := c.profile.Concurrency(64); got != c.wantConcurrency {
				t.Errorf("concurrency %d when 64 were asked, want %d", got, c.wantConcurrency)
			}
			if got := c.profile.Concurrency(2000); got != 2000 {
				t.Errorf("concurrency %d when 2000 were asked: a profile never lowers it", got)
			}
		})
	}
}

// The hot profile's further seats follow the same skew without repeating a seat, and its
// arguments are checked.
func TestHotProfileSeatsAndErrors(t *testing.T) {
	plan, err := Plan(PlanOptions{Buyers: 1000, Seats: seatList(100), SeatsPerBuyer: 3, Seed: 9, Profile: Hot})
	if err != nil {
		t.Fatal(err)
	}
	inTop := 0
	for _, b := range plan {
		seen := map[string]bool{}
		for _, s := range b.SeatIDs {
			if seen[s] {
				t.Fatalf("%s wants %v: a seat twice", b.Customer, b.SeatIDs)
			}
			seen[s] = true
			if s <= "S010" {
				inTop++
			}
		}
	}
	// With three seats each, more of them fall outside the best tenth than the first choice
	// alone would, but the skew still puts most there.
	if share := float64(inTop) / 3000; share < 0.5 {
		t.Errorf("%.2f of the seats wanted are among the best tenth, want most", share)
	}
	cases := []struct {
		name string
		o    PlanOptions
	}{
		{"share at the no-skew floor", PlanOptions{Buyers: 1, Seats: seatList(100), Profile: Hot, HotShare: 0.1}},
		{"share of one", PlanOptions{Buyers: 1, Seats: seatList(100), Profile: Hot, HotShare: 1}},
		{"one seat", PlanOptions{Buyers: 1, Seats: seatList(1), Profile: Hot}},
		{"unknown profile", PlanOptions{Buyers: 1, Seats: seatList(10), Profile: "stampede"}},
	}
	for _, c := range cases {
		if _, err := Plan(c.o); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	for _, s := range []string{"", "uniform", "hot", "burst"} {
		if _, err := ParseProfile(s); err != nil {
			t.Errorf("ParseProfile(%q): %v", s, err)
		}
	}
	if _, err := ParseProfile("Burst"); err == nil || !strings.Contains(err.Error(), "uniform, hot, burst") {
		t.Errorf("ParseProfile(Burst): %v, want an error naming the profiles", err)
	}
}

// inFlightAPI holds every POST until want of them are in flight at once (or until a deadline,
// so that a client that never gets there is not held forever), then answers each 409: the
// test measures, on the server's side, how many requests a client really had in flight.
type inFlightAPI struct {
	want  int
	after time.Duration

	mu       sync.Mutex
	inFlight int
	most     int
	full     chan struct{}
	once     sync.Once
	timer    *time.Timer
}

func (f *inFlightAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	if f.inFlight >= f.want {
		f.once.Do(func() { close(f.full) })
	}
	if f.timer == nil {
		f.timer = time.AfterFunc(f.after, func() { f.once.Do(func() { close(f.full) }) })
	}
	f.mu.Unlock()
	<-f.full
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	w.WriteHeader(http.StatusConflict)
	_, _ = w.Write([]byte(`{"code":"seats_unavailable"}`))
}

// A burst drives what it promises against a server: every buyer arrives within BurstWindow,
// and at least BurstConcurrency POSTs are in flight at once although only 32 were asked for.
// The same crowd driven as Uniform, with the concurrency asked, never gets there: that is
// what tells the check from one any profile passes.
func TestBurstArrivesWithinASecondWithFiveHundredInFlight(t *testing.T) {
	const buyers = BurstConcurrency + 88
	cases := []struct {
		profile  Profile
		wantPeak func(int) bool
		want     string
	}{
		{Burst, func(n int) bool { return n >= BurstConcurrency }, fmt.Sprintf("at least %d", BurstConcurrency)},
		{Uniform, func(n int) bool { return n <= 32 }, "at most the 32 asked"},
	}
	for _, c := range cases {
		t.Run(string(c.profile), func(t *testing.T) {
			plan, err := Plan(PlanOptions{Buyers: buyers, Seats: seatList(50), Seed: 4, Profile: c.profile})
			if err != nil {
				t.Fatal(err)
			}
			api := &inFlightAPI{want: BurstConcurrency, after: 1500 * time.Millisecond, full: make(chan struct{})}
			srv := httptest.NewServer(api)
			defer srv.Close()
			run, err := Drive(context.Background(), Options{
				BaseURL: srv.URL, EventID: "ev1", Buyers: plan, Profile: c.profile, Concurrency: 32,
				Token:        func(c string) (string, error) { return "tok-" + c, nil },
				PollInterval: time.Millisecond, SettleTimeout: 5 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			s := run.Summarize()
			if s.ByOutcome[AdmissionRejected] != buyers {
				t.Fatalf("outcomes %v, want every buyer answered 409", s.ByOutcome)
			}
			api.mu.Lock()
			most := api.most
			api.mu.Unlock()
			if !c.wantPeak(most) || !c.wantPeak(s.PeakPostsInFlight) {
				t.Errorf("%d POSTs in flight at once on the server's side, %d on the client's; want %s", most, s.PeakPostsInFlight, c.want)
			}
			if c.profile == Burst {
				if s.Concurrency != BurstConcurrency || s.Profile != Burst {
					t.Errorf("drove %s with concurrency %d, want burst with %d", s.Profile, s.Concurrency, BurstConcurrency)
				}
				if s.ArrivalSpread >= BurstWindow {
					t.Errorf("the last buyer arrived %s after the start, want within %s", s.ArrivalSpread, BurstWindow)
				}
				for i, r := range run.Results {
					if d := r.Start.Sub(run.Started); d >= BurstWindow || d != plan[i].Arrival {
						t.Fatalf("%s arrived %s after the start, planned %s; want the plan's arrival, within %s", r.Buyer.Customer, d, plan[i].Arrival, BurstWindow)
					}
					// The client may be late to a buyer on a busy machine, never early: a
					// buyer sent before its arrival would make a burst steeper than planned.
					if r.Began.Before(r.Start) {
						t.Fatalf("%s began %s before its arrival", r.Buyer.Customer, r.Start.Sub(r.Began))
					}
				}
			}
		})
	}
}
