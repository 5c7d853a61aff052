package stepfunctions

import (
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

func TestRedriveReasonFollowsAWSsRules(t *testing.T) {
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		typ       string
		exists    bool
		status    string
		closedAgo time.Duration
		events    int
		redrives  int64
		want      string
	}{
		{"failed", "STANDARD", true, asl.StatusFailed, time.Hour, 10, 0, ""},
		{"timed out", "STANDARD", true, asl.StatusTimedOut, time.Hour, 10, 3, ""},
		{"aborted", "STANDARD", true, asl.StatusAborted, time.Hour, 10, 0, ""},
		{"on the 14th day", "STANDARD", true, asl.StatusFailed, redrivablePeriod, 10, 0, ""},
		{"running", "STANDARD", true, asl.StatusRunning, 0, 10, 0, "Execution is RUNNING and cannot be redriven"},
		{"succeeded", "STANDARD", true, asl.StatusSucceeded, time.Hour, 10, 0, "Execution is SUCCEEDED and cannot be redriven"},
		{"after 14 days", "STANDARD", true, asl.StatusFailed, redrivablePeriod + time.Second, 10, 0, "Execution redrivable period exceeded"},
		{"history full", "STANDARD", true, asl.StatusFailed, time.Hour, maxHistoryEvents, 0, "Execution history event limit exceeded"},
		{"redrive limit", "STANDARD", true, asl.StatusFailed, time.Hour, 10, maxRedrives, "Execution redrive limit exceeded"},
		{"express", "EXPRESS", true, asl.StatusFailed, time.Hour, 10, 0, "Execution of an EXPRESS state machine cannot be redriven"},
		{"machine deleted", "STANDARD", false, asl.StatusFailed, time.Hour, 10, 0, "State machine is in DELETING status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redriveReason(tc.typ, tc.exists, tc.status, now.Add(-tc.closedAgo), now, tc.events, tc.redrives); got != tc.want {
				t.Fatalf("redriveReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDiagnosticCodesAreAWSsDocumentedOnes(t *testing.T) {
	for code, want := range map[string]string{
		"MISSING_TRANSITION_TARGET": "MISSING_TRANSITION_TARGET",
		"INVALID_JSON_DESCRIPTION":  "INVALID_JSON_DESCRIPTION",
		"SCHEMA_VALIDATION_FAILED":  "SCHEMA_VALIDATION_FAILED",
		"INVALID_RESOURCE":          "INVALID_RESOURCE",
		"INVALID_JSON_PATH":         "SCHEMA_VALIDATION_FAILED",
		"INVALID_CHOICE_RULE":       "SCHEMA_VALIDATION_FAILED",
		"INVALID_INTRINSIC":         "SCHEMA_VALIDATION_FAILED",
		"UNREACHABLE_STATE":         "SCHEMA_VALIDATION_FAILED",
	} {
		if got := diagnosticCode(code); got != want {
			t.Errorf("diagnosticCode(%s) = %s, want %s", code, got, want)
		}
	}
}

func TestOnlyTheFirstStateEventLosesItsPreviousEvent(t *testing.T) {
	for _, tc := range []struct{ prev, want int64 }{{0, 0}, {1, 0}, {2, 2}, {7, 7}} {
		if got := previousEventID(asl.HistoryEvent{ID: tc.prev + 1, PreviousEventID: tc.prev}); got != tc.want {
			t.Errorf("previousEventID(prev %d) = %d, want %d", tc.prev, got, tc.want)
		}
	}
}
