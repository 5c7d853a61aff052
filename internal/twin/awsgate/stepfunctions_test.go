package awsgate_test

import (
	"context"
	"encoding/base64"
	"sync/atomic"
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
	_, url := startStepFunctionsServer(t)
	return url
}

// startStepFunctionsServer serves a local Step Functions server for the test and returns it
// with its URL.
func startStepFunctionsServer(t *testing.T) (*stepfunctions.Server, string) {
	t.Helper()
	srv := stepfunctions.New(stepfunctions.Options{Region: region, AccountID: account})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, url
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
	// A token nobody issued names no machine; the grant on the machine lets the server answer.
	_, err = api.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String("forged"), Error: aws.String("Cancelled")})
	wantAPIError(t, err, "InvalidToken")
}

// A task token the engine does not know (garbage, or one it issued and has forgotten) gets the
// engine's own answer, as on AWS, for a caller granted the action on a state machine: the
// webhook and the API treat InvalidToken and TaskDoesNotExist as "the saga no longer waits",
// and would treat AccessDenied as a failure to retry. A caller with no grant of the action is
// denied.
func TestUnknownTaskTokensGetTheEnginesAnswerNotAccessDenied(t *testing.T) {
	srv, url := startStepFunctionsServer(t)
	g := startGate(t, awsgate.Options{StepFunctionsEndpoint: url, TaskStateMachine: srv.Engine().TokenStateMachine})
	machineARN := "arn:aws:states:" + region + ":" + account + ":stateMachine:reservation"
	g.AddPrincipal("webhook-key", "webhook", []deploy.Statement{
		{Actions: []string{"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"}, Resources: []string{machineARN}},
	})
	g.AddPrincipal("claim-key", "claim", []deploy.Statement{
		{Actions: []string{"states:StartExecution"}, Resources: []string{machineARN}},
	})
	ctx := context.Background()
	webhook, claim := g.stepFunctions("webhook-key"), g.stepFunctions("claim-key")

	// The engine's tokens are base64 of 48 bytes opening with its version byte 0xA5: this one
	// has the shape of one it issued and forgot.
	forgotten := base64.StdEncoding.EncodeToString(append([]byte{0xA5}, make([]byte, 47)...))
	for _, tc := range []struct{ name, token, want string }{
		{"garbage", "not-a-task-token", "InvalidToken"},
		{"forgotten", forgotten, "TaskDoesNotExist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := srv.Engine().TokenStateMachine(tc.token); ok {
				t.Fatalf("the engine knows the token %q", tc.token)
			}
			token := aws.String(tc.token)
			_, err := webhook.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: token, Output: aws.String(`{}`)})
			wantAPIError(t, err, tc.want)
			_, err = webhook.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: token, Error: aws.String("Cancelled")})
			wantAPIError(t, err, tc.want)
			_, err = webhook.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: token})
			wantAPIError(t, err, tc.want)

			_, err = claim.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: token, Output: aws.String(`{}`)})
			wantAccessDenied(t, err, "states:SendTaskSuccess", awsgate.UnknownTaskToken)
		})
	}
	for _, d := range g.Decisions() {
		if d.Resource == awsgate.UnknownTaskToken && d.Allowed != (d.AccessKeyID == "webhook-key") {
			t.Errorf("decision %+v: only the webhook's calls should be let through", d)
		}
	}
}

// waitMachine keeps its executions running for the length of a test.
const waitMachine = `{"StartAt":"Wait","States":{"Wait":{"Type":"Wait","Seconds":600,"End":true}}}`

// A lost response is lost after the call took effect: the caller sees a broken connection,
// not an answer, and the SDK's retry of the same StartExecution finds the execution the first
// attempt started (AWS answers a start with the same name and input as the running one's).
func TestALostStepFunctionsResponseTookEffectAndTheSDKRetryFindsIt(t *testing.T) {
	machineARN := "arn:aws:states:" + region + ":" + account + ":stateMachine:reservation"
	var lost atomic.Int32
	g := startGate(t, awsgate.Options{
		StepFunctionsEndpoint: startStepFunctions(t),
		LoseResponse: func(role, op string) bool {
			return role == "api" && op == "StartExecution" && lost.Add(1) == 1
		},
	})
	g.AddPrincipal("api-key", "api", []deploy.Statement{
		{Actions: []string{"states:StartExecution"}, Resources: []string{machineARN}},
	})
	ctx := context.Background()
	admin := g.stepFunctions(adminKey)
	if _, err := admin.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("reservation"),
		Definition: aws.String(waitMachine), RoleArn: aws.String("arn:aws:iam::" + account + ":role/states")}); err != nil {
		t.Fatal(err)
	}
	start := &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN), Name: aws.String("r-1"), Input: aws.String(`{"a":1}`)}
	if _, err := g.stepFunctions("api-key").StartExecution(ctx, start, func(o *sfn.Options) { o.RetryMaxAttempts = 1 }); err == nil {
		t.Fatal("the first attempt got an answer; want its response lost")
	}
	listed, err := admin.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(machineARN)})
	if err != nil || len(listed.Executions) != 1 {
		t.Fatalf("after the lost response: %d executions, %v; want the one the call started", len(listed.Executions), err)
	}
	again, err := g.stepFunctions("api-key").StartExecution(ctx, start)
	if err != nil || aws.ToString(again.ExecutionArn) != aws.ToString(listed.Executions[0].ExecutionArn) {
		t.Fatalf("retry: %v, %v; want the first attempt's execution", again, err)
	}
	if n := lost.Load(); n != 2 {
		t.Fatalf("the gate asked about %d answers; want 2 (the lost one and the retry's)", n)
	}
}
