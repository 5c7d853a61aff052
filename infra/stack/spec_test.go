package stack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// These tests prove the template is the spec: every Lambda function's handler, memory, timeout,
// reserved concurrency and environment, and every permission of its role, are exactly what
// internal/deploy says, as CloudFormation expressions naming the stack's own resources.

// templateResolver renders a spec in the template's terms: each resource as the JSON of the
// CloudFormation expression that names it, each setting as the JSON of its value or expression.
// It is written out by hand rather than asking the stack's resolver, so that the stack's
// resolver is tested too.
type templateResolver struct {
	s        *synth
	settings Settings
	// missing collects the construct paths no resource has; the comparison reports them.
	missing []string
}

func (r *templateResolver) id(path string) string {
	want := *r.s.stack.StackName() + "/" + path
	for id, res := range r.s.resources {
		if md, _ := res["Metadata"].(map[string]any); md["aws:cdk:path"] == want {
			return id
		}
	}
	r.missing = append(r.missing, path)
	return "<none at " + path + ">"
}

func getAtt(id, attr string) string { return `{"Fn::GetAtt":["` + id + `","` + attr + `"]}` }
func ref(id string) string          { return `{"Ref":"` + id + `"}` }

func (r *templateResolver) ARN(fn string, res deploy.Resource) string {
	switch res.Kind {
	case deploy.Table:
		return getAtt(r.id("Data/"+res.Name+"/Resource"), "Arn")
	case deploy.TableIndex:
		return `{"Fn::Join":["",[` + getAtt(r.id("Data/"+res.Name+"/Resource"), "Arn") + `,"/index/` + res.Index + `"]]}`
	case deploy.TableStream:
		return getAtt(r.id("Data/"+res.Name+"/Resource"), "StreamArn")
	case deploy.StateMachine:
		return ref(r.id("Workflow/StateMachine/Resource"))
	case deploy.Executions:
		return `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":states:",{"Ref":"AWS::Region"},":",{"Ref":"AWS::AccountId"},":execution:",` +
			getAtt(r.id("Workflow/StateMachine/Resource"), "Name") + `,":*"]]}`
	case deploy.Secret:
		return ref(r.id("Secrets/" + res.Name + "/Resource"))
	case deploy.EventBus:
		return getAtt(r.id("Events/Bus/Resource"), "Arn")
	case deploy.Queue:
		return getAtt(r.id("Events/"+res.Name+"/Resource"), "Arn")
	case deploy.LogGroup:
		return getAtt(r.id("Functions/"+alarms.Pascal(fn)+"Logs/Resource"), "Arn")
	case deploy.Any:
		return `"*"`
	}
	r.missing = append(r.missing, fmt.Sprintf("%s %q", res.Kind, res.Name))
	return "<unknown " + string(res.Kind) + ">"
}

func (r *templateResolver) Setting(name string) string {
	switch name {
	case EnvStage:
		return strconv.Quote(r.settings.Stage)
	case EnvLateSuccessPolicy:
		return strconv.Quote(r.settings.LateSuccessPolicy)
	case EnvHoldSeconds:
		return strconv.Quote(strconv.Itoa(r.settings.HoldSeconds))
	case EnvMaxSeats:
		return strconv.Quote(strconv.Itoa(r.settings.MaxSeatsPerReservation))
	case EnvSweepGraceSeconds:
		return strconv.Quote(strconv.Itoa(r.settings.SweepGraceSeconds))
	case EnvAdmissionLeaseSeconds:
		return strconv.Quote(strconv.Itoa(r.settings.AdmissionLeaseSeconds))
	case EnvMaxActiveReservations:
		return strconv.Quote(strconv.Itoa(r.settings.MaxActiveReservations))
	case EnvMetricsNamespace:
		return strconv.Quote(MetricsNamespace + "/" + r.settings.Stage)
	case EnvTablePrefix:
		return `{"Fn::Join":["",[{"Ref":"AWS::StackName"},"-"]]}`
	case EnvStateMachineArn:
		return ref(r.id("Workflow/StateMachine/Resource"))
	case EnvEventBusName:
		return ref(r.id("Events/Bus/Resource"))
	case EnvAllowedOrigins:
		return strconv.Quote(strings.Join(r.settings.AllowedOrigins, ","))
	}
	r.missing = append(r.missing, "setting "+name)
	return "<unknown setting " + name + ">"
}

