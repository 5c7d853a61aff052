package saga

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/statemachine"
)

func TestEndingOf(t *testing.T) {
	verdict := func(name string) string {
		v, ok := VerdictOf(name)
		if !ok {
			t.Fatalf("%s is not a business outcome", name)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	business := func(name string) Ending {
		v, _ := VerdictOf(name)
		return Ending{Finished: true, Outcome: name, Cause: v.Cause}
	}
	confirmed := `{"reservationId":"r1","hold":{"version":1},"capture":{"amountCaptured":5000},"failure":{"Error":"Lambda.ServiceException","Cause":"crashed"}}`
	cases := []struct {
		name                      string
		status, output, errorName string
		want                      Ending
	}{
		{"running: nothing is known yet", "RUNNING", "", "", Ending{}},
		{"a redrive pending runs again", "PENDING_REDRIVE", "", "States.TaskFailed", Ending{}},
		{"confirmed: the state, with no top-level Error (a nested one is an earlier failure)", "SUCCEEDED", confirmed, "", Ending{Finished: true, Outcome: EndConfirmed}},
		{"confirmed by reconciliation finding the payment captured", "SUCCEEDED", `{"reservationId":"r1","reconcile":{"attempt":2,"outcome":"paid"}}`, "",
			Ending{Finished: true, Outcome: EndConfirmed}},
		{"an empty output is no sale", "SUCCEEDED", `{}`, "", Ending{Finished: true, Outcome: "(unreadable output)", NeedsPerson: true}},
		{"a business ending that lost its OutputPath is no sale", "SUCCEEDED", `{"reservationId":"r1","verdict":{"Error":"SeatUnavailable"}}`, "",
			Ending{Finished: true, Outcome: "(unreadable output)", NeedsPerson: true}},
		{"seats taken", "SUCCEEDED", verdict(EndSeatUnavailable), "", business(EndSeatUnavailable)},
		{"payment declined, with what the compensation did", "SUCCEEDED",
			`{"Error":"PaymentDeclined","Cause":"The payment failed; the seats were released.","compensation":{"payment":"voided","seatsReleased":true}}`, "",
			business(EndPaymentDeclined)},
		{"customer canceled", "SUCCEEDED", verdict(EndCustomerCanceled), "", business(EndCustomerCanceled)},
		{"hold expired", "SUCCEEDED", verdict(EndHoldExpired), "", business(EndHoldExpired)},
		{"late payment voided", "SUCCEEDED", verdict(EndVoidedAfterLatePayment), "", business(EndVoidedAfterLatePayment)},
		{"capture failed", "SUCCEEDED", verdict(EndCaptureFailed), "", business(EndCaptureFailed)},
		{"a caught Lambda error's cause is its message", "SUCCEEDED",
			`{"Error":"SeatUnavailable","Cause":"{\"errorMessage\":\"seat A1 is taken\",\"errorType\":\"SeatUnavailable\"}"}`, "",
			Ending{Finished: true, Outcome: EndSeatUnavailable, Cause: "seat A1 is taken"}},
		{"a cause that is not an error document stays as it is", "SUCCEEDED", `{"Error":"SeatUnavailable","Cause":"{not json"}`, "",
			Ending{Finished: true, Outcome: EndSeatUnavailable, Cause: "{not json"}},
		{"an outcome nobody knows: the definition and its readers disagree", "SUCCEEDED", `{"Error":"SeatsMoved","Cause":"?"}`, "",
			Ending{Finished: true, Outcome: "SeatsMoved", Cause: "?", NeedsPerson: true}},
		{"an Error that is not a name", "SUCCEEDED", `{"Error":7}`, "", Ending{Finished: true, Outcome: "(unreadable output)", NeedsPerson: true}},
		{"no output at all", "SUCCEEDED", "", "", Ending{Finished: true, Outcome: "(unreadable output)", NeedsPerson: true}},
		{"an output that is not an object", "SUCCEEDED", `["Confirmed"]`, "", Ending{Finished: true, Outcome: "(unreadable output)", NeedsPerson: true}},
		{"failed: needs reconciliation", "FAILED", "", EndNeedsReconciliation, Ending{Finished: true, Outcome: EndNeedsReconciliation, NeedsPerson: true}},
		{"failed: claim failed", "FAILED", "", EndClaimFailed, Ending{Finished: true, Outcome: EndClaimFailed, NeedsPerson: true}},
		{"failed: an error no Catch handles", "FAILED", "", "States.TaskFailed", Ending{Finished: true, Outcome: "States.TaskFailed", NeedsPerson: true}},
		{"failed without an error", "FAILED", "", "", Ending{Finished: true, Outcome: "(no error)", NeedsPerson: true}},
		{"timed out", "TIMED_OUT", "", "States.Timeout", Ending{Finished: true, Outcome: EndTimedOut, NeedsPerson: true}},
		{"aborted", "ABORTED", "", "", Ending{Finished: true, Outcome: EndAborted, NeedsPerson: true}},
		{"a status nobody knows", "PAUSED", "", "", Ending{Finished: true, Outcome: "(status PAUSED)", NeedsPerson: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EndingOf(tc.status, tc.output, tc.errorName); got != tc.want {
				t.Fatalf("EndingOf(%s, %s, %q) = %+v, want %+v", tc.status, tc.output, tc.errorName, got, tc.want)
			}
		})
	}
}

// Every business outcome has a sentence, and the names are the Fail states' old errors: the
// routed error names where the ending comes from a step's error.
func TestBusinessOutcomes(t *testing.T) {
	want := []string{ErrSeatUnavailable, ErrPaymentDeclined, ErrCustomerCanceled, ErrHoldExpired, "VoidedAfterLatePayment", ErrCaptureFailed}
	if got := BusinessOutcomes(); !slices.Equal(got, want) {
		t.Fatalf("BusinessOutcomes = %v, want %v", got, want)
	}
	for _, name := range want {
		if v, ok := VerdictOf(name); !ok || v.Error != name || v.Cause == "" {
			t.Errorf("VerdictOf(%s) = %+v, %v", name, v, ok)
		}
	}
	for _, incident := range []string{EndConfirmed, EndNeedsReconciliation, EndClaimFailed, EndTimedOut, EndAborted} {
		if _, ok := VerdictOf(incident); ok {
			t.Errorf("%s is listed as a business outcome", incident)
		}
	}
}

// The reconcile step's settled outcomes carry the verdict of the ending they route to; the
// others carry none, so no output of a path that goes on names an ending.
func TestReconcileVerdicts(t *testing.T) {
	for _, tc := range []struct {
		outcome, want string
	}{
		{OutcomeExpired, EndHoldExpired},
		{OutcomeFailed, EndPaymentDeclined},
		{OutcomeCanceled, EndCustomerCanceled},
		{OutcomeVoided, EndVoidedAfterLatePayment},
		{OutcomeCaptureFailed, EndCaptureFailed},
		{OutcomePaid, ""},
		{OutcomeCapture, ""},
		{OutcomeRetry, ""},
		{OutcomeResume, ""},
		{OutcomeUnresolved, ""},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			v := reconcileVerdict(tc.outcome)
			switch {
			case tc.want == "" && v != nil:
				t.Fatalf("verdict %+v, want none", v)
			case tc.want != "" && (v == nil || v.Error != tc.want):
				t.Fatalf("verdict %+v, want %s", v, tc.want)
			}
		})
	}
}

