package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

// BatchHandler handles one batch of stream records, as the relay function does. An error means
// the invocation failed: a function error (FunctionError, or any error of an in-process
// handler), or, wrapping ErrNotInvoked, a failure to invoke the function at all.
type BatchHandler interface {
	Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
}

// ErrNotInvoked marks a BatchHandler error that kept the function from running (a throttle, a
// Lambda service error, a broken connection). Lambda retries such a batch as it is, without
// counting a retry or splitting it, until its records are too old.
var ErrNotInvoked = errors.New("relay: the function was not invoked")

// FunctionError is a batch the function ran and failed: Lambda answered 200 with
// X-Amz-Function-Error (Type, "Unhandled") and the error document as Payload.
type FunctionError struct {
	Type    string
	Payload []byte
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("relay: the function failed the batch (%s): %s", e.Type, e.Payload)
}

// StreamReader plays Lambda's DynamoDB event source mapping on the local stack (nothing else
// uses it: on AWS the mapping is Lambda's). It reads the Outbox stream shard by shard (parents
// before children) with DescribeStream, GetShardIterator and GetRecords, hands each batch to
// Relay as the same events.DynamoDBEvent Lambda would, and treats failures as a mapping with
// the same settings does:
//
//   - a function error (or, with ReportBatchItemFailures, a partial batch response naming the
//     first record or a record not in the batch) fails the batch; with
//     BisectBatchOnFunctionError it is split in two and each half is invoked on its own, which
//     spends no retry; a batch of one record, or any batch without bisection, is retried,
//     spending one of MaximumRetryAttempts;
//   - with ReportBatchItemFailures, a partial batch response finishes the records before the
//     lowest-numbered one it names, and the rest is invoked again: "bisected at the returned
//     sequence number" (a split) with bisection, a retry without; without
//     ReportBatchItemFailures any response is a success, as Lambda ignores it;
//   - a batch the function could not even be invoked with (ErrNotInvoked) is retried as it is;
//   - when a part's retries are exhausted, or before invoking records older than
//     MaximumRecordAge, the part's stream coordinates (FailureRecord, not the records) go to
//     OnFailure and the shard moves on.
//
// Checkpoints. A shard's checkpoint is the sequence number after which the mapping would resume
// reading; it moves past a record once the record is finished: it was in a successful
// invocation, it came before the lowest record a partial response named, or it was sent to
// OnFailure. AWS resumes at the first failed sequence number, so the records before it are
// never invoked again, and every record from it on is, including any the function had already
// handled after it: delivery is at least once. The reader keeps a fetched batch in memory until
// every record of it is finished and only then reads on, after the batch's last record, which
// is where a mapping resuming from its checkpoint would read once nothing of the batch is left.
//
// A failed invocation ends the poll: its retry, or its halves, are invoked on the next poll,
// which paces retries as Lambda's own back-off does.
type StreamReader struct {
	Streams   StreamsAPI
	StreamARN string
	// Relay handles each batch: the relay itself, or (on the local stack) an invocation of the
	// relay function, as the event source mapping invokes it.
	Relay BatchHandler
	// FunctionARN names the function in the on-failure records.
	FunctionARN string
	// StartAt is where a shard is first read: TRIM_HORIZON (default) or LATEST.
	StartAt streamtypes.ShardIteratorType
	// BatchSize is the most records per invocation, GetRecords' Limit (Lambda's default batch
	// size, 100, when zero).
	BatchSize int32
	// BisectBatchOnFunctionError splits a failed batch in two (see above).
	BisectBatchOnFunctionError bool
	// ReportBatchItemFailures honours the function's partial batch responses (see above).
	ReportBatchItemFailures bool
	// MaximumRetryAttempts bounds the retries of a failed part before it goes to OnFailure;
	// negative retries until the records are too old (AWS's default, -1). Zero retries none.
	MaximumRetryAttempts int
	// MaximumRecordAge sends records older than this to OnFailure instead of invoking them;
	// zero or negative never does (AWS's default, -1).
	MaximumRecordAge time.Duration
	// OnFailure receives the record of each discarded part, as Lambda sends it to the
	// mapping's on-failure destination. nil discards the part with only a warning in the log,
	// as a mapping without a destination does; an error is logged and the part is discarded
	// all the same.
	OnFailure func(ctx context.Context, rec FailureRecord) error
	// OnInvoke, when set, is told of each invocation before it is made (at, on Now), with the
	// batch's iterator age as Lambda reports it: the time from the stream receiving the batch's
	// last record (its RecordTime when set, else the stream's stamp) to the mapping sending the
	// batch, on Now.
	OnInvoke func(at time.Time, iteratorAge time.Duration)
	// RecordTime, when set, gives a record's creation time on the mapping's clock (Now): the
	// local stack's DynamoDB stamps records on the wall clock, which its clock does not follow.
	// A zero answer keeps the stream's ApproximateCreationDateTime. The records the function
	// receives carry the time it gives, in whole seconds as DynamoDB Streams has them.
	RecordTime func(rec events.DynamoDBEventRecord) time.Time
	// Filter, when set, is the mapping's event filter: only the records it keeps are invoked
	// (FilterCriteria); the others are finished as read.
	Filter func(rec events.DynamoDBEventRecord) bool
	// Now is the mapping's clock for record ages (time.Now when nil).
	Now func() time.Time
	// PollInterval is the pause between polls in Run (250 ms when zero).
	PollInterval time.Duration
	Log          *slog.Logger

	shards map[string]*shardState
	order  []string
}

