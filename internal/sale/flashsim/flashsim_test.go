package flashsim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// The free-seat index finds the k-th free seat exactly as a scan would, through any sequence
// of seats taken and given back.
func TestTheFreeSeatIndexFindsTheKthFreeSeatAsAScanWould(t *testing.T) {
	const n = 97
	f := newFenwick(n)
	free := make([]bool, n)
	rnd := rand.New(rand.NewPCG(7, 7))
	for step := range 5000 {
		i := rnd.IntN(n)
		if free[i] {
			f.add(i, -1)
		} else {
			f.add(i, 1)
		}
		free[i] = !free[i]
		var scan []int
		for j, ok := range free {
			if ok {
				scan = append(scan, j)
			}
		}
		if f.total() != len(scan) {
			t.Fatalf("step %d: total %d, scan %d", step, f.total(), len(scan))
		}
		for k, want := range scan {
			if got := f.find(k); got != want {
				t.Fatalf("step %d: free seat %d is %d, scan says %d", step, k, got, want)
			}
		}
	}
}

func small() Config {
	c := Defaults()
	c.Buyers, c.Seats, c.Window = 3000, 200, 5*time.Second
	return c
}

// Whatever the profile, seed and quotas, every buyer is answered exactly once, every seat sold
// is sold to one booked buyer, and the executions are the gate's admissions.
func TestEveryBuyerIsAnsweredOnceAndNoSeatIsSoldTwice(t *testing.T) {
	for _, profile := range []string{ProfileUniform, ProfileHot} {
		for seed := range uint64(3) {
			for _, stage := range []throttle.Limit{small().Stage, {Size: 100, RefillPerSecond: 50}} {
				c := small()
				c.Profile, c.Seed, c.Stage = profile, seed, stage
				s := run(c)
				r := s.res
				total := 0
				for _, a := range Answers {
					total += r.Answers[a]
				}
				sold := 0
				for _, st := range s.seats {
					if st.state == seatSold {
						sold++
					}
				}
				switch {
				case total != c.Buyers || len(r.Answers) > len(Answers):
					t.Fatalf("%s seed %d stage %v: %d answers for %d buyers: %v", profile, seed, stage, total, c.Buyers, r.Answers)
				case r.SeatsSold != r.Answers[Booked] || sold != r.SeatsSold || sold > c.Seats:
					t.Fatalf("%s seed %d: %d sold, %d booked, %d seats in SOLD of %d", profile, seed, r.SeatsSold, r.Answers[Booked], sold, c.Seats)
				case r.Executions != r.GateAdmitted:
					t.Fatalf("%s seed %d: %d executions for %d admissions", profile, seed, r.Executions, r.GateAdmitted)
				}
			}
		}
	}
}

// A start Step Functions throttles is queued, not failed: the queue drains at the bucket's
// refill rate, so the last start comes (throttled starts ÷ rate) after the burst. With a bucket
// large enough, nothing is queued.
func TestThrottledStartsAreQueuedAndDrainedAtTheQuotasRate(t *testing.T) {
	c := Defaults()
	// Seats enough that no two buyers pick the same one, all within 10 ms.
	c.Buyers, c.Seats, c.Window, c.StatusPoll = 100, 100000, 10*time.Millisecond, 0
	c.Stage = throttle.Limit{Size: 10000, RefillPerSecond: 10000}
	c.StartExecution = throttle.Limit{Size: 10, RefillPerSecond: 5}
	r := run(c).res
	if r.StartThrottled != 90 || r.QueuePeakDepth != 90 || r.SeatsSold != 100 {
		t.Fatalf("%d throttled, queue peak %d, %d sold; want 90, 90, 100", r.StartThrottled, r.QueuePeakDepth, r.SeatsSold)
	}
	// The starter finds 5 tokens refilled after its delay, then starts 85 more at 5 a second.
	if lo, hi := c.StarterDelay+17*time.Second, c.StarterDelay+17*time.Second+100*time.Millisecond; r.LastWinnerStarted < lo || r.LastWinnerStarted > hi {
		t.Fatalf("last start at %v, want between %v and %v", r.LastWinnerStarted, lo, hi)
	}
	if r.StartExecutionCalls != 190 {
		t.Fatalf("%d StartExecution calls, want 100 from the api and 90 from the starter", r.StartExecutionCalls)
	}
	c.StartExecution.Size = 1000
	if r := run(c).res; r.StartThrottled != 0 || r.QueuePeakDepth != 0 {
		t.Fatalf("a bucket of 1,000 for 100 starts throttled %d and queued %d", r.StartThrottled, r.QueuePeakDepth)
	}
}