// aslState is what TestBusinessEndingsOfTheDefinition reads of a state.
type aslState struct {
	Type           string
	Next           string
	Default        string
	ResultPath     *string
	OutputPath     string
	Error          string
	ResultSelector map[string]any
	Catch          []struct {
		ErrorEquals []string
		ResultPath  *string
		Next        string
	}
	Choices []struct {
		Variable     string
		StringEquals string
		Next         string
	}
}

// TestBusinessEndingsOfTheDefinition reads the ASL as data (endingProblems): the only Fail
// states are the three that need a person; every other ending is a Succeed state that outputs a
// verdict slot, and every way into it writes that slot with the same business outcome. The
// controls break the definition in each of those ways and expect the check to say so.
func TestBusinessEndingsOfTheDefinition(t *testing.T) {
	if problems := endingProblems(statemachine.Definition()); len(problems) > 0 {
		t.Fatalf("the definition's endings:\n%s", strings.Join(problems, "\n"))
	}
	for _, tc := range []struct {
		name   string
		change func(states map[string]map[string]any)
		want   string
	}{
		{"a business outcome fails again", func(s map[string]map[string]any) {
			s["Payment failed"] = map[string]any{"Type": "Fail", "Error": "PaymentDeclined"}
		}, "Fail states"},
		{"reconciliation shares an ending reached from a compensation", func(s map[string]map[string]any) {
			for _, c := range s["What did reconciliation find?"]["Choices"].([]any) {
				if c := c.(map[string]any); c["StringEquals"] == OutcomeExpired {
					c["Next"] = "Hold expired"
				}
			}
		}, `Hold expired outputs $.verdict but What did reconciliation find? on expired writes "$.reconcile.verdict" there`},
		{"a Catch into an ending writes no verdict", func(s map[string]map[string]any) {
			for _, c := range s["Claim seats"]["Catch"].([]any) {
				if c := c.(map[string]any); c["Next"] == "Rejected: seats taken" {
					c["ResultPath"] = "$.failure"
				}
			}
		}, `Rejected: seats taken outputs $.verdict but a Catch of Claim seats writes "$.failure" there`},
		{"a compensation's sentence differs from VerdictOf's", func(s map[string]map[string]any) {
			s["Release expired hold"]["ResultSelector"].(map[string]any)["Cause"] = "Expired."
		}, "Release expired hold: ResultSelector"},
		{"an ending selects no verdict", func(s map[string]map[string]any) {
			delete(s["Capture failed"], "OutputPath")
		}, `Capture failed outputs ""`},
		{"an outcome without an ending", func(s map[string]map[string]any) {
			for _, c := range s["What did reconciliation find?"]["Choices"].([]any) {
				if c := c.(map[string]any); c["StringEquals"] == OutcomeVoided {
					c["Next"] = "Needs reconciliation"
				}
			}
		}, "no Succeed state ends with VoidedAfterLatePayment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var def map[string]any
			if err := json.Unmarshal(statemachine.Definition(), &def); err != nil {
				t.Fatal(err)
			}
			states := map[string]map[string]any{}
			for name, st := range def["States"].(map[string]any) {
				states[name] = st.(map[string]any)
			}
			tc.change(states)
			def["States"] = states
			raw, _ := json.Marshal(def)
			problems := endingProblems(raw)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Fatalf("problems %q, want one naming %q", problems, tc.want)
			}
		})
	}
}