type shardState struct {
	parent   string
	iterator string
	// lastSeq is the last record fetched: the next GetRecords reads after it.
	lastSeq string
	// drained says the shard is closed and every record of it was fetched.
	drained bool
	// closed says the shard is drained and every fetched record is finished.
	closed bool
	// batch holds the records fetched and not yet all finished; pending are the parts of it
	// still to invoke, in stream order.
	batch   []events.DynamoDBEventRecord
	pending []Span
	// arrived is when the stream received each record of batch, as the stream stamped it
	// (wall time), kept apart from the creation time RecordTime may put on the record.
	arrived []time.Time
	// checkpoint is the sequence number of the last finished record.
	checkpoint string
}

// ErrRedeliver is returned by Poll when an invocation failed and its records will be invoked
// again on the next Poll (retried, split, or, not invoked, tried again).
var ErrRedeliver = errors.New("relay: batch failed; its records will be redelivered")

// Run polls until ctx ends; errors are logged and retried after the poll interval.
func (s *StreamReader) Run(ctx context.Context) error {
	interval := s.PollInterval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	for {
		if _, err := s.Poll(ctx); err != nil && ctx.Err() == nil {
			s.logger().WarnContext(ctx, "relay: stream poll failed", "err", err)
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
// number of records finished successfully in this poll: handed to the relay, never to be
// handed again.
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

// Checkpoint is the sequence number of the last finished record of a shard ("" before any).
func (s *StreamReader) Checkpoint(shardID string) string {
	if sh, ok := s.shards[shardID]; ok {
		return sh.checkpoint
	}
	return ""
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
		sh.drained, sh.closed = true, true
	}
	return nil
}

func (s *StreamReader) readShard(ctx context.Context, id string, sh *shardState) (int, error) {
	relayed := 0
	for {
		if len(sh.pending) == 0 {
			fetched, err := s.fetch(ctx, id, sh)
			if err != nil || !fetched {
				return relayed, err
			}
		}
		n, err := s.invokeNext(ctx, id, sh)
		relayed += n
		if err != nil {
			return relayed, err
		}
	}
}

// fetch reads the next batch of the shard; it reports false when there was none (caught up
// with an open shard, or the shard is closed).
func (s *StreamReader) fetch(ctx context.Context, id string, sh *shardState) (bool, error) {
	if sh.drained {
		sh.closed = true
		return false, nil
	}
	if sh.iterator == "" {
		if err := s.iterator(ctx, id, sh); err != nil || sh.closed {
			return false, err
		}
	}
	limit := s.BatchSize
	if limit <= 0 {
		limit = 100
	}
	var ev events.DynamoDBEvent
	for {
		out, err := s.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(sh.iterator), Limit: aws.Int32(limit)})
		if err != nil {
			// An expired or trimmed iterator is replaced from the last record fetched next time.
			sh.iterator = ""
			return false, fmt.Errorf("relay: get records from %s: %w", id, err)
		}
		if out.NextShardIterator == nil {
			sh.drained, sh.iterator = true, ""
		} else {
			sh.iterator = aws.ToString(out.NextShardIterator)
		}
		if len(out.Records) == 0 {
			sh.closed = sh.drained
			return false, nil
		}
		ev = ToLambdaEvent(out.Records)
		sh.lastSeq = ev.Records[len(ev.Records)-1].Change.SequenceNumber
		if s.Filter != nil {
			// Records the mapping's filter drops are finished without an invocation, as
			// Lambda's event filtering does, and the mapping reads on at once: a stream of
			// mostly unwanted records must not read as lag.
			ev.Records = slices.DeleteFunc(ev.Records, func(r events.DynamoDBEventRecord) bool { return !s.Filter(r) })
		}
		if len(ev.Records) > 0 {
			break
		}
		sh.checkpoint = sh.lastSeq
		if sh.drained {
			sh.closed = true
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	sh.arrived = make([]time.Time, len(ev.Records))
	for i := range ev.Records {
		rec := &ev.Records[i]
		sh.arrived[i] = rec.Change.ApproximateCreationDateTime.Time
		rec.EventSourceArn = s.StreamARN
		if s.RecordTime != nil {
			if t := s.RecordTime(*rec); !t.IsZero() {
				// The precise time, not the stream's stamp: DynamoDB Local stamps records
				// rounded down to the minute, which alone would read as a minute of lag.
				sh.arrived[i] = t
				rec.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: t.Truncate(time.Second)}
			}
		}
	}
	sh.batch = ev.Records
	sh.pending = []Span{{Start: 0, End: len(ev.Records)}}
	return true, nil
}

// invokeNext invokes the shard's first pending part and applies what the mapping does with the
// outcome. It returns how many records it finished successfully, and ErrRedeliver when some
// of the part must be invoked again.
func (s *StreamReader) invokeNext(ctx context.Context, id string, sh *shardState) (int, error) {
	part := sh.pending[0]
	now := s.now()
	if n := expiredPrefix(sh.batch[part.Start:part.End], now, s.MaximumRecordAge); n > 0 {
		old := part
		old.End = part.Start + n
		s.discard(ctx, id, sh, old, ConditionRecordAgeExceeded, nil, now)
		part.Start += n
		if part.Len() == 0 {
			s.finish(sh, 1, nil)
			return 0, nil
		}
		sh.pending[0] = part
	}
	ev := events.DynamoDBEvent{Records: slices.Clone(sh.batch[part.Start:part.End])}
	if s.OnInvoke != nil {
		s.OnInvoke(now, max(0, now.Sub(sh.arrived[part.End-1]).Truncate(time.Millisecond)))
	}
	resp, err := s.Relay.Handle(ctx, ev)
	if ctx.Err() != nil {
		// The mapping is stopping: whatever the invocation did, its records stay pending.
		return 0, ctx.Err()
	}
	outcome := ClassifyInvocation(ev.Records, resp, err, s.ReportBatchItemFailures)
	step := NextStep(part, outcome, RetryPolicy{Bisect: s.BisectBatchOnFunctionError, MaxRetries: s.MaximumRetryAttempts})
	if step.Done > 0 {
		sh.checkpoint = sh.batch[part.Start+step.Done-1].Change.SequenceNumber
	}
	if step.Discard.Len() > 0 {
		rc := &FailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: outcome.FunctionError}
		s.discard(ctx, id, sh, step.Discard, ConditionRetryAttemptsExhausted, rc, now)
	}
	s.finish(sh, 1, step.Next)
	if len(step.Next) > 0 {
		if err != nil {
			return step.Done, fmt.Errorf("%w: %w", ErrRedeliver, err)
		}
		return step.Done, fmt.Errorf("%w (from sequence number %s)", ErrRedeliver, sh.batch[step.Next[0].Start].Change.SequenceNumber)
	}
	return step.Done, nil
}

