package stepfunctions_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl/lambdainvoke"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// SeatUnavailable is a named error type, as the saga's handlers return them.
type SeatUnavailable struct{ Seat string }

func (e *SeatUnavailable) Error() string { return "seat " + e.Seat + " is taken" }

type claimIn struct {
	Seat string `json:"seat"`
}

type claimOut struct {
	HoldID string `json:"holdId"`
}

// TestThroughLambdaHost runs Go handlers through the local Lambda host, the
// Lambda SDK invoker and the Step Functions API: results, named function
// errors routed by Catch, and a service exception retried by Retry.
func TestThroughLambdaHost(t *testing.T) {
	ctx := ctxT(t)
	host := lambdahost.New(lambdahost.Options{})
	host.Register("claim", func(_ context.Context, in claimIn) (claimOut, error) {
		if in.Seat == "A1" {
			return claimOut{}, &SeatUnavailable{Seat: in.Seat}
		}
		return claimOut{HoldID: "hold-" + in.Seat}, nil
	})
	lambdaEndpoint, err := host.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close() })
	lc := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(lambdaEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})

	srv := stepfunctions.New(stepfunctions.Options{Clock: clock.Real{}, Invoker: lambdainvoke.New(lc),
		Substitutions: map[string]string{"ClaimFunctionArn": host.FunctionARN("claim")}})
	endpoint, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	client := newClient(endpoint)

	def := `{"StartAt":"Claim","States":{
	  "Claim":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	    "Parameters":{"FunctionName":"${ClaimFunctionArn}","Payload.$":"$"},
	    "ResultSelector":{"holdId.$":"$.Payload.holdId","status.$":"$.StatusCode"},
	    "Retry":[{"ErrorEquals":["Lambda.ServiceException"],"IntervalSeconds":1,"MaxAttempts":2,"BackoffRate":1}],
	    "Catch":[{"ErrorEquals":["SeatUnavailable"],"ResultPath":"$.error","Next":"Rejected"}],
	    "ResultPath":"$.claim","Next":"Claimed"},
	  "Claimed":{"Type":"Succeed"},
	  "Rejected":{"Type":"Fail","Error":"Rejected","Cause":"seat unavailable"}}}`
	sm, err := client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("reservation"), Definition: aws.String(def), RoleArn: aws.String("arn:aws:iam::123456789012:role/x")})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name, input string) *sfn.DescribeExecutionOutput {
		out, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: sm.StateMachineArn, Name: aws.String(name), Input: aws.String(input)})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.WaitExecution(ctx, *out.ExecutionArn); err != nil {
			t.Fatal(err)
		}
		d, err := client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: out.ExecutionArn})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	ok := run("ok", `{"seat":"B2"}`)
	if ok.Status != types.ExecutionStatusSucceeded || *ok.Output != `{"claim":{"holdId":"hold-B2","status":200},"seat":"B2"}` {
		t.Fatalf("ok: %s %s", ok.Status, aws.ToString(ok.Output))
	}

	taken := run("taken", `{"seat":"A1"}`)
	if taken.Status != types.ExecutionStatusFailed || aws.ToString(taken.Error) != "Rejected" {
		t.Fatalf("taken: %s %v", taken.Status, aws.ToString(taken.Error))
	}
	hist, err := client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: taken.ExecutionArn})
	if err != nil {
		t.Fatal(err)
	}
	var failed *types.TaskFailedEventDetails
	for _, ev := range hist.Events {
		if ev.TaskFailedEventDetails != nil {
			failed = ev.TaskFailedEventDetails
		}
	}
	if failed == nil || *failed.Error != "SeatUnavailable" || !strings.Contains(*failed.Cause, "seat A1 is taken") {
		t.Fatalf("TaskFailed details = %+v", failed)
	}

	if err := host.FailBefore("claim", 1, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	retried := run("retried", `{"seat":"C3"}`)
	if retried.Status != types.ExecutionStatusSucceeded {
		t.Fatalf("retried: %s %v", retried.Status, aws.ToString(retried.Error))
	}
	hist, err = client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: retried.ExecutionArn})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, ev := range hist.Events {
		if ev.TaskFailedEventDetails != nil {
			errs = append(errs, *ev.TaskFailedEventDetails.Error)
		}
	}
	if len(errs) != 1 || errs[0] != "Lambda.ServiceException" {
		t.Fatalf("failed attempts before the retry: %v", errs)
	}
}
