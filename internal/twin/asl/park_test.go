package asl_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

type tokenSink struct{ ch chan string }

func (ts tokenSink) invoker() *asl.FuncInvoker {
	return asl.NewFuncInvoker(map[string]asl.Func{"request": func(_ context.Context, p []byte) ([]byte, error) {
		var in struct{ Token string }
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		ts.ch <- in.Token
		return []byte(`{}`), nil
	}})
}

const tokenTask = `{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
  "Parameters":{"FunctionName":"request","Payload":{"Token.$":"$$.Task.Token"}},
  "HeartbeatSecondsPath":"$.hb","TimeoutSecondsPath":"$.limit",
  "Catch":[{"ErrorEquals":["States.HeartbeatTimeout","States.Timeout"],"Next":"Late"}],"End":true}`

// TestParkedExecutionsHoldNoGoroutine: an execution waiting on a task token
// is a map entry plus timers, not a goroutine.
func TestParkedExecutionsHoldNoGoroutine(t *testing.T) {
	const n = 200
	ts := tokenSink{ch: make(chan string, n)}
	sm, err := asl.Parse([]byte(`{"StartAt":"Wait","States":{"Wait":` + tokenTask + `,"Late":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	eng := asl.NewEngine(asl.Options{Clock: clk, Invoker: ts.invoker()})
	before := runtime.NumGoroutine()
	var execs []*asl.Execution
	for i := 0; i < n; i++ {
		x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "x", Name: "x", Input: []byte(`{"hb":60,"limit":600}`)})
		if err != nil {
			t.Fatal(err)
		}
		execs = append(execs, x)
	}
	var tokens []string
	for i := 0; i < n; i++ {
		tokens = append(tokens, <-ts.ch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 2*n); err != nil { // every execution armed its timeout and heartbeat timers
		t.Fatal(err)
	}
	// Goroutines exit after arming; allow the scheduler to retire them.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine()-before > n/10 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if extra := runtime.NumGoroutine() - before; extra > n/10 {
		t.Fatalf("%d goroutines for %d parked executions", extra, n)
	}
	// Half succeed by token; the rest miss their heartbeat.
	for _, tok := range tokens[:n/2] {
		if err := eng.SendTaskSuccess(tok, []byte(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(60 * time.Second)
	for i, x := range execs {
		if err := x.Wait(ctx); err != nil {
			t.Fatalf("execution %d did not finish", i)
		}
	}
	late := 0
	for _, x := range execs {
		snap := x.Snapshot()
		if snap.Status != asl.StatusSucceeded {
			t.Fatalf("status %s %s", snap.Status, snap.Error)
		}
		if strings.Contains(string(snap.Output), "States.HeartbeatTimeout") {
			late++
		}
	}
	if late != n/2 {
		t.Fatalf("%d heartbeat timeouts, want %d", late, n/2)
	}
	if eng.WaitingTasks() != 0 || clk.Waiters() != 0 {
		t.Fatalf("left %d waiting tasks and %d timers", eng.WaitingTasks(), clk.Waiters())
	}
}

// TestTokenWaitInsideParallel covers the blocking wait used by Parallel and
// Map branches: heartbeat, timeout and success on the fake clock.
func TestTokenWaitInsideParallel(t *testing.T) {
	ts := tokenSink{ch: make(chan string, 4)}
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
	  {"StartAt":"Wait","States":{"Wait":` + tokenTask + `,"Late":{"Type":"Pass","Result":"late","End":true}}}]}}}`
	sm, err := asl.Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		act  func(eng *asl.Engine, clk *clock.Fake, tok string)
		want string
	}{
		{"success after heartbeats", func(eng *asl.Engine, clk *clock.Fake, tok string) {
			for i := 0; i < 3; i++ {
				clk.Advance(50 * time.Second)
				if err := eng.SendTaskHeartbeat(tok); err != nil {
					t.Fatal(err)
				}
			}
			if err := eng.SendTaskSuccess(tok, []byte(`"done"`)); err != nil {
				t.Fatal(err)
			}
		}, `["done"]`},
		{"heartbeat missed", func(eng *asl.Engine, clk *clock.Fake, tok string) {
			clk.Advance(60 * time.Second)
		}, `["late"]`},
		{"timeout despite heartbeats", func(eng *asl.Engine, clk *clock.Fake, tok string) {
			for i := 0; i < 12; i++ {
				_ = eng.SendTaskHeartbeat(tok)
				clk.Advance(50 * time.Second)
			}
			if err := eng.SendTaskSuccess(tok, []byte(`{}`)); err != asl.ErrTaskTimedOut {
				t.Fatalf("SendTaskSuccess after timeout: %v", err)
			}
		}, `["late"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			eng := asl.NewEngine(asl.Options{Clock: clk, Invoker: ts.invoker()})
			x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "x", Name: "x", Input: []byte(`{"hb":60,"limit":600}`)})
			if err != nil {
				t.Fatal(err)
			}
			tok := <-ts.ch
			if err := clk.BlockUntilContext(ctx, 2); err != nil {
				t.Fatal(err)
			}
			tc.act(eng, clk, tok)
			if err := x.Wait(ctx); err != nil {
				t.Fatal("execution did not finish")
			}
			if got := string(x.Snapshot().Output); got != tc.want {
				t.Fatalf("output %s, want %s", got, tc.want)
			}
		})
	}
}
