// Package load drives a flash sale through seatsaga's HTTP API as buyers would: each buyer
// POSTs a reservation with its own Idempotency-Key and bearer token, then polls GET until the
// reservation settles, with bounded concurrency. It records what each buyer saw and when:
// turned away at admission (4xx before any execution started), rejected by the saga, confirmed,
// released, and the wall-clock latency to the first HELD and the first CONFIRMED status.
//
// Latencies are measured by polling, so they carry up to one poll interval of error; the
// interval is an option.
//
// A Profile shapes the crowd (see profile.go): Uniform, the crowd as it always was; Hot,
// where most buyers want the best rows; Burst, where everyone arrives within a second with
// at least 512 requests in flight.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Behaviour is how a buyer's payment goes, expressed as the payment method it sends.
type Behaviour string

// Behaviours the simulator's payment methods produce.
const (
	Pays      Behaviour = "pays"
	Declines  Behaviour = "declines"
	ThreeDS   Behaviour = "3ds-late"  // 3-D Secure completed after a delay
	ThreeDSNo Behaviour = "3ds-never" // 3-D Secure never completed: the hold expires
	LateAuth  Behaviour = "late-auth" // authorization arrives after the hold's deadline
)

// PaymentMethods maps each behaviour to the payment simulator's method that produces it.
var PaymentMethods = map[Behaviour]string{
	Pays:      "pm_card_visa",
	Declines:  "pm_card_chargeDeclined",
	ThreeDS:   "pm_card_threeDSecure2Required",
	ThreeDSNo: "pm_sim_threeDSecureAbandoned",
	LateAuth:  "pm_sim_authorizeLate",
}

// Mix is the share of buyers per behaviour; shares need not sum to one.
type Mix map[Behaviour]float64

// Buyer is one customer's attempt.
type Buyer struct {
	Customer       string
	IdempotencyKey string
	SeatIDs        []string
	Behaviour      Behaviour
	PaymentMethod  string
	// Arrival is when the buyer arrives, from the start of the sale (Drive waits this long
	// before the buyer's first request); the profile sets it.
	Arrival time.Duration
}

// PlanOptions shape a crowd of buyers.
type PlanOptions struct {
	Buyers int
	// Seats are the seats on sale, best first: the hot profile wants the front of this list
	// most (stack.SeatIDs numbers the seats row by row from the front, so its order is).
	Seats         []string
	SeatsPerBuyer int
	Mix           Mix
	Seed          int64
	// Profile is how the buyers arrive and which seats they want (empty: Uniform).
	Profile Profile
	// HotShare is, for the hot profile, the share of the buyers whose first choice is among
	// the best HotTopFraction of the seats (0: DefaultHotShare); other profiles ignore it.
	HotShare float64
}

// Plan builds buyers who each want SeatsPerBuyer distinct seats (so with more buyers than
// seats most seats are contested) and pay with a behaviour drawn from Mix; the profile says
// which seats they want and when they arrive. The same options and seed give the same crowd.
func Plan(o PlanOptions) ([]Buyer, error) {
	if o.Buyers <= 0 || len(o.Seats) == 0 {
		return nil, errors.New("load: need buyers and seats")
	}
	if o.SeatsPerBuyer <= 0 {
		o.SeatsPerBuyer = 1
	}
	if o.SeatsPerBuyer > len(o.Seats) {
		return nil, fmt.Errorf("load: %d seats per buyer but only %d seats", o.SeatsPerBuyer, len(o.Seats))
	}
	if len(o.Mix) == 0 {
		o.Mix = Mix{Pays: 1}
	}
	behaviours := make([]Behaviour, 0, len(o.Mix))
	total := 0.0
	for b, w := range o.Mix {
		if _, ok := PaymentMethods[b]; !ok {
			return nil, fmt.Errorf("load: unknown behaviour %q", b)
		}
		if w > 0 {
			behaviours = append(behaviours, b)
			total += w
		}
	}
	sort.Slice(behaviours, func(i, j int) bool { return behaviours[i] < behaviours[j] })
	profile := o.Profile.orUniform()
	if _, err := ParseProfile(string(profile)); err != nil {
		return nil, err
	}
	var hot *hotSeats
	if profile == Hot {
		share := o.HotShare
		if share == 0 {
			share = DefaultHotShare
		}
		var err error
		if hot, err = newHotSeats(len(o.Seats), share, o.Seed); err != nil {
			return nil, err
		}
	}
	arrivals := profile.arrivals(o.Buyers, o.Seed)
	rng := rand.New(rand.NewSource(o.Seed))
	buyers := make([]Buyer, o.Buyers)
	for i := range buyers {
		pick := rng.Float64() * total
		b := behaviours[len(behaviours)-1]
		for _, x := range behaviours {
			if pick < o.Mix[x] {
				b = x
				break
			}
			pick -= o.Mix[x]
		}
		// Every profile draws the uniform choice, so that the stream, and with it every
		// buyer's behaviour, stays what Uniform (the tool before profiles) gives for the seed;
		// the hot profile then replaces the choice from a stream of its own.
		perm := rng.Perm(len(o.Seats))[:o.SeatsPerBuyer]
		if hot != nil {
			perm = hot.pick(o.SeatsPerBuyer)
		}
		seats := make([]string, len(perm))
		for j, p := range perm {
			seats[j] = o.Seats[p]
		}
		sort.Strings(seats)
		buyers[i] = Buyer{
			Customer:       fmt.Sprintf("buyer-%05d", i),
			IdempotencyKey: fmt.Sprintf("sale-%d-buyer-%05d", o.Seed, i),
			SeatIDs:        seats,
			Behaviour:      b,
			PaymentMethod:  PaymentMethods[b],
			Arrival:        arrivals[i],
		}
	}
	return buyers, nil
}

