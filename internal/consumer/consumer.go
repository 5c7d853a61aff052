// Package consumer is the example EventBridge consumer of seatsaga's outbox events: it tells
// customers what became of their reservation (confirmed, released, voided, refunded, payment
// failed). It shows what every consumer must do with at-least-once, out-of-order delivery:
//
//   - dedupe by the envelope's eventId with a conditional write in ProcessedEvents
//     (key "notify#<eventId>", TTL = Retention), so a redelivered event sends nothing new;
//   - keep, per reservation, the highest aggregate version notified ("notify-latest#<id>"), in
//     the same transaction, so a stale event arriving after a newer one changes nothing;
//   - claim with a lease before sending and mark SENT after, so a crash between the two is
//     retried after the lease instead of being lost or sent twice concurrently.
package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Name is this consumer's prefix in ProcessedEvents keys.
const Name = "notify"

// Defaults for Deps fields left zero.
const (
	DefaultRetention = 7 * 24 * time.Hour
	DefaultLease     = 30 * time.Second
)

// Item attributes besides tables.AttrDedupeKey and tables.AttrExpiresAtTTL.
const (
	AttrState         = "state"
	AttrLeaseUntilMs  = "leaseUntilMs"
	AttrReservationID = "reservationId"
	AttrKind          = "kind"
	AttrVersion       = "aggregateVersion"
	AttrRecordedAt    = "recordedAt"
)

// States of a notification record.
const (
	StateSending = "SENDING"
	StateSent    = "SENT"
	StateStale   = "STALE"
)

// Metric names.
const (
	MetricSent       = "NotificationsSent"
	MetricDuplicates = "NotificationDuplicates"
	MetricStale      = "NotificationsStale"
	MetricIgnored    = "NotificationEventsIgnored"
)

// Kind says what the customer is told.
type Kind string

const (
	KindConfirmed     Kind = "confirmed"
	KindReleased      Kind = "released"
	KindVoided        Kind = "voided"
	KindRefunded      Kind = "refunded"
	KindPaymentFailed Kind = "payment_failed"
)

// kinds maps the event types a customer hears about to what they are told.
var kinds = map[outbox.Type]Kind{
	outbox.ReservationConfirmed: KindConfirmed,
	// A late payment that took the seats back is a confirmation too.
	outbox.SeatsReacquired: KindConfirmed,
	outbox.SeatsReleased:   KindReleased,
	outbox.PaymentVoided:   KindVoided,
	outbox.PaymentRefunded: KindRefunded,
	outbox.PaymentFailed:   KindPaymentFailed,
}

// Notification is one message to a customer. EventID doubles as the idempotency key a real
// channel (e-mail, SMS) should be given.
type Notification struct {
	EventID          string
	ReservationID    string
	CustomerID       string
	Kind             Kind
	AggregateVersion int64
	Reason           string
}

// Sender delivers notifications; a real one would call an e-mail or push service.
type Sender interface {
	Send(ctx context.Context, n Notification) error
}

// DynamoDB is the part of the DynamoDB API the consumer uses; *dynamodb.Client satisfies it.
type DynamoDB interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Deps is what the consumer needs. DB, Table and Sender are required; the rest have defaults.
type Deps struct {
	DB DynamoDB
	// Table is the deployed ProcessedEvents table name.
	Table     string
	Sender    Sender
	Now       func() time.Time
	Retention time.Duration
	Lease     time.Duration
	Logger    *slog.Logger
	Metrics   metrics.Recorder
}

// Notifier is the consumer.
type Notifier struct {
	d Deps
}

