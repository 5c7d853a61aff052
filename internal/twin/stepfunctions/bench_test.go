package stepfunctions_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// BenchmarkTokenRoundTripOverAPI drives one payment-style execution per op
// through the HTTP API with the SDK: StartExecution, the task hands out its
// token, SendTaskSuccess, the execution finishes.
func BenchmarkTokenRoundTripOverAPI(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	out, err := e.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("pay"), Definition: aws.String(paymentDef), RoleArn: aws.String("r")})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: out.StateMachineArn, Name: aws.String(fmt.Sprint("b-", i)), Input: aws.String(`{"order":1}`)})
		if err != nil {
			b.Fatal(err)
		}
		tok := <-e.tokens
		if _, err := e.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{"ok":true}`)}); err != nil {
			b.Fatal(err)
		}
		if err := e.srv.WaitExecution(ctx, *x.ExecutionArn); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exec/s")
}
