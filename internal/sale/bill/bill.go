// Package bill prices what a sale used at AWS's list prices: the state transitions, Lambda
// requests and GB-seconds, DynamoDB request units, API Gateway requests, EventBridge events,
// queue requests, secret reads and log bytes the local stack counted, each times its price from
// one table (Prices) of one Region on one date. The result is a Bill: one line per billed
// item, the total, what a booking and a thousand buyers cost, and the lines that dominate.
//
// It also holds DynamoDB's own arithmetic (request units by item size, consistency and
// transactions; an item's size), so that what the stack estimates is priced the way AWS meters.
package bill

import (
	"cmp"
	"math"
	"slices"
)

// Usage is what a sale used, in the units AWS bills.
type Usage struct {
	// StateTransitions are the states the executions entered; TransitionRetries the task
	// attempts retried within a state, which Step Functions bills as transitions too.
	StateTransitions  int64 `json:"stateTransitions"`
	TransitionRetries int64 `json:"transitionRetries"`
	// Functions are the Lambda functions that ran, with their configured memory and billed
	// duration.
	Functions []FunctionUsage `json:"lambda"`
	DynamoDB  DynamoDBUsage   `json:"dynamoDB"`
	// APIRequests are the REST API requests API Gateway bills: not the throttled, the
	// unauthorized nor those that matched no route.
	APIRequests int64 `json:"apiGatewayRequests"`
	// EventBridgeEvents are the custom events published, in 64 KB chunks.
	EventBridgeEvents int64 `json:"eventBridgeEvents"`
	// SQSRequests are the queue requests made, in 64 KB chunks.
	SQSRequests int64 `json:"sqsRequests"`
	// SecretsManagerCalls are the Secrets Manager API calls made.
	SecretsManagerCalls int64    `json:"secretsManagerCalls"`
	Logs                LogUsage `json:"logs"`
	// LargestItemBytes is each table's largest item after the sale (logical table name →
	// bytes): the check on the assumption that the items a transaction updates without
	// showing them are under 1 KB, one write unit each.
	LargestItemBytes map[string]int `json:"largestItemBytesAtRest,omitempty"`
}

// FunctionUsage is one Lambda function's requests and duration.
type FunctionUsage struct {
	Name         string `json:"name"`
	MemoryMB     int    `json:"memoryMB"`
	Architecture string `json:"architecture"`
	// Requests are the invocations that ran the handler (a throttled request is not billed).
	Requests int64 `json:"requests"`
	// BilledMs is the invocations' durations, each rounded up to the millisecond as Lambda
	// bills them, summed.
	BilledMs int64 `json:"billedMs"`
}

// GBSeconds is the function's compute: its memory in GB (1,024 MB) times its billed seconds.
func (f FunctionUsage) GBSeconds() float64 {
	return float64(f.MemoryMB) / 1024 * float64(f.BilledMs) / 1000
}

// DynamoDBUsage is the request units of a sale's DynamoDB calls (table API only: stream reads
// by Lambda's event source mapping are free).
type DynamoDBUsage struct {
	// ReadUnits are read request units on tables and indexes; WriteUnits write request units
	// on tables (transactional items at twice the rate); IndexWriteUnits the write units the
	// writes cost again on global secondary indexes.
	ReadUnits       float64 `json:"readRequestUnits"`
	WriteUnits      float64 `json:"writeRequestUnits"`
	IndexWriteUnits float64 `json:"indexWriteRequestUnits"`
	// TransactionItems counts the items of successful TransactWriteItems calls; FailedWrites
	// the conditional writes (plain or in a transaction) refused by their condition, which
	// DynamoDB bills all the same.
	TransactionItems int64 `json:"transactionItems"`
	FailedWrites     int64 `json:"failedConditionalWrites"`
	// EstimatedUnits are the part of the units above worked out from the request rather than
	// reported by the service (see internal/twin/stack's meter for how).
	EstimatedUnits float64 `json:"estimatedUnits"`
	Calls          int64   `json:"calls"`
}