// finish replaces the first n pending parts with next, and lets the batch go once nothing of
// it is pending.
func (s *StreamReader) finish(sh *shardState, n int, next []Span) {
	sh.pending = append(slices.Clone(next), sh.pending[n:]...)
	if len(sh.pending) == 0 {
		sh.batch, sh.arrived = nil, nil
	}
}

// discard sends part's coordinates to OnFailure and moves the checkpoint past it.
func (s *StreamReader) discard(ctx context.Context, shardID string, sh *shardState, part Span, condition string, rc *FailureResponseContext, now time.Time) {
	recs := sh.batch[part.Start:part.End]
	first, last := recs[0].Change, recs[len(recs)-1].Change
	sh.checkpoint = last.SequenceNumber
	rec := FailureRecord{
		RequestContext: FailureRequestContext{
			RequestID: newID(), FunctionARN: s.FunctionARN, Condition: condition,
			ApproximateInvokeCount: part.Invocations,
		},
		ResponseContext: rc,
		Version:         "1.0",
		Timestamp:       now.UTC().Truncate(time.Millisecond),
		DDBStreamBatchInfo: StreamBatchInfo{
			ShardID:                         shardID,
			StartSequenceNumber:             first.SequenceNumber,
			EndSequenceNumber:               last.SequenceNumber,
			ApproximateArrivalOfFirstRecord: first.ApproximateCreationDateTime.UTC(),
			ApproximateArrivalOfLastRecord:  last.ApproximateCreationDateTime.UTC(),
			BatchSize:                       len(recs),
			StreamARN:                       s.StreamARN,
		},
	}
	log := s.logger().With("shardId", shardID, "condition", condition,
		"startSequenceNumber", first.SequenceNumber, "endSequenceNumber", last.SequenceNumber, "records", len(recs))
	if s.OnFailure == nil {
		log.WarnContext(ctx, "relay: records discarded; the mapping has no on-failure destination")
		return
	}
	if err := s.OnFailure(ctx, rec); err != nil {
		log.ErrorContext(ctx, "relay: records discarded and their on-failure record lost", "err", err)
		return
	}
	log.WarnContext(ctx, "relay: records sent to the on-failure destination")
}