// Outcome is how a buyer's attempt ended, as the buyer saw it.
type Outcome string

// Outcomes.
const (
	// AdmissionRejected: the POST was refused with 409 (seats visibly taken, not on sale)
	// before any execution started.
	AdmissionRejected Outcome = "admission_rejected"
	// Invalid: the POST was refused with another 4xx.
	Invalid Outcome = "invalid"
	// SagaRejected: the execution started but the claim lost the race (REJECTED; see
	// ClaimFailed).
	SagaRejected Outcome = "saga_rejected"
	// ClaimFailed: the execution started and ended without holding anything, but not because
	// the race was lost: "Claim failed" (the claim could not complete after its retries) or
	// another incident, which a person looks at. The buyer reads REJECTED either way, so Drive
	// records SagaRejected; MarkClaimFailures tells them apart from the executions' endings,
	// which only the caller can read.
	ClaimFailed Outcome = "claim_failed"
	Confirmed   Outcome = "confirmed"
	Released    Outcome = "released"
	// Unsettled: the reservation did not settle before the buyer stopped polling.
	Unsettled Outcome = "unsettled"
	// Failed: the API kept failing (5xx or transport errors) after retries.
	Failed Outcome = "failed"
)

// Result is one buyer's experience.
type Result struct {
	Buyer         Buyer
	ReservationID string
	PostStatus    int
	PostCode      string
	Outcome       Outcome
	// FinalStatus, PaymentState and ReservationOutcome are the last GET's fields.
	FinalStatus        string
	PaymentState       string
	ReservationOutcome string
	// Start is the buyer's arrival: the sale's start plus its Arrival, when a buyer would
	// have clicked. Began is when the client got to the buyer, later by however long a busy
	// machine took to run it: that lateness is the client's, not the buyer's choice, so it
	// counts in PostLatency rather than moving the arrival.
	Start time.Time
	Began time.Time
	// PostLatency is from the buyer's arrival to the POST's answer (waiting for a request slot
	// included); PostService only the answered request itself.
	PostLatency time.Duration
	PostService time.Duration
	// HoldLatency is from sending the POST that was answered to the first status at or past
	// HELD; ConfirmLatency to the first CONFIRMED. Zero when never seen. Time a buyer spent
	// waiting for a client slot is not in them (it is in PostLatency).
	HoldLatency    time.Duration
	ConfirmLatency time.Duration
	// Posts and Polls count the HTTP requests the buyer sent (retries included): attempts,
	// not invocations, since a request the gateway or Lambda throttled ran no function.
	Posts, Polls int
	// Post5xx, Post429 and PostUnanswered count the buyer's POST attempts answered 5xx,
	// answered 429, and not answered at all (a transport error or a timeout): each was
	// retried, so a buyer may have them and still be answered in the end (PostStatus).
	Post5xx, Post429, PostUnanswered int
	// PostDone is when the POST was answered.
	PostDone time.Time
	Err      string
	// RetriedInFlight is set when the customer sent the same POST again, with the same
	// Idempotency-Key, while the first was in flight; RetryStatus is what that copy was
	// answered (0: unanswered).
	RetriedInFlight bool
	RetryStatus     int
	// Cancels counts the DELETEs the customer sent (0: it never canceled); CancelStatuses
	// are their answers, in order (0: unanswered).
	Cancels        int
	CancelStatuses []int

	sent time.Time
}

