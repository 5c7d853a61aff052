package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/deploy"
)

// The app fails `cdk synth` on any unsuppressed AwsSolutions error; this test sees the same
// findings without the CLI.
func TestNoUnsuppressedAwsSolutionsErrors(t *testing.T) {
	s := synthesized(t)
	ann := assertions.Annotations_FromStack(s.stack.Stack)
	found := ann.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, m := range *found {
		t.Errorf("cdk-nag error at %s: %v", *m.Id, m.Entry.Data)
	}
}

// Warnings do not fail synthesis; the accepted ones are suppressed with reasons too, so any
// warning here is new and needs a decision.
func TestNoUnsuppressedAwsSolutionsWarnings(t *testing.T) {
	s := synthesized(t)
	ann := assertions.Annotations_FromStack(s.stack.Stack)
	found := ann.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, m := range *found {
		t.Errorf("cdk-nag warning at %s: %v", *m.Id, m.Entry.Data)
	}
}

// Other shapes of the stack must pass the checks too: a production stage, and a stage that
// authorizes against an existing user pool (so the stack creates none).
func TestOtherStackShapesPassTheChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *Props)
	}{
		{"production", func(p *Props) { p.Stage = "prod" }},
		{"imported user pool", func(p *Props) {
			p.Stage = "shared"
			p.Api.UserPoolArn = "arn:aws:cognito-idp:eu-west-1:111122223333:userpool/eu-west-1_Example"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultProps()
			tc.mutate(&p)
			s, err := synthesize(p, true)
			if err != nil {
				t.Fatalf("synthesis with cdk-nag failed: %v", err)
			}
			found := assertions.Annotations_FromStack(s.stack.Stack).FindError(jsii.String("*"),
				assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
			for _, m := range *found {
				t.Errorf("cdk-nag error at %s: %v", *m.Id, m.Entry.Data)
			}
			if p.Api.UserPoolArn != "" && len(s.ofType("AWS::Cognito::UserPool")) != 0 {
				t.Error("a user pool was created although one was given")
			}
		})
	}
}

// The IAM5 suppressions of a function role follow its spec: each wildcard kind it grants on is
// accepted with a reason naming the actions, and "*" only while every action on it supports no
// resource-level permissions; one that does leaves "*" unsuppressed, so cdk-nag fails.
func TestFunctionWildcardSuppressionsFollowTheSpec(t *testing.T) {
	sweeper := deploy.ByName("sweeper")
	got := functionWildcards("sweeper", sweeper)
	var reasons []string
	for _, s := range got {
		if s.path != "Functions/SweeperRole/DefaultPolicy/Resource" || s.rule != "AwsSolutions-IAM5" {
			t.Errorf("suppression %+v is not the sweeper role's IAM5", s)
		}
		reasons = append(reasons, s.reason)
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"states:DescribeExecution on this state machine's executions",
		"Only xray:PutTelemetryRecords, xray:PutTraceSegments on *"} {
		if !strings.Contains(all, want) {
			t.Errorf("no reason says %q:\n%s", want, all)
		}
	}
	// Indexes are granted by name, so they need no suppression.
	if len(got) != 2 {
		t.Errorf("%d suppressions, want one per wildcard kind (executions, *)", len(got))
	}

	sweeper.Grants = append(slices.Clone(sweeper.Grants), deploy.Grant{Actions: []string{"dynamodb:GetItem"}, Resources: []deploy.Resource{{Kind: deploy.Any}}})
	for _, s := range functionWildcards("sweeper", sweeper) {
		if slices.Contains(s.appliesTo, "Resource::*") {
			t.Errorf("* is suppressed although GetItem is granted on it: %s", s.reason)
		}
	}
}
