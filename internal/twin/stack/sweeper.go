package stack

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seatsaga/seatsaga/internal/clock"
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
				if err := st.Sweep(); err != nil && st.ctx.Err() == nil {
					st.log.Warn("stack: sweep failed", "error", err.Error())
				}
			}()
		}
		l.timer = st.Clock.AfterFunc(st.cfg.SweepInterval, tick)
	}
	l.mu.Lock()
	l.timer = st.Clock.AfterFunc(st.cfg.SweepInterval, tick)
	l.mu.Unlock()
}

// Sweep invokes the sweeper function once, with the scheduled event EventBridge would send,
// and waits for it.
func (st *Stack) Sweep() error {
	payload, err := json.Marshal(events.EventBridgeEvent{
		Version: "0", ID: randomHex(16), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: AccountID, Time: st.Clock.Now().UTC(), Region: Region,
		Resources: []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/seatsaga-sweeper", Region, AccountID)},
		Detail:    json.RawMessage(`{}`),
	})
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