// The stage answers what it cannot take 429; a client retries with backoff and gives up after
// its tries. A stage large enough throttles nothing.
func TestTheStageThrottlesAndClientsGiveUpAfterTheirTries(t *testing.T) {
	c := small()
	c.Stage, c.ThrottleTries = throttle.Limit{Size: 20, RefillPerSecond: 10}, 2
	r := run(c).res
	if r.StageThrottled == 0 || r.Answers[GaveUpThrottled] == 0 {
		t.Fatalf("a stage of 10/s for 3,000 buyers in 5 s: %d throttled, %d gave up", r.StageThrottled, r.Answers[GaveUpThrottled])
	}
	c.Stage = throttle.Limit{Size: 100000, RefillPerSecond: 100000}
	if r := run(c).res; r.StageThrottled != 0 || r.Answers[GaveUpThrottled] != 0 {
		t.Fatalf("an ample stage: %d throttled, %d gave up", r.StageThrottled, r.Answers[GaveUpThrottled])
	}
}

// When transitions are throttled so long that a lease lapses before its claim, the gate lets a
// second buyer through for the seat, and the first buyer's execution loses at the claim: the
// claim stays the authority, and the figure counts that execution as a loser's.
func TestALeaseThatLapsesBeforeTheClaimLetsASecondBuyerThrough(t *testing.T) {
	c := Defaults()
	c.Buyers, c.Seats, c.Window, c.StatusPoll = 2, 1, 100*time.Millisecond, 0
	c.Stage = throttle.Limit{Size: 100, RefillPerSecond: 100}
	c.StateTransition = throttle.Limit{Size: 0, RefillPerSecond: 0.05}
	c.SeatTries, c.Think = 5, 11*time.Second
	r := run(c).res
	if r.Answers[LostAtClaim] != 1 || r.Answers[Booked] != 1 || r.GateAdmitted != 2 {
		t.Fatalf("answers %v, %d admitted; want one lost at the claim, one booked, two admitted", r.Answers, r.GateAdmitted)
	}
	if got := r.LosersTurnedAwayBeforeStart(); got >= 1 {
		t.Fatalf("turned away before start %.2f with an execution lost at the claim", got)
	}
}

// The same configuration gives the same result.
func TestTheSimulationIsDeterministic(t *testing.T) {
	a, b := run(small()).res, run(small()).res
	if a.StageThrottled != b.StageThrottled || a.GateRefused != b.GateRefused || a.LastAnswered != b.LastAnswered || a.HoldWaitP99 != b.HoldWaitP99 {
		t.Fatalf("two runs differ: %+v and %+v", a, b)
	}
}

// while leases outlast the wait for the claim (an ample transition bucket, a queued
// start's lease longer than the queue), no execution may lose at the claim: every loser is
// answered by the gate. A queue of 190 starts at 5/s waits 38 s, past the 10 s lease.
func TestWithLeasesOutlastingTheWaitNoExecutionLosesAtTheClaim(t *testing.T) {
	c := small()
	c.Window = time.Minute // buyers keep coming while the queue drains
	c.Stage = throttle.Limit{Size: 100000, RefillPerSecond: 100000}
	c.StartExecution = throttle.Limit{Size: 10, RefillPerSecond: 5}
	c.StateTransition = throttle.Limit{Size: 100000, RefillPerSecond: 100000}
	r := run(c).res
	if r.StartThrottled == 0 {
		t.Fatalf("control: the start bucket should have queued starts")
	}
	if r.Answers[LostAtClaim] != 0 || r.LosersTurnedAwayBeforeStart() != 1 {
		t.Fatalf("%d executions lost at the claim (turned away before start %.3f), want none", r.Answers[LostAtClaim], r.LosersTurnedAwayBeforeStart())
	}
}

