package outbox_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/starter"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// streamRecord renders one DynamoDB stream record as Lambda delivers it to the relay.
func streamRecord(t testing.TB, image map[string]events.DynamoDBAttributeValue) []byte {
	t.Helper()
	b, err := json.Marshal(events.DynamoDBEventRecord{EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{SequenceNumber: "100", NewImage: image}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeStreamRecord decodes arbitrary bytes as a DynamoDB stream record, the relay's and
// the starter's untrusted input, and reads it as an outbox envelope and as a queued start.
// Whatever the bytes: nothing panics; an envelope read has its id, type and reservation, a UTC
// time and a JSON payload, and survives the trip through its Outbox item unchanged; a queued
// start is read only from an image that is ADMITTED with startQueued true.
func FuzzDecodeStreamRecord(f *testing.F) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)
	env, err := outbox.New(outbox.SeatsHeld, "r_abc", 3, at, "corr-1", map[string]any{"seatIds": []string{"A1"}})
	if err != nil {
		f.Fatal(err)
	}
	image := map[string]events.DynamoDBAttributeValue{
		tables.AttrOutboxEventID:    events.NewStringAttribute(env.EventID),
		outbox.AttrType:             events.NewStringAttribute(string(env.Type)),
		outbox.AttrReservationID:    events.NewStringAttribute(env.ReservationID),
		outbox.AttrAggregateVersion: events.NewNumberAttribute("3"),
		outbox.AttrCreatedAt:        events.NewStringAttribute(at.Format(time.RFC3339Nano)),
		outbox.AttrCorrelationID:    events.NewStringAttribute("corr-1"),
		outbox.AttrPayload:          events.NewStringAttribute(string(env.Payload)),
	}
	f.Add(streamRecord(f, image))
	image[outbox.AttrAggregateVersion] = events.NewStringAttribute("3")
	f.Add(streamRecord(f, image))
	image[outbox.AttrPayload] = events.NewStringAttribute("{not json")
	f.Add(streamRecord(f, image))
	f.Add(streamRecord(f, map[string]events.DynamoDBAttributeValue{
		tables.AttrReservationID:  events.NewStringAttribute("r_abc"),
		tables.AttrAdmissionState: events.NewStringAttribute(string(reservation.Admitted)),
		tables.AttrStartQueued:    events.NewBooleanAttribute(true),
		tables.AttrStartInput:     events.NewStringAttribute(`{"reservationId":"r_abc"}`),
	}))
	f.Add([]byte(`{"dynamodb":{"NewImage":{"eventId":{"N":"1"},"type":{"NULL":true},"x":{"L":[{"M":{}}]}}}}`))
	f.Add([]byte(`{"dynamodb":{"NewImage":{"startQueued":{"BOOL":"true"}}}}`))

	f.Fuzz(func(t *testing.T, raw []byte) {
		var rec events.DynamoDBEventRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return
		}
		if id, input, ok := starter.Queued(rec); ok {
			img := rec.Change.NewImage
			if q := img[tables.AttrStartQueued]; q.DataType() != events.DataTypeBoolean || !q.Boolean() ||
				img[tables.AttrAdmissionState].DataType() != events.DataTypeString ||
				img[tables.AttrAdmissionState].String() != string(reservation.Admitted) ||
				img[tables.AttrReservationID].String() != id || img[tables.AttrStartInput].String() != input {
				t.Fatalf("queued start %q read from %s", id, raw)
			}
		}
		env, err := outbox.FromStreamImage(rec.Change.NewImage)
		if err != nil {
			return
		}
		if env.EventID == "" || env.Type == "" || env.ReservationID == "" || env.CreatedAt.Location() != time.UTC ||
			env.Payload != nil && !json.Valid(env.Payload) {
			t.Fatalf("envelope %+v read from %s", env, raw)
		}
		back, err := outbox.FromItem(env.Item(time.Hour))
		if err != nil {
			t.Fatalf("the envelope's own item does not read back: %v", err)
		}
		if back.EventID != env.EventID || back.Type != env.Type || back.ReservationID != env.ReservationID ||
			back.AggregateVersion != env.AggregateVersion || !back.CreatedAt.Equal(env.CreatedAt) ||
			back.CorrelationID != env.CorrelationID || !bytes.Equal(back.Payload, env.Payload) {
			t.Fatalf("round trip changed the envelope:\n%+v\n%+v", env, back)
		}
	})
}
