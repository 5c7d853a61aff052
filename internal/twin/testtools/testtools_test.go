package testtools_test

import (
	"runtime"
	"testing"

	"github.com/seatsaga/seatsaga/internal/twin/testtools"
)

// stoppingTB records whether Fatal or Skip was called, and stops the goroutine as they do.
type stoppingTB struct {
	testing.TB
	fatal, skipped bool
}

func (s *stoppingTB) Helper()      {}
func (s *stoppingTB) Fatal(...any) { s.fatal = true; runtime.Goexit() }
func (s *stoppingTB) Skip(...any)  { s.skipped = true; runtime.Goexit() }
func (s *stoppingTB) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(s)
	}()
	<-done
}

func TestAMissingToolFailsUnderMakeAndCIAndSkipsOtherwise(t *testing.T) {
	for _, c := range []struct {
		name, tools, ci string
		wantFatal       bool
	}{
		{"make test", "/work/tools", "", true},
		{"CI", "", "true", true},
		{"a plain go test", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SEATSAGA_TOOLS", c.tools)
			t.Setenv("CI", c.ci)
			tb := &stoppingTB{TB: t}
			tb.run(func(tb testing.TB) { testtools.Missing(tb, "the tool is not installed") })
			if tb.fatal != c.wantFatal || tb.skipped == c.wantFatal {
				t.Fatalf("fatal %v, skipped %v; want fatal %v", tb.fatal, tb.skipped, c.wantFatal)
			}
		})
	}
}
