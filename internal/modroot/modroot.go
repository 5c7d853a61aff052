// Package modroot finds the seatsaga module's root directory, where the pinned tools
// (tools/), the state machine (statemachine/) and the fixtures (testdata/) live. Tests, the
// local stack and the CDK app run from different working directories, so each locates files
// from this root rather than from its own directory.
package modroot

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrNotFound means no directory above the starting one holds a go.mod.
var ErrNotFound = errors.New("no go.mod above the working directory")

// Find walks up from dir to the nearest directory that holds go.mod.
func Find(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}

// FromWorkingDir is Find from the process's working directory.
func FromWorkingDir() (string, error) { return Find(".") }
