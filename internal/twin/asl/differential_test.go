//go:build linux

package asl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/seatsaga/seatsaga/internal/twin/testtools"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/statemachine"
)

// These tests read Node files whose changes Go's test cache does not see;
// run them with -count=1 after changing testdata/asl or the Node tools.

func toolsDir(t testing.TB) string {
	if d := os.Getenv("SEATSAGA_TOOLS"); d != "" {
		return d
	}
	return filepath.Join(moduleRoot(t), "tools")
}

// nodeOrSkip finds Node.js. Run by hand without it these checks skip; under `make test`
// (which exports SEATSAGA_TOOLS) or in CI a missing Node fails, so a machine that lacks it
// cannot pass the suite by skipping the checks.
func nodeOrSkip(t testing.TB) string {
	node, err := exec.LookPath("node")
	if err != nil {
		testtools.Missing(t, "node is not installed; the differential and asl-validator checks need Node.js")
	}
	return node
}

func nodeCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

type nodeResult struct {
	Name   string          `json:"name"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// runGo runs a corpus case on this engine and reports it as the Node script does.
func runGo(t *testing.T, c corpusCase) nodeResult {
	sm, err := asl.Parse(c.Definition)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	clk := clock.NewScaled(clock.Real{}, corpusClockFactor)
	eng := newCorpusEngine(clk)
	x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:diff", Name: c.Name, Input: c.Input})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.Wait(ctx); err != nil {
		t.Fatalf("%s did not finish", c.Name)
	}
	snap := x.Snapshot()
	if snap.Status == asl.StatusSucceeded {
		return nodeResult{Name: c.Name, Status: "SUCCEEDED", Output: snap.Output}
	}
	return nodeResult{Name: c.Name, Status: "FAILED", Error: snap.Error}
}

// TestDifferentialLocalStepFunctions runs every corpus case that npm
// aws-local-stepfunctions@3.0.0 supports on both engines and requires the same
// result. Cases it cannot run carry the reason in their "node" field; the test
// lists them.
func TestDifferentialLocalStepFunctions(t *testing.T) {
	node := nodeOrSkip(t)
	module := filepath.Join(toolsDir(t), "node_modules", "aws-local-stepfunctions", "build", "main.node.esm.js")
	if _, err := os.Stat(module); err != nil {
		t.Fatalf("aws-local-stepfunctions is not installed (%v); run make tools", err)
	}
	script := filepath.Join(moduleRoot(t), "testdata", "asl", "run-local-sfn.mjs")
	casesDir := filepath.Join(moduleRoot(t), "testdata", "asl", "cases")

	var files []string
	byName := map[string]corpusCase{}
	unsupported := map[string]string{}
	for _, c := range loadCorpus(t) {
		switch {
		case len(c.Expect.Invalid) > 0:
			unsupported[c.Name] = "validation case: nothing to execute"
		case c.Node != "":
			unsupported[c.Name] = c.Node
		default:
			files = append(files, filepath.Join(casesDir, c.Name+".json"))
			byName[c.Name] = c
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := nodeCommand(ctx, node, append([]string{script, module}, files...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var nr nodeResult
		if err := json.Unmarshal(sc.Bytes(), &nr); err != nil {
			t.Fatalf("bad line from node: %s", sc.Text())
		}
		c, ok := byName[nr.Name]
		if !ok {
			t.Fatalf("node reported unknown case %s", nr.Name)
		}
		seen++
		t.Run(nr.Name, func(t *testing.T) {
			gr := runGo(t, c)
			if nr.Status != gr.Status {
				t.Fatalf("node %s (%s), go %s (%s)", nr.Status, nr.Error, gr.Status, gr.Error)
			}
			if gr.Status == "FAILED" {
				if nr.Error != gr.Error {
					t.Fatalf("error: node %s, go %s", nr.Error, gr.Error)
				}
				return
			}
			if n, g := canonical(nr.Output), canonical(gr.Output); n != g {
				t.Fatalf("output\nnode %s\n  go %s", n, g)
			}
		})
	}
	if seen != len(files) {
		t.Fatalf("node reported %d of %d cases", seen, len(files))
	}
	names := make([]string, 0, len(unsupported))
	for n := range unsupported {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d cases compared; %d not run on aws-local-stepfunctions:", seen, len(names))
	for _, n := range names {
		t.Logf("  %s: %s", n, unsupported[n])
	}
}

// TestASLValidatorAcceptsDefinitions requires npm asl-validator to accept the saga's definition
// (package statemachine, placeholders replaced by function ARNs, as CloudFormation would) and
// every valid corpus definition.
func TestASLValidatorAcceptsDefinitions(t *testing.T) {
	node := nodeOrSkip(t)
	validator := filepath.Join(toolsDir(t), "node_modules", "asl-validator", "dist", "bin", "asl-validator.js")
	if _, err := os.Stat(validator); err != nil {
		validator = filepath.Join(toolsDir(t), "node_modules", ".bin", "asl-validator")
		if _, err := os.Stat(validator); err != nil {
			t.Fatalf("asl-validator is not installed; run make tools")
		}
	}
	tmp := t.TempDir()
	def, err := statemachine.Substitute(stepARNs())
	if err != nil {
		t.Fatal(err)
	}
	saga := filepath.Join(tmp, "statemachine-"+filepath.Base(statemachine.File))
	if err := os.WriteFile(saga, def, 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{saga}
	for _, c := range loadCorpus(t) {
		if len(c.Expect.Invalid) > 0 {
			continue
		}
		out := filepath.Join(tmp, c.Name+".json")
		if err := os.WriteFile(out, c.Definition, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, out)
	}
	t.Logf("validating the saga's definition and %d corpus definitions", len(paths)-1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{validator}
	for _, p := range paths {
		args = append(args, "--json-path", p)
	}
	out, err := nodeCommand(ctx, node, args...).CombinedOutput()
	valid := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "is valid") {
			valid++
		} else if strings.TrimSpace(line) != "" {
			t.Errorf("asl-validator: %s", line)
		}
	}
	if err != nil || valid != len(paths) {
		t.Fatalf("asl-validator accepted %d of %d definitions (%v)", valid, len(paths), err)
	}
}
