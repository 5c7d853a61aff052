package deploy_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/sweeper/sfnadapter"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

const (
	region  = awsgate.DefaultRegion
	account = awsgate.DefaultAccountID
)

var machineARN = "arn:aws:states:" + region + ":" + account + ":stateMachine:seatsaga-reservation"

// resolver renders the state machine and its executions as local ARNs; the grants this test
// looks at name nothing else.
type resolver struct{}

func (resolver) ARN(fn string, r deploy.Resource) string {
	switch r.Kind {
	case deploy.StateMachine:
		return machineARN
	case deploy.Executions:
		return "arn:aws:states:" + region + ":" + account + ":execution:seatsaga-reservation:*"
	}
	return "arn:aws:local:" + region + ":" + account + ":" + string(r.Kind) + "/" + fn + "/" + r.Name
}

func (resolver) Setting(string) string { return "" }

// The sweeper measures the oldest running execution of the state machine it is told of, so it
// is deployed with the machine's ARN and a grant of ListExecutions on the machine itself,
// where IAM authorizes that action (a grant on the executions would be denied on AWS).
func TestTheSweeperKnowsTheStateMachineAndMayListItsExecutions(t *testing.T) {
	f := deploy.ByName(deploy.FnSweeper)
	if !slices.Contains(f.Env, config.EnvStateMachineARN) {
		t.Errorf("the sweeper's environment %v lacks %s", f.Env, config.EnvStateMachineARN)
	}
	var on []deploy.Resource
	for _, g := range f.AllGrants() {
		if slices.Contains(g.Actions, "states:ListExecutions") {
			on = append(on, g.Resources...)
		}
	}
	if !slices.Equal(on, []deploy.Resource{{Kind: deploy.StateMachine}}) {
		t.Fatalf("states:ListExecutions is granted on %v, want the state machine only", on)
	}
}

// TestTheSweepersPolicyAllowsItsListingAndNoOtherRoleHasIt sends the sweeper adapter's
// ListExecutions through the twin's IAM gate under the policies the specs render: the
// sweeper's role may list the reservation machine's executions, not another machine's, and
// the api's role, which never lists, may not.
func TestTheSweepersPolicyAllowsItsListingAndNoOtherRoleHasIt(t *testing.T) {
	ctx := context.Background()
	srv := stepfunctions.New(stepfunctions.Options{Region: region, AccountID: account})
	sfnURL, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	g, err := awsgate.New(awsgate.Options{StepFunctionsEndpoint: sfnURL})
	if err != nil {
		t.Fatal(err)
	}
	gateURL, err := g.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	g.AddAdmin("admin")
	for _, fn := range []string{deploy.FnSweeper, deploy.FnAPI} {
		g.AddAssumedRole(fn, "seatsaga-"+fn, fn, deploy.ByName(fn).Policy(resolver{}))
	}
	client := func(key string) *sfn.Client {
		return sfn.New(sfn.Options{Region: region, BaseEndpoint: aws.String(gateURL), RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider(key, "not-checked", "")})
	}
	for _, name := range []string{"seatsaga-reservation", "other"} {
		if _, err := client("admin").CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(name),
			Definition: aws.String(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`),
			RoleArn:    aws.String("arn:aws:iam::" + account + ":role/states")}); err != nil {
			t.Fatalf("CreateStateMachine %s: %v", name, err)
		}
	}

	if _, err := sfnadapter.New(client(deploy.FnSweeper)).RunningExecutions(ctx, machineARN, ""); err != nil {
		t.Fatalf("the sweeper's listing was refused: %v", err)
	}
	other := "arn:aws:states:" + region + ":" + account + ":stateMachine:other"
	for _, tc := range []struct{ key, machine string }{{deploy.FnSweeper, other}, {deploy.FnAPI, machineARN}} {
		_, err := sfnadapter.New(client(tc.key)).RunningExecutions(ctx, tc.machine, "")
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "AccessDeniedException" {
			t.Errorf("%s listing %s: %v, want AccessDeniedException", tc.key, tc.machine, err)
		}
	}
}
