//go:build linux

package asl_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

var updateHistory = flag.Bool("update-history", false, "rewrite testdata/history.golden from this engine")

// historyGolden is every corpus execution's history as this engine recorded it: the record
// that keeps how events are stored from changing what the history API reports.
const historyGolden = "testdata/history.golden"

// Task tokens and request ids are random; they are replaced by placeholders.
var (
	tokenPattern = regexp.MustCompile(`p[A-Za-z0-9+/]{63}`)
	uuidPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// renderHistory writes an execution's events one a line: id and previous event id, type,
// details key and each detail with its Go type, keys sorted, its value quoted. Where branches
// or iterations ran concurrently (concurrent), the lines are sorted and the ids, which depend
// on their interleaving, are left out.
func renderHistory(events []asl.HistoryEvent, concurrent bool) string {
	lines := make([]string, 0, len(events))
	for _, ev := range events {
		var b strings.Builder
		if !concurrent {
			fmt.Fprintf(&b, "%d<%d ", ev.ID, ev.PreviousEventID)
		}
		fmt.Fprintf(&b, "%s %s", ev.Type, ev.DetailsKey)
		if ev.Details == nil {
			b.WriteString(" <nil>")
		}
		keys := make([]string, 0, len(ev.Details))
		for k := range ev.Details {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%T(%q)", k, ev.Details[k], fmt.Sprint(ev.Details[k]))
		}
		line := tokenPattern.ReplaceAllString(b.String(), "<token>")
		lines = append(lines, uuidPattern.ReplaceAllString(line, "<uuid>"))
	}
	if concurrent {
		slices.Sort(lines)
	}
	return strings.Join(lines, "\n")
}

// historyCases are the corpus cases that run (the others are refused by validation).
func historyCases(t *testing.T) []corpusCase {
	var cases []corpusCase
	for _, c := range loadCorpus(t) {
		if len(c.Expect.Invalid) == 0 {
			cases = append(cases, c)
		}
	}
	return cases
}

// redrivenHistory is the history of an execution that failed in a task state, run by an
// engine of one region, then redriven by an engine of another.
func redrivenHistory(t *testing.T) []asl.HistoryEvent {
	sm, err := asl.Parse([]byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","Next":"T"},
	  "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"fail","Payload.$":"$"},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	first := asl.NewEngine(asl.Options{Region: "eu-west-2", Invoker: corpusInvoker(clock.Real{})})
	x, err := first.Start(sm, asl.ExecutionSpec{ARN: "arn:redrive", Name: "redrive", Input: []byte(`{"errorType":"Boom"}`)})
	if err != nil {
		t.Fatal(err)
	}
	<-x.Done()
	again, err := newCorpusEngine(clock.Real{}).Redrive(x, 1)
	if err != nil {
		t.Fatal(err)
	}
	<-again.Done()
	return again.History()
}

// stoppedHistory is the history of an execution stopped while it waits on a task token.
func stoppedHistory(t *testing.T) []asl.HistoryEvent {
	sm, err := asl.Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"echo","Payload":{"token.$":"$$.Task.Token"}},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	eng := newCorpusEngine(clock.Real{})
	x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:stop", Name: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	for eng.WaitingTasks() == 0 {
		time.Sleep(time.Millisecond)
	}
	x.Stop("Halt", "stopped by the test")
	<-x.Done()
	return x.History()
}

func TestEveryCorpusExecutionRecordsTheHistoryTheAPIReported(t *testing.T) {
	var b strings.Builder
	for _, c := range historyCases(t) {
		sm, err := asl.Parse(c.Definition)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		eng := newCorpusEngine(clock.NewScaled(clock.Real{}, corpusClockFactor))
		x, err := eng.Start(sm, asl.ExecutionSpec{ARN: "arn:aws:states:us-east-1:123456789012:execution:corpus:" + c.Name,
			Name: c.Name, StateMachineARN: "arn:aws:states:us-east-1:123456789012:stateMachine:corpus", StateMachineName: "corpus",
			RoleARN: "arn:aws:iam::123456789012:role/corpus", Input: c.Input})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = x.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s did not finish", c.Name)
		}
		def := string(c.Definition)
		concurrent := strings.Contains(def, `"Parallel"`) || strings.Contains(def, `"Map"`)
		fmt.Fprintf(&b, "== %s\n%s\n", c.Name, renderHistory(x.History(), concurrent))
	}
	fmt.Fprintf(&b, "== redriven\n%s\n", renderHistory(redrivenHistory(t), false))
	fmt.Fprintf(&b, "== stopped\n%s\n", renderHistory(stoppedHistory(t), false))
	path := filepath.FromSlash(historyGolden)
	if *updateHistory {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(b.String(), "\n")
	for i, line := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != line {
			g := "<end>"
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("history line %d:\n got %s\nwant %s", i+1, g, line)
		}
	}
	if n := len(strings.Split(string(want), "\n")); len(got) != n {
		t.Fatalf("history has %d lines, want %d", len(got), n)
	}
}
