// Package secrets caches a secret value (a Stripe key, a webhook signing secret) read from a
// slow, rate-limited store such as Secrets Manager, with a bound on how long it is trusted:
//
//   - a value is served for TTL, so a rotation is picked up within minutes;
//   - when a refetch fails, the previous value is served for at most MaxStale more, so a
//     Secrets Manager blip never takes payments down, and fetches are retried at most once per
//     MinRefetch, so an outage does not turn every request into a call;
//   - Invalidate says the value was refused (Stripe refused the key, a signature did not
//     verify): it makes the next Get refetch at once, at most once per MinRefetch, so requests
//     with bad credentials cannot drive the call rate, and it marks the value, which is then
//     not served stale: while the refetch fails, Get returns an error, since a value known to
//     be refused is worse than none (callers retry an error; they act on a value).
//
// Concurrent callers that need a refetch share one fetch.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults for Options.
const (
	// DefaultTTL is how long a value is served before it is refetched: the longest a
	// rotation can go unnoticed when nothing refuses the old value.
	DefaultTTL = 5 * time.Minute
	// DefaultMaxStale is how long past its TTL a value is still served while refetches fail.
	DefaultMaxStale = time.Hour
	// DefaultMinRefetch is the least time between two forced refetches, and between a failed
	// fetch and the next attempt.
	DefaultMinRefetch = 30 * time.Second
	// DefaultFetchTimeout bounds one fetch, which every waiting caller shares.
	DefaultFetchTimeout = 10 * time.Second
)

// Source yields a secret's current value. Invalidate says the value just handed out was
// refused, so that a later Get may return a newer one, or an error rather than the refused
// value; it never blocks.
type Source interface {
	Get(ctx context.Context) (string, error)
	Invalidate()
}

// Static is a Source of a fixed value, for tests and the local stack. Invalidate does nothing.
type Static string

// Get returns the value.
func (s Static) Get(context.Context) (string, error) { return string(s), nil }

// Invalidate does nothing: a fixed value has nothing newer.
func (Static) Invalidate() {}

// Fetch reads the secret's current value from its store.
type Fetch func(ctx context.Context) (string, error)

// ErrEmpty is what a fetch that returns an empty value counts as: an empty credential is a
// misconfiguration, and the previous value is better served than nothing.
var ErrEmpty = errors.New("the secret is empty")

// Options tune a Cache. Zero fields take the defaults above.
type Options struct {
	// Name names the secret in errors and logs ("Stripe key"); never its value.
	Name         string
	TTL          time.Duration
	MaxStale     time.Duration
	MinRefetch   time.Duration
	FetchTimeout time.Duration
	// Now is the cache's clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line for each failed fetch; nil means slog.Default().
	Logger *slog.Logger
}

// Cache is a Source that reads its value through a Fetch; see the package comment.
type Cache struct {
	fetch Fetch
	opts  Options

	mu        sync.Mutex
	value     string
	has       bool
	fetchedAt time.Time // of the value
	refreshAt time.Time // when the value wants a refetch: its TTL, or an Invalidate
	retryAt   time.Time // no fetch before this, after a failed one
	forcedAt  time.Time // of the last Invalidate that took effect
	refused   bool      // Invalidate was called since the value was fetched
	lastErr   error     // of the last fetch, if it failed
	inflight  *call
}

var _ Source = (*Cache)(nil)

// call is one fetch that every caller waiting on it shares.
type call struct {
	done  chan struct{}
	value string
	err   error
}

