package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/sale/bill"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/apigateway"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
)

// usageMeter counts what AWS would bill that no stand-in of the twin counts by itself: the
// DynamoDB request units of each function's calls, the bytes each function writes to its log
// (its JSON lines and its embedded-metric-format lines, which CloudWatch Logs ingests alike),
// and the API requests API Gateway bills. It only grows; a sale reads it before and after
// (usageMark, usageSince). Its zero value is ready.
//
// DynamoDB's units come from the service where DynamoDB Local reports them as AWS does: every
// call is sent with ReturnConsumedCapacity INDEXES (unless the caller asked for it, the answer's
// ConsumedCapacity is then removed again, so no function sees what it did not ask for), and the
// reported table and index units are taken as they are. DynamoDB Local's figures for
// TransactWriteItems are not what AWS bills (it reports two units per table whatever the
// number of items), so a transaction's units are worked out from its request instead: two per
// started KB of each item, a Put's size from its attributes, an Update's, Delete's or
// ConditionCheck's assumed to be under 1 KB (the sale's largest item at rest is reported to
// check that), plus one standard write per index the item lands in: every dense index, and a
// sparse index when the item carries (Put) or the update names (Update) its key. An item that
// leaves a sparse index costs a delete there that the request does not show, so index writes of
// transactions are a lower bound. A write refused by its condition is billed by DynamoDB as if
// it had written (at least one unit, twice that per item in a transaction); those units are
// estimated from the request too.
type usageMeter struct {
	mu     sync.Mutex
	dynamo map[string]*bill.DynamoDBUsage // function → units

	logsMu  sync.Mutex
	logs    map[string]*logCount // function → its JSON log lines
	metrics map[string]*logCount // function → its EMF lines

	// apiRequests counts what API Gateway bills, apiAll every request the stage answered
	// (each writes an access-log line, throttled or not).
	apiRequests atomic.Int64
	apiAll      atomic.Int64
}

// logCount is one log stream's ingested bytes (newlines apart) and events (lines).
type logCount struct {
	bytes, events atomic.Int64
}

// countingWriter counts what passes through it to w, line by line.
type countingWriter struct {
	w io.Writer
	c *logCount
}

// Write implements io.Writer.
func (cw countingWriter) Write(p []byte) (int, error) {
	lines := int64(bytes.Count(p, []byte{'\n'}))
	cw.c.events.Add(lines)
	cw.c.bytes.Add(int64(len(p)) - lines)
	return cw.w.Write(p)
}

func (m *usageMeter) logCounter(kind *map[string]*logCount, function string) *logCount {
	m.logsMu.Lock()
	defer m.logsMu.Unlock()
	if *kind == nil {
		*kind = map[string]*logCount{}
	}
	c := (*kind)[function]
	if c == nil {
		c = &logCount{}
		(*kind)[function] = c
	}
	return c
}

// countedMetricLog counts a function's EMF lines on their way to CloudWatch's store.
func (st *Stack) countedMetricLog(function string, w io.Writer) io.Writer {
	return countingWriter{w: w, c: st.usage.logCounter(&st.usage.metrics, function)}
}

// functionLogger is the logger a function runs with locally: the stack's, and beside it the
// function's JSON lines as Lambda would ship them (internal/obs at INFO, the level the
// deployment sets), counted and dropped.
func (st *Stack) functionLogger(function string) *slog.Logger {
	counted := obs.NewHandler(countingWriter{w: io.Discard, c: st.usage.logCounter(&st.usage.logs, function)},
		slog.LevelInfo, obs.WithService(function))
	return slog.New(teeHandler{st.log.With("function", function).Handler(), counted})
}

// teeHandler hands every record to each of its handlers that takes its level.
type teeHandler []slog.Handler

// Enabled implements slog.Handler.
func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

// Handle implements slog.Handler.
func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

