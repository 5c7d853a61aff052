package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/tables"
)

// Claim is the answer to a callback claim.
type Claim int

const (
	// Claimed: this caller owns the callback and must send it, then complete it.
	Claimed Claim = iota + 1
	// AlreadySent: the callback was sent (or the saga had stopped waiting); send nothing.
	AlreadySent
	// InProgress: another delivery holds a live lease and is sending it now.
	InProgress
)

func (c Claim) String() string {
	switch c {
	case Claimed:
		return "claimed"
	case AlreadySent:
		return "already_sent"
	case InProgress:
		return "in_progress"
	}
	return "unknown"
}

// DedupeStore records which webhook events were fully processed and which saga callbacks were
// sent. Two records, because several distinct Stripe events (created, requires_action,
// amount_capturable_updated, …) may all lead to the same callback: the event record dedupes
// deliveries of one event, the callback record makes the SendTaskSuccess/Failure happen once
// per task token however many events lead to it.
type DedupeStore interface {
	// Processed reports whether the event was recorded as fully processed.
	Processed(ctx context.Context, eventID string) (bool, error)
	// MarkProcessed records the event as fully processed. It is written only after every effect
	// of the event happened, so a crash before it makes the redelivery redo what is missing.
	MarkProcessed(ctx context.Context, eventID, reservationID string) error
	// ClaimCallback takes the right to send the callback named key for lease. A lease left by a
	// crashed sender expires and the next delivery takes over; sending twice is harmless then
	// (the second answer is TaskTimedOut), while two live deliveries never both send.
	ClaimCallback(ctx context.Context, key string, lease time.Duration) (Claim, error)
	// CompleteCallback records that the callback was sent (or the saga no longer waited).
	CompleteCallback(ctx context.Context, key, outcome string) error
}

// DynamoDB is the part of the DynamoDB API the dedupe store uses; *dynamodb.Client satisfies it.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Dedupe key prefixes in ProcessedEvents (consumer#id, internal/tables/tables.go).
const (
	eventKeyPrefix    = "webhook#"
	callbackKeyPrefix = "webhook-callback#"
)

// Record attributes besides tables.AttrDedupeKey and tables.AttrExpiresAtTTL.
const (
	attrState         = "state"
	attrLeaseUntil    = "leaseUntilMs"
	attrOutcome       = "outcome"
	attrReservationID = "reservationId"
	attrRecordedAt    = "recordedAt"
)

const (
	stateSending   = "SENDING"
	stateSent      = "SENT"
	stateProcessed = "PROCESSED"
)

// DefaultRetention is how long dedupe records live when DynamoDedupe.Retention is zero: longer
// than Stripe's redelivery window (three days) with room to spare.
const DefaultRetention = 7 * 24 * time.Hour

// DynamoDedupe keeps dedupe records in the ProcessedEvents table. Retention is how long a
// record lives before TTL may delete it (default DefaultRetention); it must outlast the
// provider's redelivery window.
type DynamoDedupe struct {
	Client    DynamoDB
	Table     string
	Retention time.Duration
	Now       func() time.Time
}

func (d *DynamoDedupe) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *DynamoDedupe) expires() types.AttributeValue {
	retention := d.Retention
	if retention <= 0 {
		retention = DefaultRetention
	}
	return num(d.now().Add(retention).Unix())
}

// Processed implements DedupeStore with a strongly consistent read.
func (d *DynamoDedupe) Processed(ctx context.Context, eventID string) (bool, error) {
	out, err := d.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.Table),
		Key:            key(eventKeyPrefix + eventID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("read dedupe record of event %s: %w", eventID, err)
	}
	return out.Item != nil, nil
}

// MarkProcessed implements DedupeStore. It is an unconditional put: recording twice is harmless.
func (d *DynamoDedupe) MarkProcessed(ctx context.Context, eventID, reservationID string) error {
	item := map[string]types.AttributeValue{
		tables.AttrDedupeKey:    str(eventKeyPrefix + eventID),
		tables.AttrExpiresAtTTL: d.expires(),
		attrState:               str(stateProcessed),
		attrRecordedAt:          str(d.now().UTC().Format(time.RFC3339Nano)),
	}
	if reservationID != "" {
		item[attrReservationID] = str(reservationID)
	}
	_, err := d.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.Table), Item: item})
	if err != nil {
		return fmt.Errorf("record event %s as processed: %w", eventID, err)
	}
	return nil
}

// ClaimCallback implements DedupeStore with one conditional put: it succeeds when no record
// exists or when a sender's lease ran out without completing.
func (d *DynamoDedupe) ClaimCallback(ctx context.Context, k string, lease time.Duration) (Claim, error) {
	now := d.now()
	_, err := d.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.Table),
		Item: map[string]types.AttributeValue{
			tables.AttrDedupeKey:    str(callbackKeyPrefix + k),
			tables.AttrExpiresAtTTL: d.expires(),
			attrState:               str(stateSending),
			attrLeaseUntil:          num(now.Add(lease).UnixMilli()),
			attrRecordedAt:          str(now.UTC().Format(time.RFC3339Nano)),
		},
		ConditionExpression: aws.String("attribute_not_exists(#k) OR (#s = :sending AND #l < :now)"),
		ExpressionAttributeNames: map[string]string{
			"#k": tables.AttrDedupeKey, "#s": attrState, "#l": attrLeaseUntil,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":sending": str(stateSending),
			":now":     num(now.UnixMilli()),
		},
	})
	if err == nil {
		return Claimed, nil
	}
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return 0, fmt.Errorf("claim callback %s: %w", k, err)
	}
	out, err := d.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.Table),
		Key:            key(callbackKeyPrefix + k),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("read callback record %s: %w", k, err)
	}
	if s, ok := out.Item[attrState].(*types.AttributeValueMemberS); ok && s.Value == stateSent {
		return AlreadySent, nil
	}
	return InProgress, nil
}

// CompleteCallback implements DedupeStore.
func (d *DynamoDedupe) CompleteCallback(ctx context.Context, k, outcome string) error {
	_, err := d.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(d.Table),
		Key:              key(callbackKeyPrefix + k),
		UpdateExpression: aws.String("SET #s = :sent, #o = :outcome, #t = :ttl REMOVE #l"),
		ExpressionAttributeNames: map[string]string{
			"#s": attrState, "#o": attrOutcome, "#t": tables.AttrExpiresAtTTL, "#l": attrLeaseUntil,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":sent":    str(stateSent),
			":outcome": str(outcome),
			":ttl":     d.expires(),
		},
	})
	if err != nil {
		return fmt.Errorf("complete callback %s: %w", k, err)
	}
	return nil
}

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrDedupeKey: str(k)}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