// grant is one action on one resource (the JSON of its expression): a role's permissions as a
// set, however the statements group them.
type grant struct{ action, resource string }

func (g grant) String() string { return g.action + " on " + g.resource }

// specDiffs compares every AWS::Lambda::Function of the synthesized template with specs, the
// stage's settings being settings, and returns each difference as one line, sorted: a function
// without a spec or a spec without a function; a handler, memory, timeout or reserved
// concurrency that differs; a variable missing, extra or with another value; a permission of
// the function's role (all its policies, inline or attached) missing or extra; and anything
// that would make the role more than a set of allowed actions on resources (a managed policy,
// a Deny, a Condition, NotAction). No lines means the template renders exactly the specs.
func (s *synth) specDiffs(specs []deploy.Function, settings Settings) []string {
	var diffs []string
	byPath := map[string]deploy.Function{}
	for _, f := range specs {
		byPath[*s.stack.StackName()+"/Functions/"+alarms.Pascal(f.Name)+"/Resource"] = f
	}
	seen := map[string]bool{}
	for id, r := range s.ofType("AWS::Lambda::Function") {
		md, _ := r["Metadata"].(map[string]any)
		path, _ := md["aws:cdk:path"].(string)
		spec, ok := byPath[path]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("function %s (%s) has no spec", id, path))
			continue
		}
		seen[spec.Name] = true
		for _, d := range s.functionDiffs(spec, props(r), settings) {
			diffs = append(diffs, spec.Name+": "+d)
		}
	}
	for _, f := range specs {
		if !seen[f.Name] {
			diffs = append(diffs, f.Name+": the template has no such function")
		}
	}
	slices.Sort(diffs)
	return diffs
}

func (s *synth) functionDiffs(spec deploy.Function, p map[string]any, settings Settings) []string {
	var diffs []string
	differs := func(what string, got any, want any) {
		if asJSON(got) != asJSON(want) {
			diffs = append(diffs, fmt.Sprintf("%s is %s, the spec says %s", what, asJSON(got), asJSON(want)))
		}
	}
	differs("Handler", p["Handler"], spec.Handler)
	differs("MemorySize", p["MemorySize"], spec.MemoryMB)
	differs("Timeout", p["Timeout"], spec.Timeout/time.Second)
	var reserved any
	if spec.ReservedConcurrency > 0 {
		reserved = spec.ReservedConcurrency
	}
	differs("ReservedConcurrentExecutions", p["ReservedConcurrentExecutions"], reserved)

	r := &templateResolver{s: s, settings: settings}
	wantEnv := spec.Environment(r)
	wantGrants := map[grant]bool{}
	for _, st := range spec.Policy(r) {
		for _, a := range st.Actions {
			for _, res := range st.Resources {
				wantGrants[grant{a, res}] = true
			}
		}
	}
	for _, m := range r.missing {
		diffs = append(diffs, "the spec names "+m+", which the template does not declare")
	}

	env, _ := p["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	for _, k := range sortedKeys(wantEnv) {
		got, ok := vars[k]
		switch {
		case !ok:
			diffs = append(diffs, "environment lacks "+k)
		case asJSON(got) != wantEnv[k]:
			diffs = append(diffs, fmt.Sprintf("environment %s is %s, the spec says %s", k, asJSON(got), wantEnv[k]))
		}
	}
	for _, k := range sortedKeys(vars) {
		if _, ok := wantEnv[k]; !ok {
			diffs = append(diffs, "environment has "+k+", which the spec does not")
		}
	}

	gotGrants, problems := s.roleGrants(p["Role"])
	diffs = append(diffs, problems...)
	for _, g := range sortedGrants(wantGrants) {
		if !gotGrants[g] {
			diffs = append(diffs, "role lacks "+g.String())
		}
	}
	for _, g := range sortedGrants(gotGrants) {
		if !wantGrants[g] {
			diffs = append(diffs, "role has "+g.String()+", which the spec does not")
		}
	}
	return diffs
}

