package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/api"
)

// The WAF web ACL in front of the REST API stage. WAF attaches to REST API stages (not to HTTP
// APIs), which is what this stack deploys, with a REGIONAL web ACL for a regional endpoint.
const (
	// CtxWafRateLimit is the context key of the per-client-IP rate limit: requests in
	// WafRateWindowSeconds from one IP address before WAF blocks that address.
	CtxWafRateLimit = "wafRateLimit"
	// DefaultWafRateLimit allows one address 10 requests a second on average over the window:
	// a buyer posts once and polls the status every second or so, and many buyers share one
	// address behind a carrier's or an office's NAT, while one client scripting the sale at
	// its own pace is stopped long before the stage throttle (shared by every buyer) is spent.
	DefaultWafRateLimit = 3000
	// WafRateWindowSeconds is the rate rule's evaluation window (WAF allows 60, 120, 300, 600).
	WafRateWindowSeconds = 300
	// WafBodyInspectionLimit is how much of a body WAF inspects for an API Gateway resource by
	// default (raising it costs extra per request); a body beyond it is "oversize".
	WafBodyInspectionLimit = 16 << 10
	// wafMinRateLimit and wafMaxRateLimit are what WAF accepts as a rate-based rule's limit.
	wafMinRateLimit = 10
	wafMaxRateLimit = 2_000_000_000
)

// WafWebhookPathSuffix is the path the webhook route ends with. Both rules leave it out: Stripe
// delivers every buyer's events from a handful of addresses, and its bodies (up to
// webhook.MaxPayloadBytes, verified by signature in code) may exceed what the API's customer
// routes ever need.
const WafWebhookPathSuffix = "/webhooks/stripe"

// WafProps configures the web ACL.
type WafProps struct {
	// Stage is the REST API stage the web ACL is associated with.
	Stage awsapigateway.Stage
	// RateLimit is requests per client IP per WafRateWindowSeconds; zero reads CtxWafRateLimit
	// from the context, else DefaultWafRateLimit.
	RateLimit int
}

// Waf is a REGIONAL web ACL on the API stage with two rules: bodies larger than the API accepts
// are blocked 413 before API Gateway invokes a function, and a client IP past the rate limit is
// blocked 429. Both answers carry the API's JSON error shape ({code, message}).
type Waf struct {
	constructs.Construct
	WebAcl      awswafv2.CfnWebACL
	Association awswafv2.CfnWebACLAssociation
	RateLimit   int
}

