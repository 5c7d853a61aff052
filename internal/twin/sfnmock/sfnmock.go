// Package sfnmock reads AWS Step Functions Local's mock configuration file (MockConfigFile.json,
// "mocked service integrations" in the Step Functions developer guide) and answers, for a
// state machine, a test case, a state and an attempt, the mocked result or error of that task.
// The local engine consults it instead of calling the task's resource, so tests written for
// Step Functions Local run unchanged.
//
// The format:
//
//	{
//	  "StateMachines": {
//	    "<state machine name>": {
//	      "TestCases": {
//	        "<test case>": { "<state name>": "<mocked response name>" }
//	      }
//	    }
//	  },
//	  "MockedResponses": {
//	    "<mocked response name>": {
//	      "0":   { "Return": <any JSON> },
//	      "1-2": { "Throw": { "Error": "Lambda.TimeoutException", "Cause": "..." } }
//	    }
//	  }
//	}
//
// Keys of a mocked response are zero-based invocation numbers or inclusive ranges; invocation 0
// is the first of the state in the execution and each retry adds one. As the guide requires,
// keys must cover every invocation from 0 without gaps or overlaps, each response holds exactly
// one of Return and Throw, and a Throw has string Error and Cause fields.
package sfnmock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Config is a parsed and validated mock configuration. It is safe for concurrent use; it is
// never modified after Parse.
type Config struct {
	stateMachines map[string]map[string]map[string]string // machine → test case → state → response
	responses     map[string][]step
}

// step is one attempt range of a mocked response.
type step struct {
	first, last int
	output      json.RawMessage // set for Return
	errName     string          // set for Throw
	cause       string
}

// ValidationError lists every problem found in a mock configuration, each naming where it is.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid mock configuration: " + strings.Join(e.Problems, "; ")
}

// Load reads and parses a mock configuration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sfnmock: read %s: %w", path, err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("sfnmock: %s: %w", path, err)
	}
	return cfg, nil
}

type rawFile struct {
	StateMachines   map[string]rawMachine                 `json:"StateMachines"`
	MockedResponses map[string]map[string]json.RawMessage `json:"MockedResponses"`
}

type rawMachine struct {
	TestCases map[string]map[string]string `json:"TestCases"`
}

type rawResponse struct {
	Return json.RawMessage `json:"Return"`
	Throw  *rawThrow       `json:"Throw"`
}

type rawThrow struct {
	Error *string `json:"Error"`
	Cause *string `json:"Cause"`
}

// Parse parses and validates a mock configuration. Unknown fields are refused, so that a
// misspelt key fails loudly instead of silently mocking nothing.
func Parse(data []byte) (*Config, error) {
	var raw rawFile
	if err := strictUnmarshal(data, &raw); err != nil {
		return nil, &ValidationError{Problems: []string{"not a mock configuration: " + err.Error()}}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	cfg := &Config{
		stateMachines: map[string]map[string]map[string]string{},
		responses:     map[string][]step{},
	}
	for _, name := range sortedKeys(raw.MockedResponses) {
		steps, errs := parseResponse(raw.MockedResponses[name])
		for _, e := range errs {
			add("MockedResponses.%s: %s", name, e)
		}
		cfg.responses[name] = steps
	}
	if raw.StateMachines == nil {
		add("StateMachines is missing")
	}
	for _, machine := range sortedKeys(raw.StateMachines) {
		m := raw.StateMachines[machine]
		if len(m.TestCases) == 0 {
			add("StateMachines.%s: TestCases is missing or empty", machine)
		}
		cases := map[string]map[string]string{}
		for _, tc := range sortedKeys(m.TestCases) {
			states := m.TestCases[tc]
			if tc == "" {
				add("StateMachines.%s.TestCases: a test case has an empty name", machine)
			}
			for _, state := range sortedKeys(states) {
				resp := states[state]
				if _, ok := raw.MockedResponses[resp]; !ok {
					add("StateMachines.%s.TestCases.%s.%s: mocked response %q is not defined in MockedResponses", machine, tc, state, resp)
				}
			}
			cases[tc] = states
		}
		cfg.stateMachines[machine] = cases
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	return cfg, nil
}

func parseResponse(entries map[string]json.RawMessage) ([]step, []string) {
	var errs []string
	if len(entries) == 0 {
		return nil, []string{"has no responses (want at least \"0\")"}
	}
	var steps []step
	for _, key := range sortedKeys(entries) {
		first, last, err := parseRange(key)
		if err != nil {
			errs = append(errs, fmt.Sprintf("key %q: %v", key, err))
			continue
		}
		var r rawResponse
		if err := strictUnmarshal(entries[key], &r); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		s := step{first: first, last: last}
		switch {
		case r.Return != nil && r.Throw != nil:
			errs = append(errs, fmt.Sprintf("%s: has both Return and Throw; want exactly one", key))
			continue
		case r.Return != nil:
			s.output = r.Return
		case r.Throw != nil:
			if r.Throw.Error == nil || *r.Throw.Error == "" {
				errs = append(errs, fmt.Sprintf("%s.Throw: Error is missing or empty", key))
				continue
			}
			if r.Throw.Cause == nil {
				errs = append(errs, fmt.Sprintf("%s.Throw: Cause is missing (the guide requires Error and Cause)", key))
				continue
			}
			s.errName, s.cause = *r.Throw.Error, *r.Throw.Cause
		default:
			errs = append(errs, fmt.Sprintf("%s: has neither Return nor Throw; want exactly one", key))
			continue
		}
		steps = append(steps, s)
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].first < steps[j].first })
	next := 0
	for _, s := range steps {
		switch {
		case s.first < next:
			errs = append(errs, fmt.Sprintf("attempt %d is mocked twice (ranges overlap)", s.first))
		case s.first > next:
			errs = append(errs, fmt.Sprintf("attempts %s have no response (keys must run from 0 without gaps)", span(next, s.first-1)))
		}
		if s.last+1 > next {
			next = s.last + 1
		}
	}
	return steps, errs
}

