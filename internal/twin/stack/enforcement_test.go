package stack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// specsWith returns the deployed specs with change applied to the function named name.
func specsWith(name string, change func(*deploy.Function)) []deploy.Function {
	fns := deploy.Functions()
	for i := range fns {
		if fns[i].Name == name {
			change(&fns[i])
		}
	}
	return fns
}

// The control for the gate: a claim whose role lacks the grant on the seat and reservation
// tables (one statement names both) is refused its first DynamoDB call with AWS's AccessDenied, so the booking ends in
// "Claim failed" and the denial names the claim's role, the action and the table; with the
// grant (every other test of this package) nothing is refused.
func TestAClaimWithoutItsTableGrantIsRefusedAsIAMWould(t *testing.T) {
	st := start(t, Config{SweepInterval: -1, Functions: specsWith(FnClaim, func(f *deploy.Function) {
		f.Grants = slices.DeleteFunc(slices.Clone(f.Grants), func(g deploy.Grant) bool {
			return slices.Contains(g.Resources, deploy.Resource{Kind: deploy.Table, Name: tables.SeatsTable})
		})
	})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := st.SeedEvent(ctx, "denied", 1); err != nil {
		t.Fatal(err)
	}
	id := postReservation(ctx, t, st, "denied", "dora", "S1")
	arn := st.ExecutionARN(id)
	if err := st.sfnServer.WaitExecution(ctx, arn); err != nil {
		t.Fatal(err)
	}
	out, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status == "SUCCEEDED" {
		t.Fatal("the booking succeeded although the claim may not touch the seats table")
	}
	withdrawn := []string{st.Gate.TableARN(st.Names.Of(tables.SeatsTable)), st.Gate.TableARN(st.Names.Of(tables.ReservationsTable))}
	denials := st.Gate.Denials()
	for _, d := range denials {
		if !strings.HasSuffix(d.Principal, "/"+FnClaim) || !slices.Contains(withdrawn, d.Resource) || !strings.HasPrefix(d.Action, "dynamodb:") {
			t.Errorf("a denial the withdrawn grant does not explain: %+v", d)
		}
	}
	if len(denials) == 0 {
		t.Fatal("the claim was refused nothing")
	}
}

// A function whose spec leaves out a variable its code needs does not start: the api without
// the state machine's ARN fails the stack's start, naming the function, as its cold start would
// fail on AWS.
func TestAFunctionWithoutAVariableItNeedsFailsTheStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Start(ctx, Config{DynamoDBEndpoint: endpoint, SweepInterval: -1, Functions: specsWith(FnAPI, func(f *deploy.Function) {
		f.Env = slices.DeleteFunc(slices.Clone(f.Env), func(name string) bool { return name == config.EnvStateMachineARN })
	})})
	if err == nil {
		_ = st.Close()
		t.Fatal("the stack started an api without the state machine's ARN")
	}
	if !strings.Contains(err.Error(), FnAPI+" does not start with what its spec deploys") || !strings.Contains(err.Error(), "StateMachineARN") {
		t.Fatalf("err = %v, want the api's cold start to fail for want of the state machine's ARN", err)
	}
}