// expiredPrefix counts the leading records older than maxAge at now; records are in stream
// order, so the old ones come first.
func expiredPrefix(recs []events.DynamoDBEventRecord, now time.Time, maxAge time.Duration) int {
	if maxAge <= 0 {
		return 0
	}
	n := 0
	for n < len(recs) && now.Sub(recs[n].Change.ApproximateCreationDateTime.Time) > maxAge {
		n++
	}
	return n
}

func (s *StreamReader) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *StreamReader) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Conditions of an on-failure record.
const (
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	ConditionRecordAgeExceeded      = "RecordAgeExceeded"
)

// FailureRecord is the invocation record Lambda sends a DynamoDB stream mapping's on-failure
// destination for the records it discards: where they are in the stream, not the records.
type FailureRecord struct {
	RequestContext FailureRequestContext `json:"requestContext"`
	// ResponseContext is the last invocation's answer; records too old to invoke have none.
	ResponseContext    *FailureResponseContext `json:"responseContext,omitempty"`
	Version            string                  `json:"version"`
	Timestamp          time.Time               `json:"timestamp"`
	DDBStreamBatchInfo StreamBatchInfo         `json:"DDBStreamBatchInfo"`
}

// FailureRequestContext says which function gave up on the records, and why.
type FailureRequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// FailureResponseContext is the function's last answer for the records.
type FailureResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError,omitempty"`
}

