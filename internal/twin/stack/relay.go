package stack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
)

// startRelay plays the Outbox table's stream event source mapping: a reader polls DynamoDB
// Local's stream under the relay's role and invokes the relay function with each batch through
// the Lambda host, as the mapping does; the relay publishes to the in-memory bus through the
// gate.
func (st *Stack) startRelay(ctx context.Context) error {
	reader := &relay.StreamReader{
		Streams:      st.relayStreams(),
		StreamARN:    st.deployment.streamARN,
		Relay:        relayFunction{st.Lambda},
		PollInterval: st.cfg.RelayPollInterval,
		Log:          st.log,
	}
	st.subscribeConsumers()
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		_ = reader.Run(st.ctx)
	}()
	return nil
}

// relayFunction hands a batch to the relay function with a synchronous invocation, as Lambda's
// event source mapping does: a function error fails the whole batch, and a partial batch
// response names the records to retry.
type relayFunction struct{ client *lambda.Client }

func (f relayFunction) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	out, err := f.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(FnRelay), Payload: payload})
	if err != nil {
		return events.DynamoDBEventResponse{}, fmt.Errorf("invoke the relay: %w", err)
	}
	if out.FunctionError != nil {
		return events.DynamoDBEventResponse{}, fmt.Errorf("the relay failed the batch (%s): %s", aws.ToString(out.FunctionError), out.Payload)
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out.Payload, &resp); err != nil {
		return events.DynamoDBEventResponse{}, fmt.Errorf("the relay's response: %w", err)
	}
	return resp, nil
}

// busPublications lists what the relay published, as the invariant checker reads it: the
// envelope's event id and the whole envelope as payload.
type busPublications struct{ bus *relay.MemoryBus }

func (b busPublications) Published() []invariants.Publication {
	if b.bus == nil {
		return nil
	}
	entries := b.bus.Entries()
	out := make([]invariants.Publication, 0, len(entries))
	for _, e := range entries {
		detail := aws.ToString(e.Detail)
		var env struct {
			EventID string `json:"eventId"`
		}
		_ = json.Unmarshal([]byte(detail), &env)
		out = append(out, invariants.Publication{EventID: env.EventID, Payload: []byte(detail)})
	}
	return out
}
