package stack

import (
	"strings"
	"testing"
)

// methods maps "VERB /path" to each API Gateway method resource, rebuilding the paths from the
// resource tree.
func (s *synth) methods(t *testing.T) map[string]map[string]any {
	t.Helper()
	resources := s.ofType("AWS::ApiGateway::Resource")
	var pathOf func(id string) string
	pathOf = func(id string) string {
		r, ok := resources[id]
		if !ok {
			return "" // the API's root
		}
		p := props(r)
		parent := ""
		if ref, ok := p["ParentId"].(map[string]any)["Ref"].(string); ok {
			parent = pathOf(ref)
		}
		return parent + "/" + p["PathPart"].(string)
	}
	out := map[string]map[string]any{}
	for _, m := range s.ofType("AWS::ApiGateway::Method") {
		p := props(m)
		path := "/"
		if ref, ok := p["ResourceId"].(map[string]any)["Ref"].(string); ok {
			path = pathOf(ref)
		}
		out[p["HttpMethod"].(string)+" "+path] = p
	}
	return out
}

func TestApiRoutesAuthorizersAndValidation(t *testing.T) {
	s := synthesized(t)
	methods := s.methods(t)
	apiFn, _ := s.byPath(t, "Functions/Api/Resource")
	webhookFn, _ := s.byPath(t, "Functions/Webhook/Resource")
	authorizerID, authorizer := s.byPath(t, "Api/Authorizer/Resource")
	poolID, _ := s.byPath(t, "Api/UserPool/Resource")

	if got := props(authorizer)["Type"]; got != "COGNITO_USER_POOLS" {
		t.Errorf("authorizer type %v", got)
	}
	if !strings.Contains(asJSON(props(authorizer)["ProviderARNs"]), poolID) {
		t.Errorf("authorizer providers %s, want the user pool %s", asJSON(props(authorizer)["ProviderARNs"]), poolID)
	}

	for _, tc := range []struct {
		route    string
		function string
		customer bool
		params   []string
	}{
		{"POST /events/{eventId}/reservations", apiFn, true, []string{"method.request.path.eventId", "method.request.header.Idempotency-Key"}},
		{"GET /reservations/{id}", apiFn, true, []string{"method.request.path.id"}},
		{"DELETE /reservations/{id}", apiFn, true, []string{"method.request.path.id"}},
		{"POST /webhooks/stripe", webhookFn, false, []string{"method.request.header.Stripe-Signature"}},
	} {
		t.Run(tc.route, func(t *testing.T) {
			m, ok := methods[tc.route]
			if !ok {
				t.Fatalf("route missing; have %v", keysOf(methods))
			}
			integ := m["Integration"].(map[string]any)
			if integ["Type"] != "AWS_PROXY" || !strings.Contains(asJSON(integ["Uri"]), `"`+tc.function+`"`) {
				t.Errorf("integration %s, want a proxy to %s", asJSON(integ), tc.function)
			}
			if tc.customer {
				if m["AuthorizationType"] != "COGNITO_USER_POOLS" || asJSON(m["AuthorizerId"]) != `{"Ref":"`+authorizerID+`"}` {
					t.Errorf("authorization %v %s, want the Cognito authorizer", m["AuthorizationType"], asJSON(m["AuthorizerId"]))
				}
			} else if m["AuthorizationType"] != "NONE" {
				t.Errorf("webhook authorization %v, want NONE (verified by signature in code)", m["AuthorizationType"])
			}
			params, _ := m["RequestParameters"].(map[string]any)
			for _, p := range tc.params {
				if params[p] != true {
					t.Errorf("request parameter %s not required: %s", p, asJSON(params))
				}
			}
			if _, ok := m["RequestValidatorId"]; !ok {
				t.Error("no request validator")
			}
		})
	}
	if len(methods) != 4 {
		t.Errorf("routes %v, want exactly the four", keysOf(methods))
	}

	post := methods["POST /events/{eventId}/reservations"]
	modelRef := asJSON(post["RequestModels"])
	modelID, model := s.byPath(t, "Api/RestApi/ReservationRequest/Resource")
	if !strings.Contains(modelRef, modelID) {
		t.Errorf("POST body model %s, want %s", modelRef, modelID)
	}
	schema := asJSON(props(model)["Schema"])
	if !strings.Contains(schema, `"maxItems":10`) || !strings.Contains(schema, `"maxLength":128`) {
		t.Errorf("reservation schema does not bound its size: %s", schema)
	}
}

func TestApiStageThrottlesLogsAndTraces(t *testing.T) {
	p := DefaultProps()
	p.Api.RateLimit, p.Api.BurstLimit = 123, 456
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	_, stage := s.byPath(t, "Api/RestApi/DeploymentStage.dev/Resource")
	sp := props(stage)
	settings := asJSON(sp["MethodSettings"])
	for _, want := range []string{`"ThrottlingRateLimit":123`, `"ThrottlingBurstLimit":456`, `"DataTraceEnabled":false`, `"LoggingLevel":"ERROR"`} {
		if !strings.Contains(settings, want) {
			t.Errorf("method settings %s lack %s", settings, want)
		}
	}
	accessLogs, _ := s.byPath(t, "Api/AccessLogs/Resource")
	if !strings.Contains(asJSON(sp["AccessLogSetting"]), accessLogs) {
		t.Errorf("access logs %s, want %s", asJSON(sp["AccessLogSetting"]), accessLogs)
	}
	if sp["TracingEnabled"] != true {
		t.Error("stage tracing off")
	}
}

func keysOf[V any](m map[string]V) []string { return sortedKeys(m) }