// the claim honours another buyer's live lease: buyer 1, whose lease lapsed and passed
// to buyer 2, loses at the claim and leaves buyer 2's lease alone.
func TestTheClaimLeavesAnotherBuyersLiveLeaseAlone(t *testing.T) {
	c := small()
	c.Buyers, c.Seats, c.StatusPoll = 0, 1, 0
	s := run(c)
	s.free.add(0, -1)
	s.seats[0] = seat{state: seatLeased, by: 2, leaseUntil: s.clk.Now().Add(time.Minute)}
	s.execute(&buyer{id: 1, seat: 0})
	for s.clk.AdvanceToNext() {
	}
	if st := s.seats[0]; st.state != seatLeased || st.by != 2 || s.res.Answers[LostAtClaim] != 1 {
		t.Fatalf("seat %+v, %d lost at the claim; want buyer 2's lease kept and buyer 1 lost", st, s.res.Answers[LostAtClaim])
	}
}

// The start backlog holds the sale to about one StartExecution call per seat sold:
// once a throttle marks it, winners are queued without a call while the starter drains the
// queue, and every seat is still sold with no winner lost. Without the signal (a window of 0)
// every winner admitted while the bucket is empty makes a throttled call first: about 1.78.
func TestTheStartBacklogHoldsTheDefaultSaleToAboutOneStartPerSeatSold(t *testing.T) {
	for _, tc := range []struct {
		window   time.Duration
		min, max float64
	}{{2 * time.Second, 1, 1.2}, {0, 1.7, 1.85}} {
		c := Defaults()
		c.StartBacklogWindow = tc.window
		r := run(c).res
		got := r.StartsPerSeatSold()
		switch {
		case got < tc.min || got > tc.max:
			t.Fatalf("window %v: %.3f StartExecution calls per seat sold (%d calls: api %d, %d throttled; starter %d; %d queued by the backlog), want %.2f to %.2f",
				tc.window, got, r.StartExecutionCalls, r.APIStartCalls, r.StartThrottled, r.StarterStartCalls, r.QueuedByBacklog, tc.min, tc.max)
		case r.SeatsSold != c.Seats || r.Answers[Booked] != c.Seats || r.Answers[LostAtClaim] != 0 || r.Executions != r.GateAdmitted:
			t.Fatalf("window %v: %d of %d seats sold, %d booked, %d lost at the claim, %d executions for %d admitted",
				tc.window, r.SeatsSold, c.Seats, r.Answers[Booked], r.Answers[LostAtClaim], r.Executions, r.GateAdmitted)
		case r.StartExecutionCalls != r.APIStartCalls+r.StarterStartCalls || r.GateAdmitted != r.APIStartCalls+r.QueuedByBacklog ||
			r.StarterStartCalls != r.StartThrottled+r.QueuedByBacklog:
			t.Fatalf("window %v: the calls do not add up: %d = api %d + starter %d; admitted %d = api %d + backlog %d; starter %d = throttled %d + backlog %d",
				tc.window, r.StartExecutionCalls, r.APIStartCalls, r.StarterStartCalls, r.GateAdmitted, r.APIStartCalls, r.QueuedByBacklog,
				r.StarterStartCalls, r.StartThrottled, r.QueuedByBacklog)
		case tc.window == 0 && r.QueuedByBacklog != 0:
			t.Fatalf("no backlog signal, yet %d winners queued by it", r.QueuedByBacklog)
		case tc.window > 0 && r.QueuedByBacklog == 0:
			t.Fatalf("the backlog queued no winner")
		}
	}
}

