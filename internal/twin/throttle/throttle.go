// Package throttle is the token bucket the twin's services throttle with, as AWS describes its
// own quotas: a bucket holds at most Size tokens, every request takes one, and tokens come back
// at RefillPerSecond. The bucket refills on a clock.Clock, so that under the stack's scaled or
// fake clock a throttle and the waits of whoever it throttles pass on the same time.
package throttle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
)

// Limit is a bucket's size and refill rate, as AWS's quota tables give them.
type Limit struct {
	// Size is the most tokens the bucket holds: the burst a full bucket admits at once.
	Size int
	// RefillPerSecond is how many tokens come back per second of the bucket's clock.
	RefillPerSecond float64
}

// String gives the limit as the quota tables read: "1300 burst, 300/s".
func (l Limit) String() string {
	return fmt.Sprintf("%d burst, %g/s", l.Size, l.RefillPerSecond)
}

// Bucket is a token bucket; it starts full. Its methods are safe for concurrent use.
type Bucket struct {
	clock clock.Clock
	limit Limit

	mu sync.Mutex
	// tokens may go below zero: a waiter that Wait admits later has taken its token in
	// advance, so waiters are served in the order they came and none wakes only to find its
	// token taken by another.
	tokens float64
	last   time.Time
}

// New returns a full bucket on c (clock.Real{} when nil).
func New(c clock.Clock, l Limit) *Bucket {
	if c == nil {
		c = clock.Real{}
	}
	return &Bucket{clock: c, limit: l, tokens: float64(l.Size), last: c.Now()}
}

// Limit returns the bucket's size and refill rate.
func (b *Bucket) Limit() Limit { return b.limit }

// refill adds the tokens earned since the last look; b.mu is held.
func (b *Bucket) refill() {
	now := b.clock.Now()
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(float64(b.limit.Size), b.tokens+elapsed.Seconds()*b.limit.RefillPerSecond)
		b.last = now
	}
}

// Take takes a token if the bucket has one and reports whether it did: what an API does with a
// request, admitting it or refusing it at once.
func (b *Bucket) Take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Reserve takes a token, going into debt when the bucket is empty, and returns how long the
// caller must wait for it to be due: zero when a token was there, and -1 when the bucket never
// refills and had none. Wait is Reserve and then that wait; a simulation on a fake clock
// schedules the caller at the bucket's pace with it.
func (b *Bucket) Reserve() time.Duration {
	b.mu.Lock()
	b.refill()
	b.tokens--
	deficit := -b.tokens
	b.mu.Unlock()
	switch {
	case deficit <= 0:
		return 0
	case b.limit.RefillPerSecond <= 0:
		return -1
	}
	// A wait rounded down to nothing would spin on a fake clock; one nanosecond is due at once
	// on any other.
	return max(time.Duration(deficit/b.limit.RefillPerSecond*float64(time.Second)), time.Nanosecond)
}

// Wait takes a token, waiting on the bucket's clock until one is due: what a service does with
// work it throttles by delaying rather than refusing. It returns ctx's error, and gives the token
// back, if ctx ends first; a bucket that never refills and is empty waits until then.
func (b *Bucket) Wait(ctx context.Context) error {
	wait := b.Reserve()
	switch {
	case wait == 0:
		return nil
	case wait < 0:
		<-ctx.Done()
		b.giveBack()
		return ctx.Err()
	}
	if err := clock.Sleep(ctx, b.clock, wait); err != nil {
		b.giveBack()
		return err
	}
	return nil
}

func (b *Bucket) giveBack() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.tokens = min(float64(b.limit.Size), b.tokens+1)
}

// Tokens returns how many tokens the bucket holds now (negative while waiters are owed some).
func (b *Bucket) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	return b.tokens
}
