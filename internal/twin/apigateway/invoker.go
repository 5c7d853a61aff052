package apigateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// LambdaAPI is the part of the Lambda API the invoker needs.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// LambdaInvoker invokes functions through the Lambda Invoke API (the local Lambda host or AWS).
type LambdaInvoker struct {
	Client LambdaAPI
}

// Invoke implements Invoker.
func (l LambdaInvoker) Invoke(ctx context.Context, function string, payload []byte) ([]byte, error) {
	out, err := l.Client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", function, err)
	}
	if out.FunctionError != nil {
		fe := &FunctionError{}
		if json.Unmarshal(out.Payload, fe) != nil || fe.Type == "" {
			fe.Type = aws.ToString(out.FunctionError)
			fe.Message = string(out.Payload)
		}
		return nil, fe
	}
	return out.Payload, nil
}

// InvokerFunc adapts a function to Invoker, for tests.
type InvokerFunc func(ctx context.Context, function string, payload []byte) ([]byte, error)

// Invoke implements Invoker.
func (f InvokerFunc) Invoke(ctx context.Context, function string, payload []byte) ([]byte, error) {
	return f(ctx, function, payload)
}
