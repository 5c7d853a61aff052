package stack

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/statemachine"
)

// The definition and the stack must agree exactly: every `${…}` in the definition has a
// substitution, and every substitution is used by the definition.
func TestEveryPlaceholderInTheASLHasASubstitutionAndEverySubstitutionIsUsed(t *testing.T) {
	s := synthesized(t)
	placeholders := statemachine.Placeholders(statemachine.Definition())
	if len(placeholders) == 0 {
		t.Fatal("the definition uses no placeholders; Lambda ARNs must come from substitutions")
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
			t.Errorf("substitution %s is not used by the definition", k)
		}
	}
	// The service integrations are named in the stack's own partition.
	for _, i := range statemachine.Integrations {
		want := `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":states:::` + i.Name + `"]]}`
		if asJSON(subs[i.Placeholder]) != want {
			t.Errorf("${%s} = %s, want %s", i.Placeholder, asJSON(subs[i.Placeholder]), want)
		}
	}
	// Every saga step is reachable from the definition.
	for _, step := range statemachine.Steps {
		if !slices.Contains(placeholders, step.Placeholder) {
			t.Errorf("the definition never invokes the %s step", step.Name)
		}
	}
}

func TestSubstitutionsPointAtTheNamedFunctions(t *testing.T) {
	s := synthesized(t)
	_, r := s.byPath(t, "Workflow/StateMachine/Resource")
	subs := props(r)["DefinitionSubstitutions"].(map[string]any)
	for k, v := range subs {
		if _, ok := statemachine.IntegrationFor(k); ok {
			continue
		}
		step, ok := statemachine.StepFor(k)
		if !ok {
			t.Errorf("substitution %s names no step", k)
			continue
		}
		fnID, _ := s.byPath(t, "Functions/"+alarms.Pascal(step.Name)+"/Resource")
		if want := `{"Fn::GetAtt":["` + fnID + `","Arn"]}`; asJSON(v) != want {
			t.Errorf("%s = %s, want %s", k, asJSON(v), want)
		}
	}
}

func TestSubstitutionsRefuseUnknownAndNonStepPlaceholders(t *testing.T) {
	s := synthesized(t)
	for _, tc := range []struct {
		name, def, wantErr string
		fs                 *Functions
	}{
		{"unknown name", `"${ClaimFunctionArn}" "${SomethingElse}"`, "${SomethingElse}", s.stack.Functions},
		{"not a saga step", `"${ApiFunctionArn}"`, "${ApiFunctionArn}", s.stack.Functions},
		// Settings are not placeholders: the statemachine package knows only the steps.
		{"a setting", `"${LateSuccessPolicy}"`, "${LateSuccessPolicy}", s.stack.Functions},
		{"undeclared step function", `"${ClaimFunctionArn}"`, "not declared: claim", &Functions{ByName: map[string]*Function{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := substitutions([]byte(tc.def), tc.fs)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
	subs, invoked, err := substitutions([]byte(`"${ClaimFunctionArn}" "${ClaimFunctionArn}"`), s.stack.Functions)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs["ClaimFunctionArn"] == nil || !slices.Equal(invoked, []string{"claim"}) {
		t.Errorf("subs %v invoked %v", subs, invoked)
	}
	// An integration is substituted only where the definition uses it.
	subs, _, err = substitutions([]byte(`"${LambdaInvokeWaitForTaskTokenArn}" "${ClaimFunctionArn}"`), s.stack.Functions)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || subs["LambdaInvokeWaitForTaskTokenArn"] == nil {
		t.Errorf("subs %v, want the claim step's and the integration's", subs)
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
	if p["DefinitionString"] != string(statemachine.Definition()) {
		t.Errorf("definition is not the embedded one: %s", asJSON(p))
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
	for _, step := range statemachine.Steps {
		id, _ := s.byPath(t, "Functions/"+alarms.Pascal(step.Name)+"/Resource")
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

// Only the one check cfn-lint gets wrong about Succeed states is waived, and only on the state
// machine.
func TestOnlyTheSucceedStateCheckIsWaivedOnTheStateMachine(t *testing.T) {
	s := synthesized(t)
	for id, r := range s.ofType("AWS::StepFunctions::StateMachine") {
		if got := asJSON(r["Metadata"].(map[string]any)["cfn-lint"]); got != `{"config":{"ignore_checks":["E3601"]}}` {
			t.Errorf("state machine %s waives %s", id, got)
		}
	}
	for typ, want := range map[string]int{"AWS::StepFunctions::StateMachine": 1} {
		n := 0
		for _, m := range s.resources {
			if md, ok := m["Metadata"].(map[string]any); ok && md["cfn-lint"] != nil {
				if m["Type"] != typ {
					t.Errorf("%s waives cfn-lint checks too", m["Type"])
				}
				n++
			}
		}
		if n != want {
			t.Errorf("%d resources waive cfn-lint checks, want %d", n, want)
		}
	}
}
