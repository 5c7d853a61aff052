// Package flashsim simulates a flash sale far larger than the local stack can run on one
// machine (a few hundred thousand buyers) through the path a buyer takes on the deployed
// stack, to show where AWS's default quotas bind and how every buyer is answered.
//
// What it simulates, on a simulated clock with the twin's own token buckets and AWS's default
// quotas: the API stage's rate and burst, which API Gateway applies to each method of the stage
// on its own, within the account's bucket for all APIs of the Region (429 to the client, a
// browser that retries with capped exponential backoff and full jitter and gives up after a
// number of tries); each buyer's seat map read, POST and status polls; the
// admission gate's seat leases (a POST for a seat that is held, sold or leased to another
// buyer is answered 409 without a Step Functions call, and the buyer picks another seat from
// a fresh seat map, a few times at most); StartExecution's bucket (a throttled start is queued
// and answered 202 queued, its lease extended; the starter, fed by the Admissions stream after
// a delivery delay, drains the queue at the bucket's refill rate: the best the real starter, a
// batch of ten per stream shard that stops at a throttle and is retried, can do, so the queue's
// figures are a lower bound); the start backlog (a throttled start marks it for
// StartBacklogWindow, the starter extends it while the quota holds its starts back, and a POST
// whose first read finds it live queues its winner without calling StartExecution); the
// state-transition bucket
// every execution's transitions wait on; the claim, which honours the lease and holds the seat;
// and the payment, which every buyer who got a hold makes a fixed time later.
//
// What it does not simulate: the product's code and storage (DynamoDB's per-partition limits,
// hot seat items included, are not modelled), Lambda cold starts, provider latency beyond the
// fixed payment time, abandoned holds and their expiry, and buyers who come back after giving
// up. The figures are the model's, not a measurement of the stack; `load` measures the stack.
package flashsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// Profiles: which seats buyers pick from the seat map.
const (
	// ProfileUniform: any seat shown free, equally likely.
	ProfileUniform = "uniform"
	// ProfileHot: most buyers want the best rows; the pick leans hard to the front.
	ProfileHot = "hot"
)

// Config is one simulated sale; Defaults gives the issue's.
type Config struct {
	Buyers int
	Seats  int
	// Window is the time over which buyers arrive, uniformly.
	Window  time.Duration
	Seed    uint64
	Profile string
	// Stage is the API stage's throttle of each method (deploy.DefaultAPIRateLimit and Burst);
	// Account is API Gateway's bucket for every API of the account in the Region.
	Stage, Account throttle.Limit
	// StartExecution and StateTransition are Step Functions' buckets (AWS's defaults).
	StartExecution, StateTransition throttle.Limit
	// Lease and QueuedLease: how long the gate's lease lasts, and how long a queued start's.
	Lease, QueuedLease time.Duration
	// APILatency is one request's time in the API function.
	APILatency time.Duration
	// ClaimLatency is from an execution's first transition to its claim's write.
	ClaimLatency time.Duration
	// StarterDelay is from a queued start's record to the starter seeing it (stream polling).
	StarterDelay time.Duration
	// StartBacklogWindow is how long the start backlog lasts after the api's throttled start
	// marks it or the starter extends it (while the quota holds its starts back); while it is
	// live at a POST's first read, the POST's winner is queued without a StartExecution call
	// (0: no backlog signal, every winner calls StartExecution).
	StartBacklogWindow time.Duration
	// PayAfter is from a hold to the payment's authorization reaching the saga.
	PayAfter time.Duration
	// TransitionsPerBooking and TransitionsPerLostClaim are the state machine's paths: the
	// happy path, and a buyer who loses at the claim.
	TransitionsPerBooking, TransitionsPerLostClaim int
	// ThrottleTries is how many times a client sends one request the stage throttles before
	// giving up; BackoffBase and BackoffCap shape its waits.
	ThrottleTries           int
	BackoffBase, BackoffCap time.Duration
	// SeatTries is how many seats a buyer tries before leaving; Think is the time between.
	SeatTries int
	Think     time.Duration
	// StatusPoll is how often a buyer answered 202 reads the reservation until it is held
	// (0: never).
	StatusPoll time.Duration
}