// Options configure a run.
type Options struct {
	BaseURL string
	EventID string
	// Buyers arrive each at its Arrival (see Plan).
	Buyers []Buyer
	// Profile is the profile the buyers were planned with (empty: Uniform): Drive applies
	// its bound on requests in flight (Profile.Concurrency) to Concurrency.
	Profile Profile
	// Concurrency bounds reservation POSTs in flight (default 32, raised by a burst profile),
	// PollConcurrency status GETs (default Concurrency), apart, so that a buyer's status read
	// does not queue behind the burst of POSTs. Every buyer arrives on its own (see
	// ArrivalWindow and Buyer.Arrival); a buyer waiting between status reads holds no slot.
	Concurrency     int
	PollConcurrency int
	// ArrivalWindow spreads the buyers' arrivals evenly over this much time, on top of each
	// buyer's Arrival; zero means each arrives at its Arrival (all at once, for Uniform).
	ArrivalWindow time.Duration
	// Token returns the bearer token of a customer.
	Token func(customer string) (string, error)
	// PollInterval is the first wait between status reads (default 100 ms); each later wait
	// grows by half, up to MaxPollInterval (default 8 × PollInterval), as a polite client
	// backs off. SettleTimeout bounds one buyer's wait for a final status (default 2 min).
	PollInterval    time.Duration
	MaxPollInterval time.Duration
	SettleTimeout   time.Duration
	// Retries of a POST or GET that failed with 5xx or a transport error (default 5); a POST
	// is retried with the same Idempotency-Key, which is what makes it safe.
	Retries int
	Client  *http.Client
	// Chaos, when set, makes some customers misbehave (CustomerCancel, CustomerRetryInFlight)
	// and counts them; CancelWindow bounds how long after its POST's answer a customer may
	// cancel (default 30 s, wall time).
	Chaos        *Injector
	CancelWindow time.Duration
	// Progress, when set, is called after each buyer finishes, one call at a time.
	Progress func(done, total int)
}

// Run is the outcome of a whole sale.
type Run struct {
	Started, Finished time.Time
	Results           []Result
	// Profile is the profile the run was driven with, Concurrency the bound on POSTs in
	// flight it applied (after the profile's), and PeakPostsInFlight the most POSTs that were
	// in flight at once: sent and not yet answered, so what the server saw, not the bound.
	Profile           Profile
	Concurrency       int
	PeakPostsInFlight int
}

// Drive runs every buyer and returns when all have settled, given up, or ctx ended.
func Drive(ctx context.Context, o Options) (*Run, error) {
	if o.BaseURL == "" || o.EventID == "" || o.Token == nil {
		return nil, errors.New("load: BaseURL, EventID and Token are required")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	o.Profile = o.Profile.orUniform()
	o.Concurrency = o.Profile.Concurrency(o.Concurrency)
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.MaxPollInterval < o.PollInterval {
		o.MaxPollInterval = 8 * o.PollInterval
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 2 * time.Minute
	}
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.CancelWindow <= 0 {
		o.CancelWindow = 30 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{
			Timeout:   35 * time.Second,
			Transport: &http.Transport{MaxIdleConns: 4 * o.Concurrency, MaxIdleConnsPerHost: 4 * o.Concurrency},
		}
	}
	if o.PollConcurrency <= 0 {
		o.PollConcurrency = o.Concurrency
	}
	postSlots := newSlots(o.Concurrency)
	pollSlots := newSlots(o.PollConcurrency)
	run := &Run{Started: time.Now(), Results: make([]Result, len(o.Buyers)), Profile: o.Profile, Concurrency: o.Concurrency}
	var (
		done       int
		progressMu sync.Mutex
		wg         sync.WaitGroup
	)
	for i := range o.Buyers {
		delay := o.Buyers[i].Arrival
		if o.ArrivalWindow > 0 && len(o.Buyers) > 1 {
			delay += o.ArrivalWindow * time.Duration(i) / time.Duration(len(o.Buyers)-1)
		}
		arrive := run.Started.Add(delay)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if wait := time.Until(arrive); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
			run.Results[i] = buy(ctx, o, postSlots, pollSlots, o.Buyers[i], arrive)
			progressMu.Lock()
			done++
			if o.Progress != nil {
				o.Progress(done, len(o.Buyers))
			}
			progressMu.Unlock()
		}(i)
	}
	wg.Wait()
	run.Finished = time.Now()
	run.PeakPostsInFlight = postSlots.peak()
	return run, ctx.Err()
}