// WithAttrs implements slog.Handler.
func (t teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

// WithGroup implements slog.Handler.
func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// observeRequest counts one request the stage answered: every one writes an access-log line;
// API Gateway bills it unless it was throttled, refused by the authorizer or matched no route.
func (m *usageMeter) observeRequest(r apigateway.Request) {
	m.apiAll.Add(1)
	if r.Status != 429 && r.Status != 401 && r.Resource != "" {
		m.apiRequests.Add(1)
	}
}

// meteredIndex is one global secondary index of a table, as the meter needs it: the attributes
// of its key, and whether every item of the table is in it.
type meteredIndex struct {
	keys  []string
	dense bool
}

// sparseIndexes are the indexes only some items are in (internal/tables says which); any other
// index is taken to hold every item, which makes an unknown index an upper estimate.
var sparseIndexes = map[string]bool{tables.ActiveHoldsByExpiry: true, tables.ReconcileByAge: true}

// meteredTables maps each deployed table name to its indexes.
func (st *Stack) meteredTables() map[string][]meteredIndex {
	out := map[string][]meteredIndex{}
	for _, t := range tables.All() {
		var ixs []meteredIndex
		for _, ix := range t.Indexes {
			keys := []string{ix.PartitionKey.Name}
			if ix.SortKey != nil {
				keys = append(keys, ix.SortKey.Name)
			}
			ixs = append(ixs, meteredIndex{keys: keys, dense: !sparseIndexes[ix.Name]})
		}
		out[st.Names.Of(t.Name)] = ixs
	}
	return out
}

// meteredDynamoDB returns a function's DynamoDB client options with the meter added after
// opts. It runs at the end of the initialize step, after any injected fault, so a call that
// never reached DynamoDB is not metered.
func (st *Stack) meteredDynamoDB(function string, opts []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	schema := st.meteredTables()
	meter := func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("seatsagaUsageMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				params, asked := askConsumedCapacity(in.Parameters)
				in.Parameters = params
				out, md, err := next.HandleInitialize(ctx, in)
				st.usage.addDynamoDB(function, dynamoDBUnits(awsmiddleware.GetOperationName(ctx), schema, params, out.Result, err))
				if !asked {
					dropConsumedCapacity(out.Result)
				}
				return out, md, err
			}), middleware.After)
	}
	return append(slices.Clone(opts), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, meter) })
}

func (m *usageMeter) addDynamoDB(function string, u bill.DynamoDBUsage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dynamo == nil {
		m.dynamo = map[string]*bill.DynamoDBUsage{}
	}
	d := m.dynamo[function]
	if d == nil {
		d = &bill.DynamoDBUsage{}
		m.dynamo[function] = d
	}
	d.Add(u)
}

// askConsumedCapacity returns a copy of an input that asks for ReturnConsumedCapacity INDEXES,
// and whether the caller had asked for some itself (then the input is returned as it is). An
// input without the field (DescribeTable) is left alone, as if asked.
func askConsumedCapacity(params any) (any, bool) {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return params, true
	}
	f := v.Elem().FieldByName("ReturnConsumedCapacity")
	if !f.IsValid() || f.Kind() != reflect.String || f.String() != "" {
		return params, true
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	c.Elem().FieldByName("ReturnConsumedCapacity").SetString(string(types.ReturnConsumedCapacityIndexes))
	return c.Interface(), false
}

// consumedCapacity is an output's ConsumedCapacity, one entry or many.
func consumedCapacity(result any) []types.ConsumedCapacity {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("ConsumedCapacity")
	if !f.IsValid() {
		return nil
	}
	switch c := f.Interface().(type) {
	case *types.ConsumedCapacity:
		if c != nil {
			return []types.ConsumedCapacity{*c}
		}
	case []types.ConsumedCapacity:
		return c
	}
	return nil
}

// dropConsumedCapacity removes the ConsumedCapacity the meter asked for from an output.
func dropConsumedCapacity(result any) {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("ConsumedCapacity"); f.IsValid() && f.CanSet() {
		f.SetZero()
	}
}

// readOperations are the table API's reads; every other metered operation writes.
var readOperations = map[string]bool{"GetItem": true, "BatchGetItem": true, "Query": true, "Scan": true, "TransactGetItems": true}

// dynamoDBUnits is what one call costs (see usageMeter).
func dynamoDBUnits(op string, schema map[string][]meteredIndex, params, result any, err error) bill.DynamoDBUsage {
	u := bill.DynamoDBUsage{Calls: 1}
	if err != nil {
		return refusedWrite(u, params, err)
	}
	switch in := params.(type) {
	case *dynamodb.TransactWriteItemsInput:
		return transactionUnits(u, in, schema)
	case *dynamodb.TransactGetItemsInput:
		if out, ok := result.(*dynamodb.TransactGetItemsOutput); ok {
			for _, r := range out.Responses {
				u.ReadUnits += bill.ReadUnits(bill.ItemSize(r.Item), bill.Transactional)
			}
		}
		return u
	}
	caps := consumedCapacity(result)
	if len(caps) == 0 {
		// The service said nothing: a read or a write of one small item.
		if readOperations[op] {
			u.ReadUnits = 1
		} else {
			u.WriteUnits = 1
		}
		u.EstimatedUnits = 1
		return u
	}
	for _, c := range caps {
		var index float64
		for _, ix := range c.GlobalSecondaryIndexes {
			index += aws.ToFloat64(ix.CapacityUnits)
		}
		for _, ix := range c.LocalSecondaryIndexes {
			index += aws.ToFloat64(ix.CapacityUnits)
		}
		table := aws.ToFloat64(c.CapacityUnits) - index
		if c.Table != nil {
			table = aws.ToFloat64(c.Table.CapacityUnits)
		}
		if readOperations[op] {
			u.ReadUnits += table + index
		} else {
			u.WriteUnits += table
			u.IndexWriteUnits += index
		}
	}
	return u
}

