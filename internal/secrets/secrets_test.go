package secrets_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/secrets"
)

var epoch = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var errStore = errors.New("secrets manager: throttled")

// store is a fake Secrets Manager secret: its current value, whether reads fail, and how many
// reads it served.
type store struct {
	mu    sync.Mutex
	value string
	err   error
	reads atomic.Int64
}

func (s *store) fetch(context.Context) (string, error) {
	s.reads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.err
}

func (s *store) set(value string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value, s.err = value, err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newCache(s *store, fake *clock.Fake) *secrets.Cache {
	return secrets.New(s.fetch, secrets.Options{Name: "test key", Now: fake.Now, Logger: quiet()})
}

// step is one move in a cache script: advance the clock, change the store, invalidate, then
// (when get) call Get and check what it answers and how many reads the store has served.
type step struct {
	advance    time.Duration
	rotate     string // the store's new value
	empty      bool   // the store's value becomes empty
	fail       bool   // the store starts failing
	recover    bool   // the store stops failing
	invalidate int    // how many Invalidate calls
	get        bool
	want       string
	wantErr    bool
	reads      int64
}

// TestCacheScripts drives the cache through the life of a secret on a fake clock.
func TestCacheScripts(t *testing.T) {
	ttl, stale, min := secrets.DefaultTTL, secrets.DefaultMaxStale, secrets.DefaultMinRefetch
	tests := []struct {
		name  string
		steps []step
	}{
		{"a value is served from the cache until its TTL, then a rotation is picked up", []step{
			{get: true, want: "v1", reads: 1},
			{rotate: "v2", advance: ttl - time.Second, get: true, want: "v1", reads: 1},
			{advance: time.Second, get: true, want: "v2", reads: 2},
			{advance: ttl - time.Second, get: true, want: "v2", reads: 2},
		}},
		{"invalidate picks up a rotation before the TTL", []step{
			{get: true, want: "v1", reads: 1},
			{rotate: "v2", advance: time.Minute, invalidate: 1, get: true, want: "v2", reads: 2},
		}},
		{"invalidate refreshes at most once per window however often it is called", []step{
			{get: true, want: "v1", reads: 1},
			{invalidate: 1, get: true, want: "v1", reads: 2},
			{invalidate: 100, get: true, want: "v1", reads: 2},
			{rotate: "v2", advance: min - time.Second, invalidate: 100, get: true, want: "v1", reads: 2},
			{advance: time.Second, invalidate: 1, get: true, want: "v2", reads: 3},
		}},
		{"invalidate before the first value does not delay it", []step{
			{invalidate: 3, get: true, want: "v1", reads: 1},
		}},
		{"a failing store is served the previous value, then given up on after the bound", []step{
			{get: true, want: "v1", reads: 1},
			{fail: true, advance: ttl, get: true, want: "v1", reads: 2},
			// Backing off: no read until the window has passed.
			{advance: min - time.Second, get: true, want: "v1", reads: 2},
			{advance: time.Second, get: true, want: "v1", reads: 3},
			{advance: stale - min - time.Second, get: true, want: "v1", reads: 4},
			{advance: time.Second, get: true, wantErr: true, reads: 4},
			{advance: min, get: true, wantErr: true, reads: 5},
			{recover: true, rotate: "v2", advance: min, get: true, want: "v2", reads: 6},
		}},
		{"a refused value is not served while its refetch fails", []step{
			{get: true, want: "v1", reads: 1},
			{fail: true, invalidate: 1, get: true, wantErr: true, reads: 2},
			// Backing off: still no value, and no read.
			{get: true, wantErr: true, reads: 2},
			{advance: min, get: true, wantErr: true, reads: 3},
			{recover: true, rotate: "v2", advance: min, get: true, want: "v2", reads: 4},
		}},
		{"a refusal while the value is served stale ends its serving", []step{
			{get: true, want: "v1", reads: 1},
			{fail: true, advance: ttl, get: true, want: "v1", reads: 2},
			{invalidate: 1, get: true, wantErr: true, reads: 2},
		}},
		{"a refusal inside the rate-limit window marks the value without a read", []step{
			{get: true, want: "v1", reads: 1},
			{invalidate: 1, get: true, want: "v1", reads: 2},
			// Refused again at once: no read now, but the value is not trusted past its TTL.
			{invalidate: 1, get: true, want: "v1", reads: 2},
			{fail: true, advance: ttl, get: true, wantErr: true, reads: 3},
		}},
		{"a value refetched after a refusal is trusted again", []step{
			{get: true, want: "v1", reads: 1},
			{invalidate: 1, get: true, want: "v1", reads: 2},
			{fail: true, advance: ttl, get: true, want: "v1", reads: 3},
		}},
		{"a failing first read backs off instead of hammering the store", []step{
			{fail: true, get: true, wantErr: true, reads: 1},
			{advance: min - time.Second, get: true, wantErr: true, reads: 1},
			{recover: true, advance: time.Second, get: true, want: "v1", reads: 2},
		}},
		{"an empty value counts as a failure, not as the new value", []step{
			{get: true, want: "v1", reads: 1},
			{empty: true, advance: ttl, get: true, want: "v1", reads: 2},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(epoch)
			s := &store{value: "v1"}
			c := newCache(s, fake)
			for i, st := range tc.steps {
				fake.Advance(st.advance)
				switch {
				case st.fail:
					s.set(s.value, errStore)
				case st.recover:
					s.set(s.value, nil)
				}
				if st.rotate != "" || st.empty {
					s.set(st.rotate, s.err)
				}
				for range st.invalidate {
					c.Invalidate()
				}
				if !st.get {
					continue
				}
				got, err := c.Get(context.Background())
				if st.wantErr {
					if !errors.Is(err, errStore) || got != "" {
						t.Fatalf("step %d: Get = %q, %v; want the store's error", i, got, err)
					}
				} else if err != nil || got != st.want {
					t.Fatalf("step %d: Get = %q, %v; want %q", i, got, err, st.want)
				}
				if n := s.reads.Load(); n != st.reads {
					t.Fatalf("step %d: the store served %d reads, want %d", i, n, st.reads)
				}
			}
		})
	}
}

// arrivalCtx reports each caller that starts waiting on it: Get selects on Done only while it
// waits for a fetch.
type arrivalCtx struct {
	context.Context
	arrived chan<- struct{}
}

func (c arrivalCtx) Done() <-chan struct{} {
	c.arrived <- struct{}{}
	return c.Context.Done()
}

// TestConcurrentGetsAfterExpiryShareOneFetch holds the store's read until every caller is
// waiting, so callers that each fetched for themselves would show up as extra reads.
func TestConcurrentGetsAfterExpiryShareOneFetch(t *testing.T) {
	const callers = 50
	fake := clock.NewFake(epoch)
	var reads atomic.Int64
	release := make(chan struct{})
	value := "v1"
	fetch := func(context.Context) (string, error) {
		if reads.Add(1) > 1 {
			<-release
		}
		return value, nil
	}
	c := secrets.New(fetch, secrets.Options{Now: fake.Now, Logger: quiet()})
	if _, err := c.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Safe without a lock: the next fetch runs in a goroutine started after this write.
	value = "v2"
	fake.Advance(secrets.DefaultTTL)

	arrived := make(chan struct{}, callers)
	ctx := arrivalCtx{Context: context.Background(), arrived: arrived}
	got := make(chan string, callers)
	for range callers {
		go func() {
			v, err := c.Get(ctx)
			if err != nil {
				v = err.Error()
			}
			got <- v
		}()
	}
	timeout := time.After(5 * time.Second)
	for range callers {
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("not every caller waited on the fetch; the store served %d reads", reads.Load())
		}
	}
	close(release)
	for range callers {
		if v := <-got; v != "v2" {
			t.Fatalf("a caller got %q, want v2", v)
		}
	}
	if n := reads.Load(); n != 2 {
		t.Fatalf("the store served %d reads for %d concurrent callers after expiry, want 1 (plus the first)", n-1, callers)
	}
}