// slots bounds a kind of request in flight and remembers the most that were at once.
type slots struct {
	ch chan struct{}

	mu             sync.Mutex
	inFlight, most int
}

func newSlots(n int) *slots { return &slots{ch: make(chan struct{}, n)} }

// acquire waits for a free slot; false when ctx ended first.
func (s *slots) acquire(ctx context.Context) bool {
	select {
	case s.ch <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	return true
}

func (s *slots) release() {
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	<-s.ch
}

func (s *slots) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// status is the part of the API's reservation view the buyer reads.
type status struct {
	ReservationID string `json:"reservationId"`
	Status        string `json:"status"`
	PaymentState  string `json:"paymentState"`
	Outcome       string `json:"outcome"`
	Code          string `json:"code"`
}

func buy(ctx context.Context, o Options, postSlots, pollSlots *slots, b Buyer, arrive time.Time) (res Result) {
	res = Result{Buyer: b, Start: arrive, Began: time.Now()}
	token, err := o.Token(b.Customer)
	if err != nil {
		res.Outcome, res.Err = Failed, err.Error()
		return res
	}
	// No amount or currency: the API charges the seats' prices, whatever a buyer might claim.
	body, _ := json.Marshal(map[string]any{"seatIds": b.SeatIDs, "paymentMethod": b.PaymentMethod})
	url := strings.TrimRight(o.BaseURL, "/") + "/events/" + o.EventID + "/reservations"
	// A misbehaving customer's extra requests run beside the buyer's own and report into these,
	// which the buyer's result takes once they are done.
	var (
		misbehaving    sync.WaitGroup
		retryStatus    int
		cancels        int
		cancelStatuses []int
	)
	defer func() {
		misbehaving.Wait()
		res.RetryStatus, res.Cancels, res.CancelStatuses = retryStatus, cancels, cancelStatuses
	}()
	if o.Chaos.Strike(CustomerRetryInFlight) {
		// The copy leaves a moment after the first try, while that one is in flight: what a
		// double click or an impatient client's retry sends.
		res.RetriedInFlight = true
		misbehaving.Add(1)
		go func() {
			defer misbehaving.Done()
			time.Sleep(time.Duration(o.Chaos.Draw() * float64(20*time.Millisecond)))
			code, _, _, _, _ := call(ctx, o, postSlots, http.MethodPost, url, token, b.IdempotencyKey, body)
			retryStatus = code
		}()
	}
	code, st, tries, service, err := call(ctx, o, postSlots, http.MethodPost, url, token, b.IdempotencyKey, body)
	res.Posts, res.PostService = tries.sent, service
	res.Post5xx, res.Post429, res.PostUnanswered = tries.status5xx, tries.status429, tries.unanswered
	res.PostDone = time.Now()
	res.PostLatency = res.PostDone.Sub(res.Start)
	res.sent = res.PostDone.Add(-service)
	res.PostStatus, res.PostCode = code, st.Code
	switch {
	case err != nil:
		res.Outcome, res.Err = Failed, err.Error()
		return res
	case code == http.StatusConflict:
		res.Outcome = AdmissionRejected
		return res
	case code >= 400:
		res.Outcome, res.Err = Invalid, fmt.Sprintf("POST %d %s", code, st.Code)
		return res
	}
	res.ReservationID = st.ReservationID
	if o.Chaos.Strike(CustomerCancel) {
		// At a random moment within the window, one to three DELETEs in a row: a customer who
		// changes their mind and clicks cancel again when nothing seems to happen.
		repeats := 1 + int(o.Chaos.Draw()*3)
		wait := time.Duration(o.Chaos.Draw() * float64(o.CancelWindow))
		cancelURL := strings.TrimRight(o.BaseURL, "/") + "/reservations/" + st.ReservationID
		misbehaving.Add(1)
		go func() {
			defer misbehaving.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			statuses := make([]int, 0, repeats)
			for range repeats {
				code, _, _, _, _ := call(ctx, o, pollSlots, http.MethodDelete, cancelURL, token, "", nil)
				statuses = append(statuses, code)
			}
			cancels, cancelStatuses = repeats, statuses
		}()
	}
	observe(&res, st)
	if settled(st) {
		finish(&res, st)
		return res
	}
	deadline := time.Now().Add(o.SettleTimeout)
	getURL := strings.TrimRight(o.BaseURL, "/") + "/reservations/" + st.ReservationID
	// Seeded from when the client got to the buyer, which differs between buyers, where
	// their arrivals may not (Uniform's all share one).
	jitter := rand.New(rand.NewSource(int64(len(b.Customer)) + res.Began.UnixNano()))
	interval := o.PollInterval
	for time.Now().Before(deadline) {
		wait := interval/2 + time.Duration(jitter.Int63n(int64(interval)))
		interval = min(interval*3/2, o.MaxPollInterval)
		select {
		case <-ctx.Done():
			res.Outcome, res.Err = Unsettled, ctx.Err().Error()
			return res
		case <-time.After(wait):
		}
		code, cur, tries, _, err := call(ctx, o, pollSlots, http.MethodGet, getURL, token, "", nil)
		res.Polls += tries.sent
		if err != nil || code != http.StatusOK {
			if err != nil {
				res.Err = err.Error()
			} else {
				res.Err = fmt.Sprintf("GET %d %s", code, cur.Code)
			}
			continue
		}
		st = cur
		observe(&res, st)
		if settled(st) {
			finish(&res, st)
			return res
		}
	}
	res.FinalStatus, res.PaymentState, res.ReservationOutcome = st.Status, st.PaymentState, st.Outcome
	res.Outcome = Unsettled
	return res
}

// observe records the first time a status reaches HELD (or later) and CONFIRMED.
func observe(res *Result, st status) {
	since := time.Since(res.sent)
	switch st.Status {
	case "HELD", "PAYMENT_PENDING", "CONFIRMED", "RELEASED":
		if st.Status == "RELEASED" && st.PaymentState == "" {
			// Canceled before the Claim step: the admission's view, nothing was ever held.
			break
		}
		if res.HoldLatency == 0 {
			res.HoldLatency = since
		}
	}
	if st.Status == "CONFIRMED" && res.ConfirmLatency == 0 {
		res.ConfirmLatency = since
	}
}

// settled reports a status that will not change any more for this buyer.
func settled(st status) bool {
	switch st.Status {
	case "REJECTED":
		return true
	case "RELEASED":
		// Released seats with money possibly in flight are not final: a late authorization
		// may still reacquire them (or be voided).
		switch st.PaymentState {
		case "", "NOT_STARTED", "FAILED", "CANCELED", "REFUNDED":
			return true
		}
		return false
	case "CONFIRMED":
		return st.PaymentState == "PAID" || st.PaymentState == "REFUNDED"
	}
	return false
}

func finish(res *Result, st status) {
	res.FinalStatus, res.PaymentState, res.ReservationOutcome = st.Status, st.PaymentState, st.Outcome
	res.Err = ""
	switch st.Status {
	case "REJECTED":
		res.Outcome = SagaRejected
	case "RELEASED":
		res.Outcome = Released
	case "CONFIRMED":
		res.Outcome = Confirmed
	}
}

// MarkClaimFailures moves every buyer the saga rejected whose execution did not lose the race
// (claimFailed reports it by reservation id, the execution's name) from SagaRejected to
// ClaimFailed, and returns how many it moved. A failed claim is an incident, not a loser the
// admission gate let through: counted as a lost race it would blame the gate for it.
func (r *Run) MarkClaimFailures(claimFailed func(reservationID string) bool) int {
	moved := 0
	for i := range r.Results {
		if res := &r.Results[i]; res.Outcome == SagaRejected && claimFailed(res.ReservationID) {
			res.Outcome = ClaimFailed
			moved++
		}
	}
	return moved
}

// attempts counts the requests one call sent and how the ones that failed did.
type attempts struct {
	sent, status5xx, status429, unanswered int
}

// call performs one request, retrying 5xx, 429 and transport errors with backoff; it returns
// the requests it sent and how long the answered one took.
func call(ctx context.Context, o Options, slots *slots, method, url, token, idemKey string, body []byte) (int, status, attempts, time.Duration, error) {
	var lastErr error
	var tries attempts
	backoff := 50 * time.Millisecond
	for attempt := 0; attempt <= o.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return 0, status{}, tries, 0, ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			return 0, status{}, tries, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		if !slots.acquire(ctx) {
			return 0, status{}, tries, 0, ctx.Err()
		}
		tries.sent++
		sent := time.Now()
		resp, err := o.Client.Do(req)
		if err != nil {
			slots.release()
			tries.unanswered++
			lastErr = err
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		slots.release()
		if err != nil {
			tries.unanswered++
			lastErr = err
			continue
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			if resp.StatusCode >= 500 {
				tries.status5xx++
			} else {
				tries.status429++
			}
			lastErr = fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(raw)))
			continue
		}
		var st status
		_ = json.Unmarshal(raw, &st)
		return resp.StatusCode, st, tries, time.Since(sent), nil
	}
	return 0, status{}, tries, 0, lastErr
}
