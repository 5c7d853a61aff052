package stack

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	lambdaruntime "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// sweepLoop invokes the sweeper function through the Lambda host every interval of the stack's
// clock, as an EventBridge schedule invokes it on AWS. A sweep still running when the next tick
// comes is not overlapped.
type sweepLoop struct {
	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
	running atomic.Bool
}

func (l *sweepLoop) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.timer != nil {
		l.timer.Stop()
	}
}

// startSweeper schedules the sweeper on the stack's clock; a negative interval leaves it to
// Sweep.
func (st *Stack) startSweeper() {
	if st.cfg.SweepInterval < 0 {
		return
	}
	l := &sweepLoop{}
	st.sweeper = l
	var tick func()
	tick = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.stopped {
			return
		}
		// The sweep runs apart from the clock's goroutine: a fake clock runs due calls in
		// the goroutine that advances it, which must not wait on an HTTP round trip.
		if l.running.CompareAndSwap(false, true) {
			st.wg.Add(1)
			go func() {
				defer st.wg.Done()
				defer l.running.Store(false)
				st.armSweeperCrash()
				if err := st.Sweep(); err != nil && st.ctx.Err() == nil {
					st.log.Warn("stack: sweep failed", "error", err.Error())
				}
			}()
			if b := st.cfg.chaos; b != nil && b.injector.On(load.SweeperConcurrent) {
				st.wg.Add(1)
				go func() {
					defer st.wg.Done()
					st.secondSweep()
				}()
			}
		}
		l.timer = st.Clock.AfterFunc(st.cfg.SweepInterval, tick)
	}
	l.mu.Lock()
	l.timer = st.Clock.AfterFunc(st.cfg.SweepInterval, tick)
	l.mu.Unlock()
}

// scheduledEvent is the event EventBridge's schedule sends the sweeper.
func (st *Stack) scheduledEvent() ([]byte, error) {
	return json.Marshal(events.EventBridgeEvent{
		Version: "0", ID: randomHex(16), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: AccountID, Time: st.Clock.Now().UTC(), Region: Region,
		Resources: []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/seatsaga-sweeper", Region, AccountID)},
		Detail:    json.RawMessage(`{}`),
	})
}

// boundChaos is the chaos's injector while a sale of st runs it, else nil (which injects
// nothing).
func (st *Stack) boundChaos() *load.Injector {
	if b := st.cfg.chaos; b != nil && b.stack.Load() == st {
		return b.injector
	}
	return nil
}

// armSweeperCrash draws, while a chaos sale runs, whether the sweep about to start is killed
// at a random moment of its batch (load.SweeperCrash): 2 to 200 ms of wall time after its
// handler starts, which falls within a batch of a few holds; a sweep done sooner is killed
// after its work, before it returns, which changes nothing and is not counted.
func (st *Stack) armSweeperCrash() {
	in := st.boundChaos()
	if !in.Armed(load.SweeperCrash) {
		return
	}
	f := lambdahost.Crash()
	f.KillAfter = time.Duration((0.002 + 0.198*in.Draw()) * float64(time.Second))
	f.OnKilled = func() { in.Count(load.SweeperCrash) }
	if err := st.Lambdas.FailAfter(FnSweeper, 1, f); err != nil {
		st.log.Warn("stack: arm a sweeper crash", "error", err.Error())
	}
}

// secondSweep draws, while a chaos sale runs, whether a second sweep runs at once with the
// scheduled one that just started (load.SweeperConcurrent), and runs it. Only a second sweep
// that found reservations to settle is counted: two sweeps of an empty backlog race on nothing.
func (st *Stack) secondSweep() {
	in := st.boundChaos()
	if !in.Armed(load.SweeperConcurrent) {
		return
	}
	res, err := st.sweepAlongside()
	if err != nil {
		if st.ctx.Err() == nil {
			st.log.Warn("stack: the second sweep failed", "error", err.Error())
		}
		return
	}
	if res.HoldsExamined+res.PaymentsExamined > 0 {
		in.Count(load.SweeperConcurrent)
	}
}

// sweepAlongside runs the sweeper's handler once in this process, outside the Lambda host and
// the reserved concurrency of 1 that keeps scheduled sweeps apart: a second sweeper at once
// with the scheduled one, as an operator's manual run with the reservation lifted, or a
// second deployment over the same tables, would be (load.SweeperConcurrent).
func (st *Stack) sweepAlongside() (sweeper.Result, error) {
	var res sweeper.Result
	payload, err := st.scheduledEvent()
	if err != nil {
		return res, err
	}
	out, err := lambdaruntime.NewHandler(st.handlers[FnSweeper]).Invoke(st.ctx, payload)
	if err != nil {
		return res, fmt.Errorf("sweeper alongside: %w", err)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("sweeper alongside: read its result: %w", err)
	}
	return res, nil
}

// Sweep invokes the sweeper function once, with the scheduled event EventBridge would send,
// and waits for it.
func (st *Stack) Sweep() error {
	payload, err := st.scheduledEvent()
	if err != nil {
		return err
	}
	out, err := st.Lambda.Invoke(st.ctx, &lambda.InvokeInput{FunctionName: aws.String(FnSweeper), Payload: payload})
	if err != nil {
		return fmt.Errorf("invoke sweeper: %w", err)
	}
	if out.FunctionError != nil {
		return fmt.Errorf("sweeper: %s: %s", aws.ToString(out.FunctionError), out.Payload)
	}
	return nil
}
