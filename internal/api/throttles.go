package api

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// MetricStepFunctionsThrottled counts the api's Step Functions calls that Step Functions
// throttled after the SDK's own retries (dimension op, besides the empty set the alarm
// reads): buyers get 503 for them, and Step Functions' own metrics do not count throttled API
// actions.
const MetricStepFunctionsThrottled = "StepFunctionsThrottled"

// throttleCounted counts the throttling its Step Functions calls meet.
type throttleCounted struct {
	sfn StepFunctions
	m   metrics.Recorder
}

func (c throttleCounted) count(op string, err error) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded":
			c.m.Count(MetricStepFunctionsThrottled, 1, metrics.Dim{Name: "op", Value: op})
		}
	}
}

func (c throttleCounted) StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	out, err := c.sfn.StartExecution(ctx, in, optFns...)
	c.count("StartExecution", err)
	return out, err
}

func (c throttleCounted) DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, optFns ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	out, err := c.sfn.DescribeExecution(ctx, in, optFns...)
	c.count("DescribeExecution", err)
	return out, err
}

func (c throttleCounted) SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	out, err := c.sfn.SendTaskFailure(ctx, in, optFns...)
	c.count("SendTaskFailure", err)
	return out, err
}