// New checks deps and returns the consumer.
func New(d Deps) (*Notifier, error) {
	switch {
	case d.DB == nil:
		return nil, errors.New("consumer: DB is required")
	case d.Table == "":
		return nil, errors.New("consumer: Table is required")
	case d.Sender == nil:
		return nil, errors.New("consumer: Sender is required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Retention <= 0 {
		d.Retention = DefaultRetention
	}
	if d.Lease <= 0 {
		d.Lease = DefaultLease
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = metrics.Discard{}
	}
	return &Notifier{d: d}, nil
}

// ErrInProgress means another delivery of the same event holds the lease; the caller should
// retry later (a Lambda target returns it so EventBridge retries the event).
var ErrInProgress = errors.New("consumer: notification in progress elsewhere")

// InvalidEventError is an event the consumer cannot read; retrying cannot help.
type InvalidEventError struct{ Reason string }

func (e *InvalidEventError) Error() string { return "consumer: invalid event: " + e.Reason }

// Outcome says what Handle did with an event.
type Outcome string

const (
	OutcomeSent      Outcome = "sent"
	OutcomeDuplicate Outcome = "duplicate"
	OutcomeStale     Outcome = "stale"
	OutcomeIgnored   Outcome = "ignored"
)

// Handle is the Lambda handler (an EventBridge rule target).
func (n *Notifier) Handle(ctx context.Context, ev events.EventBridgeEvent) error {
	_, err := n.Process(ctx, ev)
	var invalid *InvalidEventError
	if errors.As(err, &invalid) {
		// Redelivery cannot fix a malformed event; log it and let it go.
		n.d.Logger.ErrorContext(ctx, "consumer: dropping invalid event", "busEventId", ev.ID, "err", err)
		return nil
	}
	return err
}

// Process handles one event and says what it did.
func (n *Notifier) Process(ctx context.Context, ev events.EventBridgeEvent) (Outcome, error) {
	if ev.Source != outbox.Source {
		n.d.Metrics.Count(MetricIgnored, 1)
		return OutcomeIgnored, nil
	}
	var env outbox.Envelope
	if err := json.Unmarshal(ev.Detail, &env); err != nil {
		return "", &InvalidEventError{Reason: "detail is not an outbox envelope: " + err.Error()}
	}
	if env.EventID == "" || env.ReservationID == "" {
		return "", &InvalidEventError{Reason: "envelope lacks eventId or reservationId"}
	}
	ctx = obs.WithCorrelation(obs.WithReservation(ctx, env.ReservationID), env.CorrelationID)
	kind, ok := kinds[env.Type]
	if !ok {
		n.d.Metrics.Count(MetricIgnored, 1)
		return OutcomeIgnored, nil
	}
	var payload struct {
		CustomerID string `json:"customerId"`
		Reason     string `json:"reason"`
	}
	if len(env.Payload) > 0 {
		_ = json.Unmarshal(env.Payload, &payload) // the payload is informative only
	}
	note := Notification{EventID: env.EventID, ReservationID: env.ReservationID, CustomerID: payload.CustomerID,
		Kind: kind, AggregateVersion: env.AggregateVersion, Reason: payload.Reason}

	lease, outcome, err := n.claim(ctx, note)
	if err != nil || outcome != "" {
		return outcome, err
	}
	if err := n.d.Sender.Send(ctx, note); err != nil {
		// The claim stays SENDING; a redelivery after the lease sends again.
		return "", fmt.Errorf("consumer: send %s notification for %s: %w", kind, env.ReservationID, err)
	}
	if err := n.markSent(ctx, note.EventID, lease); err != nil {
		return "", err
	}
	n.d.Metrics.Count(MetricSent, 1, metrics.Dim{Name: "kind", Value: string(kind)})
	n.d.Logger.InfoContext(ctx, "consumer: notification sent", "eventId", note.EventID, "kind", kind)
	return OutcomeSent, nil
}

// claim records the event as being sent and the reservation's latest notified version, in one
// transaction. It returns the lease it holds, or the outcome that ends processing.
func (n *Notifier) claim(ctx context.Context, note Notification) (leaseUntilMs int64, outcome Outcome, err error) {
	now := n.d.Now()
	lease := now.Add(n.d.Lease).UnixMilli()
	item := n.record(note, StateSending, now)
	item[AttrLeaseUntilMs] = num(lease)
	_, err = n.d.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:                aws.String(n.d.Table),
			Item:                     item,
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": tables.AttrDedupeKey},
		}},
		n.latestUpdate(note, now),
	}})
	if err == nil {
		return lease, "", nil
	}
	var canceled *types.TransactionCanceledException
	if !errors.As(err, &canceled) || len(canceled.CancellationReasons) != 2 {
		return 0, "", fmt.Errorf("consumer: claim %s: %w", note.EventID, err)
	}
	claimFailed := aws.ToString(canceled.CancellationReasons[0].Code) == "ConditionalCheckFailed"
	staleFailed := aws.ToString(canceled.CancellationReasons[1].Code) == "ConditionalCheckFailed"
	switch {
	case claimFailed:
		return n.reclaim(ctx, note)
	case staleFailed:
		if err := n.recordStale(ctx, note, now); err != nil {
			return 0, "", err
		}
		n.d.Metrics.Count(MetricStale, 1)
		n.d.Logger.InfoContext(ctx, "consumer: stale event changes nothing", "eventId", note.EventID, "aggregateVersion", note.AggregateVersion)
		return 0, OutcomeStale, nil
	default:
		// TransactionConflict and the like: transient, let the delivery be retried.
		return 0, "", fmt.Errorf("consumer: claim %s: %w", note.EventID, err)
	}
}

