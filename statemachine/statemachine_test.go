package statemachine

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

func arns() map[string]string {
	m := map[string]string{}
	for _, s := range Steps {
		m[s.Name] = "arn:aws:lambda:us-east-1:000000000000:function:" + s.Name
	}
	return m
}

func TestDefinitionIsTheEmbeddedASL(t *testing.T) {
	var def struct {
		StartAt string
		States  map[string]json.RawMessage
	}
	if err := json.Unmarshal(Definition(), &def); err != nil {
		t.Fatalf("%s is not JSON: %v", File, err)
	}
	if def.StartAt != "Claim seats" || len(def.States) == 0 {
		t.Fatalf("StartAt %q, %d states", def.StartAt, len(def.States))
	}
	// Callers get a copy: changing it must not change what the next caller reads.
	d := Definition()
	d[0] = 'x'
	if Definition()[0] == 'x' {
		t.Fatal("Definition returned the embedded bytes themselves")
	}
}

func TestStepsAreTheDefinitionsPlaceholders(t *testing.T) {
	var want []string
	names := map[string]bool{}
	for _, s := range Steps {
		if names[s.Name] {
			t.Errorf("step %s listed twice", s.Name)
		}
		names[s.Name] = true
		if s.Placeholder != strings.ToUpper(s.Name[:1])+s.Name[1:]+"FunctionArn" {
			t.Errorf("step %s: placeholder %s", s.Name, s.Placeholder)
		}
		want = append(want, s.Placeholder)
	}
	for _, i := range Integrations {
		want = append(want, i.Placeholder)
	}
	slices.Sort(want)
	// Every placeholder names a step or an integration, and every one is used: nothing is
	// substituted unused.
	if got := Placeholders(Definition()); !slices.Equal(got, want) {
		t.Fatalf("the definition uses %v, the steps and integrations are %v", got, want)
	}
	// No ARN is spelt out: each one's partition is the deployment's.
	if bytes.Contains(Definition(), []byte(`"arn:`)) {
		t.Error("the definition spells out an ARN; name it by a placeholder so that it takes the deployment's partition")
	}
	if err := Check(Definition()); err != nil {
		t.Fatal(err)
	}
	if s, ok := StepFor("ReconcileFunctionArn"); !ok || s.Name != "reconcile" {
		t.Errorf("StepFor = %v, %v", s, ok)
	}
	if _, ok := StepFor("ApiFunctionArn"); ok {
		t.Error("ApiFunctionArn names a step")
	}
}

