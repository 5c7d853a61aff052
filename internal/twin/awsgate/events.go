package awsgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
)

// EventSink receives what PutEvents puts on one event bus: the entries for that bus, in the
// order the call lists them, as the SDK's types. It answers one result per entry (an EventId,
// or an ErrorCode and ErrorMessage for an entry it refuses). An error fails the whole call
// while no other bus of the call has been delivered to, and only this bus's entries after
// that: a smithy.APIError keeps its code (as a whole call, a client fault answers 400, any
// other 500), any other error answers InternalException.
//
// The method is eventbridge.Client's own, so an *eventbridge.Client or the relay's in-memory
// bus (relay.MemoryBus) is a sink as it is.
type EventSink interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// maxEntriesPerPutEvents is EventBridge's limit on entries in one PutEvents call.
const maxEntriesPerPutEvents = 10

var eventBusNamePattern = regexp.MustCompile(`^[A-Za-z0-9._\-/]{1,256}$`)

// eventBuses holds the event buses that exist, by name.
type eventBuses struct {
	region, account string

	mu    sync.RWMutex
	sinks map[string]EventSink
}

func newEventBuses(region, account string) *eventBuses {
	return &eventBuses{region: region, account: account, sinks: map[string]EventSink{}}
}

// defaultEventBus is the name of the account's default bus, the one an entry without an
// EventBusName goes to.
const defaultEventBus = "default"

// eventBusARN is the ARN of the event bus name in region and account; the one place the gate
// builds it, for authorizing (requestDeriver) and for finding the bus (eventBuses).
func eventBusARN(region, account, name string) string {
	return "arn:aws:events:" + region + ":" + account + ":event-bus/" + name
}

func (b *eventBuses) arn(name string) string { return eventBusARN(b.region, b.account, name) }