// Defaults returns the configuration of the sale: 200,000 buyers arriving within 60 s
// for 10,000 seats, AWS's default quotas, the deployed stack's settings.
func Defaults() Config {
	q := stepfunctions.DefaultQuotas()
	return Config{
		Buyers: 200000, Seats: 10000, Window: time.Minute, Seed: 1, Profile: ProfileUniform,
		Stage:          throttle.Limit{Size: deploy.DefaultAPIBurstLimit, RefillPerSecond: deploy.DefaultAPIRateLimit},
		Account:        throttle.Limit{Size: 5000, RefillPerSecond: 10000},
		StartExecution: q.API["StartExecution"], StateTransition: q.StateTransition,
		Lease: 10 * time.Second, QueuedLease: time.Hour,
		APILatency: 40 * time.Millisecond, ClaimLatency: 150 * time.Millisecond, StarterDelay: time.Second,
		StartBacklogWindow: inventory.StartBacklogWindow, PayAfter: 20 * time.Second, TransitionsPerBooking: 5, TransitionsPerLostClaim: 2,
		ThrottleTries: 8, BackoffBase: time.Second, BackoffCap: 20 * time.Second,
		SeatTries: 3, Think: 2 * time.Second, StatusPoll: 2 * time.Second,
	}
}

// Validate reports a configuration the simulation cannot run.
func (c Config) Validate() error {
	switch {
	case c.Buyers < 0 || c.Seats < 0:
		return fmt.Errorf("flashsim: buyers and seats must not be negative")
	case c.StartBacklogWindow < 0:
		return fmt.Errorf("flashsim: the start backlog window must not be negative")
	case c.Window <= 0 || c.ThrottleTries < 1 || c.SeatTries < 1 || c.TransitionsPerBooking < 1 || c.TransitionsPerLostClaim < 1:
		return fmt.Errorf("flashsim: the window, the tries and the transitions per path must be positive")
	case c.Profile != ProfileUniform && c.Profile != ProfileHot:
		return fmt.Errorf("flashsim: profile %q: want %s or %s", c.Profile, ProfileUniform, ProfileHot)
	case c.Stage.RefillPerSecond <= 0 || c.Account.RefillPerSecond <= 0 || c.StartExecution.RefillPerSecond <= 0 || c.StateTransition.RefillPerSecond <= 0:
		return fmt.Errorf("flashsim: every bucket must refill")
	}
	return nil
}

// Answer is how a buyer's sale ended.
type Answer string

// The answers.
const (
	// Booked: held a seat and paid for it.
	Booked Answer = "booked"
	// SoldOutOnMap: the seat map showed nothing free; no POST was sent.
	SoldOutOnMap Answer = "left: the seat map showed no seat free"
	// TurnedAway: every seat the buyer tried was answered 409 at the gate.
	TurnedAway Answer = "lost: 409 at the gate for every seat tried"
	// LostAtClaim: the gate let the buyer through but the claim found the seat taken (the
	// lease lapsed before the claim).
	LostAtClaim Answer = "lost: execution started, the claim found the seat taken"
	// GaveUpThrottled: a request was answered 429 by the stage ThrottleTries times.
	GaveUpThrottled Answer = "gave up: 429 from the stage on every try"
)

// Answers lists every answer in report order.
var Answers = []Answer{Booked, SoldOutOnMap, TurnedAway, LostAtClaim, GaveUpThrottled}

// Result is what the simulation counted. Times are from the first arrival.
type Result struct {
	Config Config
	// Answers counts every buyer once, by how their sale ended.
	Answers map[Answer]int
	// Requests that reached the stage, by kind, and those it throttled.
	SeatMapReads, POSTs, StatusReads int
	StageThrottled                   int
	// GateAdmitted and GateRefused are POSTs the gate let through and answered 409.
	GateAdmitted, GateRefused int
	// StartExecutionCalls are every call, throttled ones included: APIStartCalls, the api's,
	// plus StarterStartCalls, the starter's. StartThrottled is the api's calls Step Functions
	// refused, each then queued.
	StartExecutionCalls, APIStartCalls, StarterStartCalls, StartThrottled int
	// QueuedByBacklog is winners the api queued without a StartExecution call because the
	// POST's first read found the start backlog live.
	QueuedByBacklog int
	// Executions started, SeatsSold, and TransitionsWaited: transitions the state-transition
	// bucket delayed.
	Executions, SeatsSold, Transitions, TransitionsWaited int
	// QueuePeakDepth and QueuePeakAge: the queued starts at most at once, and the longest a
	// queued start waited.
	QueuePeakDepth int
	QueuePeakAge   time.Duration
	// LastWinnerStarted: when the last execution that went on to book started. LastSeatSold:
	// when the last seat was paid. LastAnswered: when the last buyer's sale ended.
	LastWinnerStarted, LastSeatSold, LastAnswered time.Duration
	// APIPeakConcurrency is the most API function invocations at once.
	APIPeakConcurrency int
	// HoldWaitP99 is the 99th percentile, over holds, of the time from the POST the gate let
	// through to the hold; FirstPostToHoldP99 counts from the buyer's first try of that POST,
	// so it includes the stage's 429s and the client's backoff.
	HoldWaitP99, FirstPostToHoldP99 time.Duration
}

