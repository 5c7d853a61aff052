package stack

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestPlaceholdersAndFunctionNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  string
		want []string
	}{
		{"none", `{"StartAt":"A"}`, []string{}},
		{"distinct and sorted", `"${ConfirmFunctionArn}" "${ClaimFunctionArn}" "${ClaimFunctionArn}"`, []string{"ClaimFunctionArn", "ConfirmFunctionArn"}},
		{"JSONPath dollars are not placeholders", `{"a.$":"$.x","b":"$$.Task.Token"}`, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Placeholders(tc.def); !slices.Equal(got, tc.want) {
				t.Errorf("Placeholders = %v, want %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		placeholder, name string
		ok                bool
	}{
		{"ClaimFunctionArn", "claim", true},
		{"CompensateFunctionArn", "compensate", true},
		{"FunctionArn", "", false},
		{"ClaimTableName", "", false},
	} {
		name, ok := FunctionForPlaceholder(tc.placeholder)
		if name != tc.name || ok != tc.ok {
			t.Errorf("FunctionForPlaceholder(%q) = %q, %v; want %q, %v", tc.placeholder, name, ok, tc.name, tc.ok)
		}
	}
}

// The repository's ASL file and the stack must agree exactly: every `${…}` in the file has a
// substitution, and every substitution is used by the file.
func TestEveryPlaceholderInTheASLHasASubstitutionAndEverySubstitutionIsUsed(t *testing.T) {
	s := synthesized(t)
	raw, err := os.ReadFile(s.aslPath)
	if err != nil {
		t.Fatal(err)
	}
	placeholders := Placeholders(string(raw))
	if len(placeholders) == 0 {
		t.Fatal("the ASL file uses no placeholders; Lambda ARNs must come from substitutions")
	}
	_, r := s.byPath(t, "Workflow/StateMachine/Resource")
	subs, _ := props(r)["DefinitionSubstitutions"].(map[string]any)
	var keys []string
	for k := range subs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, ph := range placeholders {
		if _, ok := subs[ph]; !ok {
			t.Errorf("placeholder ${%s} has no substitution", ph)
		}
	}
	for _, k := range keys {
		if !slices.Contains(placeholders, k) {
			t.Errorf("substitution %s is not used by the ASL file", k)
		}
	}
	// Every saga step is reachable from the definition.
	for _, step := range StepFunctions {
		if !slices.Contains(placeholders, pascal(step)+"FunctionArn") {
			t.Errorf("the ASL file never invokes the %s step", step)
		}
	}
}

func TestSubstitutionsPointAtTheNamedFunctions(t *testing.T) {
	s := synthesized(t)
	_, r := s.byPath(t, "Workflow/StateMachine/Resource")
	subs := props(r)["DefinitionSubstitutions"].(map[string]any)
	for k, v := range subs {
		name, ok := FunctionForPlaceholder(k)
		if !ok {
			continue
		}
		fnID, _ := s.byPath(t, "Functions/"+pascal(name)+"/Resource")
		if want := `{"Fn::GetAtt":["` + fnID + `","Arn"]}`; asJSON(v) != want {
			t.Errorf("%s = %s, want %s", k, asJSON(v), want)
		}
	}
}

func TestSubstitutionsRefuseUnknownAndNonStepPlaceholders(t *testing.T) {
	s := synthesized(t)
	settings := Settings{Stage: "dev", LateSuccessPolicy: "void", HoldSeconds: 60}
	for _, tc := range []struct {
		name, def, wantErr string
	}{
		{"unknown name", `"${ClaimFunctionArn}" "${SomethingElse}"`, "SomethingElse"},
		{"not a saga step", `"${ApiFunctionArn}"`, "ApiFunctionArn (not a saga step function)"},
		{"undeclared function", `"${BogusFunctionArn}"`, "BogusFunctionArn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := substitutions(tc.def, s.stack.Functions, settings)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
	subs, invoked, err := substitutions(`"${ClaimFunctionArn}" "${LateSuccessPolicy}"`, s.stack.Functions, settings)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || *subs["LateSuccessPolicy"] != "void" || !slices.Equal(invoked, []string{"claim"}) {
		t.Errorf("subs %v invoked %v", subs, invoked)
	}
}

func TestStateMachineIsStandardLoggedWithoutDataTracedAndInvokesOnlyTheSteps(t *testing.T) {
	s := synthesized(t)
	_, r := s.byPath(t, "Workflow/StateMachine/Resource")
	p := props(r)
	if p["StateMachineType"] != "STANDARD" {
		t.Errorf("type %v, want STANDARD", p["StateMachineType"])
	}
	if asJSON(p["TracingConfiguration"]) != `{"Enabled":true}` {
		t.Errorf("tracing %s", asJSON(p["TracingConfiguration"]))
	}
	logging := p["LoggingConfiguration"].(map[string]any)
	logsID, _ := s.byPath(t, "Workflow/Logs/Resource")
	if logging["IncludeExecutionData"] != false || logging["Level"] != "ALL" || !strings.Contains(asJSON(logging["Destinations"]), logsID) {
		t.Errorf("logging %s, want level ALL without execution data to %s", asJSON(logging), logsID)
	}
	if _, ok := p["DefinitionS3Location"]; !ok {
		t.Errorf("definition not from the ASL file asset: %s", asJSON(p))
	}

	roleID, _ := s.byPath(t, "Workflow/Role/Resource")
	var invokable []string
	for _, st := range s.roleStatements(roleID) {
		if slices.Contains(st.actions, "lambda:InvokeFunction") {
			invokable = append(invokable, st.resources...)
		}
		for _, a := range st.actions {
			if strings.HasPrefix(a, "lambda:") && a != "lambda:InvokeFunction" {
				t.Errorf("state machine role has %s", a)
			}
		}
	}
	var want []string
	for _, step := range StepFunctions {
		id, _ := s.byPath(t, "Functions/"+pascal(step)+"/Resource")
		want = append(want, `{"Fn::GetAtt":["`+id+`","Arn"]}`)
	}
	sort.Strings(invokable)
	sort.Strings(want)
	if !slices.Equal(invokable, want) {
		t.Errorf("state machine may invoke %v, want exactly the six steps %v", invokable, want)
	}
	mustNotPanic(t, "state machine role trusts Step Functions", func() {
		s.template.HasResourceProperties(jsii.String("AWS::IAM::Role"), assertions.Match_ObjectLike(&map[string]any{
			"AssumeRolePolicyDocument": assertions.Match_ObjectLike(&map[string]any{
				"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
					"Principal": map[string]any{"Service": "states.amazonaws.com"},
				})}),
			}),
		}))
	})
}
