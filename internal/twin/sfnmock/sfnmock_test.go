package sfnmock

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestFixture(t *testing.T) {
	cfg, err := Load("../../../testdata/sfnmock/MockConfigFile.json")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		ok      bool
		payload string // a field of Payload to check, for Return
		errName string
		cause   string
	}
	cases := []struct {
		name     string
		machine  string
		testCase string
		state    string
		attempt  int
		want     want
	}{
		{"return on first attempt", "reservation", "HappyPath", "Claim seats", 0, want{ok: true, payload: "r-1"}},
		{"throw a named error", "reservation", "SeatTaken", "Claim seats", 0, want{ok: true, errName: "SeatUnavailable", cause: `{"errorType":"SeatUnavailable","errorMessage":"seat A1 is held by another reservation"}`}},
		{"attempt 0 of a range file", "reservation", "CaptureRetried", "Capture payment", 0, want{ok: true, errName: "Lambda.ServiceException", cause: "An internal service error occurred."}},
		{"start of a range", "reservation", "CaptureRetried", "Capture payment", 1, want{ok: true, errName: "PaymentUncertain", cause: "capture response lost"}},
		{"end of a range", "reservation", "CaptureRetried", "Capture payment", 2, want{ok: true, errName: "PaymentUncertain", cause: "capture response lost"}},
		{"after the range", "reservation", "CaptureRetried", "Capture payment", 3, want{ok: true}},
		{"past the last key fails the execution", "reservation", "CaptureRetried", "Capture payment", 4, want{ok: true, errName: "States.Runtime",
			cause: `mocked response "CaptureFlaky" of test case "CaptureRetried" has no response for invocation 4 of state "Capture payment"`}},
		{"state not mocked in this test case", "reservation", "SeatTaken", "Capture payment", 0, want{}},
		{"unknown test case", "reservation", "NoSuchCase", "Claim seats", 0, want{}},
		{"unknown state machine", "other", "HappyPath", "Claim seats", 0, want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errName, cause, ok := cfg.Mock(tc.machine, tc.testCase, tc.state, tc.attempt)
			if ok != tc.want.ok || errName != tc.want.errName || cause != tc.want.cause {
				t.Fatalf("got ok=%v err=%q cause=%q, want %+v", ok, errName, cause, tc.want)
			}
			if !ok || errName != "" {
				if out != nil {
					t.Fatalf("output %s alongside an error or a miss", out)
				}
				return
			}
			var ret struct {
				StatusCode int
				Payload    map[string]any
			}
			if err := json.Unmarshal(out, &ret); err != nil {
				t.Fatalf("output %s: %v", out, err)
			}
			if ret.StatusCode != 200 {
				t.Fatalf("StatusCode %d", ret.StatusCode)
			}
			if tc.want.payload != "" && ret.Payload["reservationId"] != tc.want.payload {
				t.Fatalf("payload %v", ret.Payload)
			}
		})
	}
	if !cfg.HasTestCase("reservation", "HappyPath") || cfg.HasTestCase("reservation", "Nope") {
		t.Error("HasTestCase")
	}
	if got := strings.Join(cfg.TestCases("reservation"), ","); got != "CaptureExhausted,CaptureRetried,HappyPath,RealCapture,SeatTaken" {
		t.Errorf("TestCases = %s", got)
	}
}

