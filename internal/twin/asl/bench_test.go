//go:build linux

package asl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/seatsaga/seatsaga/internal/twin/testtools"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// benchDefinition enters 10 states per execution: Pass, Task, Choice, Parallel
// (two branches of one state each), Map over two items (one state each), Succeed.
const benchDefinition = `{
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Parameters": {"a.$": "$.a", "b": 2, "items": [1, 2]}, "Next": "Add"},
    "Add": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:add", "ResultPath": "$.r", "Next": "Route"},
    "Route": {"Type": "Choice", "Choices": [{"Variable": "$.r.sum", "NumericGreaterThan": 0, "Next": "Fan"}], "Default": "Done"},
    "Fan": {"Type": "Parallel", "ResultPath": "$.par", "Next": "Each", "Branches": [
      {"StartAt": "L", "States": {"L": {"Type": "Pass", "End": true}}},
      {"StartAt": "R", "States": {"R": {"Type": "Pass", "End": true}}}]},
    "Each": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.doubled", "Next": "Done",
      "ItemProcessor": {"StartAt": "D", "States": {"D": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:double", "End": true}}}},
    "Done": {"Type": "Succeed"}
  }
}`

func runBench(b *testing.B, eng *asl.Engine, sm *asl.StateMachine, input []byte) int64 {
	x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:bench", Name: "bench", Input: input})
	if err != nil {
		b.Fatal(err)
	}
	<-x.Done()
	if s := x.Snapshot(); s.Status != asl.StatusSucceeded {
		b.Fatalf("status %s %s %s", s.Status, s.Error, s.Cause)
	}
	return x.StateTransitions()
}

// BenchmarkStateTransitions measures state transitions per second with
// in-process task functions.
func BenchmarkStateTransitions(b *testing.B) {
	sm, err := asl.Parse([]byte(benchDefinition))
	if err != nil {
		b.Fatal(err)
	}
	eng := newCorpusEngine(clock.Real{})
	input := []byte(`{"a": 1}`)
	var transitions int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		transitions += runBench(b, eng, sm, input)
	}
	b.ReportMetric(float64(transitions)/b.Elapsed().Seconds(), "transitions/s")
	b.ReportMetric(float64(transitions)/float64(b.N), "transitions/exec")
}

// benchCase is the corpus case timed on both engines.
const benchCase = "task-io-processing"

// BenchmarkExecutionsGo runs the bench case one execution after another.
func BenchmarkExecutionsGo(b *testing.B) {
	var c corpusCase
	for _, cc := range loadCorpus(b) {
		if cc.Name == benchCase {
			c = cc
		}
	}
	sm, err := asl.Parse(c.Definition)
	if err != nil {
		b.Fatal(err)
	}
	eng := newCorpusEngine(clock.Real{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runBench(b, eng, sm, c.Input)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exec/s")
}

// BenchmarkExecutionsLocalStepFunctions times the same case on npm
// aws-local-stepfunctions: the Node script runs 500 executions after a warm-up
// and reports its own elapsed time (process start-up is excluded).
func BenchmarkExecutionsLocalStepFunctions(b *testing.B) {
	node := nodeOrSkip(b)
	module := filepath.Join(toolsDir(b), "node_modules", "aws-local-stepfunctions", "build", "main.node.esm.js")
	script := filepath.Join(moduleRoot(b), "testdata", "asl", "run-local-sfn.mjs")
	caseFile := filepath.Join(moduleRoot(b), "testdata", "asl", "cases", benchCase+".json")
	if _, err := os.Stat(module); err != nil {
		testtools.Missing(b, "aws-local-stepfunctions is not installed (make tools)")
	}
	const n = 500
	var totalNS float64
	var totalExec int
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := nodeCommand(ctx, node, script, module, "--bench", "500", caseFile).Output()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		var r struct {
			Executions int     `json:"executions"`
			NS         float64 `json:"ns"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil || r.Executions != n {
			b.Fatalf("bad node output %s: %v", out, err)
		}
		totalNS += r.NS
		totalExec += r.Executions
	}
	b.ReportMetric(float64(totalExec)/(totalNS/1e9), "exec/s")
	b.ReportMetric(totalNS/float64(totalExec), "ns/exec")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWaitingExecutions parks 10,000 executions on task tokens and reports
// the memory each costs and the CPU the process uses while they wait: a wait
// is a token-map entry and one parked goroutine, with no timer or poll.
func BenchmarkWaitingExecutions(b *testing.B) {
	const n = 10000
	sm, err := asl.Parse([]byte(`{"StartAt":"Authorize","States":{"Authorize":{"Type":"Task",
	  "Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"request","Payload":{"token.$":"$$.Task.Token","order.$":"$.order"}},"End":true}}}`))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		var mu sync.Mutex
		tokens := make([]string, 0, n)
		var submitted sync.WaitGroup
		submitted.Add(n)
		inv := asl.NewFuncInvoker(map[string]asl.Func{"request": func(_ context.Context, p []byte) ([]byte, error) {
			var in struct{ Token string }
			_ = json.Unmarshal(p, &in)
			mu.Lock()
			tokens = append(tokens, in.Token)
			mu.Unlock()
			submitted.Done()
			return []byte(`{}`), nil
		}})
		eng := asl.NewEngine(asl.Options{Clock: clock.NewFake(time.Now()), Invoker: inv})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		goroutinesBefore := runtime.NumGoroutine()
		execs := make([]*asl.Execution, n)
		for j := range execs {
			x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:wait", Name: "w", Input: []byte(`{"order":"o-123"}`)})
			if err != nil {
				b.Fatal(err)
			}
			execs[j] = x
		}
		submitted.Wait()
		for eng.WaitingTasks() < n {
			runtime.Gosched()
		}
		time.Sleep(50 * time.Millisecond) // let every goroutine reach its select
		runtime.GC()
		runtime.ReadMemStats(&after)
		parked := runtime.NumGoroutine() - goroutinesBefore

		idle := 500 * time.Millisecond
		cpu0 := cpuTime()
		time.Sleep(idle)
		cpuIdle := cpuTime() - cpu0

		used := float64((after.HeapAlloc + after.StackInuse) - (before.HeapAlloc + before.StackInuse))
		b.ReportMetric(used/n, "bytes/waiting-exec")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/n, "stack-bytes/waiting-exec")
		b.ReportMetric(float64(parked)/n, "goroutines/waiting-exec")
		b.ReportMetric(float64(cpuIdle)/float64(time.Millisecond)/idle.Seconds(), "cpu-ms/s-idle")

		for _, tok := range tokens {
			if err := eng.SendTaskSuccess(tok, []byte(`{"ok":true}`)); err != nil {
				b.Fatal(err)
			}
		}
		for _, x := range execs {
			<-x.Done()
		}
	}
}
