package obs

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// IsMetricLine reports whether a line of a function's stdout is an EMF metric document
// (internal/emf): JSON too, but a metric rather than a log line. What makes it one is the
// _aws member with its CloudWatchMetrics, wherever in the object it is (encoding/json writes
// a metric's values before it).
func IsMetricLine(line []byte) bool {
	var doc struct {
		AWS *struct {
			CloudWatchMetrics json.RawMessage `json:"CloudWatchMetrics"`
		} `json:"_aws"`
	}
	return json.Unmarshal(line, &doc) == nil && doc.AWS != nil && len(doc.AWS.CloudWatchMetrics) > 0
}

// traceID is the form of an X-Ray trace id: version, epoch seconds in hex, 96 random bits.
var traceID = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)

// levels are the levels Lambda's log-level filtering recognises in a JSON line.
var levels = map[string]bool{"TRACE": true, "DEBUG": true, "INFO": true, "WARN": true, "ERROR": true, "FATAL": true}

// CheckInvocationLine reports what a line a function wrote to stdout during an invocation
// lacks of the format operators query: it must be a JSON object, and unless it is an EMF
// metric line, carry a level Lambda recognises, a timestamp in TimestampLayout, a message, the
// service, cold_start, the request id and the X-Ray trace id. The boot test holds every
// function's real output to it.
func CheckInvocationLine(line []byte) error {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if IsMetricLine(line) {
		return nil
	}
	var problems []string
	str := func(key string) (string, bool) {
		s, ok := m[key].(string)
		if !ok || s == "" {
			problems = append(problems, "no "+key)
		}
		return s, ok
	}
	if lvl, ok := str(KeyLevel); ok && !levels[lvl] {
		problems = append(problems, fmt.Sprintf("level %q is none of Lambda's", lvl))
	}
	if ts, ok := str(KeyTimestamp); ok {
		if t, err := time.Parse(TimestampLayout, ts); err != nil || t.Format(TimestampLayout) != ts || t.Location() != time.UTC {
			problems = append(problems, fmt.Sprintf("timestamp %q is not RFC 3339 in UTC with milliseconds", ts))
		}
	}
	if _, ok := m[KeyMessage].(string); !ok {
		problems = append(problems, "no "+KeyMessage)
	}
	str(KeyService)
	if _, ok := m[KeyColdStart].(bool); !ok {
		problems = append(problems, "no "+KeyColdStart)
	}
	str(KeyRequestID)
	if id, ok := str(KeyTraceID); ok && !traceID.MatchString(id) {
		problems = append(problems, fmt.Sprintf("%s %q is not an X-Ray trace id", KeyTraceID, id))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