// StreamBatchInfo locates the discarded records in the stream (DDBStreamBatchInfo).
type StreamBatchInfo struct {
	ShardID                         string    `json:"shardId"`
	StartSequenceNumber             string    `json:"startSequenceNumber"`
	EndSequenceNumber               string    `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord time.Time `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  time.Time `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int       `json:"batchSize"`
	StreamARN                       string    `json:"streamArn"`
}

// OutcomeKind is what an invocation of a batch came to, as the mapping sees it.
type OutcomeKind int

const (
	// Succeeded: every record is finished.
	Succeeded OutcomeKind = iota
	// PartlyFailed: the function reported batch item failures, the lowest at FirstFailed.
	PartlyFailed
	// FunctionFailed: the whole batch failed.
	FunctionFailed
	// NotInvoked: the function did not run.
	NotInvoked
)

// Outcome is one invocation's outcome.
type Outcome struct {
	Kind OutcomeKind
	// FirstFailed is, for PartlyFailed, the index in the batch of the lowest-numbered record
	// the response named.
	FirstFailed int
	// FunctionError is, for FunctionFailed, Lambda's X-Amz-Function-Error ("Unhandled"); empty
	// when the function answered but with a response the mapping could not use.
	FunctionError string
}

// ClassifyInvocation reads an invocation of records the way the mapping does: an error
// wrapping ErrNotInvoked means the function did not run, any other error is a function error;
// without reportItemFailures the response is ignored; with it, no failures is success, a
// failure with an empty identifier or one that is no record of the batch fails the whole
// batch, and otherwise the lowest-numbered named record is where the batch failed.
func ClassifyInvocation(records []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse, err error, reportItemFailures bool) Outcome {
	if errors.Is(err, ErrNotInvoked) {
		return Outcome{Kind: NotInvoked}
	}
	if err != nil {
		var fe *FunctionError
		if errors.As(err, &fe) && fe.Type != "" {
			return Outcome{Kind: FunctionFailed, FunctionError: fe.Type}
		}
		return Outcome{Kind: FunctionFailed, FunctionError: "Unhandled"}
	}
	if !reportItemFailures || len(resp.BatchItemFailures) == 0 {
		return Outcome{Kind: Succeeded}
	}
	first := len(records)
	for _, f := range resp.BatchItemFailures {
		i := slices.IndexFunc(records, func(r events.DynamoDBEventRecord) bool {
			return f.ItemIdentifier != "" && r.Change.SequenceNumber == f.ItemIdentifier
		})
		if i < 0 {
			return Outcome{Kind: FunctionFailed}
		}
		first = min(first, i)
	}
	return Outcome{Kind: PartlyFailed, FirstFailed: first}
}

// Span is a part of a fetched batch, records [Start, End), with what has been spent on it.
type Span struct {
	Start, End int
	// Retries counts the retries spent on these records; a split spends none.
	Retries int
	// Invocations counts the invocations that carried them (approximateInvokeCount).
	Invocations int
}

// Len is the number of records in the span.
func (s Span) Len() int { return s.End - s.Start }

// RetryPolicy is the mapping's handling of failures.
type RetryPolicy struct {
	// Bisect is BisectBatchOnFunctionError.
	Bisect bool
	// MaxRetries is MaximumRetryAttempts; negative retries until the records are too old.
	MaxRetries int
}

// Step is what the mapping does with a span after an invocation of it.
type Step struct {
	// Done counts the span's leading records that are finished; the checkpoint moves past
	// them.
	Done int
	// Discard, when not empty, directly follows the Done records: its retries are exhausted,
	// its coordinates go to the on-failure destination and the checkpoint moves past it too.
	Discard Span
	// Next are the parts to invoke next, in order, before anything after the span.
	Next []Span
}

// NextStep decides what the mapping does with span s after an invocation that came to o.
//
// A function that did not run leaves the span as it was. Otherwise the invocation counts, and:
// success finishes the span; a partial failure at k > 0 finishes the k records before it and
// invokes the rest again, as a split (no retry spent) with bisection or as a retry without. A
// failure of the whole span (a function error, or a partial failure at its first record, which
// finishes nothing) splits it in two halves with bisection when it holds more than one record,
// and is otherwise retried; a retry beyond p.MaxRetries discards the part instead.
func NextStep(s Span, o Outcome, p RetryPolicy) Step {
	if o.Kind == NotInvoked {
		return Step{Next: []Span{s}}
	}
	s.Invocations++
	switch o.Kind {
	case Succeeded:
		return Step{Done: s.Len()}
	case PartlyFailed:
		if o.FirstFailed > 0 && o.FirstFailed < s.Len() {
			rest := s
			rest.Start += o.FirstFailed
			if p.Bisect {
				return Step{Done: o.FirstFailed, Next: []Span{rest}}
			}
			return retry(Step{Done: o.FirstFailed}, rest, p)
		}
	}
	if p.Bisect && s.Len() > 1 {
		first, second := s, s
		first.End = s.Start + s.Len()/2
		second.Start = first.End
		return Step{Next: []Span{first, second}}
	}
	return retry(Step{}, s, p)
}

// retry adds to st the retry of s, or its discard when its retries are spent.
func retry(st Step, s Span, p RetryPolicy) Step {
	if p.MaxRetries >= 0 && s.Retries >= p.MaxRetries {
		st.Discard = s
		return st
	}
	s.Retries++
	st.Next = []Span{s}
	return st
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