// roleGrants returns the permissions of the role a function's Role property names, from every
// policy that reaches it, and what keeps them from being a plain set of allowed actions.
func (s *synth) roleGrants(roleProp any) (map[grant]bool, []string) {
	grants := map[grant]bool{}
	var problems []string
	m, _ := roleProp.(map[string]any)
	att, _ := m["Fn::GetAtt"].([]any)
	if len(att) != 2 || att[1] != "Arn" {
		return grants, []string{"Role is " + asJSON(roleProp) + ", not a role of this stack"}
	}
	roleID, _ := att[0].(string)
	role, ok := s.resources[roleID]
	if !ok || role["Type"] != "AWS::IAM::Role" {
		return grants, []string{"Role names " + roleID + ", which is no AWS::IAM::Role"}
	}
	rp := props(role)
	if mp, ok := rp["ManagedPolicyArns"].([]any); ok && len(mp) > 0 {
		problems = append(problems, "role has managed policies "+asJSON(mp))
	}
	if pb, ok := rp["PermissionsBoundary"]; ok {
		problems = append(problems, "role has a permissions boundary "+asJSON(pb))
	}
	var docs []any
	for _, pol := range asList(rp["Policies"]) {
		docs = append(docs, pol.(map[string]any)["PolicyDocument"])
	}
	isRole := func(v any) bool { return asJSON(v) == ref(roleID) }
	for id, r := range s.resources {
		p := props(r)
		switch r["Type"] {
		case "AWS::IAM::Policy":
			if slices.ContainsFunc(asList(p["Roles"]), isRole) {
				docs = append(docs, p["PolicyDocument"])
			}
		case "AWS::IAM::RolePolicy":
			if isRole(p["RoleName"]) {
				docs = append(docs, p["PolicyDocument"])
			}
		case "AWS::IAM::ManagedPolicy":
			if slices.ContainsFunc(asList(p["Roles"]), isRole) {
				problems = append(problems, "role has the managed policy "+id)
			}
		}
	}
	for _, doc := range docs {
		d, _ := doc.(map[string]any)
		for _, st := range asList(d["Statement"]) {
			stm, _ := st.(map[string]any)
			for _, k := range sortedKeys(stm) {
				if k != "Effect" && k != "Action" && k != "Resource" && k != "Sid" {
					problems = append(problems, "role has a statement with "+k+": "+asJSON(stm))
				}
			}
			if stm["Effect"] != "Allow" {
				problems = append(problems, "role has a statement that does not Allow: "+asJSON(stm))
				continue
			}
			for _, a := range stringsOf(stm["Action"]) {
				for _, res := range jsonsOf(stm["Resource"]) {
					grants[grant{a, res}] = true
				}
			}
		}
	}
	return grants, problems
}

