package awsgate_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

const passMachine = `{"StartAt":"Done","States":{"Done":{"Type":"Pass","End":true}}}`

// startStepFunctions serves a local Step Functions server for the test.
func startStepFunctions(t *testing.T) string {
	t.Helper()
	srv := stepfunctions.New(stepfunctions.Options{Region: region, AccountID: account})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return url
}

func TestStepFunctionsCallsAreAuthorizedOnTheirMachineAndExecutions(t *testing.T) {
	machineARN := "arn:aws:states:" + region + ":" + account + ":stateMachine:reservation"
	tokens := map[string]string{"token-of-reservation": machineARN}
	g := startGate(t, awsgate.Options{
		StepFunctionsEndpoint: startStepFunctions(t),
		TaskStateMachine: func(token string) (string, bool) {
			arn, ok := tokens[token]
			return arn, ok
		},
	})
	g.AddPrincipal("api-key", "api", []deploy.Statement{
		{Actions: []string{"states:StartExecution", "states:SendTaskFailure"}, Resources: []string{machineARN}},
		{Actions: []string{"states:DescribeExecution"}, Resources: []string{"arn:aws:states:" + region + ":" + account + ":execution:reservation:*"}},
	})
	ctx := context.Background()
	admin := g.stepFunctions(adminKey)
	for _, name := range []string{"reservation", "other"} {
		if _, err := admin.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(name),
			Definition: aws.String(passMachine), RoleArn: aws.String("arn:aws:iam::" + account + ":role/states")}); err != nil {
			t.Fatalf("admin CreateStateMachine %s: %v", name, err)
		}
	}
	api := g.stepFunctions("api-key")

	started, err := api.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN), Name: aws.String("r-1")})
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	if _, err := api.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: started.ExecutionArn}); err != nil {
		t.Fatalf("DescribeExecution: %v", err)
	}

	otherARN := "arn:aws:states:" + region + ":" + account + ":stateMachine:other"
	_, err = api.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(otherARN)})
	wantAccessDenied(t, err, "states:StartExecution", otherARN)
	_, err = api.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: started.ExecutionArn})
	wantAccessDenied(t, err, "states:StopExecution", aws.ToString(started.ExecutionArn))

	// A token the engine knows is authorized on its machine and reaches the server, which has
	// no task waiting on it.
	_, err = api.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String("token-of-reservation"), Error: aws.String("Cancelled")})
	if code := wantAPIErrorCode(t, err); code == "AccessDeniedException" {
		t.Fatalf("SendTaskFailure with a known token was denied: %v", err)
	}
	// A token nobody issued names no machine: only a grant on "*" would allow it.
	_, err = api.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String("forged"), Error: aws.String("Cancelled")})
	wantAccessDenied(t, err, "states:SendTaskFailure", awsgate.AnyResource)
}
