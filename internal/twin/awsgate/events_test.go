package awsgate_test

import (
	"context"
	"errors"
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
