package stack

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/sweeper"
)

// sweeper-crash is evidence of sweeps killed while they ran: a kill whose moment comes after
// the sweep finished is the crash of a scheduled event that had done its work, which changes
// nothing, and is not counted. A kill that finds the sweep running ends its context and is.
func TestASweeperCrashCountsOnlyAKillThatFoundTheSweepRunning(t *testing.T) {
	in := load.NewInjector(load.Chaos{load.SweeperCrash: {Rate: 1}}, 1)
	cfg := Compressed(20, 3*time.Minute)
	cfg.SweepInterval = -1
	WithChaos(&cfg, in)
	st := start(t, cfg)
	st.cfg.chaos.stack.Store(st) // as RunSale binds it
	defer st.cfg.chaos.stack.Store(nil)

	st.Lambdas.Register(FnSweeper, func(context.Context, json.RawMessage) (string, error) { return "swept nothing", nil })
	st.armSweeperCrash()
	if err := st.Sweep(); err == nil || !strings.Contains(err.Error(), "Runtime.ExitError") {
		t.Fatalf("a sweep done before its kill: %v; want the crash still answered", err)
	}
	if n := in.Injected()[load.SweeperCrash]; n != 0 {
		t.Fatalf("sweeper-crash %d after a kill that found the sweep done; want 0", n)
	}

	var killed atomic.Bool
	st.Lambdas.Register(FnSweeper, func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case <-ctx.Done():
			killed.Store(true)
			return "", ctx.Err()
		case <-time.After(5 * time.Second):
			return "swept everything", nil
		}
	})
	st.armSweeperCrash()
	if err := st.Sweep(); err == nil || !strings.Contains(err.Error(), "Runtime.ExitError") {
		t.Fatalf("a sweep killed while it ran: %v; want the crash", err)
	}
	for deadline := time.Now().Add(2 * time.Second); !killed.Load() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if !killed.Load() || in.Injected()[load.SweeperCrash] != 1 {
		t.Fatalf("killed %v, sweeper-crash %d; want the running sweep killed and counted once",
			killed.Load(), in.Injected()[load.SweeperCrash])
	}
}

// sweeper-concurrent is evidence of two sweeps racing on one backlog: a second sweep that found
// nothing to settle raced on nothing and is not counted; one that examined reservations is.
func TestASecondSweepIsCountedOnlyWhenItFoundReservationsToSettle(t *testing.T) {
	in := load.NewInjector(load.Chaos{load.SweeperConcurrent: {Rate: 1}}, 1)
	cfg := Compressed(20, 3*time.Minute)
	cfg.SweepInterval = -1
	WithChaos(&cfg, in)
	st := start(t, cfg)
	st.cfg.chaos.stack.Store(st) // as RunSale binds it
	defer st.cfg.chaos.stack.Store(nil)

	st.secondSweep() // the real sweeper, over an empty backlog
	if n := in.Injected()[load.SweeperConcurrent]; n != 0 {
		t.Fatalf("sweeper-concurrent %d after a second sweep of an empty backlog; want 0", n)
	}
	st.handlers[FnSweeper] = func(context.Context, json.RawMessage) (sweeper.Result, error) {
		return sweeper.Result{HoldsExamined: 2}, nil
	}
	st.secondSweep()
	if n := in.Injected()[load.SweeperConcurrent]; n != 1 {
		t.Fatalf("sweeper-concurrent %d after a second sweep that examined two holds; want 1", n)
	}
}