// refusedWrite is what a failed call costs: nothing, unless DynamoDB evaluated a condition and
// refused the write, which it bills as a write of at least one unit (two per item of a
// transaction).
func refusedWrite(u bill.DynamoDBUsage, params any, err error) bill.DynamoDBUsage {
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		switch params.(type) {
		case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
			u.WriteUnits, u.EstimatedUnits, u.FailedWrites = 1, 1, 1
		}
		return u
	}
	var canceled *types.TransactionCanceledException
	in, ok := params.(*dynamodb.TransactWriteItemsInput)
	if !ok || !errors.As(err, &canceled) {
		return u
	}
	for _, r := range canceled.CancellationReasons {
		if code := r.Code; code != nil && *code == "ConditionalCheckFailed" {
			units := bill.WriteUnits(1, true) * float64(len(in.TransactItems))
			u.WriteUnits, u.EstimatedUnits, u.FailedWrites = units, units, 1
			break
		}
	}
	return u
}

// transactionUnits prices a successful TransactWriteItems from its request.
func transactionUnits(u bill.DynamoDBUsage, in *dynamodb.TransactWriteItemsInput, schema map[string][]meteredIndex) bill.DynamoDBUsage {
	for _, it := range in.TransactItems {
		u.TransactionItems++
		switch {
		case it.Put != nil:
			size := bill.ItemSize(it.Put.Item)
			u.WriteUnits += bill.WriteUnits(size, true)
			for _, ix := range schema[aws.ToString(it.Put.TableName)] {
				if ix.dense || slices.ContainsFunc(ix.keys, func(k string) bool { _, ok := it.Put.Item[k]; return ok }) {
					units := bill.WriteUnits(size, false)
					u.IndexWriteUnits += units
					u.EstimatedUnits += units
				}
			}
		case it.Update != nil:
			u.WriteUnits += bill.WriteUnits(1, true)
			u.EstimatedUnits += bill.WriteUnits(1, true)
			named := attributeNames(aws.ToString(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames)
			for _, ix := range schema[aws.ToString(it.Update.TableName)] {
				if ix.dense || slices.ContainsFunc(ix.keys, func(k string) bool { return named[k] }) {
					u.IndexWriteUnits++
					u.EstimatedUnits++
				}
			}
		case it.Delete != nil:
			u.WriteUnits += bill.WriteUnits(1, true)
			u.EstimatedUnits += bill.WriteUnits(1, true)
			for _, ix := range schema[aws.ToString(it.Delete.TableName)] {
				if ix.dense {
					u.IndexWriteUnits++
					u.EstimatedUnits++
				}
			}
		case it.ConditionCheck != nil:
			// Billed as a transactional write of the item, though nothing is written.
			u.WriteUnits += bill.WriteUnits(1, true)
			u.EstimatedUnits += bill.WriteUnits(1, true)
		}
	}
	return u
}

// attributeNames are the attributes an update expression names, by placeholder or by name.
func attributeNames(expr string, placeholders map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, tok := range strings.FieldsFunc(expr, func(r rune) bool {
		return r == ' ' || r == ',' || r == '=' || r == '(' || r == ')' || r == '+' || r == '-'
	}) {
		if name, ok := placeholders[tok]; ok {
			out[name] = true
		} else if !strings.HasPrefix(tok, ":") && !strings.HasPrefix(tok, "#") {
			out[tok] = true
		}
	}
	return out
}

// usageMark is a reading of everything a sale's usage is the growth of.
type usageMark struct {
	dynamo           map[string]bill.DynamoDBUsage
	logs, metrics    map[string][2]int64
	apiRequests      int64
	apiAll           int64
	busEntries, sent int
}

func (st *Stack) usageMark() usageMark {
	m := &st.usage
	mark := usageMark{dynamo: map[string]bill.DynamoDBUsage{}, apiRequests: m.apiRequests.Load(), apiAll: m.apiAll.Load()}
	m.mu.Lock()
	for fn, d := range m.dynamo {
		mark.dynamo[fn] = *d
	}
	m.mu.Unlock()
	read := func(kind map[string]*logCount) map[string][2]int64 {
		out := map[string][2]int64{}
		for fn, c := range kind {
			out[fn] = [2]int64{c.bytes.Load(), c.events.Load()}
		}
		return out
	}
	m.logsMu.Lock()
	mark.logs, mark.metrics = read(m.logs), read(m.metrics)
	m.logsMu.Unlock()
	if st.Bus != nil {
		mark.busEntries = len(st.Bus.Entries())
	}
	for _, q := range st.SQS.Queues() {
		mark.sent += len(q.Messages())
	}
	return mark
}

// Estimated sizes of the log lines AWS writes itself, which the twin does not produce. With JSON
// logging at INFO, Lambda writes a platform.start and a platform.report record per invocation
// (X-Ray tracing is on, so both carry a tracing object); Step Functions at level ALL without
// execution data writes one record per history event, naming the execution's ARN; the stage
// writes one access-log line per request in the JsonWithStandardFields format of
// infra/stack/api.go. The byte counts are sizes of typical records, not measurements.
const (
	lambdaPlatformEventsPerInvocation = 2
	lambdaPlatformBytesPerInvocation  = 250 + 420
	stepFunctionsBytesPerEvent        = 400
	accessLogBytesPerRequest          = 230
)

// eventBridgeChunk is the payload size EventBridge and SQS bill as one event or request.
const eventBridgeChunk = 64 << 10

// usageSince is what the system used from mark to now: res's executions, invocations and gate
// calls, and the meter's and services' counts beyond mark.
func (st *Stack) usageSince(ctx context.Context, mark usageMark, res *SaleResult) (bill.Usage, error) {
	var u bill.Usage
	now := st.usageMark()
	for _, t := range res.Traces {
		u.StateTransitions += int64(t.Transitions)
		u.TransitionRetries += int64(t.Retries)
		u.Logs.StepFunctionsEvents += int64(t.Events)
	}
	u.Logs.StepFunctionsBytes = u.Logs.StepFunctionsEvents * stepFunctionsBytesPerEvent

	specs := st.cfg.Functions
	if specs == nil {
		specs = deploy.Functions()
	}
	far := res.Start.Add(100 * 365 * 24 * time.Hour)
	for _, fn := range specs {
		runs := res.Invocations[fn.Name]
		if runs == 0 {
			continue
		}
		var billed int64
		for _, d := range st.CloudWatch.Points(cloudwatch.SeriesOf(alarms.Lambda, "Duration", map[string]string{"FunctionName": fn.Name}), res.Start, far) {
			billed += int64(math.Ceil(d.Value))
		}
		u.Functions = append(u.Functions, bill.FunctionUsage{Name: fn.Name, MemoryMB: fn.MemoryMB, Architecture: "arm64",
			Requests: runs, BilledMs: billed})
		u.Logs.PlatformEvents += runs * lambdaPlatformEventsPerInvocation
		u.Logs.PlatformBytes += runs * lambdaPlatformBytesPerInvocation
	}

	for fn, d := range now.dynamo {
		d.Sub(mark.dynamo[fn])
		u.DynamoDB.Add(d)
	}
	for fn, c := range now.logs {
		u.Logs.FunctionBytes += c[0] - mark.logs[fn][0]
		u.Logs.FunctionEvents += c[1] - mark.logs[fn][1]
	}
	for fn, c := range now.metrics {
		u.Logs.MetricBytes += c[0] - mark.metrics[fn][0]
		u.Logs.MetricEvents += c[1] - mark.metrics[fn][1]
	}
	u.APIRequests = now.apiRequests - mark.apiRequests
	u.Logs.AccessLogEvents = now.apiAll - mark.apiAll
	u.Logs.AccessLogBytes = u.Logs.AccessLogEvents * accessLogBytesPerRequest

	if st.Bus != nil {
		for _, e := range st.Bus.Entries()[mark.busEntries:] {
			size := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
			for _, r := range e.Resources {
				size += len(r)
			}
			u.EventBridgeEvents += int64(max(1, (size+eventBridgeChunk-1)/eventBridgeChunk))
		}
	}
	// The queues are dead-letter queues: Lambda sends to them and nothing receives, so a
	// message is one SendMessage request (its body is far under 64 KB).
	u.SQSRequests = int64(max(0, now.sent-mark.sent))
	for _, c := range res.Calls {
		if c.Role != "" && c.Service == awsgate.ServiceSecretsManager {
			u.SecretsManagerCalls += c.Count
		}
	}
	var err error
	u.LargestItemBytes, err = st.largestItems(ctx)
	return u, err
}

// largestItems scans every table with the stack's own client (which is not metered) and returns
// the size of each table's largest item: the check on the meter's assumption that the items a
// transaction updates are under 1 KB.
func (st *Stack) largestItems(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, t := range tables.All() {
		p := dynamodb.NewScanPaginator(st.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(st.Names.Of(t.Name))})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("stack: measure the items of %s: %w", t.Name, err)
			}
			for _, item := range page.Items {
				out[t.Name] = max(out[t.Name], bill.ItemSize(item))
			}
		}
	}
	return out, nil
}
