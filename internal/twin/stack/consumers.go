package stack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// subscribeConsumers attaches the example consumer to the bus as an EventBridge rule target
// does: each event is handed to the consumer function with an asynchronous (Event) invocation
// through the Lambda host.
func (st *Stack) subscribeConsumers() {
	st.Bus.Subscribe(func(ctx context.Context, ev events.EventBridgeEvent) error {
		payload, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		out, err := st.Lambda.Invoke(ctx, &lambda.InvokeInput{
			FunctionName:   aws.String(FnConsumer),
			InvocationType: lambdatypes.InvocationTypeEvent,
			Payload:        payload,
		})
		if err != nil {
			return fmt.Errorf("deliver %s to the consumer: %w", ev.ID, err)
		}
		if out.StatusCode != 202 {
			return fmt.Errorf("deliver %s to the consumer: status %d", ev.ID, out.StatusCode)
		}
		return nil
	})
}