func TestMockOutputIsACopy(t *testing.T) {
	cfg, err := Parse([]byte(`{"StateMachines":{"m":{"TestCases":{"t":{"S":"R"}}}},"MockedResponses":{"R":{"0":{"Return":{"a":1}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _, _, _ := cfg.Mock("m", "t", "S", 0)
	out[0] = 'X'
	again, _, _, _ := cfg.Mock("m", "t", "S", 0)
	if string(again) != `{"a":1}` {
		t.Fatalf("mutating one result changed the next: %s", again)
	}
}

func TestReturnNullAndScalars(t *testing.T) {
	cfg, err := Parse([]byte(`{"StateMachines":{"m":{"TestCases":{"t":{"A":"N","B":"S"}}}},
		"MockedResponses":{"N":{"0":{"Return":null}},"S":{"0":{"Return":"text"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _, ok := cfg.Mock("m", "t", "A", 0); !ok || string(out) != "null" {
		t.Fatalf("null return: %s %v", out, ok)
	}
	if out, _, _, ok := cfg.Mock("m", "t", "B", 0); !ok || string(out) != `"text"` {
		t.Fatalf("string return: %s %v", out, ok)
	}
}

func TestValidation(t *testing.T) {
	const machines = `"StateMachines":{"m":{"TestCases":{"t":{"S":"R"}}}}`
	cases := []struct {
		name string
		doc  string
		want []string // substrings every one of which must appear
	}{
		{"not JSON", `{`, []string{"not a mock configuration"}},
		{"unknown top-level field", `{"StateMachine":{}, "MockedResponses":{}}`, []string{`unknown field "StateMachine"`}},
		{"missing StateMachines", `{"MockedResponses":{"R":{"0":{"Return":1}}}}`, []string{"StateMachines is missing"}},
		{"empty TestCases", `{"StateMachines":{"m":{"TestCases":{}}},"MockedResponses":{}}`, []string{"StateMachines.m: TestCases is missing or empty"}},
		{"undefined response", `{` + machines + `,"MockedResponses":{}}`, []string{`StateMachines.m.TestCases.t.S: mocked response "R" is not defined`}},
		{"both Return and Throw", `{` + machines + `,"MockedResponses":{"R":{"0":{"Return":1,"Throw":{"Error":"E","Cause":""}}}}}`, []string{"MockedResponses.R: 0: has both Return and Throw"}},
		{"neither", `{` + machines + `,"MockedResponses":{"R":{"0":{}}}}`, []string{"MockedResponses.R: 0: has neither Return nor Throw"}},
		{"Throw without Error", `{` + machines + `,"MockedResponses":{"R":{"0":{"Throw":{"Cause":"c"}}}}}`, []string{"MockedResponses.R: 0.Throw: Error is missing or empty"}},
		{"Throw without Cause", `{` + machines + `,"MockedResponses":{"R":{"0":{"Throw":{"Error":"E"}}}}}`, []string{"MockedResponses.R: 0.Throw: Cause is missing"}},
		{"misspelt Throw field", `{` + machines + `,"MockedResponses":{"R":{"0":{"Throw":{"Error":"E","Casue":"c"}}}}}`, []string{`unknown field "Casue"`}},
		{"bad key", `{` + machines + `,"MockedResponses":{"R":{"first":{"Return":1}}}}`, []string{`MockedResponses.R: key "first"`}},
		{"negative key", `{` + machines + `,"MockedResponses":{"R":{"-1":{"Return":1}}}}`, []string{`key "-1"`}},
		{"reversed range", `{` + machines + `,"MockedResponses":{"R":{"0":{"Return":1},"3-1":{"Return":1}}}}`, []string{"range ends before it starts"}},
		{"gap", `{` + machines + `,"MockedResponses":{"R":{"0":{"Return":1},"2":{"Return":1}}}}`, []string{"attempts 1 have no response"}},
		{"not starting at 0", `{` + machines + `,"MockedResponses":{"R":{"1-3":{"Return":1}}}}`, []string{"attempts 0 have no response"}},
		{"overlap", `{` + machines + `,"MockedResponses":{"R":{"0-2":{"Return":1},"2":{"Return":1}}}}`, []string{"attempt 2 is mocked twice"}},
		{"empty response", `{` + machines + `,"MockedResponses":{"R":{}}}`, []string{"MockedResponses.R: has no responses"}},
		{"several problems at once", `{"StateMachines":{"m":{"TestCases":{"t":{"S":"R","T":"Missing"}}}},"MockedResponses":{"R":{"0":{}}}}`,
			[]string{"has neither Return nor Throw", `mocked response "Missing" is not defined`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSplitTestCase(t *testing.T) {
	arn, tc := SplitTestCase("arn:aws:states:us-east-1:123456789012:stateMachine:reservation#HappyPath")
	if arn != "arn:aws:states:us-east-1:123456789012:stateMachine:reservation" || tc != "HappyPath" {
		t.Fatalf("got %q %q", arn, tc)
	}
	if arn, tc := SplitTestCase("arn:x"); arn != "arn:x" || tc != "" {
		t.Fatalf("got %q %q", arn, tc)
	}
}

func TestNilConfigMocksNothing(t *testing.T) {
	var cfg *Config
	if _, _, _, ok := cfg.Mock("m", "t", "S", 0); ok {
		t.Fatal("a nil config mocked a state")
	}
}