// Add adds o's counts to d.
func (d *DynamoDBUsage) Add(o DynamoDBUsage) {
	d.ReadUnits += o.ReadUnits
	d.WriteUnits += o.WriteUnits
	d.IndexWriteUnits += o.IndexWriteUnits
	d.TransactionItems += o.TransactionItems
	d.FailedWrites += o.FailedWrites
	d.EstimatedUnits += o.EstimatedUnits
	d.Calls += o.Calls
}

// Sub subtracts o's counts from d: what was used between two readings.
func (d *DynamoDBUsage) Sub(o DynamoDBUsage) {
	d.ReadUnits -= o.ReadUnits
	d.WriteUnits -= o.WriteUnits
	d.IndexWriteUnits -= o.IndexWriteUnits
	d.TransactionItems -= o.TransactionItems
	d.FailedWrites -= o.FailedWrites
	d.EstimatedUnits -= o.EstimatedUnits
	d.Calls -= o.Calls
}

// LogUsage is what CloudWatch Logs ingests, by where it comes from: measured where the stack
// sees the bytes (the functions' own lines and their embedded-metric-format lines), estimated
// where the bytes are written by AWS itself (Lambda's platform records, Step Functions'
// execution logs, API Gateway's access logs).
type LogUsage struct {
	FunctionBytes  int64 `json:"functionLogBytes"`
	FunctionEvents int64 `json:"functionLogEvents"`
	MetricBytes    int64 `json:"metricLogBytes"`
	MetricEvents   int64 `json:"metricLogEvents"`

	PlatformBytes       int64 `json:"lambdaPlatformBytesEstimated"`
	PlatformEvents      int64 `json:"lambdaPlatformEventsEstimated"`
	StepFunctionsBytes  int64 `json:"stepFunctionsLogBytesEstimated"`
	StepFunctionsEvents int64 `json:"stepFunctionsLogEventsEstimated"`
	AccessLogBytes      int64 `json:"accessLogBytesEstimated"`
	AccessLogEvents     int64 `json:"accessLogEventsEstimated"`
}

// EventOverheadBytes is what each log event weighs beyond its message. PutLogEvents sizes a
// batch as the messages' UTF-8 bytes plus 26 bytes per event; the bill assumes ingestion is
// metered the same way.
const EventOverheadBytes = 26

// Measured is the ingested bytes the stack saw written, overhead included.
func (l LogUsage) Measured() int64 {
	return l.FunctionBytes + l.MetricBytes + EventOverheadBytes*(l.FunctionEvents+l.MetricEvents)
}

// Estimated is the ingested bytes AWS's own log lines are estimated at, overhead included.
func (l LogUsage) Estimated() int64 {
	return l.PlatformBytes + l.StepFunctionsBytes + l.AccessLogBytes +
		EventOverheadBytes*(l.PlatformEvents+l.StepFunctionsEvents+l.AccessLogEvents)
}

// GB is how many bytes AWS's data prices call a gigabyte (2^30).
const GB = 1 << 30

// Line is one item of the bill: a quantity of units at a price.
type Line struct {
	Service  string  `json:"service"`
	Item     string  `json:"item"`
	Quantity float64 `json:"quantity"`
	Unit     string  `json:"unit"`
	USD      float64 `json:"usd"`
	// Price is the table's entry the line is priced at.
	Price PriceID `json:"price"`
}

// Bill is a sale's AWS bill.
type Bill struct {
	Region     string  `json:"region"`
	PricesAsOf string  `json:"pricesAsOf"`
	Lines      []Line  `json:"lines"`
	Total      float64 `json:"totalUSD"`
	// Bookings and Buyers are what the per-unit figures divide by; PerBooking is zero without a
	// booking, Per1000Buyers without a buyer.
	Bookings      int     `json:"bookings"`
	Buyers        int     `json:"buyers"`
	PerBooking    float64 `json:"usdPerBooking"`
	Per1000Buyers float64 `json:"usdPer1000Buyers"`
	// Dominant are the three costliest lines, costliest first.
	Dominant []Line `json:"dominant"`
}