// New returns a cache that reads through fetch. Nothing is fetched until the first Get.
func New(fetch Fetch, opts Options) *Cache {
	if opts.Name == "" {
		opts.Name = "secret"
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxStale <= 0 {
		opts.MaxStale = DefaultMaxStale
	}
	if opts.MinRefetch <= 0 {
		opts.MinRefetch = DefaultMinRefetch
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultFetchTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Logger = opts.Logger.With("component", "secrets", "secret", opts.Name)
	return &Cache{fetch: fetch, opts: opts}
}

// Get returns the cached value while it is fresh; otherwise it refetches, sharing the fetch
// with every concurrent caller, and waits for it. A failed refetch returns the previous value
// while that is at most TTL+MaxStale old and nobody refused it, and the fetch's error
// otherwise. Once a fetch has failed, the next is not tried before MinRefetch has passed;
// until then Get answers from what it has.
func (c *Cache) Get(ctx context.Context) (string, error) {
	c.mu.Lock()
	now := c.opts.Now()
	wantsRefresh := !c.has || !now.Before(c.refreshAt)
	cl := c.inflight
	switch {
	case !wantsRefresh:
		v := c.value
		c.mu.Unlock()
		return v, nil
	case cl == nil && now.Before(c.retryAt):
		// Backing off after a failure: answer without calling the store again.
		v, err := c.servable(now)
		c.mu.Unlock()
		return v, err
	case cl == nil:
		cl = c.start(ctx)
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.value, cl.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Invalidate marks the value as refused, so that it is no longer served once a refetch
// fails, and makes the next Get refetch, unless an earlier Invalidate did so less than
// MinRefetch ago: a flood of refused credentials (forged webhook signatures) costs at most
// one fetch per MinRefetch. It never waits for a fetch, and does not cut short the back-off
// after a failed one. The mark lasts until a fetch succeeds: a value fetched since is one
// nobody has refused yet.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = c.has
	now := c.opts.Now()
	if !c.forcedAt.IsZero() && now.Sub(c.forcedAt) < c.opts.MinRefetch {
		return
	}
	c.forcedAt = now
	if c.refreshAt.After(now) {
		c.refreshAt = now
	}
}

// start begins a fetch; c.mu is held. The fetch runs detached from the caller's cancellation,
// since other callers share it, but bounded by FetchTimeout, so a hung store cannot wedge the
// cache.
func (c *Cache) start(ctx context.Context) *call {
	cl := &call{done: make(chan struct{})}
	c.inflight = cl
	go func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.FetchTimeout)
		v, err := c.fetch(fctx)
		cancel()
		if err == nil && v == "" {
			err = ErrEmpty
		}
		// The invocation that started the fetch is the one its log lines belong to.
		c.finish(fctx, cl, v, err)
	}()
	return cl
}

// finish records a fetch's outcome and hands it to its waiters; it logs a failure after
// releasing the lock, so that a slow log sink does not hold up callers served from the cache.
func (c *Cache) finish(ctx context.Context, cl *call, v string, err error) {
	c.mu.Lock()
	c.inflight = nil
	now := c.opts.Now()
	if err == nil {
		c.value, c.has, c.fetchedAt, c.refused, c.lastErr = v, true, now, false, nil
		c.refreshAt, c.retryAt = now.Add(c.opts.TTL), time.Time{}
		cl.value = v
		c.mu.Unlock()
		close(cl.done)
		return
	}
	c.lastErr, c.retryAt = err, now.Add(c.opts.MinRefetch)
	cl.value, cl.err = c.servable(now)
	age, until := now.Sub(c.fetchedAt), c.staleUntil()
	c.mu.Unlock()
	close(cl.done)
	if cl.err == nil {
		c.opts.Logger.WarnContext(ctx, "secret refetch failed; serving the previous value",
			"error", err.Error(), "age", age.String(), "servedUntil", until)
		return
	}
	c.opts.Logger.ErrorContext(ctx, "secret refetch failed; no value to serve", "error", err.Error())
}

// servable returns the value if nobody refused it and it is still within its stale bound,
// else the last fetch's error; c.mu is held, and Get calls it only once a fetch has failed.
func (c *Cache) servable(now time.Time) (string, error) {
	if c.has && !c.refused && now.Before(c.staleUntil()) {
		return c.value, nil
	}
	if c.refused {
		return "", fmt.Errorf("secrets: %s: refetch failing and the value read at %s was refused: %w",
			c.opts.Name, c.fetchedAt.UTC().Format(time.RFC3339), c.lastErr)
	}
	if c.has {
		return "", fmt.Errorf("secrets: %s: refetch failing and the value read at %s is past its bound (%s): %w",
			c.opts.Name, c.fetchedAt.UTC().Format(time.RFC3339), c.opts.TTL+c.opts.MaxStale, c.lastErr)
	}
	return "", fmt.Errorf("secrets: %s: %w", c.opts.Name, c.lastErr)
}

// staleUntil is when the value stops being served, however refetches fare.
func (c *Cache) staleUntil() time.Time { return c.fetchedAt.Add(c.opts.TTL + c.opts.MaxStale) }
