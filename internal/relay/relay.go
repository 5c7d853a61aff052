// Package relay publishes the outbox: it reads Outbox table stream records (NEW_IMAGE) and puts
// each event envelope on EventBridge, in PutEvents batches of at most 10 entries and 256 KB.
// Entries EventBridge refuses are retried alone, a bounded number of times; if a record still
// cannot be published, the relay reports it as the batch item failure so that Lambda retries
// the stream from that record (bisecting on repeated failure), and publishes nothing after it.
//
// Delivery is at least once: a retried stream batch republishes records that were already
// published. Each entry is a pure function of its stream record — the envelope as detail, its
// createdAt as time — so a redelivered record yields the same entry with the same eventId, and
// consumers dedupe by that id.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/outbox"
)

// EventBridge limits on one PutEvents call.
const (
	MaxEntriesPerCall = 10
	MaxBytesPerCall   = 256 * 1024
)

// Defaults for Deps fields left zero.
const (
	DefaultMaxAttempts = 4
	DefaultBaseDelay   = 50 * time.Millisecond
)

// Metric names the relay records.
const (
	MetricPublished      = "RelayEventsPublished"
	MetricEntryFailures  = "RelayEntryFailures"
	MetricRecordFailures = "RelayRecordFailures"
	MetricSkipped        = "RelayRecordsSkipped"
)

// EventBridgeAPI is the one call the relay needs; *eventbridge.Client and MemoryBus satisfy it.
type EventBridgeAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Deps is what the relay needs. Bus is required; the rest have defaults.
type Deps struct {
	Bus EventBridgeAPI
	// EventBusName is the bus to publish on ("" means the account's default bus).
	EventBusName string
	// Source is the events' source; outbox.Source when empty.
	Source string
	// MaxAttempts bounds PutEvents attempts for one entry (DefaultMaxAttempts when zero).
	MaxAttempts int
	// BaseDelay is the first backoff between attempts; it doubles each time (DefaultBaseDelay
	// when zero). Sleep waits it out; tests replace it.
	BaseDelay time.Duration
	Sleep     func(ctx context.Context, d time.Duration) error
	Logger    *slog.Logger
	Metrics   metrics.Recorder
}

// Relay turns outbox stream records into EventBridge events.
type Relay struct {
	d Deps
}

// ErrNoBus is returned by New when the relay has no EventBridge client.
var ErrNoBus = errors.New("relay: no EventBridge client")

// New checks deps and returns the relay.
func New(d Deps) (*Relay, error) {
	if d.Bus == nil {
		return nil, ErrNoBus
	}
	if d.Source == "" {
		d.Source = outbox.Source
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.BaseDelay <= 0 {
		d.BaseDelay = DefaultBaseDelay
	}
	if d.Sleep == nil {
		d.Sleep = sleep
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = metrics.Discard{}
	}
	return &Relay{d: d}, nil
}

// Record is one stream record in transport-neutral form.
type Record struct {
	SequenceNumber string
	EventName      string // INSERT, MODIFY or REMOVE
	NewImage       map[string]events.DynamoDBAttributeValue
}

// Handle is the Lambda handler for the Outbox stream event source mapping (configured with
// ReportBatchItemFailures and BisectBatchOnFunctionError).
func (r *Relay) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	records := make([]Record, len(ev.Records))
	for i, rec := range ev.Records {
		records[i] = Record{SequenceNumber: rec.Change.SequenceNumber, EventName: rec.EventName, NewImage: rec.Change.NewImage}
	}
	failed := r.Publish(ctx, records)
	if failed < 0 {
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}, nil
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
		{ItemIdentifier: records[failed].SequenceNumber},
	}}, nil
}

// pending is a record ready to publish.
type pending struct {
	index int // in the input
	entry ebtypes.PutEventsRequestEntry
	size  int
	env   outbox.Envelope
}

// Publish publishes records in order and returns the index of the first record that could not
// be published (after bounded retries), or -1 when all were published or skipped. Records
// after a failed one are not attempted: the stream will deliver them again.
func (r *Relay) Publish(ctx context.Context, records []Record) int {
	log := r.d.Logger
	var batch []pending
	batchBytes := 0
	flush := func() int {
		if len(batch) == 0 {
			return -1
		}
		failed := r.putWithRetry(ctx, batch)
		batch, batchBytes = nil, 0
		return failed
	}
	for i, rec := range records {
		if rec.EventName != "INSERT" {
			// Outbox items are written once; MODIFY would be a repair and REMOVE is TTL
			// cleanup. Neither announces a new event.
			r.d.Metrics.Count(MetricSkipped, 1, metrics.Dim{Name: "reason", Value: rec.EventName})
			continue
		}
		env, err := outbox.FromStreamImage(rec.NewImage)
		if err != nil {
			log.ErrorContext(ctx, "relay: undecodable outbox record", "sequenceNumber", rec.SequenceNumber, "err", err)
			r.d.Metrics.Count(MetricRecordFailures, 1, metrics.Dim{Name: "reason", Value: "undecodable"})
			if f := flush(); f >= 0 {
				return f
			}
			return i
		}
		entry, size, err := r.entry(env)
		if err != nil {
			log.ErrorContext(ctx, "relay: event cannot be published", "sequenceNumber", rec.SequenceNumber, "eventId", env.EventID, "err", err)
			r.d.Metrics.Count(MetricRecordFailures, 1, metrics.Dim{Name: "reason", Value: "oversized"})
			if f := flush(); f >= 0 {
				return f
			}
			return i
		}
		if len(batch) == MaxEntriesPerCall || batchBytes+size > MaxBytesPerCall {
			if f := flush(); f >= 0 {
				return f
			}
		}
		batch = append(batch, pending{index: i, entry: entry, size: size, env: env})
		batchBytes += size
	}
	return flush()
}

