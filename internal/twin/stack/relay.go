package stack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// startRelay plays the Outbox table's stream event source mapping: a reader polls DynamoDB
// Local's stream and hands each batch to the relay in process, which publishes to the in-memory
// bus. The relay function is registered with the others too (registerHandlers), so that it can
// be invoked (and counted) like any other.
func (st *Stack) startRelay(ctx context.Context) error {
	arn, err := relay.StreamARN(ctx, st.DynamoDB, st.Names.Of(tables.OutboxTable))
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	reader := &relay.StreamReader{
		Streams:      relay.NewLocalStreamsClient(st.Endpoints.DynamoDB),
		StreamARN:    arn,
		Relay:        st.relay,
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
