// Package lambdainvoke adapts the Lambda Invoke API (aws-sdk-go-v2) to the
// ASL interpreter's Invoker, naming failures as Step Functions does.
package lambdainvoke

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// API is the part of the Lambda client the invoker uses.
type API interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Invoker invokes functions with InvocationType RequestResponse.
type Invoker struct {
	Client API
}

// New returns an invoker over a Lambda client.
func New(client API) *Invoker { return &Invoker{Client: client} }

// singleAttempt turns off the SDK's own retries for the call: retrying is the
// state machine's job (Retry with its intervals and backoff), as on AWS where
// a throttled or failed invocation surfaces as Lambda.* errors.
func singleAttempt(o *lambda.Options) { o.Retryer = aws.NopRetryer{} }

// Invoke calls the function. A function error (X-Amz-Function-Error) is
// returned as fnErr named by the payload's errorType; a service or transport
// failure as a *asl.TaskError named "Lambda.<Code>" (Lambda.ServiceException,
// Lambda.TooManyRequestsException, ...) or Lambda.SdkClientException.
func (i *Invoker) Invoke(ctx context.Context, functionName string, payload []byte) ([]byte, *asl.FunctionError, error) {
	out, err := i.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(functionName),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	}, singleAttempt)
	if err != nil {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			return nil, nil, &asl.TaskError{Name: "Lambda." + apiErr.ErrorCode(), Cause: apiErr.ErrorMessage()}
		}
		return nil, nil, &asl.TaskError{Name: "Lambda.SdkClientException", Cause: err.Error()}
	}
	if out.FunctionError != nil {
		var body struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		_ = json.Unmarshal(out.Payload, &body)
		name := body.ErrorType
		if name == "" {
			// Without an errorType (e.g. a runtime crash) Step Functions reports the header's kind.
			name = "Lambda.Unknown"
		}
		return nil, &asl.FunctionError{Type: name, Message: body.ErrorMessage, Payload: out.Payload}, nil
	}
	return out.Payload, nil, nil
}
