// Package outbox defines the event envelope that every state change writes in the same DynamoDB
// transaction as the change itself, its item form in the Outbox table, and the event types. The
// relay reads Outbox stream images with FromItem / FromStreamImage and publishes them.
package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Type names what happened to a reservation.
type Type string

// Event types. Their string values are the EventBridge detail-types.
const (
	SeatsHeld            Type = "SeatsHeld"
	PaymentPending       Type = "PaymentPending"
	ReservationConfirmed Type = "ReservationConfirmed"
	SeatsReleased        Type = "SeatsReleased"
	SeatsReacquired      Type = "SeatsReacquired"
	PaymentStateChanged  Type = "PaymentStateChanged"
	PaymentAuthorized    Type = "PaymentAuthorized"
	PaymentCaptured      Type = "PaymentCaptured"
	PaymentFailed        Type = "PaymentFailed"
	PaymentVoided        Type = "PaymentVoided"
	PaymentRefunded      Type = "PaymentRefunded"
	PaymentUncertain     Type = "PaymentUncertain"
	// ReservationCancelRequested records the customer's cancel: from then on nothing confirms,
	// captures or reacquires the reservation, and settlement voids or refunds it.
	ReservationCancelRequested Type = "ReservationCancelRequested"
)

// Reasons a store records on its own; otherwise the record carries the caller's reason.
const (
	// ReasonHoldExpired: the sweeper gave back the seats of a lapsed hold.
	ReasonHoldExpired = "hold_expired"
	// ReasonLatePayment: the seats were taken back for money that came after the hold lapsed.
	ReasonLatePayment = "late_payment"
)

// paymentTypes names the payment events that have their own type; the others are
// PaymentStateChanged.
var paymentTypes = map[reservation.PaymentEvent]Type{
	reservation.AuthorizationOK: PaymentAuthorized,
	reservation.PaymentDeclined: PaymentFailed,
	reservation.CaptureOK:       PaymentCaptured,
	reservation.VoidPayment:     PaymentVoided,
	reservation.RefundPayment:   PaymentRefunded,
	reservation.OutcomeUnknown:  PaymentUncertain,
}

// PaymentType is the type of the record a payment event writes. Every store uses it, so that
// consumers see the same event whichever store made the change.
func PaymentType(ev reservation.PaymentEvent) Type {
	if t, ok := paymentTypes[ev]; ok {
		return t
	}
	return PaymentStateChanged
}

// Source is the EventBridge source the relay publishes under.
const Source = "seatsaga.reservations"

// DefaultRetention is how long an outbox item lives before TTL may delete it; the relay reads
// the stream within seconds, so this only bounds storage.
const DefaultRetention = 7 * 24 * time.Hour

// Item attribute names (besides tables.AttrOutboxEventID and tables.AttrExpiresAtTTL).
const (
	AttrType             = "type"
	AttrReservationID    = "reservationId"
	AttrAggregateVersion = "aggregateVersion"
	AttrCreatedAt        = "createdAt"
	AttrCorrelationID    = "correlationId"
	AttrPayload          = "payload"
)

// Envelope is one event as stored, streamed and published (the Outbox table in
// internal/tables/tables.go).
type Envelope struct {
	EventID          string          `json:"eventId"`
	Type             Type            `json:"type"`
	ReservationID    string          `json:"reservationId"`
	AggregateVersion int64           `json:"aggregateVersion"`
	CreatedAt        time.Time       `json:"createdAt"`
	CorrelationID    string          `json:"correlationId,omitempty"`
	Payload          json.RawMessage `json:"payload,omitempty"`
}

// EventID derives an event's id from the aggregate, the version the change produced and the
// type, so a retried write produces the same id and the conditional put cannot publish a
// second, different event for the same change.
func EventID(reservationID string, aggregateVersion int64, t Type) string {
	return reservationID + "#v" + strconv.FormatInt(aggregateVersion, 10) + "#" + string(t)
}

// New builds an envelope with a deterministic id; payload is marshalled to JSON (nil for none).
func New(t Type, reservationID string, aggregateVersion int64, createdAt time.Time, correlationID string, payload any) (Envelope, error) {
	if t == "" || reservationID == "" {
		return Envelope{}, errors.New("outbox: event type and reservation id are required")
	}
	e := Envelope{
		EventID:          EventID(reservationID, aggregateVersion, t),
		Type:             t,
		ReservationID:    reservationID,
		AggregateVersion: aggregateVersion,
		CreatedAt:        createdAt.UTC(),
		CorrelationID:    correlationID,
	}
	if payload != nil {
		raw, err := json.Marshal(payload)
		if err != nil {
			return Envelope{}, fmt.Errorf("outbox: marshal %s payload: %w", t, err)
		}
		e.Payload = raw
	}
	return e, nil
}

