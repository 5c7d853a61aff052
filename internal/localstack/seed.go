package localstack

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/invariants"
	"github.com/seatsaga/seatsaga/internal/inventory"
)

// SeatIDs names n seats S001…Sn (zero-padded to n's width, so they sort in order).
func SeatIDs(n int) []string {
	width := len(strconv.Itoa(n))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%0*d", width, i+1)
	}
	return ids
}

// SeedEvent creates an event with n AVAILABLE seats (SeatIDs(n)) through the inventory store,
// as an operator's catalog import would, and returns the seat ids. Seeding an event again
// leaves existing seats alone.
func (st *Stack) SeedEvent(ctx context.Context, eventID string, n int) ([]string, error) {
	store, err := inventory.New(inventory.Config{Client: st.DynamoDB, Names: st.Names, Now: st.Clock.Now, Metrics: st.Metrics, Logger: st.log})
	if err != nil {
		return nil, fmt.Errorf("localstack: seed: %w", err)
	}
	ids := SeatIDs(n)
	// Seats are independent items; a few writers make a thousand seats quick.
	const writers = 8
	chunk := (len(ids) + writers - 1) / writers
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(ids))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(w int, part []string) {
			defer wg.Done()
			errs[w] = store.CreateSeats(ctx, eventID, part)
		}(w, ids[lo:hi])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("localstack: seed event %s: %w", eventID, err)
		}
	}
	return ids, nil
}

// SeatSample counts seats per state at one moment.
type SeatSample struct {
	// At is wall-clock time since the sampler started.
	At     time.Duration
	Counts map[string]int
}

// SeatSampler scans the Seats table on an interval (wall clock) and records how many seats are
// in each state, for the report's timeline.
type SeatSampler struct {
	mu      sync.Mutex
	samples []SeatSample
	stop    context.CancelFunc
	done    chan struct{}
}

// SampleSeats starts a sampler; Stop ends it and returns the samples.
func (st *Stack) SampleSeats(interval time.Duration) *SeatSampler {
	ctx, cancel := context.WithCancel(st.ctx)
	s := &SeatSampler{stop: cancel, done: make(chan struct{})}
	store := invariants.DynamoDB{Client: st.DynamoDB, Names: st.Names}
	start := time.Now()
	go func() {
		defer close(s.done)
		for {
			seats, err := store.Seats(ctx)
			if err == nil {
				counts := map[string]int{}
				for _, seat := range seats {
					counts[seat.State]++
				}
				s.mu.Lock()
				s.samples = append(s.samples, SeatSample{At: time.Since(start), Counts: counts})
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return s
}

// Stop ends sampling and returns every sample.
func (s *SeatSampler) Stop() []SeatSample {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SeatSample(nil), s.samples...)
}
