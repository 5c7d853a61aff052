package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamsAPI is the part of the DynamoDB Streams API the stream reader uses;
// *dynamodbstreams.Client satisfies it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// DescribeTableAPI finds a table's stream; *dynamodb.Client satisfies it.
type DescribeTableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// StreamARN returns the latest stream ARN of table (the Outbox table has its stream on).
func StreamARN(ctx context.Context, ddb DescribeTableAPI, table string) (string, error) {
	out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("relay: describe table %s: %w", table, err)
	}
	if out.Table == nil || aws.ToString(out.Table.LatestStreamArn) == "" {
		return "", fmt.Errorf("relay: table %s has no stream", table)
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}

// BatchHandler handles one batch of stream records, as the relay function does.
type BatchHandler interface {
	Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
}

// StreamReader plays Lambda's DynamoDB event source mapping on the local stack: it reads the
// Outbox stream shard by shard (parents before children) with DescribeStream,
// GetShardIterator and GetRecords, hands each batch to Relay.Handle as the same
// events.DynamoDBEvent Lambda would, and on a batch item failure resumes at the failed record,
// so a record is never skipped and may be published more than once.
type StreamReader struct {
	Streams   StreamsAPI
	StreamARN string
	// Relay handles each batch: the relay itself, or (on the local stack) an invocation of the
	// relay function, as the event source mapping invokes it.
	Relay BatchHandler
	// StartAt is where a shard is first read: TRIM_HORIZON (default) or LATEST.
	StartAt streamtypes.ShardIteratorType
	// BatchSize is GetRecords' Limit (Lambda's default batch size, 100, when zero).
	BatchSize int32
	// PollInterval is the pause between polls in Run (250 ms when zero).
	PollInterval time.Duration
	Log          *slog.Logger

	shards map[string]*shardState
	order  []string
}

type shardState struct {
	parent   string
	iterator string
	// resume says how to get an iterator when there is none: after lastSeq, or at failedSeq.
	lastSeq   string
	failedSeq string
	closed    bool
}

// ErrRedeliver is returned by Poll when the relay reported a batch item failure; the next Poll
// starts again at the failed record.
var ErrRedeliver = errors.New("relay: batch item failure; the record will be redelivered")

// Run polls until ctx ends; errors are logged and retried after the poll interval.
func (s *StreamReader) Run(ctx context.Context) error {
	interval := s.PollInterval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	for {
		if _, err := s.Poll(ctx); err != nil && ctx.Err() == nil {
			s.logger().Warn("relay: stream poll failed", "err", err)
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Poll reads every shard up to its current end once and relays what it finds. It returns the
// number of records handed to the relay that it will not see again.
func (s *StreamReader) Poll(ctx context.Context) (int, error) {
	if err := s.refreshShards(ctx); err != nil {
		return 0, err
	}
	total := 0
	for _, id := range s.order {
		sh := s.shards[id]
		if sh.closed {
			continue
		}
		if p, ok := s.shards[sh.parent]; ok && !p.closed {
			continue // children wait for their parent, so events stay in order
		}
		n, err := s.readShard(ctx, id, sh)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *StreamReader) refreshShards(ctx context.Context) error {
	if s.shards == nil {
		s.shards = map[string]*shardState{}
	}
	var start *string
	for {
		out, err := s.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn: aws.String(s.StreamARN), ExclusiveStartShardId: start,
		})
		if err != nil {
			return fmt.Errorf("relay: describe stream: %w", err)
		}
		if out.StreamDescription == nil {
			return errors.New("relay: describe stream: no description")
		}
		for _, sh := range out.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if _, known := s.shards[id]; known || id == "" {
				continue
			}
			s.shards[id] = &shardState{parent: aws.ToString(sh.ParentShardId)}
			s.order = append(s.order, id)
		}
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return nil
		}
	}
}