// latestUpdate raises the reservation's latest notified version, never lowers it. Events of one
// change share its version (a release and a void written together), so equal is not stale.
func (n *Notifier) latestUpdate(note Notification, now time.Time) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:           aws.String(n.d.Table),
		Key:                 key(Name + "-latest#" + note.ReservationID),
		UpdateExpression:    aws.String("SET #v = :v, #ttl = :ttl, #at = :at"),
		ConditionExpression: aws.String("attribute_not_exists(#v) OR #v <= :v"),
		ExpressionAttributeNames: map[string]string{
			"#v": AttrVersion, "#ttl": tables.AttrExpiresAtTTL, "#at": AttrRecordedAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":v":   num(note.AggregateVersion),
			":ttl": num(now.Add(n.d.Retention).Unix()),
			":at":  str(now.UTC().Format(time.RFC3339Nano)),
		},
	}}
}

// reclaim handles an event whose record exists: SENT or STALE is a duplicate; SENDING with an
// expired lease is taken over (the earlier attempt crashed before marking it sent).
func (n *Notifier) reclaim(ctx context.Context, note Notification) (int64, Outcome, error) {
	out, err := n.d.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(n.d.Table), Key: key(dedupeKey(note.EventID)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, "", fmt.Errorf("consumer: read claim %s: %w", note.EventID, err)
	}
	state := attrString(out.Item, AttrState)
	if state != StateSending {
		n.d.Metrics.Count(MetricDuplicates, 1)
		n.d.Logger.InfoContext(ctx, "consumer: duplicate event changes nothing", "eventId", note.EventID, "state", state)
		return 0, OutcomeDuplicate, nil
	}
	held, _ := strconv.ParseInt(attrNumber(out.Item, AttrLeaseUntilMs), 10, 64)
	now := n.d.Now()
	if now.UnixMilli() < held {
		return 0, "", ErrInProgress
	}
	lease := now.Add(n.d.Lease).UnixMilli()
	_, err = n.d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(n.d.Table),
		Key:                      key(dedupeKey(note.EventID)),
		UpdateExpression:         aws.String("SET #l = :new"),
		ConditionExpression:      aws.String("#s = :sending AND #l = :old"),
		ExpressionAttributeNames: map[string]string{"#l": AttrLeaseUntilMs, "#s": AttrState},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":new": num(lease), ":old": num(held), ":sending": str(StateSending),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return 0, "", ErrInProgress // another delivery took it over first
	}
	if err != nil {
		return 0, "", fmt.Errorf("consumer: take over claim %s: %w", note.EventID, err)
	}
	n.d.Logger.WarnContext(ctx, "consumer: resending after an expired lease", "eventId", note.EventID)
	return lease, "", nil
}

func (n *Notifier) markSent(ctx context.Context, eventID string, lease int64) error {
	_, err := n.d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(n.d.Table),
		Key:                      key(dedupeKey(eventID)),
		UpdateExpression:         aws.String("SET #s = :sent, #at = :at REMOVE #l"),
		ConditionExpression:      aws.String("#s = :sending AND #l = :lease"),
		ExpressionAttributeNames: map[string]string{"#s": AttrState, "#l": AttrLeaseUntilMs, "#at": AttrRecordedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":sent": str(StateSent), ":sending": str(StateSending), ":lease": num(lease),
			":at": str(n.d.Now().UTC().Format(time.RFC3339Nano)),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// Our lease lapsed and another delivery took over; it will mark the record.
		return nil
	}
	if err != nil {
		return fmt.Errorf("consumer: mark %s sent: %w", eventID, err)
	}
	return nil
}

// recordStale remembers a stale event so its redeliveries are duplicates.
func (n *Notifier) recordStale(ctx context.Context, note Notification, now time.Time) error {
	_, err := n.d.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{
		Put: &types.Put{
			TableName:                aws.String(n.d.Table),
			Item:                     n.record(note, StateStale, now),
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": tables.AttrDedupeKey},
		},
	}}})
	var canceled *types.TransactionCanceledException
	if err != nil && !errors.As(err, &canceled) {
		return fmt.Errorf("consumer: record stale %s: %w", note.EventID, err)
	}
	return nil
}

func (n *Notifier) record(note Notification, state string, now time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tables.AttrDedupeKey:    str(dedupeKey(note.EventID)),
		tables.AttrExpiresAtTTL: num(now.Add(n.d.Retention).Unix()),
		AttrState:               str(state),
		AttrReservationID:       str(note.ReservationID),
		AttrKind:                str(string(note.Kind)),
		AttrVersion:             num(note.AggregateVersion),
		AttrRecordedAt:          str(now.UTC().Format(time.RFC3339Nano)),
	}
}

// DedupeKey is the ProcessedEvents key of an event for this consumer.
func DedupeKey(eventID string) string { return dedupeKey(eventID) }

func dedupeKey(eventID string) string { return Name + "#" + eventID }

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrDedupeKey: str(k)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func attrString(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrNumber(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
