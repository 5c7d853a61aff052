package load

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"time"
)

// Profile is how a crowd of buyers arrives and which seats it wants. Every profile gives each
// buyer the same customer, idempotency key and payment behaviour for the same seed, so two
// runs that differ only in their profile differ only in what the profile changes.
type Profile string

// The arrival profiles.
const (
	// Uniform is the crowd as the load tool has always made it: every buyer wants seats drawn
	// uniformly at random and every buyer arrives at the start, as many in flight at once as
	// the client's concurrency allows. It is the default (the empty Profile means it too).
	Uniform Profile = "uniform"
	// Hot keeps Uniform's arrivals but skews the seats: most buyers want the best rows. Seats
	// are taken best first (PlanOptions.Seats) and wanted with a Zipf-like weight that falls
	// with the seat's rank, its exponent chosen so that the best HotTopFraction of the seats
	// get PlanOptions.HotShare of the first choices.
	Hot Profile = "hot"
	// Burst keeps Uniform's seats but makes the arrival a true burst: every buyer arrives
	// within BurstWindow of the start, at a seeded random moment, and the client lets at least
	// BurstConcurrency reservation POSTs be in flight at once (Concurrency raises a lower bound
	// rather than refusing it, so that "-profile burst" works with every command's default).
	Burst Profile = "burst"
)

// Profiles lists every profile, the default first.
var Profiles = []Profile{Uniform, Hot, Burst}

const (
	// HotTopFraction is the share of the seats, the best ones, whose share of the first
	// choices HotShare states.
	HotTopFraction = 0.1
	// DefaultHotShare is HotShare when none is given: four in five buyers want a seat in the
	// best tenth of the house.
	DefaultHotShare = 0.8
	// BurstWindow is the time within which every buyer of a burst arrives.
	BurstWindow = time.Second
	// BurstConcurrency is the fewest reservation POSTs a burst lets be in flight at once.
	BurstConcurrency = 512
)

// ParseProfile reads a profile's name; the empty string is Uniform.
func ParseProfile(s string) (Profile, error) {
	if s == "" {
		return Uniform, nil
	}
	for _, p := range Profiles {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = string(p)
	}
	return "", fmt.Errorf("load: unknown profile %q (want %s)", s, strings.Join(names, ", "))
}

// orUniform returns p, or Uniform when p is empty, so that a zero Options or PlanOptions keeps
// the behaviour it had before profiles existed.
func (p Profile) orUniform() Profile {
	if p == "" {
		return Uniform
	}
	return p
}

// Concurrency is the bound on reservation POSTs in flight that the profile drives with, given
// the one asked for: a burst raises a lower bound to BurstConcurrency, since a burst throttled
// to a few dozen requests at a time by the client is no burst for the server; the others keep
// what was asked.
func (p Profile) Concurrency(asked int) int {
	if p.orUniform() == Burst && asked < BurstConcurrency {
		return BurstConcurrency
	}
	return asked
}

// arrivals returns each buyer's arrival as an offset from the start of the sale. Uniform and
// Hot arrive all at once, as the tool always did; a burst's buyers arrive at moments drawn
// from a stream of their own (so the seats and behaviours stay those of Uniform), uniformly
// within the first nine tenths of BurstWindow: the last tenth is left for timers that fire
// late on a busy machine, so that the arrivals Drive measures stay within the window too.
func (p Profile) arrivals(n int, seed int64) []time.Duration {
	out := make([]time.Duration, n)
	if p.orUniform() != Burst {
		return out
	}
	rng := rand.New(rand.NewSource(seed ^ burstStream))
	for i := range out {
		out[i] = time.Duration(rng.Int63n(int64(BurstWindow * 9 / 10)))
	}
	return out
}

// The streams the profiles draw from besides Plan's own, each derived from the seed: apart,
// so that what one profile draws does not shift what the others draw.
const (
	burstStream = 0x6275727374 // "burst"
	hotStream   = 0x686f74     // "hot"
)

// hotSeats picks the seats of the hot profile: each buyer's first choice by the Zipf-like
// weights, each further seat by the same weights among the seats it has not chosen yet.
type hotSeats struct {
	rng    *rand.Rand
	weight []float64
	cum    []float64 // cum[i] is the sum of weight[0..i]
}

// newHotSeats fits the weights 1/(rank+1)^s to n seats so that the best HotTopFraction of
// them (at least one) carry share of the total weight: a power law, as Zipf's is, so each
// seat is a little more wanted than the one behind it, and the exponent s is found by
// bisection, since the share grows with s from the top seats' plain count share (s = 0, which
// is Uniform) towards one.
func newHotSeats(n int, share float64, seed int64) (*hotSeats, error) {
	top := topSeats(n)
	if top >= n {
		return nil, fmt.Errorf("load: the hot profile needs at least two seats, got %d", n)
	}
	floor := float64(top) / float64(n)
	if !(share > floor && share < 1) {
		return nil, fmt.Errorf("load: hot share %g: want more than %g (the best %d of %d seats' share with no skew) and less than 1",
			share, floor, top, n)
	}
	weights := func(s float64) []float64 {
		w := make([]float64, n)
		for k := range w {
			w[k] = math.Pow(float64(k+1), -s)
		}
		return w
	}
	topShare := func(w []float64) float64 {
		var head, all float64
		for k, x := range w {
			all += x
			if k < top {
				head += x
			}
		}
		return head / all
	}
	lo, hi := 0.0, 64.0
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if topShare(weights(mid)) < share {
			lo = mid
		} else {
			hi = mid
		}
	}
	h := &hotSeats{rng: rand.New(rand.NewSource(seed ^ hotStream)), weight: weights((lo + hi) / 2), cum: make([]float64, n)}
	total := 0.0
	for k, x := range h.weight {
		total += x
		h.cum[k] = total
	}
	return h, nil
}

// topSeats is how many seats HotTopFraction of n is, rounded up and at least one.
func topSeats(n int) int {
	return max(1, int(math.Ceil(HotTopFraction*float64(n)-1e-9)))
}

// pick returns k distinct seat indexes, the first choice first.
func (h *hotSeats) pick(k int) []int {
	total := h.cum[len(h.cum)-1]
	first := sort.SearchFloat64s(h.cum, h.rng.Float64()*total)
	first = min(first, len(h.cum)-1)
	chosen := []int{first}
	taken := map[int]bool{first: true}
	for len(chosen) < k {
		// A linear draw over the seats not taken yet: a buyer wants a few seats, so this is
		// cheap, and unlike drawing again until a new seat comes up it ends however steep the
		// skew.
		left := 0.0
		for i, x := range h.weight {
			if !taken[i] {
				left += x
			}
		}
		at := h.rng.Float64() * left
		next := -1
		for i, x := range h.weight {
			if taken[i] {
				continue
			}
			next = i
			if at < x {
				break
			}
			at -= x
		}
		chosen = append(chosen, next)
		taken[next] = true
	}
	return chosen
}