func (s *StreamReader) iterator(ctx context.Context, id string, sh *shardState) error {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.StreamARN), ShardId: aws.String(id)}
	switch {
	case sh.failedSeq != "":
		in.ShardIteratorType = streamtypes.ShardIteratorTypeAtSequenceNumber
		in.SequenceNumber = aws.String(sh.failedSeq)
	case sh.lastSeq != "":
		in.ShardIteratorType = streamtypes.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = aws.String(sh.lastSeq)
	case s.StartAt != "":
		in.ShardIteratorType = s.StartAt
	default:
		in.ShardIteratorType = streamtypes.ShardIteratorTypeTrimHorizon
	}
	out, err := s.Streams.GetShardIterator(ctx, in)
	if err != nil {
		return fmt.Errorf("relay: shard iterator for %s: %w", id, err)
	}
	sh.iterator = aws.ToString(out.ShardIterator)
	if sh.iterator == "" {
		sh.closed = true
	}
	return nil
}

func (s *StreamReader) readShard(ctx context.Context, id string, sh *shardState) (int, error) {
	limit := s.BatchSize
	if limit <= 0 {
		limit = 100
	}
	relayed := 0
	for {
		if sh.iterator == "" {
			if err := s.iterator(ctx, id, sh); err != nil {
				return relayed, err
			}
			if sh.closed {
				return relayed, nil
			}
		}
		out, err := s.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(sh.iterator), Limit: aws.Int32(limit)})
		if err != nil {
			// An expired or trimmed iterator is replaced from the last position next time.
			sh.iterator = ""
			return relayed, fmt.Errorf("relay: get records from %s: %w", id, err)
		}
		if len(out.Records) > 0 {
			ev := ToLambdaEvent(out.Records)
			resp, err := s.Relay.Handle(ctx, ev)
			if err != nil {
				sh.iterator = ""
				return relayed, err
			}
			if len(resp.BatchItemFailures) > 0 {
				failed := resp.BatchItemFailures[0].ItemIdentifier
				for _, rec := range ev.Records {
					if rec.Change.SequenceNumber == failed {
						break
					}
					sh.lastSeq = rec.Change.SequenceNumber
					relayed++
				}
				sh.failedSeq = failed
				sh.iterator = ""
				return relayed, fmt.Errorf("%w (sequence number %s)", ErrRedeliver, failed)
			}
			relayed += len(ev.Records)
			sh.lastSeq = ev.Records[len(ev.Records)-1].Change.SequenceNumber
			sh.failedSeq = ""
		}
		if out.NextShardIterator == nil {
			sh.closed = true
			sh.iterator = ""
			return relayed, nil
		}
		sh.iterator = aws.ToString(out.NextShardIterator)
		if len(out.Records) == 0 {
			return relayed, nil // caught up with an open shard
		}
	}
}

func (s *StreamReader) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// ToLambdaEvent converts DynamoDB Streams API records to the event Lambda delivers for them.
func ToLambdaEvent(records []streamtypes.Record) events.DynamoDBEvent {
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, len(records))}
	for _, r := range records {
		rec := events.DynamoDBEventRecord{
			AWSRegion:      aws.ToString(r.AwsRegion),
			EventID:        aws.ToString(r.EventID),
			EventName:      string(r.EventName),
			EventSource:    aws.ToString(r.EventSource),
			EventVersion:   aws.ToString(r.EventVersion),
			EventSourceArn: "",
		}
		if d := r.Dynamodb; d != nil {
			rec.Change = events.DynamoDBStreamRecord{
				Keys:           convertMap(d.Keys),
				NewImage:       convertMap(d.NewImage),
				OldImage:       convertMap(d.OldImage),
				SequenceNumber: aws.ToString(d.SequenceNumber),
				SizeBytes:      aws.ToInt64(d.SizeBytes),
				StreamViewType: string(d.StreamViewType),
			}
			if d.ApproximateCreationDateTime != nil {
				rec.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

func convertMap(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = convert(v)
	}
	return out
}

// convert maps one Streams attribute value to its Lambda event form.
func convert(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch t := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(t.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(t.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(t.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(t.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(t.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(t.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(t.Value)
	case *streamtypes.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(t.Value))
		for i, e := range t.Value {
			list[i] = convert(e)
		}
		return events.NewListAttribute(list)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(convertMap(t.Value))
	}
	return events.NewNullAttribute()
}
