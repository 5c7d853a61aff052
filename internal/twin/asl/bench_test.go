//go:build linux

package asl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/testtools"
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

func runBench(b testing.TB, eng *asl.Engine, sm *asl.StateMachine, input []byte) int64 {
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
	mallocs := mallocCounter()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		transitions += runBench(b, eng, sm, input)
	}
	b.StopTimer()
	b.ReportMetric(float64(transitions)/b.Elapsed().Seconds(), "transitions/s")
	b.ReportMetric(float64(transitions)/float64(b.N), "transitions/exec")
	b.ReportMetric(float64(mallocs())/float64(transitions), "allocs/transition")
}

// mallocCounter returns a function that counts the heap allocations made since it was
// created, by every goroutine: the executions run on goroutines of their own.
func mallocCounter() func() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	start := ms.Mallocs
	return func() uint64 {
		runtime.ReadMemStats(&ms)
		return ms.Mallocs - start
	}
}

// benchCase is the corpus case timed on both engines.
const benchCase = "task-io-processing"

// benchCaseMachine parses the bench case and returns its input.
func benchCaseMachine(b testing.TB) (*asl.StateMachine, []byte) {
	for _, c := range loadCorpus(b) {
		if c.Name == benchCase {
			sm, err := asl.Parse(c.Definition)
			if err != nil {
				b.Fatal(err)
			}
			return sm, c.Input
		}
	}
	b.Fatalf("no corpus case %s", benchCase)
	return nil, nil
}

// BenchmarkExecutionsGo runs the bench case one execution after another.
func BenchmarkExecutionsGo(b *testing.B) {
	sm, input := benchCaseMachine(b)
	eng := newCorpusEngine(clock.Real{})
	var transitions int64
	b.ReportAllocs()
	mallocs := mallocCounter()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		transitions += runBench(b, eng, sm, input)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exec/s")
	b.ReportMetric(float64(mallocs())/float64(transitions), "allocs/transition")
}

// The Node side runs nodeWarmup executions untimed, then nodeTimed timed ones, in one
// process, and reports the timed part's elapsed time: process start-up, module loading and
// V8's compilation of the hot paths are excluded, as the Go side is timed warm (after
// testing's own calibration runs, or goWarmup executions in the comparison).
const (
	nodeWarmup = 5000
	nodeTimed  = 10000
	goWarmup   = 5000
)

// BenchmarkExecutionsLocalStepFunctions times the same case on npm aws-local-stepfunctions,
// one execution after another; each iteration is one Node process.
func BenchmarkExecutionsLocalStepFunctions(b *testing.B) {
	run := localStepFunctionsRunner(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += run()
	}
	b.ReportMetric(float64(b.N*nodeTimed)/total.Seconds(), "exec/s")
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*nodeTimed), "ns/exec")
}

