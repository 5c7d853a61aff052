package api

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// MetricStepFunctionsThrottled counts the api's Step Functions calls that Step Functions
// throttled after the SDK's own retries (dimension op, besides the empty set the alarm
// reads): buyers get 429 for them, and Step Functions' own metrics do not count throttled API
// actions.
const MetricStepFunctionsThrottled = "StepFunctionsThrottled"

// throttleCounted counts the throttling its Step Functions calls meet.
type throttleCounted struct {
	sfn StepFunctions
	m   metrics.Recorder
}

func (c throttleCounted) count(op string, err error) {
	if throttled(err) {
		c.m.Count(MetricStepFunctionsThrottled, 1, metrics.Dim{Name: "op", Value: op})
	}
}

func (c throttleCounted) StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	out, err := c.sfn.StartExecution(ctx, in, optFns...)
	c.count("StartExecution", err)
	return out, err
}

func (c throttleCounted) SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	out, err := c.sfn.SendTaskFailure(ctx, in, optFns...)
	c.count("SendTaskFailure", err)
	return out, err
}