// Compute prices u: one line per item of the table, in the table's order of services, zero
// quantities included so that every bill has the same lines.
func Compute(u Usage, bookings, buyers int) Bill {
	var gbSeconds float64
	var requests int64
	for _, f := range u.Functions {
		gbSeconds += f.GBSeconds()
		requests += f.Requests
	}
	b := Bill{Region: Region, PricesAsOf: PricesAsOf, Bookings: bookings, Buyers: buyers}
	add := func(id PriceID, item string, quantity float64) {
		p := PriceOf(id)
		if item == "" {
			item = p.Item
		}
		b.Lines = append(b.Lines, Line{Service: p.Service, Item: item, Quantity: quantity, Unit: p.Unit,
			USD: quantity * p.USD, Price: id})
	}
	add(StateTransition, "", float64(u.StateTransitions+u.TransitionRetries))
	add(LambdaRequest, "", float64(requests))
	add(LambdaGBSecondArm, "", gbSeconds)
	add(DynamoDBReadUnit, "read request units", u.DynamoDB.ReadUnits)
	add(DynamoDBWriteUnit, "write request units, tables", u.DynamoDB.WriteUnits)
	add(DynamoDBWriteUnit, "write request units, indexes", u.DynamoDB.IndexWriteUnits)
	add(APIGatewayRESTRequest, "", float64(u.APIRequests))
	add(EventBridgeCustomEvent, "", float64(u.EventBridgeEvents))
	add(SQSRequest, "", float64(u.SQSRequests))
	add(SecretsManagerAPICall, "", float64(u.SecretsManagerCalls))
	add(LogsIngestedGB, "ingested, functions' logs and metrics (measured)", float64(u.Logs.Measured())/GB)
	add(LogsIngestedGB, "ingested, Lambda, Step Functions and access logs (estimated)", float64(u.Logs.Estimated())/GB)
	for _, l := range b.Lines {
		b.Total += l.USD
	}
	if bookings > 0 {
		b.PerBooking = b.Total / float64(bookings)
	}
	if buyers > 0 {
		b.Per1000Buyers = b.Total / float64(buyers) * 1000
	}
	b.Dominant = slices.Clone(b.Lines)
	// Stable, so that equal lines keep the table's order.
	slices.SortStableFunc(b.Dominant, func(x, y Line) int { return cmp.Compare(y.USD, x.USD) })
	b.Dominant = b.Dominant[:min(3, len(b.Dominant))]
	return b
}

// DynamoDB's unit sizes: a write request unit writes up to 1 KB, a read request unit reads up
// to 4 KB strongly consistently.
const (
	WriteUnitBytes = 1024
	ReadUnitBytes  = 4096
)

// WriteUnits is what writing an item of itemBytes costs: one unit per started KB (at least
// one), twice that inside a transaction, which prepares and commits every item.
func WriteUnits(itemBytes int, transactional bool) float64 {
	units := math.Ceil(float64(max(itemBytes, 1)) / WriteUnitBytes)
	if transactional {
		units *= 2
	}
	return units
}

// Consistency is how a read is served.
type Consistency int

// The read consistencies DynamoDB bills apart.
const (
	Eventual Consistency = iota
	Strong
	Transactional
)

// ReadUnits is what reading itemBytes costs: one unit per started 4 KB (at least one) for a
// strongly consistent read, half that eventually consistent, twice that in a transaction.
func ReadUnits(itemBytes int, c Consistency) float64 {
	units := math.Ceil(float64(max(itemBytes, 1)) / ReadUnitBytes)
	switch c {
	case Eventual:
		return units / 2
	case Transactional:
		return units * 2
	}
	return units
}
