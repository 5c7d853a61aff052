package asl

import (
	"context"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestGoRunStartsEveryJobAtOnce: jobs handed to goRun run concurrently, as go statements
// do. Each job waits until all have started, so a goRun that queued work behind a busy
// runner would never let them finish.
func TestGoRunStartsEveryJobAtOnce(t *testing.T) {
	const n = 64
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	done := make(chan int, n)
	for i := range n {
		goRun(funcJob(func() {
			started.Done()
			<-all
			done <- i
		}))
	}
	waited := make(chan struct{})
	go func() { started.Wait(); close(waited) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-waited:
	case <-ctx.Done():
		t.Fatal("not every job started while the others were running")
	}
	close(all)
	seen := map[int]bool{}
	for range n {
		seen[<-done] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct jobs ran, want %d", len(seen), n)
	}
}

// TestIdleRunnersAreFewAfterABurst: after a burst of concurrent jobs, at most
// maxIdleRunners goroutines stay waiting for work; the others exit at once, not when their
// idle time is up (set long here, so that only the bound can pass the test).
func TestIdleRunnersAreFewAfterABurst(t *testing.T) {
	idle := runnerIdleNanos.Swap(int64(time.Hour))
	defer runnerIdleNanos.Store(idle)
	before := runtime.NumGoroutine()
	const n = 100
	var wg sync.WaitGroup
	wg.Add(n)
	release := make(chan struct{})
	for range n {
		goRun(funcJob(func() { <-release; wg.Done() }))
	}
	// The control: the burst did need goroutines of its own (idle runners left by earlier
	// tests, counted in before, take at most maxIdleRunners of the jobs).
	if started := runtime.NumGoroutine() - before; started < n-int(maxIdleRunners) {
		t.Fatalf("%d new goroutines for %d blocked jobs", started, n)
	}
	close(release)
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine()-before > int(maxIdleRunners) && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if extra := runtime.NumGoroutine() - before; extra > int(maxIdleRunners) {
		t.Fatalf("%d goroutines remain after the burst, want at most %d", extra, maxIdleRunners)
	}
}

// TestIdleRunnersExitOnceIdleForTheirIdleTime: the runners a burst leaves idle exit within
// twice runnerIdleNanos of their last job (a sweep already due when the burst ended may keep
// them up to a second more), so that a quiet engine holds no goroutine.
func TestIdleRunnersExitOnceIdleForTheirIdleTime(t *testing.T) {
	idle := runnerIdleNanos.Swap(int64(20 * time.Millisecond))
	defer runnerIdleNanos.Store(idle)
	idleRunners := func() int {
		runners.mu.Lock()
		defer runners.mu.Unlock()
		return len(runners.idle)
	}
	var wg sync.WaitGroup
	wg.Add(int(maxIdleRunners))
	release := make(chan struct{})
	for range maxIdleRunners {
		goRun(funcJob(func() { <-release; wg.Done() }))
	}
	close(release)
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for idleRunners() < int(maxIdleRunners) && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	// The control: the burst left its runners idle.
	k := idleRunners()
	if k == 0 {
		t.Fatal("a burst left no runner idle")
	}
	goroutines := runtime.NumGoroutine()
	for (idleRunners() > 0 || runtime.NumGoroutine() > goroutines-k) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := idleRunners(); n > 0 {
		t.Fatalf("%d of %d runners still idle after 5s", n, k)
	}
	if n := runtime.NumGoroutine(); n > goroutines-k {
		t.Fatalf("%d goroutines, want at most %d once %d idle runners exited", n, goroutines-k, k)
	}
}

func TestIsoTimeWritesUTCMillisecondsAsFormatDoes(t *testing.T) {
	zone := time.FixedZone("x", -7*3600)
	for _, tm := range []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 1_000_000, zone),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
	} {
		if got, want := isoTime(tm), tm.UTC().Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Errorf("isoTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestNewUUIDIsARandomVersion4UUID(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		u := newUUID()
		if !form.MatchString(u) {
			t.Fatalf("%q is not a version 4 UUID", u)
		}
		seen[u] = true
	}
	if len(seen) != 100 {
		t.Fatalf("%d distinct UUIDs in 100", len(seen))
	}
}
