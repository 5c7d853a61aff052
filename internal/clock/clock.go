// Package clock abstracts time so that waits, retries, heartbeats and timeouts
// can be driven by tests (Fake) or compressed for demos (Scaled).
package clock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Timer is a pending call scheduled with AfterFunc.
type Timer interface {
	// Stop prevents the call from running; it reports whether it did so.
	Stop() bool
}

// Clock tells the time and schedules calls.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (Real) or in the goroutine that
	// advances time (Fake) once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Sleep waits for d on c, or until ctx is done; it returns ctx's error then.
// No goroutine is held while waiting beyond the caller's own.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// After returns a channel that receives the time once d has elapsed on c.
func After(c Clock, d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.AfterFunc(d, func() { ch <- c.Now() })
	return ch
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Scaled is a clock on which time passes factor times faster than on its base:
// a 15-minute hold expires after 9 real seconds with factor 100.
type Scaled struct {
	base   Clock
	factor float64
	origin time.Time
}

// NewScaled returns a clock that starts at base.Now() and runs factor× faster.
func NewScaled(base Clock, factor float64) *Scaled {
	if factor <= 0 {
		factor = 1
	}
	return &Scaled{base: base, factor: factor, origin: base.Now()}
}

// Now returns the scaled time.
func (s *Scaled) Now() time.Time {
	elapsed := s.base.Now().Sub(s.origin)
	return s.origin.Add(time.Duration(float64(elapsed) * s.factor))
}

// Factor is how many times faster than its base the clock runs.
func (s *Scaled) Factor() float64 { return s.factor }

// AfterFunc schedules f after d of scaled time.
func (s *Scaled) AfterFunc(d time.Duration, f func()) Timer {
	return s.base.AfterFunc(time.Duration(float64(d)/s.factor), f)
}

// Fake is a manual clock for tests. Time moves only through Advance or Set;
// due calls run synchronously, in time order, in the advancing goroutine.
type Fake struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	seq     uint64
	pending timerHeap
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	f := &Fake{now: start}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn at Now()+d. Like time.AfterFunc, a call with d <= 0
// runs at once in its own goroutine.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	if d <= 0 {
		go fn()
		return &fakeTimer{clock: f, index: -1}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t := &fakeTimer{clock: f, when: f.now.Add(d), seq: f.seq, fn: fn, index: -1}
	heap.Push(&f.pending, t)
	f.cond.Broadcast()
	return t
}

// Advance moves time forward by d, running every call that falls due, in order.
// Calls scheduled by those calls run too if they fall due within d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.advanceTo(target)
}

// Set moves time to t (never backwards), running due calls.
func (f *Fake) Set(t time.Time) { f.advanceTo(t) }

func (f *Fake) advanceTo(target time.Time) {
	for {
		f.mu.Lock()
		if len(f.pending) == 0 || f.pending[0].when.After(target) {
			if target.After(f.now) {
				f.now = target
			}
			f.cond.Broadcast()
			f.mu.Unlock()
			return
		}
		t := heap.Pop(&f.pending).(*fakeTimer)
		if t.when.After(f.now) {
			f.now = t.when
		}
		f.cond.Broadcast()
		f.mu.Unlock()
		t.fn()
	}
}

// AdvanceToNext moves time to the earliest pending call and runs it (and any
// other call due at the same instant). It reports false when nothing is pending.
func (f *Fake) AdvanceToNext() bool {
	f.mu.Lock()
	if len(f.pending) == 0 {
		f.mu.Unlock()
		return false
	}
	when := f.pending[0].when
	f.mu.Unlock()
	f.advanceTo(when)
	return true
}

// Waiters returns how many scheduled calls are pending.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// BlockUntil waits until at least n calls are pending.
func (f *Fake) BlockUntil(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.pending) < n {
		f.cond.Wait()
	}
}

// BlockUntilContext waits until at least n calls are pending or ctx is done.
func (f *Fake) BlockUntilContext(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.pending) < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		f.cond.Wait()
	}
	return nil
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	seq   uint64
	fn    func()
	index int
}

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&f.pending, t.index)
	f.cond.Broadcast()
	return true
}

type timerHeap []*fakeTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when.Equal(h[j].when) {
		return h[i].seq < h[j].seq
	}
	return h[i].when.Before(h[j].when)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*fakeTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
