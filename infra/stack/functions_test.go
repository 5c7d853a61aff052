package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/infra/build"
	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// statement is one IAM policy statement, flattened for checks.
type statement struct {
	actions   []string
	resources []string // JSON of each resource
}

// roleStatements returns the statements of every policy attached to the role with the given
// logical id.
func (s *synth) roleStatements(roleID string) []statement {
	var out []statement
	for _, r := range s.ofType("AWS::IAM::Policy") {
		p := props(r)
		attached := false
		for _, ref := range p["Roles"].([]any) {
			if m, ok := ref.(map[string]any); ok && m["Ref"] == roleID {
				attached = true
			}
		}
		if !attached {
			continue
		}
		doc := p["PolicyDocument"].(map[string]any)
		for _, st := range doc["Statement"].([]any) {
			m := st.(map[string]any)
			if m["Effect"] != "Allow" {
				continue
			}
			out = append(out, statement{actions: stringsOf(m["Action"]), resources: jsonsOf(m["Resource"])})
		}
	}
	return out
}

func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, e.(string))
		}
		return out
	}
	return nil
}

func jsonsOf(v any) []string {
	if list, ok := v.([]any); ok {
		var out []string
		for _, e := range list {
			out = append(out, asJSON(e))
		}
		return out
	}
	return []string{asJSON(v)}
}

func (s *synth) functionRoleID(t *testing.T, name string) string {
	t.Helper()
	id, _ := s.byPath(t, "Functions/"+alarms.Pascal(name)+"Role/Resource")
	return id
}

func TestEveryFunctionIsDeclaredOnArm64ProvidedAL2023WithItsOwnRoleAndJSONLogs(t *testing.T) {
	s := synthesized(t)
	if got := len(s.ofType("AWS::Lambda::Function")); got != len(build.Functions) {
		t.Errorf("%d functions, want %d", got, len(build.Functions))
	}
	roles := map[string]string{}
	for _, name := range build.Functions {
		t.Run(name, func(t *testing.T) {
			_, r := s.byPath(t, "Functions/"+alarms.Pascal(name)+"/Resource")
			p := props(r)
			if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
				t.Errorf("runtime %v handler %v, want provided.al2023 bootstrap", p["Runtime"], p["Handler"])
			}
			if asJSON(p["Architectures"]) != `["arm64"]` {
				t.Errorf("architectures %s, want arm64", asJSON(p["Architectures"]))
			}
			if asJSON(p["TracingConfig"]) != `{"Mode":"Active"}` {
				t.Errorf("tracing %s, want Active", asJSON(p["TracingConfig"]))
			}
			roleID := s.functionRoleID(t, name)
			if asJSON(p["Role"]) != `{"Fn::GetAtt":["`+roleID+`","Arn"]}` {
				t.Errorf("role %s, want its own role %s", asJSON(p["Role"]), roleID)
			}
			if other, dup := roles[roleID]; dup {
				t.Errorf("shares its role with %s", other)
			}
			roles[roleID] = name

			// JSON lines at INFO, from which Lambda sets the binary's AWS_LAMBDA_LOG_FORMAT and
			// AWS_LAMBDA_LOG_LEVEL (the boot test starts each binary so), and Lambda's own
			// lines at INFO, into the function's own log group. A level above INFO would drop
			// the metric lines, which carry no level.
			logsID, logs := s.byPath(t, "Functions/"+alarms.Pascal(name)+"Logs/Resource")
			wantLogging := `{"ApplicationLogLevel":"INFO","LogFormat":"JSON","LogGroup":{"Ref":"` + logsID + `"},"SystemLogLevel":"INFO"}`
			if got := asJSON(p["LoggingConfig"]); got != wantLogging {
				t.Errorf("logging %s, want %s", got, wantLogging)
			}
			// Created before the function, so that Lambda never creates one without retention.
			if !slices.Contains(stringsOf(r["DependsOn"]), logsID) {
				t.Errorf("depends on %v, not on its log group %s", r["DependsOn"], logsID)
			}
			if props(logs)["RetentionInDays"] != float64(30) {
				t.Errorf("log retention %v, want 30", props(logs)["RetentionInDays"])
			}

			// The variables themselves are checked against the spec in spec_test.go; here only
			// that none carries a secret's value.
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			for k := range env {
				if strings.Contains(strings.ToLower(k), "secret") && !strings.HasSuffix(k, "_ARN") {
					t.Errorf("env %s looks like a secret value; only ARNs may be passed", k)
				}
			}
		})
	}
}

func TestSpecsCoverExactlyTheBuiltFunctions(t *testing.T) {
	if built := slices.Sorted(slices.Values(build.Functions)); !slices.Equal(deploy.Names(), built) {
		t.Errorf("specs %v, built functions %v", deploy.Names(), built)
	}
}

// Whatever the specs say, these hold for every role in the template: no wildcard action, "*"
// only for the actions that support no resource-level permissions, no managed policy, only the
// api starts executions and only the webhook reads the webhook signing secret. The exact
// permissions are checked against the specs in spec_test.go.
func TestFunctionRolesAreLeastPrivilege(t *testing.T) {
	s := synthesized(t)
	webhookSecretID, _ := s.byPath(t, "Secrets/StripeWebhookSecret/Resource")
	for _, name := range build.Functions {
		t.Run(name, func(t *testing.T) {
			roleID := s.functionRoleID(t, name)
			_, role := s.byPath(t, "Functions/"+alarms.Pascal(name)+"Role/Resource")
			if mp, ok := props(role)["ManagedPolicyArns"]; ok {
				t.Errorf("managed policies attached: %s", asJSON(mp))
			}
			for _, st := range s.roleStatements(roleID) {
				for _, a := range st.actions {
					if strings.Contains(a, "*") {
						t.Errorf("wildcard action %s", a)
					}
					if a == "states:StartExecution" && name != "api" && name != "starter" {
						t.Errorf("%s may not start executions", name)
					}
				}
				for _, res := range st.resources {
					if res == `"*"` {
						for _, a := range st.actions {
							if _, ok := unscopedActions[a]; !ok {
								t.Errorf("action %s on every resource; only %v may use *", a, sortedKeys(unscopedActions))
							}
						}
					}
					if strings.Contains(res, webhookSecretID) && name != "webhook" {
						t.Errorf("%s reads the webhook secret; only the webhook may", name)
					}
				}
			}
		})
	}
}

func TestOnlyTheWebhookAndApiAnswerTaskTokens(t *testing.T) {
	s := synthesized(t)
	var responders []string
	for _, r := range s.ofType("AWS::IAM::Policy") {
		doc := props(r)["PolicyDocument"].(map[string]any)
		for _, st := range doc["Statement"].([]any) {
			for _, a := range stringsOf(st.(map[string]any)["Action"]) {
				if strings.HasPrefix(a, "states:SendTask") || a == "states:*" {
					for _, ref := range props(r)["Roles"].([]any) {
						responders = append(responders, ref.(map[string]any)["Ref"].(string))
					}
				}
			}
		}
	}
	want := map[string]bool{s.functionRoleID(t, "api"): true, s.functionRoleID(t, "webhook"): true}
	for _, id := range responders {
		if !want[id] {
			t.Errorf("role %s may call SendTask*", id)
		}
	}
	for id := range want {
		if !slices.Contains(responders, id) {
			t.Errorf("role %s cannot answer task tokens", id)
		}
	}
}
