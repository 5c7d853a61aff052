package stack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// startRelay plays the Outbox table's stream event source mapping: a reader polls DynamoDB
// Local's stream and hands each batch to the relay, which publishes to the in-memory bus.
func (st *Stack) startRelay(ctx context.Context) error {
	st.Bus = relay.NewMemoryBus()
	st.Bus.Region, st.Bus.AccountID, st.Bus.Now = Region, AccountID, st.Clock.Now
	arn, err := relay.StreamARN(ctx, st.DynamoDB, st.Names.Of(tables.OutboxTable))
	if err != nil {
		return fmt.Errorf("localstack: %w", err)
	}
	if st.relay, err = app.Relay(st.base, st.Bus); err != nil {
		return fmt.Errorf("localstack: relay: %w", err)
	}
	// The stream reader hands batches to the relay in process; the function is registered too,
	// so that it can be invoked (and counted) like any other.
	st.Lambdas.Register(FnRelay, st.relay.Handle)
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