func TestPlaceholders(t *testing.T) {
	for _, tc := range []struct {
		name, def string
		want      []string
	}{
		{"none", `{"StartAt":"A"}`, []string{}},
		{"distinct and sorted", `"${ConfirmFunctionArn}" "${ClaimFunctionArn}" "${ClaimFunctionArn}"`, []string{"ClaimFunctionArn", "ConfirmFunctionArn"}},
		{"JSONPath dollars are not placeholders", `{"a.$":"$.x","b":"$$.Task.Token"}`, []string{}},
		{"any name, so that a misspelling is reported", `"${Claim-Function}"`, []string{"Claim-Function"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Placeholders([]byte(tc.def)); !slices.Equal(got, tc.want) {
				t.Errorf("Placeholders = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSubstituteReplacesEveryStepAndTheEngineParsesTheResult(t *testing.T) {
	def, err := Substitute(arns())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(def, []byte("${")) {
		t.Fatal("a placeholder is left")
	}
	if !bytes.Contains(def, []byte(`"arn:aws:states:::lambda:invoke.waitForTaskToken"`)) {
		t.Error("the payment wait's integration is not in the step ARNs' partition")
	}
	for _, s := range Steps {
		if !bytes.Contains(def, []byte(`"arn:aws:lambda:us-east-1:000000000000:function:`+s.Name+`"`)) {
			t.Errorf("no ARN of %s in the result", s.Name)
		}
	}
	if _, err := asl.Parse(def); err != nil {
		t.Fatalf("the substituted definition does not parse: %v", err)
	}
}

func TestSubstituteRefusesWhatItCannotResolve(t *testing.T) {
	withoutConfirm := arns()
	delete(withoutConfirm, "confirm")
	misspelt := arns()
	misspelt["claims"] = "arn:aws:lambda:us-east-1:000000000000:function:claims"
	twoPartitions := arns()
	twoPartitions["confirm"] = "arn:aws-cn:lambda:cn-north-1:000000000000:function:confirm"
	for _, tc := range []struct {
		name string
		def  string
		arns map[string]string
		want string
	}{
		{"unknown placeholder", `{"Resource":"${ClaimFunctionArn}","Other":"${TableName}"}`, arns(), "${TableName}"},
		{"a function that is not a step", `{"Resource":"${ApiFunctionArn}"}`, arns(), "${ApiFunctionArn}"},
		{"step without an ARN", `{"Resource":"${ConfirmFunctionArn}"}`, withoutConfirm, "no ARN for step confirm"},
		{"ARN for no step", `{"Resource":"${ClaimFunctionArn}"}`, misspelt, `"claims" is not a step function`},
		{"step ARNs in two partitions", `{"Resource":"${LambdaInvokeWaitForTaskTokenArn}"}`, twoPartitions, "partitions [aws aws-cn]"},
		{"partition of no ARN", `{"Resource":"${LambdaInvokeWaitForTaskTokenArn}"}`, map[string]string{"claim": "claim"}, `"claim" is not an ARN`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := SubstituteIn([]byte(tc.def), tc.arns)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (out %s), want one naming %s", err, out, tc.want)
			}
		})
	}
	if _, err := Substitute(withoutConfirm); err == nil {
		t.Fatal("the embedded definition substituted without confirm's ARN")
	}
}

func TestStateNames(t *testing.T) {
	names := StateNames()
	for _, want := range []string{"Claim seats", "Wait for payment authorization", "Confirmed", "Release expired hold", "Claim failed",
		"Hold expired", "Reconciled: hold expired"} {
		if !slices.Contains(names, want) {
			t.Errorf("no state %q in %v", want, names)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("not sorted: %v", names)
	}
}

// An integration's placeholder takes the step ARNs' partition, so the same definition names
// the right service integration in any partition.
func TestSubstitutePutsTheStepARNsPartitionInTheIntegrations(t *testing.T) {
	cn := map[string]string{}
	for _, s := range Steps {
		cn[s.Name] = "arn:aws-cn:lambda:cn-north-1:000000000000:function:" + s.Name
	}
	def, err := Substitute(cn)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(def, []byte(`"arn:aws-cn:states:::lambda:invoke.waitForTaskToken"`)) || bytes.Contains(def, []byte("arn:aws:")) {
		t.Errorf("the substituted definition is not in partition aws-cn: %s", def)
	}
	if i, ok := IntegrationFor("LambdaInvokeWaitForTaskTokenArn"); !ok || i.ARN("aws-us-gov") != "arn:aws-us-gov:states:::lambda:invoke.waitForTaskToken" {
		t.Errorf("IntegrationFor = %v, %v", i, ok)
	}
}

// Every execution is bounded: the definition sets a top-level TimeoutSeconds and the local
// engine reads it, so a stuck execution times out (TIMED_OUT) instead of running for a year.
// internal/saga's TestExecutionTimeoutIsBeyondEveryLegitimatePath shows that no legitimate
// path reaches it.
func TestDefinitionBoundsEveryExecution(t *testing.T) {
	def, err := Substitute(arns())
	if err != nil {
		t.Fatal(err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	var top struct{ TimeoutSeconds int }
	if err := json.Unmarshal(Definition(), &top); err != nil {
		t.Fatal(err)
	}
	if top.TimeoutSeconds <= 0 || sm.TimeoutSeconds != top.TimeoutSeconds {
		t.Fatalf("TimeoutSeconds %d, the engine reads %d", top.TimeoutSeconds, sm.TimeoutSeconds)
	}
}

// Only the endings that need a person are Fail states; the business endings succeed (their
// output names the outcome: internal/saga's TestBusinessEndingsOfTheDefinition).
func TestOnlyIncidentsAreFailStates(t *testing.T) {
	var def struct {
		States map[string]struct{ Type, Error string }
	}
	if err := json.Unmarshal(Definition(), &def); err != nil {
		t.Fatal(err)
	}
	fails := map[string]string{}
	succeeds := 0
	for name, st := range def.States {
		switch st.Type {
		case "Fail":
			fails[name] = st.Error
		case "Succeed":
			succeeds++
		}
	}
	if len(fails) != 3 || fails["Claim failed"] != "ClaimFailed" || fails["Needs reconciliation"] != "NeedsReconciliation" ||
		fails["Rejected: invalid request"] != "InvalidRequest" {
		t.Fatalf("Fail states %v, want Claim failed, Needs reconciliation and Rejected: invalid request only", fails)
	}
	// Confirmed, and six business outcomes, four of them also reached from reconciliation.
	if succeeds != 11 {
		t.Fatalf("%d Succeed states, want 12", succeeds)
	}
}

// The happy path is five state entries and a lost race two, both ending in a Succeed state:
// the business ending adds no state to the path, its output is selected from what the claim's
// Catch wrote.
func TestHappyPathAndLostRaceLengths(t *testing.T) {
	var def struct {
		StartAt string
		States  map[string]struct {
			Type, Next, OutputPath string
			Catch                  []struct {
				ErrorEquals []string
				ResultPath  string
				Next        string
			}
		}
	}
	if err := json.Unmarshal(Definition(), &def); err != nil {
		t.Fatal(err)
	}
	var happy []string
	for name := def.StartAt; name != ""; name = def.States[name].Next {
		happy = append(happy, name)
	}
	if want := []string{"Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed"}; !slices.Equal(happy, want) {
		t.Fatalf("happy path %q, want %q", happy, want)
	}
	if st := def.States["Confirmed"]; st.Type != "Succeed" || st.OutputPath != "" {
		t.Errorf("Confirmed: %+v", st)
	}
	lost := []string{def.StartAt}
	for _, c := range def.States[def.StartAt].Catch {
		if slices.Equal(c.ErrorEquals, []string{"SeatUnavailable"}) {
			lost = append(lost, c.Next)
			if end := def.States[c.Next]; end.Type != "Succeed" || end.OutputPath != c.ResultPath || end.Next != "" {
				t.Errorf("%s: %+v after a Catch into %s", c.Next, end, c.ResultPath)
			}
		}
	}
	if want := []string{"Claim seats", "Rejected: seats taken"}; !slices.Equal(lost, want) {
		t.Fatalf("lost race %q, want %q", lost, want)
	}
}
