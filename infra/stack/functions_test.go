package stack

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/infra/build"
	"github.com/seatsaga/seatsaga/internal/tables"
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
	id, _ := s.byPath(t, "Functions/"+pascal(name)+"Role/Resource")
	return id
}

func TestEveryFunctionIsDeclaredOnArm64ProvidedAL2023WithItsOwnRoleAndLogs(t *testing.T) {
	s := synthesized(t)
	if got := len(s.ofType("AWS::Lambda::Function")); got != len(build.Functions) {
		t.Errorf("%d functions, want %d", got, len(build.Functions))
	}
	roles := map[string]string{}
	for _, name := range build.Functions {
		t.Run(name, func(t *testing.T) {
			_, r := s.byPath(t, "Functions/"+pascal(name)+"/Resource")
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

			logsID, logs := s.byPath(t, "Functions/"+pascal(name)+"Logs/Resource")
			if asJSON(p["LoggingConfig"]) != `{"LogGroup":{"Ref":"`+logsID+`"}}` {
				t.Errorf("logging %s, want its log group %s", asJSON(p["LoggingConfig"]), logsID)
			}
			if props(logs)["RetentionInDays"] != float64(30) {
				t.Errorf("log retention %v, want 30", props(logs)["RetentionInDays"])
			}

			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			for k, want := range map[string]string{
				EnvStage: "dev", EnvLateSuccessPolicy: "reacquire", EnvHoldSeconds: "600",
				EnvMetricsNamespace: "Seatsaga", EnvMaxSeats: "10",
			} {
				if env[k] != want {
					t.Errorf("env %s = %v, want %s", k, env[k], want)
				}
			}
			spec := specByName(t, name)
			if _, has := env[EnvTablePrefix]; has != (len(spec.Tables) > 0) {
				t.Errorf("env %s present = %v, want %v", EnvTablePrefix, has, len(spec.Tables) > 0)
			}
			if _, has := env[EnvStripeSecretKeyArn]; has != spec.StripeKey {
				t.Errorf("env %s present = %v, want %v", EnvStripeSecretKeyArn, has, spec.StripeKey)
			}
			if _, has := env[EnvStripeWebhookSecret]; has != spec.WebhookSecret {
				t.Errorf("env %s present = %v, want %v", EnvStripeWebhookSecret, has, spec.WebhookSecret)
			}
			wantSM := name == "api" || name == "webhook" || name == "sweeper"
			if _, has := env[EnvStateMachineArn]; has != wantSM {
				t.Errorf("env %s present = %v, want %v", EnvStateMachineArn, has, wantSM)
			}
			for k := range env {
				if strings.Contains(strings.ToLower(k), "secret") && !strings.HasSuffix(k, "_ARN") {
					t.Errorf("env %s looks like a secret value; only ARNs may be passed", k)
				}
			}
		})
	}
}

func specByName(t *testing.T, name string) FunctionSpec {
	t.Helper()
	for _, s := range Specs() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no spec for %s", name)
	return FunctionSpec{}
}

func TestSpecsCoverExactlyTheBuiltFunctions(t *testing.T) {
	var names []string
	for _, s := range Specs() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, build.Functions) {
		t.Errorf("specs %v, built functions %v", names, build.Functions)
	}
}

func TestFunctionRolesAreLeastPrivilege(t *testing.T) {
	s := synthesized(t)
	tableIDs := map[string]string{}
	for _, def := range tables.All() {
		id, _ := s.byPath(t, "Data/"+def.Name+"/Resource")
		tableIDs[id] = def.Name
	}
	secretKeyID, _ := s.byPath(t, "Secrets/StripeSecretKey/Resource")
	webhookSecretID, _ := s.byPath(t, "Secrets/StripeWebhookSecret/Resource")

	for _, name := range build.Functions {
		t.Run(name, func(t *testing.T) {
			roleID := s.functionRoleID(t, name)
			_, role := s.byPath(t, "Functions/"+pascal(name)+"Role/Resource")
			if mp, ok := props(role)["ManagedPolicyArns"]; ok {
				t.Errorf("managed policies attached: %s", asJSON(mp))
			}
			spec := specByName(t, name)
			touched := map[string]bool{}
			var readsKey, readsWebhook bool
			for _, st := range s.roleStatements(roleID) {
				for _, a := range st.actions {
					if strings.Contains(a, "*") {
						t.Errorf("wildcard action %s", a)
					}
					if strings.HasPrefix(a, "states:SendTask") && name != "api" && name != "webhook" {
						t.Errorf("%s may not answer task tokens, but has %s", name, a)
					}
					if a == "states:StartExecution" && name != "api" {
						t.Errorf("%s may not start executions", name)
					}
				}
				for _, res := range st.resources {
					if res == `"*"` {
						for _, a := range st.actions {
							// X-Ray writes and the stream event source's ListStreams support
							// no resource-level permissions; nothing else may use *.
							if !strings.HasPrefix(a, "xray:") && !(name == "relay" && a == "dynamodb:ListStreams") {
								t.Errorf("action %s on every resource; only X-Ray writes (and the relay's ListStreams) may use *", a)
							}
						}
					}
					for id, logical := range tableIDs {
						if strings.Contains(res, `"`+id+`"`) {
							touched[logical] = true
						}
					}
					if strings.Contains(res, secretKeyID) {
						readsKey = true
					}
					if strings.Contains(res, webhookSecretID) {
						readsWebhook = true
					}
				}
			}
			var got, want []string
			for k := range touched {
				got = append(got, k)
			}
			for k := range spec.Tables {
				want = append(want, k)
			}
			// The relay's stream grant reads the outbox stream, not the table's items.
			if name == "relay" {
				want = append(want, tables.OutboxTable)
			}
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("tables granted %v, want exactly %v", got, want)
			}
			if readsKey != spec.StripeKey {
				t.Errorf("reads the Stripe key = %v, want %v", readsKey, spec.StripeKey)
			}
			if readsWebhook != (name == "webhook") {
				t.Errorf("reads the webhook secret = %v; only the webhook may", readsWebhook)
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
