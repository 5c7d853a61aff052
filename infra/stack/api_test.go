package stack

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
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

func TestApiHasNoCorsWithoutAllowedOrigins(t *testing.T) {
	s := synthesized(t)
	for route := range s.methods(t) {
		if strings.HasPrefix(route, "OPTIONS ") {
			t.Errorf("preflight %s declared with no allowed origins", route)
		}
	}
	if got := s.ofType("AWS::ApiGateway::GatewayResponse"); len(got) != 0 {
		t.Errorf("gateway responses %v declared with no allowed origins", keysOf(got))
	}
	for id, r := range s.ofType("AWS::ApiGateway::Method") {
		if strings.Contains(asJSON(r), "Access-Control-") {
			t.Errorf("method %s carries CORS headers with no allowed origins: %s", id, asJSON(props(r)))
		}
	}
}

func TestApiPreflightAllowsTheConfiguredOriginsHeadersAndMethods(t *testing.T) {
	p := DefaultProps()
	p.Stage = "cors"
	p.Api.AllowedOrigins = []string{"https://shop.example.com", "http://localhost:5173"}
	s, err := synthesize(p, true)
	if err != nil {
		t.Fatal(err)
	}
	methods := s.methods(t)
	for _, route := range []string{"OPTIONS /events/{eventId}/reservations", "OPTIONS /reservations/{id}"} {
		t.Run(route, func(t *testing.T) {
			m, ok := methods[route]
			if !ok {
				t.Fatalf("no preflight; routes %v", keysOf(methods))
			}
			if m["AuthorizationType"] != "NONE" {
				t.Errorf("preflight authorization %v: a browser sends no token with a preflight", m["AuthorizationType"])
			}
			integ := m["Integration"].(map[string]any)
			if integ["Type"] != "MOCK" {
				t.Errorf("preflight integration %v, want MOCK (no function is invoked)", integ["Type"])
			}
			answer := asJSON(integ["IntegrationResponses"])
			for _, want := range []string{
				`"method.response.header.Access-Control-Allow-Headers":"'Authorization,Idempotency-Key,Content-Type'"`,
				`"method.response.header.Access-Control-Allow-Methods":"'GET,POST,DELETE'"`,
				"https://shop.example.com", "http://localhost:5173",
			} {
				if !strings.Contains(answer, want) {
					t.Errorf("preflight answer %s lacks %s", answer, want)
				}
			}
			if strings.Contains(answer, "Allow-Credentials") || strings.Contains(answer, `'*'`) {
				t.Errorf("preflight answer %s allows credentials or every origin", answer)
			}
		})
	}
	for route := range methods {
		if strings.HasPrefix(route, "OPTIONS ") && route != "OPTIONS /events/{eventId}/reservations" && route != "OPTIONS /reservations/{id}" {
			t.Errorf("preflight on %s, want only the customer routes", route)
		}
	}
	// With two origins no fixed header can name the right one, so API Gateway's own error
	// answers stay without CORS instead of being opened to every origin.
	if got := s.ofType("AWS::ApiGateway::GatewayResponse"); len(got) != 0 {
		t.Errorf("gateway responses %v with two origins", keysOf(got))
	}
	found := assertions.Annotations_FromStack(s.stack.Stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, m := range *found {
		t.Errorf("cdk-nag error at %s: %v", *m.Id, m.Entry.Data)
	}
}

func TestApiGatewayErrorsCarryTheOneAllowedOrigin(t *testing.T) {
	p := DefaultProps()
	p.Api.AllowedOrigins = []string{"https://shop.example.com"}
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	responses := s.ofType("AWS::ApiGateway::GatewayResponse")
	types := map[string]bool{}
	for _, r := range responses {
		rp := props(r)
		types[rp["ResponseType"].(string)] = true
		headers := asJSON(rp["ResponseParameters"])
		if !strings.Contains(headers, `"gatewayresponse.header.Access-Control-Allow-Origin":"'https://shop.example.com'"`) ||
			!strings.Contains(headers, `"gatewayresponse.header.Vary":"'Origin'"`) {
			t.Errorf("gateway response %v headers %s, want the one origin and Vary: Origin", rp["ResponseType"], headers)
		}
	}
	if !types["DEFAULT_4XX"] || !types["DEFAULT_5XX"] || len(types) != 2 {
		t.Errorf("gateway responses %v, want DEFAULT_4XX and DEFAULT_5XX", types)
	}
}

func TestAllowedOriginsRefusesWhatNoBrowserSends(t *testing.T) {
	for _, ok := range [][]string{nil, {"*"}, {"https://shop.example.com", "http://localhost:5173"}} {
		if err := ValidateAllowedOrigins(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		origins []string
		want    string
	}{
		{[]string{"*", "https://shop.example.com"}, "only origin"},
		{[]string{"https://shop.example.com", "https://shop.example.com"}, "twice"},
		{[]string{"https://shop.example.com/"}, "no path"},
		{[]string{"https://shop.example.com/buy"}, "no path"},
		{[]string{"shop.example.com"}, "scheme://host"},
		{[]string{"ftp://shop.example.com"}, "scheme://host"},
		{[]string{"https://user@shop.example.com"}, "scheme://host"},
		{[]string{"https://Shop.example.com"}, "lower case"},
	} {
		if err := ValidateAllowedOrigins(tc.origins); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one mentioning %q", tc.origins, err, tc.want)
		}
	}
}

func TestUserPoolClientAllowsOnlySrpAndAdminPasswordSignIn(t *testing.T) {
	s := synthesized(t)
	_, client := s.byPath(t, "Api/UserPool/WebClient/Resource")
	cp := props(client)
	if got := asJSON(cp["ExplicitAuthFlows"]); got != `["ALLOW_ADMIN_USER_PASSWORD_AUTH","ALLOW_USER_SRP_AUTH","ALLOW_REFRESH_TOKEN_AUTH"]` {
		t.Errorf("auth flows %s, want SRP for browsers, admin password for the smoke test, refresh", got)
	}
	for _, oauth := range []string{"AllowedOAuthFlows", "AllowedOAuthScopes", "CallbackURLs", "LogoutURLs", "DefaultRedirectURI"} {
		if v, ok := cp[oauth]; ok {
			t.Errorf("%s = %s left over; the client uses no OAuth", oauth, asJSON(v))
		}
	}
	if v, ok := cp["AllowedOAuthFlowsUserPoolClient"]; ok && v != false {
		t.Errorf("AllowedOAuthFlowsUserPoolClient = %v", v)
	}
	if cp["GenerateSecret"] != false {
		t.Errorf("GenerateSecret = %v, want false: a browser cannot keep a secret", cp["GenerateSecret"])
	}
}

func TestUserPoolIsOnTheLiteFeaturePlan(t *testing.T) {
	s := synthesized(t)
	_, pool := s.byPath(t, "Api/UserPool/Resource")
	if got := props(pool)["UserPoolTier"]; got != "LITE" {
		t.Errorf("UserPoolTier %v, want LITE, the cheapest plan with everything the pool uses", got)
	}
}

func TestUserPoolSendsEmailThroughSESWhenASenderIsConfigured(t *testing.T) {
	s := synthesized(t)
	_, pool := s.byPath(t, "Api/UserPool/Resource")
	if got := asJSON(props(pool)["EmailConfiguration"]); got != "null" && !strings.Contains(got, "COGNITO_DEFAULT") {
		t.Errorf("default email configuration %s, want Cognito's own sender", got)
	}

	p := DefaultProps()
	p.Api.SESFromEmail, p.Api.SESVerifiedDomain = "tickets@shop.example.com", "shop.example.com"
	withSES, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	_, pool = withSES.byPath(t, "Api/UserPool/Resource")
	email := asJSON(props(pool)["EmailConfiguration"])
	for _, want := range []string{`"EmailSendingAccount":"DEVELOPER"`, `"From":"tickets@shop.example.com"`, ":identity/shop.example.com"} {
		if !strings.Contains(email, want) {
			t.Errorf("email configuration %s lacks %s", email, want)
		}
	}
}
