package asl

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
)

// contextAnalysed lists the State fields stateUsesContext examines. A State field of a type
// evaluated against data (a path, a template, choice rules, catchers) that is missing here
// would run with a nil context object when it refers to $$.
var contextAnalysed = map[string]bool{
	"InputPath": true, "OutputPath": true, "ResultPath": true, "ItemsPath": true,
	"Parameters": true, "ItemSelector": true, "ResultSelector": true,
	"TimeoutSecondsPath": true, "HeartbeatSecondsPath": true, "SecondsPath": true, "TimestampPath": true,
	"ErrorPath": true, "CausePath": true, "Choices": true, "Catch": true,
}

func TestContextAnalysisCoversEveryEvaluatedField(t *testing.T) {
	evaluated := map[reflect.Type]bool{
		reflect.TypeFor[optPath](): true, reflect.TypeFor[*Path](): true, reflect.TypeFor[*template](): true,
		reflect.TypeFor[[]*ChoiceRule](): true, reflect.TypeFor[[]Catcher](): true,
	}
	st := reflect.TypeFor[State]()
	seen := 0
	for i := range st.NumField() {
		f := st.Field(i)
		if !evaluated[f.Type] {
			continue
		}
		seen++
		if !contextAnalysed[f.Name] {
			t.Errorf("State.%s (%s) is evaluated against data but stateUsesContext does not examine it", f.Name, f.Type)
		}
	}
	if seen != len(contextAnalysed) {
		t.Fatalf("found %d evaluated fields, the analysis lists %d", seen, len(contextAnalysed))
	}
}

// TestStatesReadTheContextObjectWhereverTheyReferToIt runs a state machine per field that
// can refer to $$ and checks that the context object's value arrives: a field the analysis
// missed would read a nil context object and fail or lose the value.
func TestStatesReadTheContextObjectWhereverTheyReferToIt(t *testing.T) {
	const task = `"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:echo"`
	for _, c := range []struct {
		name, states, want string
		wantErr            string
	}{
		{"InputPath", `"S":{"Type":"Pass","InputPath":"$$.State.Name","End":true}`, `"S"`, ""},
		{"Parameters", `"S":{"Type":"Pass","Parameters":{"n.$":"$$.Execution.Name"},"End":true}`, `{"n":"exec"}`, ""},
		{"Parameters intrinsic", `"S":{"Type":"Pass","Parameters":{"n.$":"States.Format('{}-{}', $$.StateMachine.Name, $.k)"},"End":true}`, `{"n":"machine-v"}`, ""},
		{"nested template", `"S":{"Type":"Pass","Parameters":{"a":[{"n.$":"$$.State.RetryCount"}]},"End":true}`, `{"a":[{"n":0}]}`, ""},
		{"OutputPath", `"S":{"Type":"Pass","OutputPath":"$$.Execution.Input.k","End":true}`, `"v"`, ""},
		{"ResultSelector", `"S":{` + task + `,"ResultSelector":{"s.$":"$$.State.Name"},"End":true}`, `{"s":"S"}`, ""},
		{"TimeoutSecondsPath", `"S":{` + task + `,"TimeoutSecondsPath":"$$.Execution.Input.n","OutputPath":"$.n","End":true}`, `30`, ""},
		{"HeartbeatSecondsPath", `"S":{` + task + `,"HeartbeatSecondsPath":"$$.Execution.Input.n","OutputPath":"$.n","End":true}`, `30`, ""},
		{"ItemsPath", `"S":{"Type":"Map","ItemsPath":"$$.Execution.Input.items","ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}},"End":true}`, `[1,2]`, ""},
		{"ItemSelector", `"S":{"Type":"Map","ItemsPath":"$.items","ItemSelector":{"i.$":"$$.Map.Item.Index","s.$":"$$.State.Name"},"ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}},"End":true}`, `[{"i":0,"s":"S"},{"i":1,"s":"S"}]`, ""},
		{"Choice Variable", `"S":{"Type":"Choice","Choices":[{"Variable":"$$.State.Name","StringEquals":"S","Next":"Yes"}],"Default":"No"},"Yes":{"Type":"Pass","Result":"yes","End":true},"No":{"Type":"Pass","Result":"no","End":true}`, `"yes"`, ""},
		{"Choice ValuePath", `"S":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.k","StringEqualsPath":"$$.Execution.Input.k"},"Next":"No"}],"Default":"Yes"},"Yes":{"Type":"Pass","Result":"yes","End":true},"No":{"Type":"Pass","Result":"no","End":true}`, `"yes"`, ""},
		{"SecondsPath", `"S":{"Type":"Wait","SecondsPath":"$$.State.RetryCount","End":true}`, `{"items":[1,2],"k":"v","n":30}`, ""},
		{"TimestampPath", `"S":{"Type":"Wait","TimestampPath":"$$.Execution.StartTime","End":true}`, `{"items":[1,2],"k":"v","n":30}`, ""},
		{"ErrorPath", `"S":{"Type":"Fail","ErrorPath":"$$.State.Name","Cause":"c"}`, "", "S"},
		{"CausePath intrinsic", `"S":{"Type":"Fail","Error":"E","CausePath":"States.Format('in {}', $$.State.Name)"}`, "", "E"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sm, err := Parse([]byte(`{"StartAt":"S","States":{` + c.states + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			inv := NewFuncInvoker(map[string]Func{"echo": func(_ context.Context, p []byte) ([]byte, error) { return p, nil }})
			eng := NewEngine(Options{Clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Invoker: inv})
			x, err := eng.Start(sm, ExecutionSpec{ARN: "arn:x", Name: "exec", StateMachineName: "machine",
				Input: []byte(`{"k":"v","n":30,"items":[1,2]}`)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := x.Wait(ctx); err != nil {
				t.Fatal("execution did not finish")
			}
			snap := x.Snapshot()
			if c.wantErr != "" {
				if snap.Status != StatusFailed || snap.Error != c.wantErr {
					t.Fatalf("status %s error %q (%s), want error %q", snap.Status, snap.Error, snap.Cause, c.wantErr)
				}
				return
			}
			if snap.Status != StatusSucceeded || string(snap.Output) != c.want {
				t.Fatalf("status %s %s %s output %s, want %s", snap.Status, snap.Error, snap.Cause, snap.Output, c.want)
			}
		})
	}
}

// TestStatesWithoutContextReferencesNeedNoContextObject is the control: the analysis does
// find states that never read $$, or it would save nothing.
func TestStatesWithoutContextReferencesNeedNoContextObject(t *testing.T) {
	sm, err := Parse([]byte(`{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:add",
	  "InputPath":"$.nums","Parameters":{"a.$":"$.x","b.$":"States.MathAdd($.y, 1)"},"ResultSelector":{"total.$":"$.sum"},
	  "ResultPath":"$.result","OutputPath":"$.result","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.e","Next":"C"}],"Next":"C"},
	  "C":{"Type":"Choice","Choices":[{"And":[{"Variable":"$.total","IsPresent":true},{"Variable":"$.total","NumericGreaterThanPath":"$.total"}],"Next":"D"}],"Default":"D"},
	  "D":{"Type":"Succeed"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sm.root.order {
		if stateUsesContext(sm.root.States[name]) {
			t.Errorf("state %s refers to no $$ but is said to use the context object", name)
		}
	}
}
