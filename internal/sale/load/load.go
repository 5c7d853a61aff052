// Package load drives a flash sale through seatsaga's HTTP API as buyers would: each buyer
// POSTs a reservation with its own Idempotency-Key and bearer token, then polls GET until the
// reservation settles, with bounded concurrency. It records what each buyer saw and when:
// turned away at admission (4xx before any execution started), rejected by the saga, confirmed,
// released, and the wall-clock latency to the first HELD and the first CONFIRMED status.
//
// Latencies are measured by polling, so they carry up to one poll interval of error; the
// interval is an option.
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
}

// PlanOptions shape a crowd of buyers.
type PlanOptions struct {
	Buyers        int
	Seats         []string
	SeatsPerBuyer int
	Mix           Mix
	Seed          int64
}

// Plan builds buyers who each want SeatsPerBuyer distinct seats chosen at random (so with more
// buyers than seats most seats are contested) and pay with a behaviour drawn from Mix.
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
		perm := rng.Perm(len(o.Seats))[:o.SeatsPerBuyer]
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
	Start              time.Time
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
	// PostDone is when the POST was answered.
	PostDone time.Time
	Err      string

	sent time.Time
}

// Options configure a run.
type Options struct {
	BaseURL string
	EventID string
	Buyers  []Buyer
	// Concurrency bounds reservation POSTs in flight (default 32), PollConcurrency status
	// GETs (default Concurrency), apart, so that a buyer's status read does not queue behind
	// the burst of POSTs. Every buyer arrives on its own (see ArrivalWindow); a buyer waiting
	// between status reads holds no slot.
	Concurrency     int
	PollConcurrency int
	// ArrivalWindow spreads the buyers' arrivals evenly over this much time; zero means all
	// arrive at once, the flash-sale burst.
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
	// Progress, when set, is called after each buyer finishes, one call at a time.
	Progress func(done, total int)
}

// Run is the outcome of a whole sale.
type Run struct {
	Started, Finished time.Time
	Results           []Result
}

// Drive runs every buyer and returns when all have settled, given up, or ctx ended.
func Drive(ctx context.Context, o Options) (*Run, error) {
	if o.BaseURL == "" || o.EventID == "" || o.Token == nil {
		return nil, errors.New("load: BaseURL, EventID and Token are required")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
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
	if o.Client == nil {
		o.Client = &http.Client{
			Timeout:   35 * time.Second,
			Transport: &http.Transport{MaxIdleConns: 4 * o.Concurrency, MaxIdleConnsPerHost: 4 * o.Concurrency},
		}
	}
	if o.PollConcurrency <= 0 {
		o.PollConcurrency = o.Concurrency
	}
	postSlots := make(chan struct{}, o.Concurrency)
	pollSlots := make(chan struct{}, o.PollConcurrency)
	run := &Run{Started: time.Now(), Results: make([]Result, len(o.Buyers))}
	var (
		done       int
		progressMu sync.Mutex
		wg         sync.WaitGroup
	)
	for i := range o.Buyers {
		var delay time.Duration
		if o.ArrivalWindow > 0 && len(o.Buyers) > 1 {
			delay = o.ArrivalWindow * time.Duration(i) / time.Duration(len(o.Buyers)-1)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if delay > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(delay):
				}
			}
			run.Results[i] = buy(ctx, o, postSlots, pollSlots, o.Buyers[i])
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
	return run, ctx.Err()
}

// status is the part of the API's reservation view the buyer reads.
type status struct {
	ReservationID string `json:"reservationId"`
	Status        string `json:"status"`
	PaymentState  string `json:"paymentState"`
	Outcome       string `json:"outcome"`
	Code          string `json:"code"`
}

func buy(ctx context.Context, o Options, postSlots, pollSlots chan struct{}, b Buyer) Result {
	res := Result{Buyer: b, Start: time.Now()}
	token, err := o.Token(b.Customer)
	if err != nil {
		res.Outcome, res.Err = Failed, err.Error()
		return res
	}
	// No amount or currency: the API charges the seats' prices, whatever a buyer might claim.
	body, _ := json.Marshal(map[string]any{"seatIds": b.SeatIDs, "paymentMethod": b.PaymentMethod})
	url := strings.TrimRight(o.BaseURL, "/") + "/events/" + o.EventID + "/reservations"
	code, st, tries, service, err := call(ctx, o, postSlots, http.MethodPost, url, token, b.IdempotencyKey, body)
	res.Posts, res.PostService = tries, service
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
	observe(&res, st)
	if settled(st) {
		finish(&res, st)
		return res
	}
	deadline := time.Now().Add(o.SettleTimeout)
	getURL := strings.TrimRight(o.BaseURL, "/") + "/reservations/" + st.ReservationID
	jitter := rand.New(rand.NewSource(int64(len(b.Customer)) + res.Start.UnixNano()))
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
		res.Polls += tries
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

// call performs one request, retrying 5xx, 429 and transport errors with backoff; it returns
// how many requests it sent and how long the answered one took.
func call(ctx context.Context, o Options, slots chan struct{}, method, url, token, idemKey string, body []byte) (int, status, int, time.Duration, error) {
	var lastErr error
	backoff := 50 * time.Millisecond
	attempt := 0
	for ; attempt <= o.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return 0, status{}, attempt, 0, ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			return 0, status{}, attempt, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return 0, status{}, attempt, 0, ctx.Err()
		}
		sent := time.Now()
		resp, err := o.Client.Do(req)
		if err != nil {
			<-slots
			lastErr = err
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		<-slots
		if err != nil {
			lastErr = err
			continue
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			lastErr = fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(raw)))
			continue
		}
		var st status
		_ = json.Unmarshal(raw, &st)
		return resp.StatusCode, st, attempt + 1, time.Since(sent), nil
	}
	return 0, status{}, attempt, 0, lastErr
}
