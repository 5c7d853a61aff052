package load

import (
	"sort"
	"time"
)

// Summary condenses a run.
type Summary struct {
	Buyers    int
	Duration  time.Duration
	ByOutcome map[Outcome]int
	// AdmissionCodes counts the API's error codes of buyers turned away at admission.
	AdmissionCodes map[string]int
	// HoldMs and ConfirmMs are the latencies (milliseconds) of buyers who reached HELD and
	// CONFIRMED, sorted ascending.
	HoldMs, ConfirmMs []float64
	// PostMs is every answered POST's latency from the buyer's arrival, PostServiceMs the
	// answered request's own; both sorted.
	PostMs, PostServiceMs []float64
	// Started counts buyers whose POST started an execution (accepted).
	Started int
	// Posts and Polls count HTTP requests: reservation POSTs and status GETs, retries
	// included. They are what the buyers sent, not what ran: a request answered 429 by the
	// gateway, or refused by a full Lambda, invoked nothing.
	Posts, Polls int
	// AdmissionWindow is from the start to the last POST answered: how long the API took to
	// take in the whole burst.
	AdmissionWindow time.Duration
	// Profile, Concurrency and PeakPostsInFlight are the run's (see Run); ArrivalSpread is
	// from the start to the last buyer's arrival, what a burst keeps within BurstWindow, and
	// ClientLag the most the client was late to a buyer's arrival (Result.Began): a large
	// one says the machine could not drive the profile as planned.
	Profile           Profile
	Concurrency       int
	PeakPostsInFlight int
	ArrivalSpread     time.Duration
	ClientLag         time.Duration
	// Post5xx, Post429 and PostUnanswered count the POST attempts answered 5xx, answered 429,
	// and not answered at all (Result's), retried ones included; PostsNeverAnswered the
	// buyers who sent a POST and got no final answer to it however often they retried (every
	// attempt 5xx, 429 or unanswered): together what a buyer is never to see.
	Post5xx, Post429, PostUnanswered int
	PostsNeverAnswered               int
}

// Summarize counts outcomes and collects latencies.
func (r *Run) Summarize() Summary {
	s := Summary{Buyers: len(r.Results), Duration: r.Finished.Sub(r.Started), ByOutcome: map[Outcome]int{}, AdmissionCodes: map[string]int{},
		Profile: r.Profile.orUniform(), Concurrency: r.Concurrency, PeakPostsInFlight: r.PeakPostsInFlight}
	for _, res := range r.Results {
		if d := res.Start.Sub(r.Started); !res.Start.IsZero() && d > s.ArrivalSpread {
			s.ArrivalSpread = d
		}
		if d := res.Began.Sub(res.Start); !res.Began.IsZero() && d > s.ClientLag {
			s.ClientLag = d
		}
		s.Post5xx += res.Post5xx
		s.Post429 += res.Post429
		s.PostUnanswered += res.PostUnanswered
		if res.Posts > 0 && res.PostStatus == 0 {
			s.PostsNeverAnswered++
		}
		s.ByOutcome[res.Outcome]++
		if res.Outcome == AdmissionRejected {
			s.AdmissionCodes[res.PostCode]++
		}
		if res.ReservationID != "" {
			s.Started++
		}
		s.Posts += res.Posts
		s.Polls += res.Polls
		if d := res.PostDone.Sub(r.Started); !res.PostDone.IsZero() && d > s.AdmissionWindow {
			s.AdmissionWindow = d
		}
		if res.PostStatus != 0 {
			s.PostMs = append(s.PostMs, ms(res.PostLatency))
			s.PostServiceMs = append(s.PostServiceMs, ms(res.PostService))
		}
		if res.HoldLatency > 0 {
			s.HoldMs = append(s.HoldMs, ms(res.HoldLatency))
		}
		if res.ConfirmLatency > 0 {
			s.ConfirmMs = append(s.ConfirmMs, ms(res.ConfirmLatency))
		}
	}
	sort.Float64s(s.HoldMs)
	sort.Float64s(s.ConfirmMs)
	sort.Float64s(s.PostMs)
	sort.Float64s(s.PostServiceMs)
	return s
}

// Losers is how many buyers lost the race for their seats: refused at admission, or by the
// saga's claim. Buyers whose claim failed (ClaimFailed) lost no race and are not among them.
func (s Summary) Losers() int {
	return s.ByOutcome[AdmissionRejected] + s.ByOutcome[SagaRejected]
}

// TurnedAwayEarly is the share of race losers refused before StartExecution.
func (s Summary) TurnedAwayEarly() float64 {
	if s.Losers() == 0 {
		return 0
	}
	return float64(s.ByOutcome[AdmissionRejected]) / float64(s.Losers())
}

// Throughput is buyers served per second of wall time, each until its reservation settled.
func (s Summary) Throughput() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Buyers) / s.Duration.Seconds()
}

// AdmissionThroughput is reservation requests answered per second over the admission window.
func (s Summary) AdmissionThroughput() float64 {
	if s.AdmissionWindow <= 0 {
		return 0
	}
	return float64(s.Buyers) / s.AdmissionWindow.Seconds()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