// The backlog, buyer by buyer, on a StartExecution bucket of one token refilling at 1/s (the
// seat map read and each POST's API function take 40 ms; the POST reads the backlog when its
// function begins and calls StartExecution when it ends):
//   - A (arrives 0 s): reads at 40 ms, calls at 80 ms and takes the token.
//   - B (10 ms): reads at 50 ms, calls at 90 ms, is throttled: the backlog lasts to 2.09 s.
//   - X (45 ms): read at 85 ms, before B's mark: calls at 125 ms and is throttled (the gap).
//   - C (60 ms): reads at 100 ms, after B's mark: queued without a call.
//   - the starter starts B at 1.09 s, extending the backlog to 3.09 s, then X and C a token
//     apart; so F (2.5 s), reading at 2.54 s after the api's marks lapsed (2.125 s), is queued
//     without a call on the starter's extension alone.
//   - E (10 s) comes long after the queue emptied: the backlog has lapsed, it calls directly.
//
// With a window of 0 every one of them calls StartExecution.
func TestTheStartBacklogQueuesWinnersThatReadItLive(t *testing.T) {
	arrivals := []struct {
		name   string
		at     time.Duration
		queued bool // queued by the backlog
	}{{"A", 0, false}, {"B", 10 * time.Millisecond, false}, {"X", 45 * time.Millisecond, false},
		{"C", 60 * time.Millisecond, true}, {"F", 2500 * time.Millisecond, true}, {"E", 10 * time.Second, false}}
	for _, window := range []time.Duration{2 * time.Second, 0} {
		c := Defaults()
		c.Buyers, c.Seats, c.StatusPoll = 0, 100000, 0
		c.Stage = throttle.Limit{Size: 10000, RefillPerSecond: 10000}
		c.StartExecution = throttle.Limit{Size: 1, RefillPerSecond: 1}
		c.StartBacklogWindow = window
		s := run(c)
		buyers := make([]*buyer, len(arrivals))
		for i, a := range arrivals {
			buyers[i] = &buyer{id: i}
			s.at(a.at, func() { s.readSeatMap(buyers[i], 1) })
		}
		for s.clk.AdvanceToNext() {
		}
		r := s.res
		wantQueued, wantThrottled := 2, 2 // C and F; B and X
		if window == 0 {
			wantQueued, wantThrottled = 0, 4 // B, X, C and F
		}
		for i, a := range arrivals {
			if buyers[i].backlogSeen != (a.queued && window > 0) {
				t.Errorf("window %v: buyer %s read the backlog live: %v", window, a.name, buyers[i].backlogSeen)
			}
		}
		if r.QueuedByBacklog != wantQueued || r.StartThrottled != wantThrottled || r.APIStartCalls != len(arrivals)-wantQueued ||
			r.StarterStartCalls != wantQueued+wantThrottled || r.SeatsSold != len(arrivals) || r.GateRefused != 0 {
			t.Errorf("window %v: %d queued by the backlog, %d throttled, api %d calls, starter %d, %d sold, %d refused; want %d, %d, %d, %d, %d, 0",
				window, r.QueuedByBacklog, r.StartThrottled, r.APIStartCalls, r.StarterStartCalls, r.SeatsSold, r.GateRefused,
				wantQueued, wantThrottled, len(arrivals)-wantQueued, wantQueued+wantThrottled, len(arrivals))
		}
	}
}

// One throttle must not queue every later winner: once the queue it started has drained and
// Step Functions has tokens to spare, winners are started by the api again. A bucket of five
// tokens refilling at 10/s throttles three of eight buyers arriving at once; then a buyer
// arrives every 500 ms for 30 s, a twentieth of the refill rate, so none of them would ever be
// throttled. But the
// starter extends the backlog whenever it starts a queued execution, and every winner who
// reads the backlog live is queued for the starter, which extends it again a StarterDelay
// later: the backlog feeds itself and never lapses while winners come at least every
// StarterDelay+StartBacklogWindow, and each of them waits a stream delivery for nothing.
func TestOneThrottleDoesNotQueueEveryLaterWinner(t *testing.T) {
	c := Defaults()
	c.Buyers, c.Seats, c.StatusPoll = 0, 100000, 0
	c.Stage = throttle.Limit{Size: 10000, RefillPerSecond: 10000}
	c.StartExecution = throttle.Limit{Size: 5, RefillPerSecond: 10}
	s := run(c)
	var arrivals []time.Duration
	for i := range 8 {
		arrivals = append(arrivals, time.Duration(i)*time.Millisecond)
	}
	for at := time.Second; at <= 30*time.Second; at += 500 * time.Millisecond {
		arrivals = append(arrivals, at)
	}
	buyers := make([]*buyer, len(arrivals))
	for i, at := range arrivals {
		buyers[i] = &buyer{id: i}
		s.at(at, func() { s.readSeatMap(buyers[i], 1) })
	}
	for s.clk.AdvanceToNext() {
	}
	late, after := 0, 0 // winners arriving after 10 s, long after B's queue drained; those queued by the backlog
	for i, at := range arrivals {
		if at > 10*time.Second {
			after++
			if buyers[i].backlogSeen {
				late++
			}
		}
	}
	if r := s.res; late > 0 || r.StartThrottled != 3 {
		t.Fatalf("%d winners arriving after 10 s queued by the backlog (of %d), %d throttled, %d queued by the backlog in all: "+
			"want none after the queue drained, three throttled", late, after, r.StartThrottled, r.QueuedByBacklog)
	}
}
