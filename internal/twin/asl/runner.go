package asl

import (
	"runtime"
	"sync/atomic"
	"time"
)

// An execution's goroutine starts with a small stack and grows it, copying it each time,
// as the run descends into the interpreter and the task's function: a cost paid again by
// every new goroutine. goRun hands work to a goroutine that finished earlier work and kept
// its grown stack, and starts a new one only when none is idle. Idle goroutines are few
// (maxIdleRunners) and exit after runnerIdleNanos, so a parked execution still holds none.

// job is work for a runner; an interface rather than a func value, so that handing over an
// execution allocates no closure.
type job interface{ run() }

// idleRunners is unbuffered: a hand-off succeeds only when a runner is waiting for it.
var idleRunners = make(chan job)

// idleRunnerCount counts the runners waiting on idleRunners.
var idleRunnerCount atomic.Int32

// maxIdleRunners bounds the goroutines kept waiting for work.
var maxIdleRunners = int32(2 * runtime.GOMAXPROCS(0))

// runnerIdleNanos is how long a runner waits for work before it exits; a variable so that
// a test can tell the bound on idle runners from their expiry.
var runnerIdleNanos atomic.Int64

func init() { runnerIdleNanos.Store(int64(time.Second)) }

// goRun runs j on its own goroutine, as a go statement does.
func goRun(j job) {
	select {
	case idleRunners <- j:
	default:
		go runner(j)
	}
}

func runner(j job) {
	var idle *time.Timer
	for {
		j.run()
		j = nil
		if idleRunnerCount.Add(1) > maxIdleRunners {
			idleRunnerCount.Add(-1)
			return
		}
		wait := time.Duration(runnerIdleNanos.Load())
		if idle == nil {
			idle = time.NewTimer(wait)
		} else {
			idle.Reset(wait)
		}
		select {
		case j = <-idleRunners:
			idleRunnerCount.Add(-1)
		case <-idle.C:
			idleRunnerCount.Add(-1)
			return
		}
	}
}

// funcJob runs a function as a job.
type funcJob func()

func (f funcJob) run() { f() }