// endingProblems checks a definition's endings. A Catch writes the caught error ({Error,
// Cause}) at its ResultPath, a compensation writes its static verdict at its ResultPath with
// its ResultSelector, and "What did reconciliation find?" routes an outcome whose reconcile
// verdict is at $.reconcile.verdict; each Succeed ending but Confirmed must output the slot
// every way into it writes, with one business outcome. Every business outcome has an ending,
// and the ResultSelectors spell the same sentences as VerdictOf.
func endingProblems(raw []byte) []string {
	var problems []string
	fault := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var def struct {
		States map[string]aslState
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		return []string{err.Error()}
	}
	fails := map[string]string{}
	for name, st := range def.States {
		if st.Type == "Fail" {
			fails[name] = st.Error
		}
	}
	if want := map[string]string{"Claim failed": EndClaimFailed, "Needs reconciliation": EndNeedsReconciliation,
		"Rejected: invalid request": EndInvalidRequest}; !maps.Equal(fails, want) {
		fault("Fail states %v, want only those that need a person %v", fails, want)
	}

	// wayIn is one way into a state: from where, the slot it writes a verdict at ("" for
	// none) and that verdict's Error.
	type wayIn struct{ from, slot, outcome string }
	ways := map[string][]wayIn{}
	for name, st := range def.States {
		for _, c := range st.Catch {
			w := wayIn{from: "a Catch of " + name}
			if len(c.ErrorEquals) == 1 && c.ResultPath != nil {
				w.slot, w.outcome = *c.ResultPath, c.ErrorEquals[0]
			}
			ways[c.Next] = append(ways[c.Next], w)
		}
		if st.Next != "" {
			w := wayIn{from: name}
			if e, ok := st.ResultSelector["Error"].(string); ok && st.ResultPath != nil {
				cause, _ := st.ResultSelector["Cause"].(string)
				if v, ok := VerdictOf(e); !ok || cause != v.Cause || st.ResultSelector["compensation.$"] != "$" {
					fault("%s: ResultSelector %v, want a business Error, its Cause %q and compensation.$ $", name, st.ResultSelector, v.Cause)
				}
				w.slot, w.outcome = *st.ResultPath, e
			}
			ways[st.Next] = append(ways[st.Next], w)
		}
		for _, c := range st.Choices {
			w := wayIn{from: name + " on " + c.StringEquals}
			if v := reconcileVerdict(c.StringEquals); c.Variable == "$.reconcile.outcome" && v != nil {
				w.slot, w.outcome = "$.reconcile.verdict", v.Error
			}
			ways[c.Next] = append(ways[c.Next], w)
		}
		if st.Default != "" {
			ways[st.Default] = append(ways[st.Default], wayIn{from: name + "'s Default"})
		}
	}

	reached := map[string]bool{}
	for name, st := range def.States {
		if st.Type != "Succeed" {
			continue
		}
		if name == "Confirmed" {
			// Its output is the execution's state, whichever way it was reached.
			if st.OutputPath != "" {
				fault("Confirmed selects %s", st.OutputPath)
			}
			for _, w := range ways[name] {
				if w.slot != "" {
					fault("Confirmed is reached from %s with the verdict %s", w.from, w.outcome)
				}
			}
			continue
		}
		if len(ways[name]) == 0 {
			fault("%s is reached from nowhere", name)
		}
		if st.OutputPath != "$.verdict" && st.OutputPath != "$.reconcile.verdict" {
			fault("%s outputs %q, want $.verdict or $.reconcile.verdict", name, st.OutputPath)
		}
		outcome := ""
		for _, w := range ways[name] {
			if _, business := VerdictOf(w.outcome); w.slot != st.OutputPath || !business {
				fault("%s outputs %s but %s writes %q there (verdict %q)", name, st.OutputPath, w.from, w.slot, w.outcome)
				continue
			}
			if outcome != "" && w.outcome != outcome {
				fault("%s is reached with %s and %s", name, outcome, w.outcome)
			}
			outcome = w.outcome
		}
		reached[outcome] = true
	}
	for _, o := range BusinessOutcomes() {
		if !reached[o] {
			fault("no Succeed state ends with %s", o)
		}
	}
	return problems
}
