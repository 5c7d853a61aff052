package lambdainvoke_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/asl/lambdainvoke"
)

type stubAPI struct {
	out *lambda.InvokeOutput
	err error
	got *lambda.InvokeInput
}

func (s *stubAPI) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	s.got = in
	return s.out, s.err
}

func TestInvoke(t *testing.T) {
	cases := []struct {
		name      string
		api       *stubAPI
		wantOut   string
		wantFnErr string
		wantTask  string
	}{
		{"result", &stubAPI{out: &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"ok":true}`)}}, `{"ok":true}`, "", ""},
		{"function error named by errorType", &stubAPI{out: &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"),
			Payload: []byte(`{"errorMessage":"seat A1 is taken","errorType":"SeatUnavailable"}`)}}, "", "SeatUnavailable", ""},
		{"function error without errorType", &stubAPI{out: &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"),
			Payload: []byte(`not json`)}}, "", "Lambda.Unknown", ""},
		{"service exception", &stubAPI{err: &types.ServiceException{Message: aws.String("boom")}}, "", "", "Lambda.ServiceException"},
		{"throttled", &stubAPI{err: &types.TooManyRequestsException{Message: aws.String("slow down")}}, "", "", "Lambda.TooManyRequestsException"},
		{"missing function", &stubAPI{err: &types.ResourceNotFoundException{Message: aws.String("no such function")}}, "", "", "Lambda.ResourceNotFoundException"},
		{"transport failure", &stubAPI{err: errors.New("connection refused")}, "", "", "Lambda.SdkClientException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, fnErr, err := lambdainvoke.New(tc.api).Invoke(context.Background(), "arn:aws:lambda:us-east-1:1:function:claim", []byte(`{"seat":"A1"}`))
			if tc.api.got.InvocationType != types.InvocationTypeRequestResponse || aws.ToString(tc.api.got.FunctionName) != "arn:aws:lambda:us-east-1:1:function:claim" {
				t.Fatalf("request %+v", tc.api.got)
			}
			switch {
			case tc.wantTask != "":
				var te *asl.TaskError
				if !errors.As(err, &te) || te.Name != tc.wantTask {
					t.Fatalf("err = %v, want TaskError %s", err, tc.wantTask)
				}
			case tc.wantFnErr != "":
				if err != nil || fnErr == nil || fnErr.Type != tc.wantFnErr || len(fnErr.Payload) == 0 {
					t.Fatalf("fnErr = %+v, err = %v", fnErr, err)
				}
			default:
				if err != nil || fnErr != nil || string(out) != tc.wantOut {
					t.Fatalf("out %s fnErr %+v err %v", out, fnErr, err)
				}
			}
		})
	}
}
