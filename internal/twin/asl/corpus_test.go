package asl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/modroot"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/statemachine"
)

// corpusCase is one conformance case under testdata/asl/cases.
type corpusCase struct {
	Name       string          `json:"-"`
	Comment    string          `json:"comment"`
	Definition json.RawMessage `json:"definition"`
	Input      json.RawMessage `json:"input"`
	Expect     struct {
		Output  json.RawMessage `json:"output"`
		Error   string          `json:"error"`
		Cause   string          `json:"cause"`
		Invalid []string        `json:"invalid"` // validation problem codes
	} `json:"expect"`
	// Node names why aws-local-stepfunctions cannot run the case; empty when it can.
	Node string `json:"node"`
}

func moduleRoot(t testing.TB) string {
	root, err := modroot.FromWorkingDir()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func loadCorpus(t testing.TB) []corpusCase {
	dir := filepath.Join(moduleRoot(t), "testdata", "asl", "cases")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus cases in %s: %v", dir, err)
	}
	sort.Strings(files)
	var cases []corpusCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c corpusCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c.Name = strings.TrimSuffix(filepath.Base(f), ".json")
		cases = append(cases, c)
	}
	return cases
}

// The corpus's deterministic task functions. testdata/asl/run-local-sfn.mjs
// implements the same functions for the differential run.
func corpusInvoker(clk clock.Clock) *asl.FuncInvoker {
	var mu sync.Mutex
	calls := map[string]int{}
	obj := func(p []byte) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(p, &m)
		if m == nil {
			m = map[string]any{}
		}
		return m
	}
	return asl.NewFuncInvoker(map[string]asl.Func{
		"echo": func(_ context.Context, p []byte) ([]byte, error) { return p, nil },
		"add": func(_ context.Context, p []byte) ([]byte, error) {
			m := obj(p)
			a, _ := m["a"].(float64)
			b, _ := m["b"].(float64)
			return json.Marshal(map[string]any{"sum": a + b})
		},
		"double": func(_ context.Context, p []byte) ([]byte, error) {
			var n float64
			if err := json.Unmarshal(p, &n); err != nil {
				return nil, err
			}
			return json.Marshal(n * 2)
		},
		"greet": func(_ context.Context, p []byte) ([]byte, error) {
			name, _ := obj(p)["name"].(string)
			return json.Marshal(map[string]any{"greeting": "Hello, " + name + "!"})
		},
		"fail": func(_ context.Context, p []byte) ([]byte, error) {
			m := obj(p)
			name, _ := m["errorType"].(string)
			if name == "" {
				name = "CustomError"
			}
			msg, _ := m["message"].(string)
			if msg == "" {
				msg = "failed on purpose"
			}
			return nil, &asl.FunctionError{Type: name, Message: msg}
		},
		// flaky fails with Transient until it has been called "failures" times for "key".
		"flaky": func(_ context.Context, p []byte) ([]byte, error) {
			m := obj(p)
			key, _ := m["key"].(string)
			failures, _ := m["failures"].(float64)
			mu.Lock()
			calls[key]++
			n := calls[key]
			mu.Unlock()
			if float64(n) <= failures {
				return nil, &asl.FunctionError{Type: "Transient", Message: fmt.Sprintf("attempt %d failed", n)}
			}
			return json.Marshal(map[string]any{"attempts": n})
		},
		// sleep waits "seconds" on the engine's clock, then echoes its input.
		"sleep": func(ctx context.Context, p []byte) ([]byte, error) {
			secs, _ := obj(p)["seconds"].(float64)
			if err := clock.Sleep(ctx, clk, time.Duration(secs*float64(time.Second))); err != nil {
				return nil, err
			}
			return p, nil
		},
	})
}

