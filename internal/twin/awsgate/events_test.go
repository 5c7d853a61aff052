package awsgate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
)

func reservationEvent(bus string) ebtypes.PutEventsRequestEntry {
	return ebtypes.PutEventsRequestEntry{
		EventBusName: aws.String(bus), Source: aws.String("seatsaga.reservations"),
		DetailType: aws.String("SeatsHeld"), Detail: aws.String(`{"reservationId":"r-1"}`),
	}
}

func TestPutEventsReachesTheBusSink(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	bus := relay.NewMemoryBus()
	busARN, err := g.AddEventBus("seatsaga-local", bus)
	if err != nil {
		t.Fatal(err)
	}
	if busARN != "arn:aws:events:"+region+":"+account+":event-bus/seatsaga-local" || busARN != g.EventBusARN("seatsaga-local") {
		t.Fatalf("bus ARN = %s", busARN)
	}
	g.AddPrincipal("relay-key", "relay", []deploy.Statement{
		{Actions: []string{"events:PutEvents"}, Resources: []string{busARN}},
	})
	at := time.Date(2026, 12, 1, 10, 0, 0, 250e6, time.UTC)
	byName := reservationEvent("seatsaga-local")
	byName.Time = &at
	byName.Resources = []string{"arn:aws:dynamodb:us-east-1:000000000000:table/Seats"}
	byARN := reservationEvent(busARN)

	out, err := g.events("relay-key").PutEvents(context.Background(), &eventbridge.PutEventsInput{
		Entries: []ebtypes.PutEventsRequestEntry{byName, byARN}})
	if err != nil {
		t.Fatalf("PutEvents: %v", err)
	}
	if out.FailedEntryCount != 0 || len(out.Entries) != 2 || aws.ToString(out.Entries[0].EventId) == "" || aws.ToString(out.Entries[1].EventId) == "" {
		t.Fatalf("PutEvents = %+v, want two accepted entries with event ids", out)
	}
	got := bus.Entries()
	if len(got) != 2 {
		t.Fatalf("the sink received %d entries, want 2", len(got))
	}
	if aws.ToString(got[0].Detail) != `{"reservationId":"r-1"}` || aws.ToString(got[0].DetailType) != "SeatsHeld" ||
		!aws.ToTime(got[0].Time).Equal(at) || len(got[0].Resources) != 1 || aws.ToString(got[1].EventBusName) != busARN {
		t.Fatalf("the sink received %+v, want the entries as sent", got)
	}
}

func TestPutEventsOnAnotherBusIsDenied(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	bus := relay.NewMemoryBus()
	busARN, err := g.AddEventBus("seatsaga-local", bus)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEventBus("audit", relay.NewMemoryBus()); err != nil {
		t.Fatal(err)
	}
	g.AddPrincipal("relay-key", "relay", []deploy.Statement{
		{Actions: []string{"events:PutEvents"}, Resources: []string{busARN}},
	})

	// One entry for a bus the relay may not use denies the whole call.
	_, err = g.events("relay-key").PutEvents(context.Background(), &eventbridge.PutEventsInput{
		Entries: []ebtypes.PutEventsRequestEntry{reservationEvent("seatsaga-local"), reservationEvent("audit")}})
	wantAccessDenied(t, err, "events:PutEvents", g.EventBusARN("audit"))
	// The default bus is another bus.
	entry := reservationEvent("")
	entry.EventBusName = nil
	_, err = g.events("relay-key").PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry}})
	wantAccessDenied(t, err, "events:PutEvents", g.EventBusARN("default"))
	if n := len(bus.Entries()); n != 0 {
		t.Fatalf("denied calls put %d entries on the bus", n)
	}
}

func TestPutEventsOnABusThatDoesNotExistFailsThatEntry(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	bus := relay.NewMemoryBus()
	if _, err := g.AddEventBus("seatsaga-local", bus); err != nil {
		t.Fatal(err)
	}
	out, err := g.events(adminKey).PutEvents(context.Background(), &eventbridge.PutEventsInput{
		Entries: []ebtypes.PutEventsRequestEntry{reservationEvent("misnamed"), reservationEvent("seatsaga-local")}})
	if err != nil {
		t.Fatalf("PutEvents: %v", err)
	}
	if out.FailedEntryCount != 1 || aws.ToString(out.Entries[0].ErrorCode) != "ResourceNotFoundException" ||
		aws.ToString(out.Entries[1].EventId) == "" {
		t.Fatalf("PutEvents = %+v, want the misnamed bus's entry failed and the other accepted", out)
	}
	if n := len(bus.Entries()); n != 1 {
		t.Fatalf("the bus received %d entries, want 1", n)
	}
}