// LosersTurnedAwayBeforeStart is the share of POSTs that lost a seat which the gate answered
// without a Step Functions call: the gate's 409s over those and the executions that lost at
// the claim.
func (r Result) LosersTurnedAwayBeforeStart() float64 {
	lost := r.GateRefused + r.Answers[LostAtClaim]
	if lost == 0 {
		return 1
	}
	return float64(r.GateRefused) / float64(lost)
}

// StartsPerSeatSold is StartExecution calls per seat sold.
func (r Result) StartsPerSeatSold() float64 {
	if r.SeatsSold == 0 {
		return 0
	}
	return float64(r.StartExecutionCalls) / float64(r.SeatsSold)
}

// Run simulates the sale.
func Run(c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	return run(c).res, nil
}

func run(c Config) *sim {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	s := &sim{
		cfg: c, clk: clk, start: start,
		rnd:         rand.New(rand.NewPCG(c.Seed, 0x5ea75a6a)),
		account:     throttle.New(clk, c.Account),
		stage:       map[*int]*throttle.Bucket{},
		startBucket: throttle.New(clk, c.StartExecution),
		transitions: throttle.New(clk, c.StateTransition),
		seats:       make([]seat, c.Seats),
		free:        newFenwick(c.Seats),
		res:         Result{Config: c, Answers: map[Answer]int{}},
	}
	for i := range c.Seats {
		s.free.add(i, 1)
	}
	for b := range c.Buyers {
		at := time.Duration(s.rnd.Int64N(int64(c.Window)))
		s.at(at+time.Nanosecond, func() { s.readSeatMap(&buyer{id: b}, 1) })
	}
	for clk.AdvanceToNext() {
	}
	s.res.HoldWaitP99 = percentile(s.holdWaits, 0.99)
	s.res.FirstPostToHoldP99 = percentile(s.postWaits, 0.99)
	return s
}

type seatState int

const (
	seatFree seatState = iota
	seatLeased
	seatHeld
	seatSold
)

type seat struct {
	state      seatState
	by         int // buyer id of the lease or hold
	leaseUntil time.Time
}

type buyer struct {
	id        int
	seatTries int
	seat      int
	admitted  time.Time
	// firstPost is when the buyer first tried the POST that the gate let through.
	firstPost time.Time
	held      bool
	started   time.Duration
	// done: the buyer's sale has ended (answered).
	done bool

	// backlogSeen: the POST's first read, when the API function began, found the start
	// backlog live.
	backlogSeen bool
}

type sim struct {
	cfg   Config
	clk   *clock.Fake
	start time.Time
	rnd   *rand.Rand

	// stage holds each method's bucket, by the counter of its requests.
	stage                             map[*int]*throttle.Bucket
	account, startBucket, transitions *throttle.Bucket

	seats []seat
	// free marks the seats the seat map shows free (neither held, sold nor under a live lease).
	free *fenwick

	queued               int
	inFlight             int
	holdWaits, postWaits []time.Duration
	res                  Result

	// backlogUntil is when the start backlog lapses; it is live while it is after now.
	backlogUntil time.Time
}

// at schedules fn d from now; d is at least a nanosecond so the fake clock runs fn in order.
func (s *sim) at(d time.Duration, fn func()) { s.clk.AfterFunc(max(d, time.Nanosecond), fn) }

func (s *sim) now() time.Duration { return s.clk.Now().Sub(s.start) }

func (s *sim) answer(b *buyer, a Answer) {
	b.done = true
	s.res.Answers[a]++
	s.res.LastAnswered = max(s.res.LastAnswered, s.now())
}

// backoff is the client's wait before try n+1 of a throttled request: capped exponential with
// full jitter.
func (s *sim) backoff(n int) time.Duration {
	ceiling := min(float64(s.cfg.BackoffBase)*math.Pow(2, float64(n-1)), float64(s.cfg.BackoffCap))
	return time.Duration(s.rnd.Float64() * ceiling)
}