// Entry renders an envelope as the EventBridge entry the relay publishes, and its size as
// EventBridge counts it against the 256 KB limit.
func (r *Relay) Entry(env outbox.Envelope) (ebtypes.PutEventsRequestEntry, int, error) {
	return r.entry(env)
}

func (r *Relay) entry(env outbox.Envelope) (ebtypes.PutEventsRequestEntry, int, error) {
	detail, err := json.Marshal(env)
	if err != nil {
		return ebtypes.PutEventsRequestEntry{}, 0, fmt.Errorf("relay: marshal %s: %w", env.EventID, err)
	}
	e := ebtypes.PutEventsRequestEntry{
		Source:     aws.String(r.d.Source),
		DetailType: aws.String(string(env.Type)),
		Detail:     aws.String(string(detail)),
		Time:       aws.Time(env.CreatedAt),
	}
	if r.d.EventBusName != "" {
		e.EventBusName = aws.String(r.d.EventBusName)
	}
	size := EntrySize(e)
	if size > MaxBytesPerCall {
		return e, size, fmt.Errorf("relay: event %s is %d bytes, over EventBridge's %d", env.EventID, size, MaxBytesPerCall)
	}
	return e, size, nil
}

// EntrySize is an entry's size as EventBridge documents the calculation: 14 bytes for Time,
// plus the UTF-8 bytes of Source, DetailType, Detail and each Resource.
func EntrySize(e ebtypes.PutEventsRequestEntry) int {
	n := 0
	if e.Time != nil {
		n += 14
	}
	n += len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	for _, res := range e.Resources {
		n += len(res)
	}
	return n
}

// putWithRetry publishes a batch, retrying only the entries that failed, and returns the input
// index of the first record still unpublished, or -1.
func (r *Relay) putWithRetry(ctx context.Context, batch []pending) int {
	log, maxAttempts, delay := r.d.Logger, r.d.MaxAttempts, r.d.BaseDelay
	left := batch
	for attempt := 1; ; attempt++ {
		entries := make([]ebtypes.PutEventsRequestEntry, len(left))
		for i, p := range left {
			entries[i] = p.entry
		}
		out, err := r.d.Bus.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		var failed []pending
		switch {
		case err != nil:
			log.WarnContext(ctx, "relay: PutEvents failed", "attempt", attempt, "entries", len(left), "err", err)
			failed = left
		case out == nil || len(out.Entries) != len(left):
			// EventBridge answers one result per entry, in order; anything else leaves the
			// outcome of each entry unknown, so all are retried (a duplicate is harmless).
			log.WarnContext(ctx, "relay: PutEvents answered the wrong number of results", "attempt", attempt, "entries", len(left))
			failed = left
		default:
			for i, res := range out.Entries {
				if res.ErrorCode != nil || res.EventId == nil {
					log.WarnContext(ctx, "relay: entry refused", "attempt", attempt, "eventId", left[i].env.EventID,
						"errorCode", aws.ToString(res.ErrorCode), "errorMessage", aws.ToString(res.ErrorMessage))
					failed = append(failed, left[i])
					continue
				}
				r.published(ctx, left[i], aws.ToString(res.EventId))
			}
		}
		if len(failed) == 0 {
			return -1
		}
		r.d.Metrics.Count(MetricEntryFailures, int64(len(failed)))
		if attempt >= maxAttempts || ctx.Err() != nil {
			first := failed[0]
			r.d.Metrics.Count(MetricRecordFailures, 1, metrics.Dim{Name: "reason", Value: "putEvents"})
			log.ErrorContext(ctx, "relay: giving up on record; the stream will redeliver from it", "eventId", first.env.EventID,
				"attempts", attempt, "unpublished", len(failed))
			return first.index
		}
		if err := r.d.Sleep(ctx, delay<<(attempt-1)); err != nil {
			return failed[0].index
		}
		left = failed
	}
}

func (r *Relay) published(ctx context.Context, p pending, busEventID string) {
	r.d.Metrics.Count(MetricPublished, 1, metrics.Dim{Name: "type", Value: string(p.env.Type)})
	ctx = obs.WithCorrelation(obs.WithReservation(ctx, p.env.ReservationID), p.env.CorrelationID)
	r.d.Logger.DebugContext(ctx, "relay: published", "eventId", p.env.EventID, "type", p.env.Type, "busEventId", busEventID)
}

// sleep waits d out, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