// Item renders the envelope as an Outbox item whose TTL attribute lies retention after
// CreatedAt. The payload is stored as a JSON string so that it reaches the relay byte for byte.
func (e Envelope) Item(retention time.Duration) map[string]types.AttributeValue {
	if retention <= 0 {
		retention = DefaultRetention
	}
	item := map[string]types.AttributeValue{
		tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: e.EventID},
		AttrType:                 &types.AttributeValueMemberS{Value: string(e.Type)},
		AttrReservationID:        &types.AttributeValueMemberS{Value: e.ReservationID},
		AttrAggregateVersion:     &types.AttributeValueMemberN{Value: strconv.FormatInt(e.AggregateVersion, 10)},
		AttrCreatedAt:            &types.AttributeValueMemberS{Value: e.CreatedAt.UTC().Format(time.RFC3339Nano)},
		tables.AttrExpiresAtTTL:  &types.AttributeValueMemberN{Value: strconv.FormatInt(e.CreatedAt.Add(retention).Unix(), 10)},
	}
	if e.CorrelationID != "" {
		item[AttrCorrelationID] = &types.AttributeValueMemberS{Value: e.CorrelationID}
	}
	if len(e.Payload) > 0 {
		item[AttrPayload] = &types.AttributeValueMemberS{Value: string(e.Payload)}
	}
	return item
}

// FromItem reads an envelope back from an Outbox item (GetItem, Scan or a dynamodbstreams image).
func FromItem(item map[string]types.AttributeValue) (Envelope, error) {
	str := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	num := ""
	if v, ok := item[AttrAggregateVersion].(*types.AttributeValueMemberN); ok {
		num = v.Value
	}
	return decode(str(tables.AttrOutboxEventID), str(AttrType), str(AttrReservationID), num,
		str(AttrCreatedAt), str(AttrCorrelationID), str(AttrPayload))
}

// FromStreamImage reads an envelope from a Lambda DynamoDB stream record's NewImage.
func FromStreamImage(image map[string]events.DynamoDBAttributeValue) (Envelope, error) {
	str := func(name string) string {
		if v, ok := image[name]; ok && v.DataType() == events.DataTypeString {
			return v.String()
		}
		return ""
	}
	num := ""
	if v, ok := image[AttrAggregateVersion]; ok && v.DataType() == events.DataTypeNumber {
		num = v.Number()
	}
	return decode(str(tables.AttrOutboxEventID), str(AttrType), str(AttrReservationID), num,
		str(AttrCreatedAt), str(AttrCorrelationID), str(AttrPayload))
}

func decode(id, typ, reservationID, version, createdAt, correlationID, payload string) (Envelope, error) {
	if id == "" || typ == "" || reservationID == "" {
		return Envelope{}, fmt.Errorf("outbox: item %q lacks eventId, type or reservationId", id)
	}
	v, err := strconv.ParseInt(version, 10, 64)
	if err != nil {
		return Envelope{}, fmt.Errorf("outbox: item %s: aggregateVersion %q: %w", id, version, err)
	}
	at, err := time.Parse(time.RFC3339Nano, createdAt)
	if err != nil {
		return Envelope{}, fmt.Errorf("outbox: item %s: createdAt %q: %w", id, createdAt, err)
	}
	e := Envelope{EventID: id, Type: Type(typ), ReservationID: reservationID, AggregateVersion: v,
		CreatedAt: at.UTC(), CorrelationID: correlationID}
	if payload != "" {
		if !json.Valid([]byte(payload)) {
			return Envelope{}, fmt.Errorf("outbox: item %s: payload is not JSON", id)
		}
		e.Payload = json.RawMessage(payload)
	}
	return e, nil
}

// ReservationSnapshot is the payload inventory changes carry: the reservation as the change
// left it. Amount is in minor units.
type ReservationSnapshot struct {
	CustomerID      string    `json:"customerId"`
	EventID         string    `json:"eventId"`
	SeatIDs         []string  `json:"seatIds"`
	Amount          int64     `json:"amount"`
	Currency        string    `json:"currency"`
	InventoryState  string    `json:"inventoryState"`
	PaymentState    string    `json:"paymentState"`
	HoldExpiresAt   time.Time `json:"holdExpiresAt"`
	PaymentIntentID string    `json:"paymentIntentId,omitempty"`
	Outcome         string    `json:"outcome,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	// NotifyCustomer says the customer must hear about this change (e.g. money voided after
	// a late payment); consumers that message customers read it instead of parsing Reason.
	NotifyCustomer bool `json:"notifyCustomer"`
}

// SnapshotOf is the payload of a change that left r as it is, with the change's reason and
// whether the customer must hear about it.
func SnapshotOf(r reservation.Reservation, reason string, notifyCustomer bool) ReservationSnapshot {
	return ReservationSnapshot{
		CustomerID: r.CustomerID, EventID: r.EventID, SeatIDs: r.SeatIDs, Amount: r.Amount, Currency: r.Currency,
		InventoryState: string(r.Inventory), PaymentState: string(r.Payment), HoldExpiresAt: r.HoldExpiresAt,
		PaymentIntentID: r.PaymentIntentID, Outcome: string(r.Outcome), Reason: reason, NotifyCustomer: notifyCustomer,
	}
}

// ForReservation is the record of a change of type t that left r at r.Version: its id is
// derived from the reservation, the version and the type, so a retried write cannot publish a
// second, different record for the same change.
func ForReservation(t Type, r reservation.Reservation, reason string, notifyCustomer bool) (Envelope, error) {
	return New(t, r.ID, r.Version, r.UpdatedAt, r.CorrelationID, SnapshotOf(r, reason, notifyCustomer))
}