// request sends one request through the stage: on a throttle the client retries after its
// backoff, up to ThrottleTries, then gives up; a request let through runs in the API function
// for APILatency and then serve runs.
func (s *sim) request(b *buyer, try int, count *int, serve func(), gaveUp func()) {
	s.requestReading(b, try, count, nil, serve, gaveUp)
}

// requestReading is request with read run when the API function begins, APILatency before
// serve: a POST's first read, which sees the start backlog as it is then.
func (s *sim) requestReading(b *buyer, try int, count *int, read, serve func(), gaveUp func()) {
	method := s.stage[count]
	if method == nil {
		method = throttle.New(s.clk, s.cfg.Stage)
		s.stage[count] = method
	}
	if !method.Take() || !s.account.Take() {
		s.res.StageThrottled++
		if try >= s.cfg.ThrottleTries {
			gaveUp()
			return
		}
		s.at(s.backoff(try), func() { s.requestReading(b, try+1, count, read, serve, gaveUp) })
		return
	}
	*count++
	if read != nil {
		read()
	}
	s.inFlight++
	s.res.APIPeakConcurrency = max(s.res.APIPeakConcurrency, s.inFlight)
	s.at(s.cfg.APILatency, func() {
		s.inFlight--
		serve()
	})
}

func (s *sim) readSeatMap(b *buyer, try int) {
	s.request(b, try, &s.res.SeatMapReads, func() {
		if s.free.total() == 0 {
			s.answer(b, SoldOutOnMap)
			return
		}
		b.seat = s.pick()
		s.post(b, 1)
	}, func() { s.answer(b, GaveUpThrottled) })
}

// pick chooses a seat the map shows free, as the profile says.
func (s *sim) pick() int {
	n := s.free.total()
	k := s.rnd.IntN(n)
	if s.cfg.Profile == ProfileHot {
		// Cubing a uniform draw puts half the picks in the first eighth of the free seats.
		u := s.rnd.Float64()
		k = min(int(u*u*u*float64(n)), n-1)
	}
	return s.free.find(k)
}

// lease leases the buyer's seat for d; when it lapses without a claim the seat map shows the
// seat free again.
func (s *sim) lease(b *buyer, d time.Duration) {
	st := &s.seats[b.seat]
	st.state, st.by, st.leaseUntil = seatLeased, b.id, s.clk.Now().Add(d)
	s.at(d, func() {
		if st.state == seatLeased && st.by == b.id && !st.leaseUntil.After(s.clk.Now()) {
			st.state = seatFree
			s.free.add(b.seat, 1)
		}
	})
}

func (s *sim) post(b *buyer, try int) {
	if try == 1 {
		b.firstPost = s.clk.Now()
	}
	// The POST's first read (before the gate) reads the start backlog when the API function
	// begins; the gate's write and the StartExecution call come APILatency later, so a
	// backlog another POST's throttle marks in between is not seen.
	s.requestReading(b, try, &s.res.POSTs, func() { b.backlogSeen = s.backlogLive() },
		func() { s.gate(b) }, func() { s.answer(b, GaveUpThrottled) })
}

// gate is the admission gate's conditional write: a lease on a seat that is free or whose
// lease lapsed; anything else is a 409 without a Step Functions call.
func (s *sim) gate(b *buyer) {
	now := s.clk.Now()
	st := &s.seats[b.seat]
	leaseFree := st.state == seatFree || (st.state == seatLeased && !st.leaseUntil.After(now))
	if !leaseFree {
		s.res.GateRefused++
		b.seatTries++
		if b.seatTries >= s.cfg.SeatTries {
			s.answer(b, TurnedAway)
			return
		}
		s.at(s.cfg.Think, func() { s.readSeatMap(b, 1) })
		return
	}
	s.res.GateAdmitted++
	if st.state == seatFree {
		s.free.add(b.seat, -1)
	}
	b.admitted = now
	if b.backlogSeen {
		// The backlog was live at the POST's first read: the start is queued without a
		// StartExecution call, and the buyer is answered 202 queued.
		s.res.QueuedByBacklog++
	} else {
		s.res.StartExecutionCalls++
		s.res.APIStartCalls++
		if s.startBucket.Take() {
			s.lease(b, s.cfg.Lease)
			s.execute(b)
			s.poll(b)
			return
		}
		// Throttled: the start is queued with a lease long enough for the queue, the buyer is
		// answered 202 queued, and the start backlog is marked.
		s.res.StartThrottled++
		s.extendBacklog()
	}
	s.lease(b, s.cfg.QueuedLease)
	s.queued++
	s.res.QueuePeakDepth = max(s.res.QueuePeakDepth, s.queued)
	s.poll(b)
	s.at(s.cfg.StarterDelay, func() {
		// The starter takes tokens as the bucket refills: it starts at the quota's pace.
		wait := s.startBucket.Reserve()
		s.res.StartExecutionCalls++
		s.res.StarterStartCalls++
		if wait > 0 {
			// The quota holds the start back: the starter's throttled start marks the
			// backlog, and its retries mark it again until the start is made.
			s.extendBacklogUntil(s.clk.Now().Add(wait + s.cfg.StartBacklogWindow))
		}
		s.at(wait, func() {
			s.queued--
			s.res.QueuePeakAge = max(s.res.QueuePeakAge, s.clk.Now().Sub(now))
			s.execute(b)
		})
	})
}