// TestCanceledWaiterDoesNotAbortTheSharedFetch: a caller that gives up returns its context's
// error, while the fetch it started completes for everyone else.
func TestCanceledWaiterDoesNotAbortTheSharedFetch(t *testing.T) {
	fake := clock.NewFake(epoch)
	release := make(chan struct{})
	var reads atomic.Int64
	fetch := func(ctx context.Context) (string, error) {
		reads.Add(1)
		select {
		case <-release:
			return "v1", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	c := secrets.New(fetch, secrets.Options{Now: fake.Now, Logger: quiet()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a canceled context = %v, want context.Canceled", err)
	}
	close(release)
	if v, err := c.Get(context.Background()); err != nil || v != "v1" {
		t.Fatalf("Get = %q, %v; want v1 from the fetch the canceled caller started", v, err)
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("the store served %d reads, want 1", n)
	}
}

// TestHungFetchIsBounded: a store that never answers fails the fetch after FetchTimeout, so
// the next Get can try again instead of waiting forever on a wedged fetch.
func TestHungFetchIsBounded(t *testing.T) {
	fake := clock.NewFake(epoch)
	var reads atomic.Int64
	fetch := func(ctx context.Context) (string, error) {
		if reads.Add(1) == 1 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "v1", nil
	}
	c := secrets.New(fetch, secrets.Options{Now: fake.Now, Logger: quiet(), FetchTimeout: 10 * time.Millisecond})
	if _, err := c.Get(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v, want the fetch's deadline", err)
	}
	fake.Advance(secrets.DefaultMinRefetch)
	if v, err := c.Get(context.Background()); err != nil || v != "v1" {
		t.Fatalf("Get after the back-off = %q, %v; want v1", v, err)
	}
}

func TestStaticIsFixed(t *testing.T) {
	s := secrets.Static("sk_test_fixed")
	s.Invalidate()
	if v, err := s.Get(context.Background()); err != nil || v != "sk_test_fixed" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}