// asList is a template value that may be one item or a list, as a list.
func asList(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

func sortedGrants(m map[grant]bool) []grant {
	out := make([]grant, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b grant) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// A stage's own settings reach the functions as the spec renders them: the api's allowed origins
// among them, which the default stage leaves empty.
func TestAStagesSettingsReachItsFunctionsAsTheSpecRendersThem(t *testing.T) {
	p := DefaultProps()
	p.Api.AllowedOrigins = []string{"https://tickets.example", "https://box.example"}
	p.HoldSeconds = 300
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.specDiffs(deploy.Functions(), p.settings()) {
		t.Error(d)
	}
	_, api := s.byPath(t, "Functions/Api/Resource")
	if got := asJSON(props(api)["Environment"]); !strings.Contains(got, `"SEATSAGA_ALLOWED_ORIGINS":"https://tickets.example,https://box.example"`) {
		t.Errorf("the api's environment %s lacks the stage's origins", got)
	}
}

func TestEveryFunctionInTheTemplateIsExactlyItsSpec(t *testing.T) {
	s := synthesized(t)
	if got := len(s.ofType("AWS::Lambda::Function")); got != len(deploy.Functions()) {
		t.Errorf("%d functions in the template, %d specs", got, len(deploy.Functions()))
	}
	for _, d := range s.specDiffs(deploy.Functions(), DefaultProps().settings()) {
		t.Error(d)
	}
}

// The control: the same comparison, run on a stack rendered from a spec with one grant and one
// variable taken out, reports exactly those two (the grant as its two actions), and nothing
// when given the spec the stack was rendered from. Run on the full stack with the reduced spec,
// it reports the same ones as extras. So a clean result above means the template is the spec,
// not that the comparison sees nothing.
func TestTheSpecComparisonReportsExactlyARemovedGrantAndVariable(t *testing.T) {
	full := deploy.Functions()
	reduced := deploy.Functions()
	for i := range reduced {
		f := &reduced[i]
		switch f.Name {
		case "webhook":
			f.Grants = slices.DeleteFunc(slices.Clone(f.Grants), func(g deploy.Grant) bool {
				return slices.Contains(g.Actions, "states:SendTaskSuccess")
			})
		case "relay":
			f.Env = slices.DeleteFunc(slices.Clone(f.Env), func(name string) bool { return name == EnvEventBusName })
		}
	}
	p := DefaultProps()
	p.specs = reduced
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	settings := p.settings()
	smID, _ := s.byPath(t, "Workflow/StateMachine/Resource")
	sm := ref(smID)

	got := s.specDiffs(full, settings)
	t.Logf("rendered without the grant and the variable, compared with the full spec:\n%s", strings.Join(got, "\n"))
	want := []string{
		"relay: environment lacks " + EnvEventBusName,
		"webhook: role lacks states:SendTaskFailure on " + sm,
		"webhook: role lacks states:SendTaskSuccess on " + sm,
	}
	if !slices.Equal(got, want) {
		t.Errorf("diffs:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := s.specDiffs(reduced, settings); len(d) > 0 {
		t.Errorf("the reduced stack differs from the spec it was rendered from:\n%s", strings.Join(d, "\n"))
	}

	shared := synthesized(t)
	sharedSM, _ := shared.byPath(t, "Workflow/StateMachine/Resource")
	sm = ref(sharedSM)
	got = shared.specDiffs(reduced, settings)
	t.Logf("the full stack compared with the reduced spec:\n%s", strings.Join(got, "\n"))
	want = []string{
		"relay: environment has " + EnvEventBusName + ", which the spec does not",
		"webhook: role has states:SendTaskFailure on " + sm + ", which the spec does not",
		"webhook: role has states:SendTaskSuccess on " + sm + ", which the spec does not",
	}
	if !slices.Equal(got, want) {
		t.Errorf("diffs:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Function roles are handed to the functions without policy updates, which drops whatever the
// constructs binding to them (tracing, the stream event source, the DLQs) would grant on their
// own. The spec holds those grants as Platform ones. Rendered from a spec without them (the log
// writes aside, which no construct grants) and with the constructs' grants let through, every
// role has exactly its full spec's permissions: the constructs grant every such Platform grant
// and nothing else, so dropping theirs loses nothing.
func TestTheConstructsGrantExactlyTheSpecsPlatformGrants(t *testing.T) {
	full := deploy.Functions()
	withoutPlatform := deploy.Functions()
	removed := 0
	for i := range withoutPlatform {
		f := &withoutPlatform[i]
		f.Grants = slices.DeleteFunc(slices.Clone(f.Grants), func(g deploy.Grant) bool {
			drop := g.Platform && !slices.ContainsFunc(g.Resources, func(r deploy.Resource) bool { return r.Kind == deploy.LogGroup })
			if drop {
				removed++
			}
			return drop
		})
	}
	if removed < len(full) {
		t.Fatalf("only %d platform grants removed; every traced function has one", removed)
	}
	p := DefaultProps()
	p.specs = withoutPlatform
	p.constructGrants = true
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.specDiffs(full, p.settings()) {
		t.Error(d)
	}
}