// backlogLive reports whether the start backlog is live now.
func (s *sim) backlogLive() bool { return s.backlogUntil.After(s.clk.Now()) }

// extendBacklog makes the start backlog last until StartBacklogWindow from now (never shorter
// than it already lasts); with a window of 0 it is never live.
func (s *sim) extendBacklog() { s.extendBacklogUntil(s.clk.Now().Add(s.cfg.StartBacklogWindow)) }

// extendBacklogUntil makes the start backlog last until until (never shorter than it already
// lasts); with a window of 0 it is never live.
func (s *sim) extendBacklogUntil(until time.Time) {
	if s.cfg.StartBacklogWindow > 0 && until.After(s.backlogUntil) {
		s.backlogUntil = until
	}
}

// execute runs the buyer's execution: the first transition waits for its token, then the
// claim honours the lease.
func (s *sim) execute(b *buyer) {
	s.res.Executions++
	started := s.now()
	s.at(s.transition()+s.cfg.ClaimLatency, func() {
		now := s.clk.Now()
		st := &s.seats[b.seat]
		ours := st.by == b.id && st.state == seatLeased
		lapsedFree := st.state == seatFree || (st.state == seatLeased && !st.leaseUntil.After(now))
		if !ours && !lapsedFree {
			for range s.cfg.TransitionsPerLostClaim - 1 {
				s.transition()
			}
			s.answer(b, LostAtClaim)
			return
		}
		if st.state == seatFree {
			s.free.add(b.seat, -1)
		}
		st.state, st.by = seatHeld, b.id
		b.held, b.started = true, started
		s.holdWaits = append(s.holdWaits, now.Sub(b.admitted))
		s.postWaits = append(s.postWaits, now.Sub(b.firstPost))
		if s.cfg.StatusPoll <= 0 {
			s.pay(b)
		}
	})
}

// pay is the buyer paying PayAfter after learning of the hold: the authorization resumes the
// execution, whose remaining transitions sell the seat.
func (s *sim) pay(b *buyer) {
	s.at(s.cfg.PayAfter, func() {
		var wait time.Duration
		for range s.cfg.TransitionsPerBooking - 1 {
			wait = max(wait, s.transition())
		}
		s.at(wait, func() {
			s.seats[b.seat].state = seatSold
			s.res.SeatsSold++
			s.res.LastWinnerStarted = max(s.res.LastWinnerStarted, b.started)
			s.res.LastSeatSold = s.now()
			s.answer(b, Booked)
		})
	})
}

// transition takes a state-transition token and returns how long it waited.
func (s *sim) transition() time.Duration {
	s.res.Transitions++
	w := s.transitions.Reserve()
	if w > 0 {
		s.res.TransitionsWaited++
	}
	return w
}

// poll reads the reservation every StatusPoll until a read finds it held (that read hands
// the buyer the payment's client secret); a poll the stage throttles is the next poll's turn.
func (s *sim) poll(b *buyer) {
	if s.cfg.StatusPoll <= 0 {
		return
	}
	s.at(s.cfg.StatusPoll, func() {
		if b.done {
			return
		}
		s.request(b, s.cfg.ThrottleTries, &s.res.StatusReads, func() {
			if b.held {
				s.pay(b)
				return
			}
			s.poll(b)
		}, func() { s.poll(b) })
	})
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), ds...)
	slices.Sort(sorted)
	return sorted[min(int(math.Ceil(p*float64(len(sorted))))-1, len(sorted)-1)]
}
