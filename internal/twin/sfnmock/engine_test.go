package sfnmock_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl/lambdainvoke"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/sfnmock"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

type reservation struct {
	ReservationID string `json:"reservationId"`
	PaymentState  string `json:"paymentState,omitempty"`
}

// TestMockConfigWithTheLocalEngine runs the fixture's test cases through the local Step
// Functions API with the mock configuration loaded, and the unmocked states through the
// Lambda host, as Step Functions Local does with a MockConfigFile.
func TestMockConfigWithTheLocalEngine(t *testing.T) {
	cfg, err := sfnmock.Load("../../../testdata/sfnmock/MockConfigFile.json")
	if err != nil {
		t.Fatal(err)
	}
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	host := lambdahost.New(lambdahost.Options{})
	host.Register("claim", func(_ context.Context, in reservation) (reservation, error) {
		return reservation{ReservationID: "real-claim"}, nil
	})
	host.Register("capture", func(_ context.Context, in reservation) (reservation, error) {
		return reservation{ReservationID: in.ReservationID, PaymentState: "PAID_FOR_REAL"}, nil
	})
	lambdaEndpoint, err := host.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	lambdaClient := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(lambdaEndpoint), Credentials: creds})

	engine := stepfunctions.New(stepfunctions.Options{
		// Retry intervals pass a thousand times faster than real time.
		Clock:   clock.NewScaled(clock.Real{}, 1000),
		Invoker: lambdainvoke.New(lambdaClient),
		Mocker:  cfg,
		Substitutions: map[string]string{
			"ClaimFunctionArn":   host.FunctionARN("claim"),
			"CaptureFunctionArn": host.FunctionARN("capture"),
		},
	})
	sfnEndpoint, err := engine.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	client := sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(sfnEndpoint), Credentials: creds})

	definition, err := os.ReadFile("../../../testdata/sfnmock/reservation-mini.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	created, err := client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
		Name: aws.String("reservation"), Definition: aws.String(string(definition)),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/saga"),
	})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		testCase     string
		wantOutput   string
		wantError    string // for a failed execution
		wantClaims   int64
		wantCaptures int64
		wantAttempts int
	}{
		{"HappyPath", `{"reservationId":"r-1","paymentState":"PAID"}`, "", 0, 0, 0},
		{"SeatTaken", `{"outcome":"rejected","error":"SeatUnavailable"}`, "", 0, 0, 0},
		{"RealCapture", `{"reservationId":"r-1","paymentState":"PAID_FOR_REAL"}`, "", 0, 1, 0},
		{"CaptureRetried", `{"reservationId":"r-1","paymentState":"PAID"}`, "", 0, 0, 4},
		{"", `{"reservationId":"real-claim","paymentState":"PAID_FOR_REAL"}`, "", 1, 1, 0},
		// Two mocked responses for a state retried three times: the third invocation has none,
		// and the execution fails as the guide says.
		{"CaptureExhausted", "", sfnmock.ErrNoResponse, 0, 0, 0},
	}
	for _, tc := range cases {
		name := tc.testCase
		if name == "" {
			name = "no test case"
		}
		t.Run(name, func(t *testing.T) {
			host.ResetStats()
			arn := aws.ToString(created.StateMachineArn)
			if tc.testCase != "" {
				arn += "#" + tc.testCase
			}
			start, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(`{"seats":["A1"]}`)})
			if err != nil {
				t.Fatal(err)
			}
			var out *sfn.DescribeExecutionOutput
			deadline := time.Now().Add(20 * time.Second)
			for {
				out, err = client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: start.ExecutionArn})
				if err != nil {
					t.Fatal(err)
				}
				if out.Status != sfntypes.ExecutionStatusRunning || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tc.wantError != "" {
				if out.Status != sfntypes.ExecutionStatusFailed || aws.ToString(out.Error) != tc.wantError {
					t.Fatalf("status %s error %q, want FAILED with %s", out.Status, aws.ToString(out.Error), tc.wantError)
				}
				return
			}
			if out.Status != sfntypes.ExecutionStatusSucceeded {
				t.Fatalf("status %s: %s %s", out.Status, aws.ToString(out.Error), aws.ToString(out.Cause))
			}
			var got, want any
			_ = json.Unmarshal([]byte(aws.ToString(out.Output)), &got)
			_ = json.Unmarshal([]byte(tc.wantOutput), &want)
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("output %s, want %s", gotJSON, wantJSON)
			}
			if c := host.Invocations("claim"); c != tc.wantClaims {
				t.Errorf("claim invoked %d times, want %d", c, tc.wantClaims)
			}
			if c := host.Invocations("capture"); c != tc.wantCaptures {
				t.Errorf("capture invoked %d times, want %d", c, tc.wantCaptures)
			}
			if tc.wantAttempts > 0 {
				hist, err := client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: start.ExecutionArn, MaxResults: 1000})
				if err != nil {
					t.Fatal(err)
				}
				failures := 0
				for _, ev := range hist.Events {
					if ev.Type == sfntypes.HistoryEventTypeTaskFailed {
						failures++
					}
				}
				if failures != tc.wantAttempts-1 {
					t.Errorf("%d failed task attempts in the history, want %d", failures, tc.wantAttempts-1)
				}
			}
		})
	}
}
