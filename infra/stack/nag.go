package stack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// suppression is one accepted cdk-nag finding: the rule, the resource path below the stack,
// optionally the exact finding within the rule (appliesTo), and why it is accepted.
type suppression struct {
	path      string
	rule      string
	appliesTo []string
	reason    string
}

// Suppressions lists every accepted finding for a stack of this shape. Each names one rule on
// one resource; IAM5 ones also name the exact wildcard they accept, and for function roles the
// wildcards and the actions on them are read from the functions' specs, so a reason cannot
// outlive the grant it explains.
func (s *Seatsaga) Suppressions() []suppression {
	var out []suppression
	for _, name := range sortedKeys(s.Functions.ByName) {
		out = append(out, functionWildcards(name, s.Functions.ByName[name].Spec)...)
	}
	out = append(out, suppression{
		path: "Workflow/Role/DefaultPolicy/Resource", rule: "AwsSolutions-IAM5",
		appliesTo: []string{"Resource::*"},
		reason:    "Only X-Ray tracing (trace writes and the sampling rules and targets it reads) and the CloudWatch Logs vended-delivery actions (logs:CreateLogDelivery and friends), none of which support resource-level permissions.",
	})
	out = append(out,
		suppression{path: "Api/RestApi/CloudWatchRole/Resource", rule: "AwsSolutions-IAM4",
			appliesTo: []string{"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"},
			reason:    "API Gateway's account-level logging role; AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for it and API Gateway alone assumes the role."},
		suppression{path: "Api/RestApi/Default/webhooks/stripe/POST/Resource", rule: "AwsSolutions-APIG4",
			reason: "Stripe cannot present a customer token; the webhook function verifies the Stripe-Signature HMAC with the signing secret before acting on any event."},
		suppression{path: "Api/RestApi/Default/webhooks/stripe/POST/Resource", rule: "AwsSolutions-COG4",
			reason: "The Stripe webhook is called by Stripe, not by a customer; it is authenticated by its Stripe-Signature HMAC in code."},
		suppression{path: "Secrets/StripeSecretKey/Resource", rule: "AwsSolutions-SMG4",
			reason: "Stripe API keys are rolled in the Stripe dashboard, which Secrets Manager rotation cannot drive; the runbook in infra/README.md puts the new key here."},
		suppression{path: "Secrets/StripeWebhookSecret/Resource", rule: "AwsSolutions-SMG4",
			reason: "Webhook signing secrets are rolled in the Stripe dashboard, which Secrets Manager rotation cannot drive; the runbook in infra/README.md puts the new secret here."},
		suppression{path: "Events/RelayDLQ/Resource", rule: "AwsSolutions-SQS3",
			reason: "This queue is itself the dead-letter destination of the relay's stream event source."},
		suppression{path: "Events/StarterDLQ/Resource", rule: "AwsSolutions-SQS3",
			reason: "This queue is itself the dead-letter destination of the starter's stream event source."},
		suppression{path: "Events/ConsumerDLQ/Resource", rule: "AwsSolutions-SQS3",
			reason: "This queue is itself the dead-letter queue of the consumer's rule target and failed async invocations."},
	)
	if s.Api.Client != nil {
		out = append(out,
			suppression{path: "Api/UserPool/Resource", rule: "AwsSolutions-COG8",
				reason: "The Plus feature plan is billed per monthly active user; deployers who want Cognito threat protection set userPoolArn to a pool on that plan."},
			suppression{path: "Api/UserPool/Resource", rule: "AwsSolutions-COG2",
				reason: "Buyers of a flash sale sign in once per sale; TOTP MFA is offered (optional) rather than required, with a 12-character password policy."},
		)
	}
	return out
}

// unscopedActions are the actions a function's spec may grant on "*", each with why: they
// support no resource-level permissions. A role granted any other action on "*" gets no
// suppression for "*" at all, so cdk-nag fails synthesis until someone decides.
var unscopedActions = map[string]string{
	"xray:PutTraceSegments":    "X-Ray active tracing",
	"xray:PutTelemetryRecords": "X-Ray active tracing",
	"dynamodb:ListStreams":     "the stream event source's discovery call",
}

// functionWildcards are the IAM5 suppressions of one function's role: one per kind of
// wildcard resource its spec grants on, naming the resources and the actions.
func functionWildcards(name string, spec deploy.Function) []suppression {
	var executionActions, anyActions, anyWhy []string
	scopable := false
	for _, g := range spec.AllGrants() {
		for _, r := range g.Resources {
			switch r.Kind {
			case deploy.Executions:
				executionActions = append(executionActions, g.Actions...)
			case deploy.Any:
				for _, a := range g.Actions {
					why, ok := unscopedActions[a]
					scopable = scopable || !ok
					anyActions = append(anyActions, a)
					anyWhy = append(anyWhy, why)
				}
			}
		}
	}
	path := "Functions/" + alarms.Pascal(name) + "Role/DefaultPolicy/Resource"
	var out []suppression

	if len(executionActions) > 0 {
		out = append(out, suppression{path: path, rule: "AwsSolutions-IAM5",
			appliesTo: []string{`regex:/^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<Workflow[A-Za-z0-9]+\.Name>:\*$/`},
			reason: fmt.Sprintf("%s on this state machine's executions only (execution:<state machine name>:*); execution names are reservation ids, unknown at deploy time.",
				strings.Join(uniqueSorted(executionActions), ", "))})
	}
	if len(anyActions) > 0 && !scopable {
		out = append(out, suppression{path: path, rule: "AwsSolutions-IAM5", appliesTo: []string{"Resource::*"},
			reason: fmt.Sprintf("Only %s on *: they support no resource-level permissions (%s).",
				strings.Join(uniqueSorted(anyActions), ", "), strings.Join(uniqueSorted(anyWhy), "; "))})
	}
	return out
}

func uniqueSorted(s []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(s)))
}

// addSuppressions attaches Suppressions to their resources by path.
func addSuppressions(s *Seatsaga) {
	for _, sup := range s.Suppressions() {
		ps := &cdknag.NagPackSuppression{Id: jsii.String(sup.rule), Reason: jsii.String(sup.reason)}
		if len(sup.appliesTo) > 0 {
			var applies []interface{}
			for _, a := range sup.appliesTo {
				if rx, ok := strings.CutPrefix(a, "regex:"); ok {
					applies = append(applies, &cdknag.RegexAppliesTo{Regex: jsii.String(rx)})
				} else {
					applies = append(applies, a)
				}
			}
			ps.AppliesTo = &applies
		}
		cdknag.NagSuppressions_AddResourceSuppressionsByPath(s.Stack,
			jsii.String("/"+*s.Stack.Node().Path()+"/"+sup.path), &[]*cdknag.NagPackSuppression{ps}, jsii.Bool(false))
	}
}