// localStepFunctionsRunner returns a function that runs the bench case nodeTimed times on
// aws-local-stepfunctions, after nodeWarmup untimed runs, and returns the timed part's
// duration as the Node process measured it. It skips (or fails, where the suite promises
// the tools) when Node or the package is missing.
func localStepFunctionsRunner(b testing.TB) func() time.Duration {
	node := nodeOrSkip(b)
	module := filepath.Join(toolsDir(b), "node_modules", "aws-local-stepfunctions", "build", "main.node.esm.js")
	script := filepath.Join(moduleRoot(b), "testdata", "asl", "run-local-sfn.mjs")
	caseFile := filepath.Join(moduleRoot(b), "testdata", "asl", "cases", benchCase+".json")
	if _, err := os.Stat(module); err != nil {
		testtools.Missing(b, "aws-local-stepfunctions is not installed (make tools)")
	}
	return func() time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := nodeCommand(ctx, node, script, module, "--bench", strconv.Itoa(nodeTimed),
			"--warmup", strconv.Itoa(nodeWarmup), caseFile).Output()
		if err != nil {
			b.Fatalf("node bench: %v", err)
		}
		var r struct {
			Executions int     `json:"executions"`
			NS         float64 `json:"ns"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil || r.Executions != nodeTimed {
			b.Fatalf("bad node output %s: %v", out, err)
		}
		return time.Duration(r.NS)
	}
}

// localStepFunctionsServer is a Node process running the bench case on aws-local-stepfunctions
// in batches on request, warm: it ran nodeWarmup executions before it answered ready.
type localStepFunctionsServer struct {
	in  io.WriteCloser
	out *bufio.Scanner
	cmd *exec.Cmd
}

// batchTiming is one batch's elapsed and CPU time (every thread of the process).
type batchTiming struct {
	Executions int     `json:"executions"`
	NS         float64 `json:"ns"`
	CPUNS      float64 `json:"cpuNs"`
}

func startLocalStepFunctions(b testing.TB) *localStepFunctionsServer {
	node := nodeOrSkip(b)
	module := filepath.Join(toolsDir(b), "node_modules", "aws-local-stepfunctions", "build", "main.node.esm.js")
	script := filepath.Join(moduleRoot(b), "testdata", "asl", "run-local-sfn.mjs")
	caseFile := filepath.Join(moduleRoot(b), "testdata", "asl", "cases", benchCase+".json")
	if _, err := os.Stat(module); err != nil {
		testtools.Missing(b, "aws-local-stepfunctions is not installed (make tools)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cmd := nodeCommand(ctx, node, script, module, "--serve", strconv.Itoa(nodeWarmup), caseFile)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start node: %v", err)
	}
	srv := &localStepFunctionsServer{in: in, out: bufio.NewScanner(out), cmd: cmd}
	b.Cleanup(func() {
		_ = in.Close() // the script ends at the end of its input
		_ = cmd.Wait()
		cancel()
	})
	if !srv.out.Scan() || !strings.Contains(srv.out.Text(), `"ready":true`) {
		b.Fatalf("node did not get ready: %q %v", srv.out.Text(), srv.out.Err())
	}
	return srv
}

// batch runs n executions in the Node process and returns its timing of them.
func (s *localStepFunctionsServer) batch(b testing.TB, n int) batchTiming {
	if _, err := fmt.Fprintln(s.in, n); err != nil {
		b.Fatalf("node batch: %v", err)
	}
	var r batchTiming
	if !s.out.Scan() {
		b.Fatalf("node batch: no answer: %v", s.out.Err())
	}
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil || r.Executions != n {
		b.Fatalf("bad node answer %s: %v", s.out.Text(), err)
	}
	return r
}

// BenchmarkExecutionsGoVersusLocalStepFunctions measures both engines on the bench case, warm,
// in alternating batches (goBatch executions here, then nodeBatch in a Node process, over and
// over), so that a shared machine's changing load weighs on both alike. It reports both rates
// in wall-clock time and their ratio, the same per CPU-second (each process's CPU time over
// all its threads, which the load of other processes hardly changes), and the allocations
// per state transition here. Run it as
//
//	go test -run '^$' -bench GoVersusLocalStepFunctions -benchtime 3x ./internal/twin/asl
func BenchmarkExecutionsGoVersusLocalStepFunctions(b *testing.B) {
	const rounds, goBatch, nodeBatch = 10, 2000, 1000
	node := startLocalStepFunctions(b)
	sm, input := benchCaseMachine(b)
	eng := newCorpusEngine(clock.Real{})
	for range goWarmup {
		runBench(b, eng, sm, input)
	}
	var goWall, goCPU time.Duration
	var nodeWall, nodeCPU float64
	var goExecs, nodeExecs int
	var transitions int64
	var allocs uint64
	for i := 0; i < b.N; i++ {
		for range rounds {
			mallocs := mallocCounter()
			cpu0, start := cpuTime(), time.Now()
			for range goBatch {
				transitions += runBench(b, eng, sm, input)
			}
			goWall += time.Since(start)
			goCPU += cpuTime() - cpu0
			allocs += mallocs()
			goExecs += goBatch
			r := node.batch(b, nodeBatch)
			nodeWall += r.NS
			nodeCPU += r.CPUNS
			nodeExecs += r.Executions
		}
	}
	goRate, nodeRate := float64(goExecs)/goWall.Seconds(), float64(nodeExecs)/(nodeWall/1e9)
	goCPURate, nodeCPURate := float64(goExecs)/goCPU.Seconds(), float64(nodeExecs)/(nodeCPU/1e9)
	b.ReportMetric(goRate, "go-exec/s")
	b.ReportMetric(nodeRate, "node-exec/s")
	b.ReportMetric(goRate/nodeRate, "go/node")
	b.ReportMetric(goCPURate, "go-exec/cpu-s")
	b.ReportMetric(nodeCPURate, "node-exec/cpu-s")
	b.ReportMetric(goCPURate/nodeCPURate, "go/node-cpu")
	b.ReportMetric(float64(allocs)/float64(transitions), "allocs/transition")
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