// newCorpusEngine returns an engine with the corpus functions, including
// "callback", which answers the task token it is given from another goroutine
// (as a payment webhook would): {"token", "output"} or {"token", "error", "cause"}.
func newCorpusEngine(clk clock.Clock) *asl.Engine {
	inv := corpusInvoker(clk)
	eng := asl.NewEngine(asl.Options{Clock: clk, Invoker: inv})
	inv.Register("callback", func(_ context.Context, p []byte) ([]byte, error) {
		var in struct {
			Token  string          `json:"token"`
			Output json.RawMessage `json:"output"`
			Error  string          `json:"error"`
			Cause  string          `json:"cause"`
		}
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		go func() {
			if in.Error != "" {
				_ = eng.SendTaskFailure(in.Token, in.Error, in.Cause)
				return
			}
			_ = eng.SendTaskSuccess(in.Token, in.Output)
		}()
		return []byte(`{"accepted":true}`), nil
	})
	return eng
}

// normalize decodes JSON for comparison, dropping the Cause of error objects:
// causes are free text that engines word differently.
func normalize(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return dropCauses(v), nil
}

func dropCauses(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if _, hasErr := x["Error"]; hasErr {
			if _, hasCause := x["Cause"]; hasCause {
				x["Cause"] = "<cause>"
			}
		}
		for k, val := range x {
			x[k] = dropCauses(val)
		}
	case []any:
		for i := range x {
			x[i] = dropCauses(x[i])
		}
	}
	return v
}

func canonical(b []byte) string {
	v, err := normalize(b)
	if err != nil {
		return "invalid JSON: " + string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// corpusClockFactor compresses time for the corpus: waits, retry intervals and
// timeouts run this many times faster than written.
const corpusClockFactor = 50

func runCase(t *testing.T, c corpusCase) {
	sm, err := asl.Parse(c.Definition)
	if len(c.Expect.Invalid) > 0 {
		var ve *asl.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("want validation error %v, got %v", c.Expect.Invalid, err)
		}
		codes := map[string]bool{}
		for _, p := range ve.Problems {
			codes[p.Code] = true
		}
		for _, want := range c.Expect.Invalid {
			if !codes[want] {
				t.Fatalf("want problem %s, got %v", want, ve)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	clk := clock.NewScaled(clock.Real{}, corpusClockFactor)
	eng := newCorpusEngine(clk)
	x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:aws:states:us-east-1:123456789012:execution:corpus:" + c.Name,
		Name: c.Name, StateMachineARN: "arn:aws:states:us-east-1:123456789012:stateMachine:corpus", StateMachineName: "corpus", Input: c.Input})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.Wait(ctx); err != nil {
		t.Fatal("execution did not finish")
	}
	snap := x.Snapshot()
	if c.Expect.Error != "" {
		if snap.Status == asl.StatusSucceeded || snap.Error != c.Expect.Error {
			t.Fatalf("want error %s, got status %s error %s (%s), output %s", c.Expect.Error, snap.Status, snap.Error, snap.Cause, snap.Output)
		}
		if c.Expect.Cause != "" && snap.Cause != c.Expect.Cause {
			t.Fatalf("want cause %q, got %q", c.Expect.Cause, snap.Cause)
		}
		return
	}
	if snap.Status != asl.StatusSucceeded {
		t.Fatalf("status %s: %s: %s", snap.Status, snap.Error, snap.Cause)
	}
	if got, want := canonical(snap.Output), canonical(c.Expect.Output); got != want {
		t.Fatalf("output\n got %s\nwant %s", got, want)
	}
}

func TestCorpus(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			runCase(t, c)
		})
	}
}

// TestProjectStateMachinesParse requires the saga's definition (package statemachine) to pass
// this engine's validation once its placeholders are substituted.
func TestProjectStateMachinesParse(t *testing.T) {
	def, err := statemachine.Substitute(stepARNs())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asl.Parse(def); err != nil {
		t.Errorf("%s: %v", statemachine.File, err)
	}
}

// stepARNs names every step function by a made-up ARN, as CloudFormation would substitute.
func stepARNs() map[string]string {
	arns := map[string]string{}
	for _, s := range statemachine.Steps {
		arns[s.Name] = "arn:aws:lambda:us-east-1:123456789012:function:" + s.Name
	}
	return arns
}
