package asl

import "fmt"

// Predefined error names (Amazon States Language appendix A and the Step Functions guide).
const (
	ErrAll                    = "States.ALL"
	ErrTaskFailed             = "States.TaskFailed"
	ErrTimeout                = "States.Timeout"
	ErrHeartbeatTimeout       = "States.HeartbeatTimeout"
	ErrRuntime                = "States.Runtime"
	ErrPermissions            = "States.Permissions"
	ErrDataLimitExceeded      = "States.DataLimitExceeded"
	ErrNoChoiceMatched        = "States.NoChoiceMatched"
	ErrIntrinsicFailure       = "States.IntrinsicFailure"
	ErrResultPathMatchFailure = "States.ResultPathMatchFailure"
	ErrBranchFailed           = "States.BranchFailed"
)

// PayloadLimit is the largest state input, output or task result Step Functions accepts.
const PayloadLimit = 256 * 1024

// StateError is an error as the state machine sees it: a name that Retry and
// Catch match on, and a human-readable cause.
type StateError struct {
	Name  string
	Cause string
}

func (e *StateError) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// terminal errors are never matched by States.ALL or States.TaskFailed.
func terminal(name string) bool {
	return name == ErrRuntime || name == ErrDataLimitExceeded
}

// errorMatches reports whether an ErrorEquals list matches an error name.
func errorMatches(equals []string, name string) bool {
	for _, e := range equals {
		switch {
		case e == name:
			return true
		case e == ErrAll && !terminal(name):
			return true
		case e == ErrTaskFailed && name != ErrTimeout && !terminal(name):
			return true
		}
	}
	return false
}

func runtimeError(format string, args ...any) *StateError {
	return &StateError{Name: ErrRuntime, Cause: fmt.Sprintf(format, args...)}
}

// notTruncated is the shared, read-only inputDetails/outputDetails value of
// history events (payloads are never truncated here).
var notTruncated = map[string]any{"truncated": false}
