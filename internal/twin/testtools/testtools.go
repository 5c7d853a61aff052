// Package testtools holds the rule the twin's tests follow when a tool they need (the Node
// tools, the AWS CLI) is missing: under `make test` or in CI that is a failure, so a machine that
// lacks a tool cannot pass the suite by skipping the checks that need it; in a plain `go test`
// it is a skip.
package testtools

import (
	"os"
	"testing"
)

// Missing reports a missing tool: it fails the test where the suite promises every tool, and
// skips it elsewhere.
func Missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Required reports whether the suite runs under `make test` (which exports SEATSAGA_TOOLS) or
// in CI.
func Required() bool { return os.Getenv("SEATSAGA_TOOLS") != "" || os.Getenv("CI") != "" }
