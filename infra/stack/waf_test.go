package stack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/api"
)

// wafRule finds a web ACL rule by name.
func wafRule(t *testing.T, acl map[string]any, name string) map[string]any {
	t.Helper()
	rules, _ := props(acl)["Rules"].([]any)
	for _, r := range rules {
		if rule, _ := r.(map[string]any); rule["Name"] == name {
			return rule
		}
	}
	t.Fatalf("web ACL has no rule %s: %s", name, asJSON(rules))
	return nil
}

// customBody decodes the custom response body a rule's Block action names, in the API's JSON
// error shape.
func customBody(t *testing.T, acl, rule map[string]any) (status float64, code string) {
	t.Helper()
	resp, _ := rule["Action"].(map[string]any)["Block"].(map[string]any)["CustomResponse"].(map[string]any)
	key, _ := resp["CustomResponseBodyKey"].(string)
	body, _ := props(acl)["CustomResponseBodies"].(map[string]any)[key].(map[string]any)
	var e struct{ Code, Message string }
	if body["ContentType"] != "APPLICATION_JSON" || json.Unmarshal([]byte(body["Content"].(string)), &e) != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("rule %s answers %s, not the API's JSON error shape", rule["Name"], asJSON(body))
	}
	status, _ = resp["ResponseCode"].(float64)
	return status, e.Code
}

// The stage has a REGIONAL web ACL: bodies larger than the API accepts are blocked 413, those
// WAF cannot inspect whole included, and a client IP past the default rate is blocked 429, both
// with the API's error shape; the Stripe webhook is left to its signature check.
func TestWafGuardsTheStageWithBodySizeAndRateRules(t *testing.T) {
	s := synthesized(t)
	acls := s.ofType("AWS::WAFv2::WebACL")
	if len(acls) != 1 {
		t.Fatalf("%d web ACLs, want 1", len(acls))
	}
	aclID, acl := s.byPath(t, "Waf/WebAcl")
	if p := props(acl); p["Scope"] != "REGIONAL" || asJSON(p["DefaultAction"]) != `{"Allow":{}}` {
		t.Fatalf("web ACL scope %v, default action %s; want REGIONAL, Allow", p["Scope"], asJSON(p["DefaultAction"]))
	}

	body := wafRule(t, acl, "BodyLargerThanTheApiAccepts")
	statement := asJSON(body["Statement"])
	for _, want := range []string{
		`"SizeConstraintStatement":{"ComparisonOperator":"GT","FieldToMatch":{"Body":{"OversizeHandling":"MATCH"}},"Size":16384`,
		`"NotStatement":{"Statement":{"ByteMatchStatement":{"FieldToMatch":{"UriPath":{}},"PositionalConstraint":"ENDS_WITH","SearchString":"/webhooks/stripe"`,
	} {
		if !strings.Contains(statement, want) {
			t.Errorf("body rule %s lacks %s", statement, want)
		}
	}
	// MATCH blocks every body WAF cannot inspect whole: only sound while the API never needs
	// a larger one than WAF inspects.
	if api.MaxBodyBytes > WafBodyInspectionLimit || api.MaxBodyBytes != 16384 {
		t.Errorf("api.MaxBodyBytes %d: the body rule's size and oversize handling assume 16384, within WAF's %d", api.MaxBodyBytes, WafBodyInspectionLimit)
	}
	if status, code := customBody(t, acl, body); status != 413 || code != "body_too_large" {
		t.Errorf("body rule answers %v %s, want 413 body_too_large", status, code)
	}

	rate := wafRule(t, acl, "RatePerClientIp")
	rateStatement := asJSON(rate["Statement"])
	for _, want := range []string{`"AggregateKeyType":"IP"`, `"Limit":3000`, `"EvaluationWindowSec":300`, `"SearchString":"/webhooks/stripe"`} {
		if !strings.Contains(rateStatement, want) {
			t.Errorf("rate rule %s lacks %s", rateStatement, want)
		}
	}
	if status, code := customBody(t, acl, rate); status != 429 || code != "throttled" {
		t.Errorf("rate rule answers %v %s, want 429 throttled", status, code)
	}

	assocs := s.ofType("AWS::WAFv2::WebACLAssociation")
	if len(assocs) != 1 {
		t.Fatalf("%d web ACL associations, want 1", len(assocs))
	}
	_, assoc := s.byPath(t, "Waf/StageAssociation")
	stageID, _ := s.byPath(t, "Api/RestApi/DeploymentStage.dev/Resource")
	apiID, _ := s.byPath(t, "Api/RestApi/Resource")
	p := props(assoc)
	if arn := asJSON(p["ResourceArn"]); !strings.Contains(arn, apiID) || !strings.Contains(arn, "/stages/") || !strings.Contains(arn, stageID) && !strings.Contains(arn, "/stages/dev") {
		t.Errorf("association resource %s is not the %s stage of %s", arn, "dev", apiID)
	}
	if webACL := asJSON(p["WebACLArn"]); webACL != `{"Fn::GetAtt":["`+aclID+`","Arn"]}` {
		t.Errorf("association web ACL %s, want %s's Arn", webACL, aclID)
	}
	if deps := asJSON(assoc["DependsOn"]); !strings.Contains(deps, stageID) {
		t.Errorf("association depends on %s, want the stage %s", deps, stageID)
	}
}

// wafOnBareStage synthesizes a web ACL on a minimal REST API with context ctx.
func wafOnBareStage(t *testing.T, ctx map[string]any) map[string]any {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	st := awscdk.NewStack(app, jsii.String("WafContext"), nil)
	rest := awsapigateway.NewRestApi(st, jsii.String("Api"), nil)
	rest.Root().AddMethod(jsii.String("GET"), awsapigateway.NewMockIntegration(nil), nil)
	NewWaf(st, "Waf", WafProps{Stage: rest.DeploymentStage()})
	raw, err := json.Marshal(assertions.Template_FromStack(st, nil).ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Resources map[string]map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Resources {
		if r["Type"] == "AWS::WAFv2::WebACL" {
			return r
		}
	}
	t.Fatal("no web ACL")
	return nil
}

// The rate limit follows the context, as a number (cdk.json) or a string (-c on the command
// line); the default stack's 3000 is the control.
func TestWafRateLimitFollowsTheContext(t *testing.T) {
	for _, v := range []any{float64(750), "750"} {
		acl := wafOnBareStage(t, map[string]any{CtxWafRateLimit: v})
		if got := asJSON(wafRule(t, acl, "RatePerClientIp")["Statement"]); !strings.Contains(got, `"Limit":750`) {
			t.Errorf("context %#v: rate rule %s, want Limit 750", v, got)
		}
	}
}

func TestWafRateLimitRefusesWhatWAFWouldRefuse(t *testing.T) {
	for _, tc := range []struct {
		configured int
		ctx        any
		want       int
		wantErr    bool
	}{
		{0, nil, DefaultWafRateLimit, false},
		{500, "900", 500, false},
		{0, "10", 10, false},
		{0, "9", 0, true},
		{0, float64(2.5), 0, true},
		{0, "lots", 0, true},
		{0, float64(3_000_000_000), 0, true},
	} {
		got, err := wafRateLimit(tc.configured, tc.ctx)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("wafRateLimit(%d, %#v) = %d, %v; want %d, error %v", tc.configured, tc.ctx, got, err, tc.want, tc.wantErr)
		}
	}
}