func TestPutEventsRelaysTheSinksAnswers(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	bus := relay.NewMemoryBus()
	if _, err := g.AddEventBus("seatsaga-local", bus); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func() (*eventbridge.PutEventsOutput, error) {
		return g.events(adminKey).PutEvents(ctx, &eventbridge.PutEventsInput{
			Entries: []ebtypes.PutEventsRequestEntry{reservationEvent("seatsaga-local"), reservationEvent("seatsaga-local")}})
	}

	bus.RefuseEntries(1, "ThrottlingException")
	out, err := put()
	if err != nil || out.FailedEntryCount != 1 || aws.ToString(out.Entries[0].ErrorCode) != "ThrottlingException" {
		t.Fatalf("PutEvents with one refused entry = %+v, %v", out, err)
	}

	bus.FailCalls(1, errors.New("bus is down"))
	_, err = put()
	wantAPIErrorCodeAndStatus(t, err, "InternalException", 500)

	_, err = g.events(adminKey).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: make([]ebtypes.PutEventsRequestEntry, 11)})
	wantAPIError(t, err, "ValidationException")
}

// An entry that fails validation fails the whole call before any entry is delivered, whichever
// bus it is for: a call answered with an error delivered nothing, so its retry duplicates
// nothing.
func TestPutEventsValidatesEveryEntryBeforeDeliveringAny(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	first, second := relay.NewMemoryBus(), relay.NewMemoryBus()
	if _, err := g.AddEventBus("first", first); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEventBus("second", second); err != nil {
		t.Fatal(err)
	}
	// 1e400 is a JSON number but no float64: no time.
	body := `{"Entries":[
		{"EventBusName":"first","Source":"s","DetailType":"d","Detail":"{}"},
		{"EventBusName":"second","Source":"s","DetailType":"d","Detail":"{}","Time":1e400}
	]}`
	status, _, out := post(t, g.URL, "AWSEvents.PutEvents", authorization(adminKey, "events"), body)
	if status != 400 || out["__type"] != "ValidationException" || !strings.Contains(out["Message"], "Entry 1") {
		t.Fatalf("PutEvents answered %d %v, want 400 ValidationException naming entry 1", status, out)
	}
	if n, m := len(first.Entries()), len(second.Entries()); n != 0 || m != 0 {
		t.Fatalf("a refused call delivered %d and %d entries, want none", n, m)
	}
}

// Once a bus has been delivered to, a later bus's failure fails only that bus's entries: the
// caller retries those (FailedEntryCount) and the first bus's entry is not delivered twice.
func TestPutEventsFailsOnlyTheEntriesOfABusThatFailsAfterAnotherWasDelivered(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	first, second := relay.NewMemoryBus(), relay.NewMemoryBus()
	if _, err := g.AddEventBus("first", first); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEventBus("second", second); err != nil {
		t.Fatal(err)
	}
	second.FailCalls(1, errors.New("bus is down"))
	client := g.events(adminKey)
	ctx := context.Background()
	entries := []ebtypes.PutEventsRequestEntry{reservationEvent("first"), reservationEvent("second")}
	out, err := client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
	if err != nil {
		t.Fatalf("PutEvents failed as a whole after delivering to the first bus: %v", err)
	}
	if out.FailedEntryCount != 1 || aws.ToString(out.Entries[0].EventId) == "" ||
		aws.ToString(out.Entries[1].ErrorCode) != "InternalException" || !strings.Contains(aws.ToString(out.Entries[1].ErrorMessage), "bus is down") {
		t.Fatalf("PutEvents = %+v, want the first entry accepted and the second failed", out)
	}
	// The caller retries the failed entry only.
	if out, err := client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries[1:]}); err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if n, m := len(first.Entries()), len(second.Entries()); n != 1 || m != 1 {
		t.Fatalf("the buses received %d and %d entries, want one each", n, m)
	}
}