// NewWaf declares the web ACL and associates it with the stage. It panics on a rate limit WAF
// would refuse, as CDK does for invalid construct configuration.
func NewWaf(scope constructs.Construct, id string, p WafProps) *Waf {
	c := constructs.NewConstruct(scope, jsii.String(id))
	limit, err := wafRateLimit(p.RateLimit, c.Node().TryGetContext(jsii.String(CtxWafRateLimit)))
	if err != nil {
		panic(fmt.Sprintf("stack: %v", err))
	}
	metricPrefix := *awscdk.Stack_Of(c).StackName() + "-waf"
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			SampledRequestsEnabled:   jsii.Bool(true),
			MetricName:               jsii.String(metricPrefix + "-" + name),
		}
	}
	noTransformation := &[]*awswafv2.CfnWebACL_TextTransformationProperty{{Priority: jsii.Number(0), Type: jsii.String("NONE")}}
	notWebhook := &awswafv2.CfnWebACL_StatementProperty{
		NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
					FieldToMatch:         &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: map[string]any{}},
					PositionalConstraint: jsii.String("ENDS_WITH"),
					SearchString:         jsii.String(WafWebhookPathSuffix),
					TextTransformations:  noTransformation,
				},
			},
		},
	}
	block := func(status int, bodyKey string) *awswafv2.CfnWebACL_RuleActionProperty {
		return &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
			CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
				ResponseCode: jsii.Number(float64(status)), CustomResponseBodyKey: jsii.String(bodyKey),
			},
		}}
	}
	errorBody := func(code, message string) *awswafv2.CfnWebACL_CustomResponseBodyProperty {
		return &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(fmt.Sprintf(`{"code":%q,"message":%q}`, code, message)),
		}
	}

	w := &Waf{Construct: c, RateLimit: limit}
	w.WebAcl = awswafv2.NewCfnWebACL(c, jsii.String("WebAcl"), &awswafv2.CfnWebACLProps{
		Scope:            jsii.String("REGIONAL"),
		Description:      jsii.String("seatsaga API: body size and per-client rate limits in front of the stage"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: map[string]any{}},
		VisibilityConfig: visibility("acl"),
		CustomResponseBodies: &map[string]*awswafv2.CfnWebACL_CustomResponseBodyProperty{
			"bodyTooLarge": errorBody("body_too_large", fmt.Sprintf("the body must be at most %d bytes", api.MaxBodyBytes)),
			"throttled":    errorBody("throttled", "too many requests from this address; retry with the same Idempotency-Key in a few minutes"),
		},
		Rules: &[]*awswafv2.CfnWebACL_RuleProperty{
			{
				// The API's largest legitimate body is well under a kilobyte and the function
				// refuses one over api.MaxBodyBytes anyway: refusing it here spares the
				// invocation. A body beyond what WAF inspects is oversize and matches
				// (OversizeHandling MATCH): CONTINUE would judge it by its first 16 KB only and
				// let it through, so the rule would never block anything larger.
				Name:     jsii.String("BodyLargerThanTheApiAccepts"),
				Priority: jsii.Number(0),
				Statement: &awswafv2.CfnWebACL_StatementProperty{
					AndStatement: &awswafv2.CfnWebACL_AndStatementProperty{
						Statements: &[]*awswafv2.CfnWebACL_StatementProperty{
							{SizeConstraintStatement: &awswafv2.CfnWebACL_SizeConstraintStatementProperty{
								FieldToMatch: &awswafv2.CfnWebACL_FieldToMatchProperty{
									Body: &awswafv2.CfnWebACL_BodyProperty{OversizeHandling: jsii.String("MATCH")},
								},
								ComparisonOperator:  jsii.String("GT"),
								Size:                jsii.Number(float64(api.MaxBodyBytes)),
								TextTransformations: noTransformation,
							}},
							notWebhook,
						},
					},
				},
				Action:           block(413, "bodyTooLarge"),
				VisibilityConfig: visibility("body-size"),
			},
			{
				Name:     jsii.String("RatePerClientIp"),
				Priority: jsii.Number(1),
				Statement: &awswafv2.CfnWebACL_StatementProperty{
					RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
						AggregateKeyType:    jsii.String("IP"),
						Limit:               jsii.Number(float64(limit)),
						EvaluationWindowSec: jsii.Number(WafRateWindowSeconds),
						ScopeDownStatement:  notWebhook,
					},
				},
				Action:           block(429, "throttled"),
				VisibilityConfig: visibility("rate-per-ip"),
			},
		},
	})
	w.Association = awswafv2.NewCfnWebACLAssociation(c, jsii.String("StageAssociation"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: p.Stage.StageArn(),
		WebAclArn:   w.WebAcl.AttrArn(),
	})
	// The stage's ARN is built from the API's id and the stage's name, which does not make
	// CloudFormation wait for the stage itself; the association fails on a stage not yet made.
	w.Association.Node().AddDependency(p.Stage)
	return w
}

// wafRateLimit is the rate limit to deploy: configured, else the context's value (a JSON number
// from cdk.json or a string from -c), else DefaultWafRateLimit; it must be one WAF accepts.
func wafRateLimit(configured int, fromContext any) (int, error) {
	limit := configured
	if limit == 0 && fromContext != nil {
		f, err := toFloat(fromContext)
		if err != nil || f != float64(int(f)) {
			return 0, fmt.Errorf("%s: want a whole number of requests, got %v", CtxWafRateLimit, fromContext)
		}
		limit = int(f)
	}
	if limit == 0 {
		limit = DefaultWafRateLimit
	}
	if limit < wafMinRateLimit || limit > wafMaxRateLimit {
		return 0, fmt.Errorf("%s %d: WAF accepts %d to %d requests per %d s", CtxWafRateLimit, limit, wafMinRateLimit, wafMaxRateLimit, WafRateWindowSeconds)
	}
	return limit, nil
}