func (b *eventBuses) add(name string, sink EventSink) (string, error) {
	if !eventBusNamePattern.MatchString(name) {
		return "", fmt.Errorf("event bus name %q: want 1 to 256 of A-Z a-z 0-9 . _ - /", name)
	}
	if sink == nil {
		return "", fmt.Errorf("event bus %q: nil sink", name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.sinks[name]; ok {
		return "", fmt.Errorf("event bus %q already exists", name)
	}
	b.sinks[name] = sink
	return b.arn(name), nil
}

// busName is the name of the bus an EventBusName names, by name or by an ARN in the gate's
// region and account; "" for an ARN of another region or account, which names no local bus.
func (b *eventBuses) busName(nameOrARN string) string {
	switch {
	case nameOrARN == "":
		return defaultEventBus
	case strings.HasPrefix(nameOrARN, "arn:"):
		name, found := strings.CutPrefix(nameOrARN, b.arn(""))
		if !found {
			return ""
		}
		return name
	}
	return nameOrARN
}

func (b *eventBuses) sink(name string) (EventSink, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	s, ok := b.sinks[name]
	return s, ok
}

// putEventsEntry is one entry of PutEvents as the wire carries it; Time is epoch seconds.
type putEventsEntry struct {
	Source       *string
	DetailType   *string
	Detail       *string
	EventBusName *string
	Resources    []string
	TraceHeader  *string
	Time         *json.Number
}

type putEventsInput struct {
	Entries    []putEventsEntry
	EndpointID *string `json:"EndpointId"`
}

type putEventsResultEntry struct {
	EventID      *string `json:"EventId,omitempty"`
	ErrorCode    *string `json:"ErrorCode,omitempty"`
	ErrorMessage *string `json:"ErrorMessage,omitempty"`
}

type putEventsOutput struct {
	FailedEntryCount int
	Entries          []putEventsResultEntry
}

func (e putEventsEntry) sdkEntry() (ebtypes.PutEventsRequestEntry, error) {
	out := ebtypes.PutEventsRequestEntry{
		Source: e.Source, DetailType: e.DetailType, Detail: e.Detail, EventBusName: e.EventBusName,
		Resources: e.Resources, TraceHeader: e.TraceHeader,
	}
	if e.Time != nil {
		secs, err := e.Time.Float64()
		if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return out, fmt.Errorf("Time %q is not epoch seconds", e.Time.String())
		}
		whole, frac := math.Modf(secs)
		t := time.Unix(int64(whole), int64(frac*1e9)).UTC()
		out.Time = &t
	}
	return out, nil
}

// putEvents hands each entry to its bus's sink, one sink call per bus, and answers the
// results in the entries' order. An entry for a bus that does not exist fails on its own.
//
// Every entry is validated before any is delivered, so that a call that fails as a whole
// delivered nothing and its retry duplicates nothing. For the same reason a sink's error fails
// the whole call only while no bus has been delivered to; after that it fails just that bus's
// entries, with the error's code, and the caller retries those (FailedEntryCount).
func (b *eventBuses) putEvents(ctx context.Context, body []byte) (any, *apiError) {
	var in putEventsInput
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	if n := len(in.Entries); n < 1 || n > maxEntriesPerPutEvents {
		return nil, serviceError(http.StatusBadRequest, "ValidationException",
			"1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and %d (it has %d)",
			maxEntriesPerPutEvents, n)
	}
	results := make([]putEventsResultEntry, len(in.Entries))
	entries := make([]ebtypes.PutEventsRequestEntry, len(in.Entries))
	// Entries by bus, in the order the buses first appear.
	var order []string
	byBus := map[string][]int{}
	sinks := map[string]EventSink{}
	for i, e := range in.Entries {
		entry, err := e.sdkEntry()
		if err != nil {
			return nil, serviceError(http.StatusBadRequest, "ValidationException", "Entry %d: %v", i, err)
		}
		entries[i] = entry
		named := deref(e.EventBusName)
		name := b.busName(named)
		sink, ok := b.sink(name)
		if !ok {
			if named == "" {
				named = defaultEventBus
			}
			results[i] = failedEntry("ResourceNotFoundException", fmt.Sprintf("Event bus %s does not exist.", named))
			continue
		}
		if _, seen := byBus[name]; !seen {
			order = append(order, name)
			sinks[name] = sink
		}
		byBus[name] = append(byBus[name], i)
	}
	delivered := false
	for _, name := range order {
		idx := byBus[name]
		sdkIn := &eventbridge.PutEventsInput{EndpointId: in.EndpointID, Entries: make([]ebtypes.PutEventsRequestEntry, len(idx))}
		for j, i := range idx {
			sdkIn.Entries[j] = entries[i]
		}
		out, err := sinks[name].PutEvents(ctx, sdkIn)
		if err != nil {
			apiErr := sinkError(name, err)
			if !delivered {
				return nil, apiErr
			}
			for _, i := range idx {
				results[i] = failedEntry(apiErr.code, apiErr.message)
			}
			continue
		}
		delivered = true
		for j, i := range idx {
			if out == nil || j >= len(out.Entries) {
				results[i] = failedEntry("InternalFailure", "The event bus answered no result for this entry.")
				continue
			}
			r := out.Entries[j]
			results[i] = putEventsResultEntry{EventID: r.EventId, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage}
		}
	}
	out := putEventsOutput{Entries: results}
	for _, r := range results {
		if r.ErrorCode != nil {
			out.FailedEntryCount++
		}
	}
	return out, nil
}

func failedEntry(code, message string) putEventsResultEntry {
	return putEventsResultEntry{ErrorCode: &code, ErrorMessage: &message}
}

// sinkError answers a sink's failure of a whole call in AWS's shape.
func sinkError(bus string, err error) *apiError {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		status := http.StatusInternalServerError
		if ae.ErrorFault() == smithy.FaultClient {
			status = http.StatusBadRequest
		}
		return serviceError(status, ae.ErrorCode(), "%s", ae.ErrorMessage())
	}
	return serviceError(http.StatusInternalServerError, "InternalException", "event bus %s: %v", bus, err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
