package asl

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// An execution's goroutine starts with a small stack and grows it, copying it each time,
// as the run descends into the interpreter and the task's function: a cost paid again by
// every new goroutine. goRun hands work to a goroutine that finished earlier work and kept
// its grown stack, and starts a new one only when none is idle. Idle goroutines are few
// (maxIdleRunners) and exit once idle for runnerIdleNanos (at most twice that: a sweep every
// runnerIdleNanos ends those it found idle the time before), so a parked execution still
// holds none.
//
// An idle runner waits on a channel of its own, not on a shared one with a timer beside it:
// a select over a timer's channel adds the timer to the runtime's heap and removes it again
// on every wait, a cost paid per execution. The most recently idle runner is handed work
// first, so that the others age out under a light load.

// job is work for a runner; an interface rather than a func value, so that handing over an
// execution allocates no closure.
type job interface{ run() }

// idleRunner is a runner waiting for work.
type idleRunner struct {
	jobs   chan job // buffered 1: the job handed over, or nil to exit
	sweeps int      // sweeps that found it idle; guarded by runners.mu
}

// runners are the idle runners, the most recently idle last.
var runners struct {
	mu    sync.Mutex
	idle  []*idleRunner
	sweep *time.Timer // armed while a runner is idle
	armed bool
}

// maxIdleRunners bounds the goroutines kept waiting for work.
var maxIdleRunners = int32(2 * runtime.GOMAXPROCS(0))

// runnerIdleNanos is how long a runner waits for work before it exits (at most twice as
// long); a variable so that a test can tell the bound on idle runners from their expiry.
var runnerIdleNanos atomic.Int64

func init() { runnerIdleNanos.Store(int64(time.Second)) }

// goRun runs j on its own goroutine, as a go statement does.
func goRun(j job) {
	runners.mu.Lock()
	if n := len(runners.idle); n > 0 {
		r := runners.idle[n-1]
		runners.idle[n-1] = nil
		runners.idle = runners.idle[:n-1]
		runners.mu.Unlock()
		r.jobs <- j // taken off the idle list, r has no other sender: this never blocks
		return
	}
	runners.mu.Unlock()
	go runner(&idleRunner{jobs: make(chan job, 1)}, j)
}

func runner(r *idleRunner, j job) {
	for j != nil {
		j.run()
		j = nil
		runners.mu.Lock()
		if int32(len(runners.idle)) >= maxIdleRunners {
			runners.mu.Unlock()
			return
		}
		r.sweeps = 0
		runners.idle = append(runners.idle, r)
		armSweep()
		runners.mu.Unlock()
		j = <-r.jobs
	}
}

// armSweep schedules the next sweep unless one is due; the caller holds runners.mu.
func armSweep() {
	if runners.armed {
		return
	}
	runners.armed = true
	d := time.Duration(runnerIdleNanos.Load())
	if runners.sweep == nil {
		runners.sweep = time.AfterFunc(d, sweepIdleRunners)
	} else {
		runners.sweep.Reset(d)
	}
}

// sweepIdleRunners ends the runners that the previous sweep found idle already.
func sweepIdleRunners() {
	runners.mu.Lock()
	defer runners.mu.Unlock()
	runners.armed = false
	keep := runners.idle[:0]
	for _, r := range runners.idle {
		if r.sweeps++; r.sweeps >= 2 {
			r.jobs <- nil // idle, so its channel is empty: this never blocks
			continue
		}
		keep = append(keep, r)
	}
	clear(runners.idle[len(keep):])
	runners.idle = keep
	if len(keep) > 0 {
		armSweep()
	}
}

// funcJob runs a function as a job.
type funcJob func()

func (f funcJob) run() { f() }
