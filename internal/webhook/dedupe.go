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
	// SentByThisEvent: AlreadySent, by an earlier delivery of the very event asking: this
	// delivery is a redelivery of an event fully processed.
	SentByThisEvent
)

func (c Claim) String() string {
	switch c {
	case Claimed:
		return "claimed"
	case AlreadySent:
		return "already_sent"
	case InProgress:
		return "in_progress"
	case SentByThisEvent:
		return "sent_by_this_event"
	}
	return "unknown"
}

// DedupeStore records which saga callbacks were sent: several distinct Stripe events
// (requires_action, amount_capturable_updated, …) and every redelivery of each may lead to the
// same callback, and the record makes the SendTaskSuccess/Failure happen once per task token
// however many deliveries lead to it. Everything else an event does is a guarded payment
// transition, which a redelivery finds done, so a delivery needs no record of its own: the
// callback record also names the event that sent it, which tells a redelivery of that event
// (SentByThisEvent) from another event about the same payment (AlreadySent).
type DedupeStore interface {
	// ClaimCallback takes the right to send the callback named key for lease, for the event
	// eventID. A lease left by a crashed sender expires and the next delivery takes over;
	// sending twice is harmless then (the second answer is TaskTimedOut), while two live
	// deliveries never both send.
	ClaimCallback(ctx context.Context, key, eventID string, lease time.Duration) (Claim, error)
	// CompleteCallback records that the callback was sent (or the saga no longer waited).
	CompleteCallback(ctx context.Context, key, outcome string) error
}

// DynamoDB is the part of the DynamoDB API the dedupe store uses; *dynamodb.Client satisfies it.
type DynamoDB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// callbackKeyPrefix is the callback records' key prefix in ProcessedEvents (consumer#id,
// internal/tables/tables.go).
const callbackKeyPrefix = "webhook-callback#"

// Record attributes besides tables.AttrDedupeKey and tables.AttrExpiresAtTTL.
const (
	attrState      = "state"
	attrLeaseUntil = "leaseUntilMs"
	attrOutcome    = "outcome"
	attrEventID    = "eventId"
	attrRecordedAt = "recordedAt"
)

const (
	stateSending = "SENDING"
	stateSent    = "SENT"
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

// ClaimCallback implements DedupeStore with one conditional put: it succeeds when no record
// exists or when a sender's lease ran out without completing. A refused put returns the
// record it met, which says why, so nothing is read.
func (d *DynamoDedupe) ClaimCallback(ctx context.Context, k, eventID string, lease time.Duration) (Claim, error) {
	put := d.claimPut(k, eventID, lease)
	_, err := d.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
		ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return Claimed, nil
	}
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return 0, fmt.Errorf("claim callback %s: %w", k, err)
	}
	return claimOf(failed.Item, eventID), nil
}

// CallbackClaimItem is ClaimCallback's put as an item of another store's transaction, so that
// the callback is claimed in the very write that records what it reports: that write's
// transaction is the claim, and a refused claim refuses the write too.
func (d *DynamoDedupe) CallbackClaimItem(k, eventID string, lease time.Duration) types.TransactWriteItem {
	put := d.claimPut(k, eventID, lease)
	put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return types.TransactWriteItem{Put: put}
}

// claimPut is the callback claim: a SENDING record with a lease, put when there is no record
// or when the last sender's lease ran out.
func (d *DynamoDedupe) claimPut(k, eventID string, lease time.Duration) *types.Put {
	now := d.now()
	return &types.Put{
		TableName: aws.String(d.Table),
		Item: map[string]types.AttributeValue{
			tables.AttrDedupeKey:    str(callbackKeyPrefix + k),
			tables.AttrExpiresAtTTL: d.expires(),
			attrState:               str(stateSending),
			attrLeaseUntil:          num(now.Add(lease).UnixMilli()),
			attrEventID:             str(eventID),
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
	}
}

// claimOf is what a refused claim for eventID met: a record SENT (by this event or another),
// or one whose sender's lease is live. A record not returned counts as a live lease, whose
// answer is to come back later.
func claimOf(item map[string]types.AttributeValue, eventID string) Claim {
	state, _ := item[attrState].(*types.AttributeValueMemberS)
	if state == nil || state.Value != stateSent {
		return InProgress
	}
	if by, _ := item[attrEventID].(*types.AttributeValueMemberS); by != nil && by.Value == eventID {
		return SentByThisEvent
	}
	return AlreadySent
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
