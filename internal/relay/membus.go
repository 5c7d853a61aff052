package relay

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// MemoryBus is an in-memory EventBridge for the local stack and tests: PutEvents records every
// accepted entry and hands it, as the events.EventBridgeEvent a rule target would receive, to
// each subscriber. Faults can be injected: refuse the next entries with an error code (partial
// failure), or fail whole calls.
type MemoryBus struct {
	Region    string
	AccountID string
	// Now stamps events that carry no Time; time.Now when nil.
	Now func() time.Time

	mu            sync.Mutex
	accepted      []ebtypes.PutEventsRequestEntry
	calls         int
	refuse        []string // error codes for the next entries, one per entry
	failCalls     []error
	subscribers   []func(context.Context, events.EventBridgeEvent) error
	deliveryError []error
}

// NewMemoryBus returns an empty bus.
func NewMemoryBus() *MemoryBus {
	return &MemoryBus{Region: "us-east-1", AccountID: "123456789012"}
}

// Subscribe adds a target that receives every accepted event, synchronously and in order. A
// target's error is recorded (DeliveryErrors), never returned to the publisher: EventBridge
// delivers to targets apart from PutEvents.
func (b *MemoryBus) Subscribe(target func(context.Context, events.EventBridgeEvent) error) {
	b.mu.Lock()
	b.subscribers = append(b.subscribers, target)
	b.mu.Unlock()
}

// RefuseEntries makes the next n entries fail with errorCode (e.g. "ThrottlingException",
// "InternalFailure"), each reported in the per-entry results with FailedEntryCount.
func (b *MemoryBus) RefuseEntries(n int, errorCode string) {
	b.mu.Lock()
	for i := 0; i < n; i++ {
		b.refuse = append(b.refuse, errorCode)
	}
	b.mu.Unlock()
}

// FailCalls makes the next n PutEvents calls return err and accept nothing.
func (b *MemoryBus) FailCalls(n int, err error) {
	b.mu.Lock()
	for i := 0; i < n; i++ {
		b.failCalls = append(b.failCalls, err)
	}
	b.mu.Unlock()
}

// PutEvents implements EventBridgeAPI.
func (b *MemoryBus) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	if in == nil || len(in.Entries) == 0 || len(in.Entries) > MaxEntriesPerCall {
		return nil, fmt.Errorf("membus: ValidationException: want 1 to %d entries", MaxEntriesPerCall)
	}
	total := 0
	for _, e := range in.Entries {
		total += EntrySize(e)
	}
	if total > MaxBytesPerCall {
		return nil, fmt.Errorf("membus: ValidationException: request is %d bytes, over %d", total, MaxBytesPerCall)
	}
	b.mu.Lock()
	b.calls++
	if len(b.failCalls) > 0 {
		err := b.failCalls[0]
		b.failCalls = b.failCalls[1:]
		b.mu.Unlock()
		return nil, err
	}
	out := &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, len(in.Entries))}
	var delivered []events.EventBridgeEvent
	for i, e := range in.Entries {
		if len(b.refuse) > 0 {
			code := b.refuse[0]
			b.refuse = b.refuse[1:]
			out.Entries[i] = ebtypes.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("injected by MemoryBus")}
			out.FailedEntryCount++
			continue
		}
		if aws.ToString(e.Source) == "" || aws.ToString(e.DetailType) == "" || aws.ToString(e.Detail) == "" {
			out.Entries[i] = ebtypes.PutEventsResultEntry{ErrorCode: aws.String("InvalidArgument"),
				ErrorMessage: aws.String("Parameters Source, DetailType and Detail are required.")}
			out.FailedEntryCount++
			continue
		}
		id := newID()
		out.Entries[i] = ebtypes.PutEventsResultEntry{EventId: aws.String(id)}
		b.accepted = append(b.accepted, e)
		delivered = append(delivered, b.toEvent(id, e))
	}
	subs := append([]func(context.Context, events.EventBridgeEvent) error(nil), b.subscribers...)
	b.mu.Unlock()

	for _, ev := range delivered {
		for _, target := range subs {
			if err := target(ctx, ev); err != nil {
				b.mu.Lock()
				b.deliveryError = append(b.deliveryError, fmt.Errorf("membus: deliver %s: %w", ev.ID, err))
				b.mu.Unlock()
			}
		}
	}
	return out, nil
}

func (b *MemoryBus) toEvent(id string, e ebtypes.PutEventsRequestEntry) events.EventBridgeEvent {
	at := aws.ToTime(e.Time)
	if e.Time == nil {
		if b.Now != nil {
			at = b.Now()
		} else {
			at = time.Now()
		}
	}
	return events.EventBridgeEvent{
		Version:    "0",
		ID:         id,
		DetailType: aws.ToString(e.DetailType),
		Source:     aws.ToString(e.Source),
		AccountID:  b.AccountID,
		Time:       at.UTC(),
		Region:     b.Region,
		Resources:  append([]string{}, e.Resources...),
		Detail:     []byte(aws.ToString(e.Detail)),
	}
}

// Entries returns a copy of every accepted entry, in order.
func (b *MemoryBus) Entries() []ebtypes.PutEventsRequestEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]ebtypes.PutEventsRequestEntry(nil), b.accepted...)
}

// Calls returns how many PutEvents calls the bus received.
func (b *MemoryBus) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// DeliveryErrors returns the errors subscribers returned.
func (b *MemoryBus) DeliveryErrors() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(b.deliveryError...)
}

func newID() string {
	var x [16]byte
	_, _ = rand.Read(x[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
}