func span(a, b int) string {
	if a == b {
		return strconv.Itoa(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

// parseRange parses "3" or "1-2" (inclusive).
func parseRange(key string) (first, last int, err error) {
	lo, hi, isRange := strings.Cut(key, "-")
	first, err = attempt(lo)
	if err != nil {
		return 0, 0, err
	}
	if !isRange {
		return first, first, nil
	}
	last, err = attempt(hi)
	if err != nil {
		return 0, 0, err
	}
	if last < first {
		return 0, 0, fmt.Errorf("range ends before it starts")
	}
	return first, last, nil
}

func attempt(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("want a non-negative attempt number or a range like \"1-2\"")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("attempt number out of range")
	}
	return n, nil
}

// Mock returns the mocked outcome of stateName on the given zero-based attempt in an execution
// of stateMachineName started for testCase. ok is false when that state is not mocked in that
// test case (the engine then runs the real task, as Step Functions Local does). Otherwise either
// output is the mocked result (Return) or errName and cause the mocked failure (Throw).
//
// The guide requires a mocked response for every invocation of a mocked Task and says the
// execution fails otherwise; an attempt past the last mocked one therefore gets ErrNoResponse
// (States.Runtime, which no Retry or Catch with States.ALL handles) and a cause naming it.
func (c *Config) Mock(stateMachineName, testCase, stateName string, attempt int) (output json.RawMessage, errName, cause string, ok bool) {
	if c == nil {
		return nil, "", "", false
	}
	resp, found := c.stateMachines[stateMachineName][testCase][stateName]
	if !found {
		return nil, "", "", false
	}
	for _, s := range c.responses[resp] {
		if attempt < s.first || attempt > s.last {
			continue
		}
		if s.errName != "" {
			return nil, s.errName, s.cause, true
		}
		return append(json.RawMessage(nil), s.output...), "", "", true
	}
	return nil, ErrNoResponse, fmt.Sprintf("mocked response %q of test case %q has no response for invocation %d of state %q",
		resp, testCase, attempt, stateName), true
}

// ErrNoResponse is the error a mocked state fails with when its mocked response does not cover
// the invocation.
const ErrNoResponse = "States.Runtime"

// HasTestCase reports whether the configuration defines testCase for stateMachineName, so that
// StartExecution can refuse an unknown test case instead of silently running unmocked.
func (c *Config) HasTestCase(stateMachineName, testCase string) bool {
	if c == nil {
		return false
	}
	_, ok := c.stateMachines[stateMachineName][testCase]
	return ok
}

// TestCases returns the test cases defined for stateMachineName, sorted.
func (c *Config) TestCases(stateMachineName string) []string {
	if c == nil {
		return nil
	}
	return sortedKeys(c.stateMachines[stateMachineName])
}

// SplitTestCase splits the StartExecution state machine ARN form Step Functions Local accepts
// for mocked runs, "<stateMachineArn>#<TestCase>", into the ARN and the test case ("" if none).
func SplitTestCase(stateMachineARN string) (arn, testCase string) {
	arn, testCase, _ = strings.Cut(stateMachineARN, "#")
	return arn, testCase
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
