// Package inventory is the DynamoDB adapter for seats and reservations. Every change is one
// TransactWriteItems: conditional writes on the seats, the reservation (fenced by its version)
// and the outbox record announcing the change, so a seat can never be sold twice and no change
// goes unannounced. The rules themselves live in internal/reservation.
package inventory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// DynamoDB is the part of *dynamodb.Client the store uses.
type DynamoDB interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Metric names the store counts; dimension "op" names the operation.
const (
	MetricConditionalCheckFailed = "ConditionalCheckFailed"
	MetricTransactionConflict    = "TransactionConflict"
	MetricThrottle               = "Throttled"
	MetricClaim                  = "ClaimOutcome" // dimension "outcome": won, unavailable, replayed, invalid, error
)

// Config wires a Store. Client and Now are required.
type Config struct {
	Client  DynamoDB
	Names   tables.Names
	Now     func() time.Time
	Metrics metrics.Recorder
	Logger  *slog.Logger
	// Limits bounds claims; zero fields take reservation.DefaultLimits.
	Limits reservation.Limits
	// MaxAttempts bounds tries of one transaction that keeps meeting transaction conflicts or
	// throttling (default 8).
	MaxAttempts int
	// OutboxRetention is how long outbox items live before TTL (default outbox.DefaultRetention).
	OutboxRetention time.Duration
}

// Store reads and changes seats and reservations.
type Store struct {
	db          DynamoDB
	names       tables.Names
	now         func() time.Time
	metrics     metrics.Recorder
	log         *slog.Logger
	limits      reservation.Limits
	maxAttempts int
	retention   time.Duration

	seats, reservations, outboxTable, admissions string

	// gateWithoutLease drops the lease clause from the admission gate's condition: only the
	// control test sets it, to show the clause is what turns a second buyer away.
	gateWithoutLease bool

	// mem is what this store last read or wrote of each reservation (a pointer, so copies of
	// the Store share it).
	mem *memory
}

// memory keeps, per reservation, the item this store last read or wrote with its write
// revision, so that a change following a read decides on that read instead of reading the
// item a second time. It is safe because every change is fenced by the revision it decided
// on: if anyone wrote the item since (another function, another container, a detail-only
// update that keeps the version), the transaction's condition fails and the change reads the
// item and decides again, as it does after losing any race. Only a write may rest on a
// remembered item: a change whose decision on it writes nothing (a refusal, nothing to do)
// reads the item and decides again, so every answer without a write comes from a strong read.
type memory struct {
	mu    sync.Mutex
	items map[string]remembered
}

type remembered struct {
	r   reservation.Reservation
	rev int64
}

// memoryLimit bounds the remembered items. A function works on one reservation at a time, so
// any bound works; this one keeps a container that served a whole sale small.
const memoryLimit = 1024

func (m *memory) remember(r reservation.Reservation, rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[r.ID]; !ok && len(m.items) >= memoryLimit {
		for id := range m.items {
			delete(m.items, id)
			break
		}
	}
	m.items[r.ID] = remembered{r: r, rev: rev}
}

func (m *memory) recall(id string) (remembered, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	return it, ok
}

func (m *memory) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, id)
}

// New checks cfg and returns a Store.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("inventory: Config.Client is required")
	}
	if cfg.Now == nil {
		return nil, errors.New("inventory: Config.Now is required")
	}
	st := &Store{db: cfg.Client, names: cfg.Names, now: cfg.Now, metrics: cfg.Metrics, log: cfg.Logger,
		limits: cfg.Limits, maxAttempts: cfg.MaxAttempts, retention: cfg.OutboxRetention,
		mem: &memory{items: map[string]remembered{}}}
	if st.metrics == nil {
		st.metrics = metrics.Discard{}
	}
	if st.log == nil {
		st.log = slog.New(slog.DiscardHandler)
	}
	def := reservation.DefaultLimits()
	if st.limits.MaxSeats <= 0 {
		st.limits.MaxSeats = def.MaxSeats
	}
	st.limits.MaxSeats = min(st.limits.MaxSeats, reservation.MaxSeatsPerTransaction)
	if st.limits.MaxHold <= 0 {
		st.limits.MinHold, st.limits.MaxHold = def.MinHold, def.MaxHold
	}
	if st.maxAttempts <= 0 {
		st.maxAttempts = 8
	}
	if st.retention <= 0 {
		st.retention = outbox.DefaultRetention
	}
	st.seats = cfg.Names.Of(tables.SeatsTable)
	st.reservations = cfg.Names.Of(tables.ReservationsTable)
	st.outboxTable = cfg.Names.Of(tables.OutboxTable)
	st.admissions = cfg.Names.Of(tables.AdmissionsTable)
	return st, nil
}

// Limits returns the claim limits in force.
func (st *Store) Limits() reservation.Limits { return st.limits }

// Get reads a reservation (strongly consistent); *reservation.NotFound when there is none.
func (st *Store) Get(ctx context.Context, id string) (reservation.Reservation, error) {
	r, _, err := st.get(ctx, id)
	return r, err
}

// get also returns the item's write revision, and remembers both for the next change.
func (st *Store) get(ctx context.Context, id string) (reservation.Reservation, int64, error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.reservations), Key: reservationKeyAV(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		st.countAPIError("get", err)
		return reservation.Reservation{}, 0, fmt.Errorf("inventory: get reservation %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return reservation.Reservation{}, 0, &reservation.NotFound{ReservationID: id}
	}
	r, err := DecodeReservation(out.Item)
	ir := &itemReader{item: out.Item}
	rev := ir.num(attrRevision)
	if err == nil {
		st.mem.remember(r, rev)
	}
	return r, rev, err
}

// GetSeat reads one seat (strongly consistent); ok is false when the seat does not exist.
func (st *Store) GetSeat(ctx context.Context, eventID, seatID string) (seat reservation.Seat, ok bool, err error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.seats), Key: seatKeyAV(eventID, seatID), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		st.countAPIError("get_seat", err)
		return reservation.Seat{}, false, fmt.Errorf("inventory: get seat %s: %w", reservation.SeatKey(eventID, seatID), err)
	}
	if len(out.Item) == 0 {
		return reservation.Seat{}, false, nil
	}
	seat, err = DecodeSeat(out.Item)
	return seat, err == nil, err
}

// NewSeat is one seat to create with its price: PriceMinor minor units (> 0) of Currency
// (ISO 4217, any case; stored upper case).
type NewSeat struct {
	SeatID     string
	PriceMinor int64
	Currency   string
}

// SeatsAt prices every id at the same priceMinor and currency.
func SeatsAt(priceMinor int64, currency string, ids ...string) []NewSeat {
	seats := make([]NewSeat, len(ids))
	for i, id := range ids {
		seats[i] = NewSeat{SeatID: id, PriceMinor: priceMinor, Currency: currency}
	}
	return seats
}

// ValidateSeats checks seats to create for an event: an event id, at least one seat, each with
// an id (named once), a positive price and a three-letter currency. It returns the seats with
// their currency upper-cased, or a *reservation.ValidationError naming every problem.
func ValidateSeats(eventID string, seats []NewSeat) ([]NewSeat, error) {
	var problems []reservation.Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, reservation.Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if eventID == "" {
		add("eventId", "is required")
	}
	if len(seats) == 0 {
		add("seats", "at least one seat is required")
	}
	out := make([]NewSeat, len(seats))
	seen := make(map[string]bool, len(seats))
	for i, seat := range seats {
		switch {
		case seat.SeatID == "":
			add("seatId", "seat %d: is required", i)
		case seen[seat.SeatID]:
			add("seatId", "seat %q is named twice", seat.SeatID)
		}
		seen[seat.SeatID] = true
		if seat.PriceMinor <= 0 {
			add("priceMinor", "seat %q: must be a positive number of minor units, got %d", seat.SeatID, seat.PriceMinor)
		}
		cur, ok := reservation.NormalizeCurrency(seat.Currency)
		if !ok {
			add("currency", "seat %q: must be a three-letter ISO 4217 code, got %q", seat.SeatID, seat.Currency)
		}
		out[i] = NewSeat{SeatID: seat.SeatID, PriceMinor: seat.PriceMinor, Currency: cur}
	}
	if len(problems) > 0 {
		return nil, &reservation.ValidationError{Problems: problems}
	}
	return out, nil
}

// CreateSeats puts AVAILABLE seats for an event, each with its price (attributes priceMinor
// and currency, upper case). Every seat is validated before anything is written: a missing,
// zero or negative price or a bad currency is a *reservation.ValidationError and no seat is
// created. Seats that already exist are left as they are, price included, so creating an event
// twice is harmless, never frees a held seat and never reprices a seat a buyer is paying for.
// The seats have no sale window; SeatItem writes one for writers that have it.
func (st *Store) CreateSeats(ctx context.Context, eventID string, seats []NewSeat) error {
	seats, err := ValidateSeats(eventID, seats)
	if err != nil {
		return err
	}
	now := st.now()
	for _, seat := range seats {
		_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(st.seats),
			Item:                SeatItem(eventID, seat, now, SaleWindow{}),
			ConditionExpression: aws.String("attribute_not_exists(seatKey)"),
		})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			st.countAPIError("create_seats", err)
			return fmt.Errorf("inventory: create seat %s: %w", reservation.SeatKey(eventID, seat.SeatID), err)
		}
	}
	return nil
}

// SaleWindow bounds when a seat is on sale: from OnSaleFrom (inclusive) until OnSaleUntil
// (exclusive). A zero side is unbounded.
type SaleWindow struct {
	OnSaleFrom, OnSaleUntil time.Time
}

// SeatItem is the Seats item of a new seat: AVAILABLE at version 1, updated now, priced
// seat.PriceMinor of seat.Currency (pass it as ValidateSeats returns it, upper case), and,
// for each bounded side of window, onSaleFrom or onSaleUntil as RFC 3339 UTC, which the api's
// catalog reads; an unbounded side is not written. It is the one encoding of a new seat:
// CreateSeats writes it, and so does the operator's seat loader (infra/ops), each only where
// the seat does not exist yet (condition attribute_not_exists(seatKey)).
func SeatItem(eventID string, seat NewSeat, now time.Time, window SaleWindow) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		tables.AttrSeatKey: s(reservation.SeatKey(eventID, seat.SeatID)), tables.AttrEventID: s(eventID), tables.AttrSeatID: s(seat.SeatID),
		attrState: s(string(reservation.Available)), attrVersion: n(1), attrUpdatedAt: s(FormatTime(now)),
		attrPriceMinor: n(seat.PriceMinor), attrCurrency: s(seat.Currency),
	}
	if !window.OnSaleFrom.IsZero() {
		item[tables.AttrOnSaleFrom] = s(window.OnSaleFrom.UTC().Format(time.RFC3339Nano))
	}
	if !window.OnSaleUntil.IsZero() {
		item[tables.AttrOnSaleUntil] = s(window.OnSaleUntil.UTC().Format(time.RFC3339Nano))
	}
	return item
}

// BatchGetter is the part of *dynamodb.Client BatchGet and BatchGetSeats use.
type BatchGetter interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// BatchGetOptions tunes BatchGet and BatchGetSeats; zero fields take the defaults.
type BatchGetOptions struct {
	// ConsistentRead asks for strongly consistent reads (twice the read units).
	ConsistentRead bool
	// Rounds bounds the calls for each batch of keys: the first, and the retries of the keys
	// DynamoDB leaves unprocessed when it throttles (default 5).
	Rounds int
	// Backoff is the pause before retry round r, times r² (default 20ms).
	Backoff time.Duration
	// Optional, when set, names keys the read can do without (a hint such as the start
	// backlog): one DynamoDB leaves unprocessed is dropped, not retried, and read as absent.
	Optional func(table string, key map[string]types.AttributeValue) bool
}

// ErrUnprocessedKeys is what BatchGet's and BatchGetSeats' errors wrap when keys were still unprocessed
// after every round: the table is throttling, and trying again later may succeed.
var ErrUnprocessedKeys = errors.New("keys left unprocessed (throttled)")

// batchGetKeys is BatchGetItem's limit of keys per call.
const batchGetKeys = 100

// BatchGetSeats reads the Seats items of eventID's seatIDs from table, in BatchGetItem calls
// of at most 100 keys, retrying the keys DynamoDB leaves unprocessed. It returns the items
// found, in no particular order; a seat the table lacks is simply absent. An error wraps the
// call's, or ErrUnprocessedKeys.
func BatchGetSeats(ctx context.Context, db BatchGetter, table, eventID string, seatIDs []string, opts BatchGetOptions) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	for lo := 0; lo < len(seatIDs); lo += batchGetKeys {
		ka := SeatKeys(eventID, seatIDs[lo:min(lo+batchGetKeys, len(seatIDs))])
		if opts.ConsistentRead {
			ka.ConsistentRead = aws.Bool(true)
		}
		got, err := BatchGet(ctx, db, map[string]types.KeysAndAttributes{table: ka}, opts)
		if err != nil {
			return nil, err
		}
		items = append(items, got[table]...)
	}
	return items, nil
}

// SeatKeys are the keys of eventID's seatIDs, for a BatchGetItem of the Seats table.
func SeatKeys(eventID string, seatIDs []string) types.KeysAndAttributes {
	keys := make([]map[string]types.AttributeValue, len(seatIDs))
	for i, id := range seatIDs {
		keys[i] = map[string]types.AttributeValue{tables.AttrSeatKey: s(reservation.SeatKey(eventID, id))}
	}
	return types.KeysAndAttributes{Keys: keys}
}

// BatchGet reads request, at most 100 keys over any tables (each with its own consistency),
// in BatchGetItem rounds that retry the keys DynamoDB leaves unprocessed; it returns the items
// found, by table. opts.ConsistentRead is ignored: each table's KeysAndAttributes says. An
// error wraps the call's, or ErrUnprocessedKeys.
func BatchGet(ctx context.Context, db BatchGetter, request map[string]types.KeysAndAttributes, opts BatchGetOptions) (map[string][]map[string]types.AttributeValue, error) {
	if opts.Rounds <= 0 {
		opts.Rounds = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 20 * time.Millisecond
	}
	items := map[string][]map[string]types.AttributeValue{}
	for round := 0; len(request) > 0; round++ {
		if round == opts.Rounds {
			return nil, fmt.Errorf("%w after %d rounds", ErrUnprocessedKeys, opts.Rounds)
		}
		if round > 0 {
			t := time.NewTimer(time.Duration(round*round) * opts.Backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		out, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request})
		if err != nil {
			return nil, err
		}
		for table, got := range out.Responses {
			items[table] = append(items[table], got...)
		}
		request = withoutOptional(out.UnprocessedKeys, opts.Optional)
	}
	return items, nil
}

// withoutOptional is request without the keys optional names, and without a table left with
// no keys.
func withoutOptional(request map[string]types.KeysAndAttributes, optional func(string, map[string]types.AttributeValue) bool) map[string]types.KeysAndAttributes {
	if optional == nil {
		return request
	}
	out := make(map[string]types.KeysAndAttributes, len(request))
	for table, ka := range request {
		var keys []map[string]types.AttributeValue
		for _, key := range ka.Keys {
			if !optional(table, key) {
				keys = append(keys, key)
			}
		}
		if len(keys) > 0 {
			ka.Keys = keys
			out[table] = ka
		}
	}
	return out
}

// eventExists tells an unknown event from unknown seats of a known event.
func (st *Store) eventExists(ctx context.Context, eventID string) (bool, error) {
	out, err := st.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(st.seats),
		IndexName:                 aws.String(tables.SeatsByEvent),
		KeyConditionExpression:    aws.String("#e = :e"),
		ExpressionAttributeNames:  map[string]string{"#e": tables.AttrEventID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": s(eventID)},
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return false, fmt.Errorf("inventory: look up event %s: %w", eventID, err)
	}
	return len(out.Items) > 0, nil
}

func (st *Store) count(name, op string) {
	st.metrics.Count(name, 1, metrics.Dim{Name: "op", Value: op})
}

// countAPIError counts throttling that survived the SDK's own retries.
func (st *Store) countAPIError(op string, err error) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded":
			st.count(MetricThrottle, op)
		}
	}
}

// Cancellation reason codes DynamoDB reports per transaction item.
const (
	codeNone        = "None"
	codeCondition   = "ConditionalCheckFailed"
	codeConflict    = "TransactionConflict"
	codeThrottling  = "ThrottlingError"
	codeProvisioned = "ProvisionedThroughputExceeded"
)

// cancellation is a decoded TransactionCanceledException.
type cancellation struct {
	reasons []types.CancellationReason
}

func (c cancellation) code(i int) string {
	if i < 0 || i >= len(c.reasons) {
		return ""
	}
	return aws.ToString(c.reasons[i].Code)
}

func (c cancellation) conditionFailed(i int) bool { return c.code(i) == codeCondition }

func (c cancellation) any(code ...string) bool {
	for i := range c.reasons {
		for _, want := range code {
			if c.code(i) == want {
				return true
			}
		}
	}
	return false
}

func (c cancellation) transient() bool {
	return c.any(codeConflict, codeThrottling, codeProvisioned)
}

// exhausted is the error of a transaction still cancelled for a transient reason after its
// last attempt: ErrThrottled when DynamoDB throttled it, ErrTooManyConflicts otherwise.
func (c cancellation) exhausted(attempt int) error {
	if c.any(codeThrottling, codeProvisioned) {
		return fmt.Errorf("%w after %d attempts (%s)", ErrThrottled, attempt, c.describe())
	}
	return fmt.Errorf("%w after %d attempts (%s)", ErrTooManyConflicts, attempt, c.describe())
}

// transact runs one transaction, counting what went wrong. A cancelled transaction comes back
// as a cancellation and a nil error; any other failure as an error.
func (st *Store) transact(ctx context.Context, op string, items []types.TransactWriteItem) (*cancellation, error) {
	_, err := st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil, nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		c := &cancellation{reasons: tce.CancellationReasons}
		if c.any(codeCondition) {
			st.count(MetricConditionalCheckFailed, op)
		}
		if c.any(codeConflict) {
			st.count(MetricTransactionConflict, op)
		}
		if c.any(codeThrottling, codeProvisioned) {
			st.count(MetricThrottle, op)
		}
		return c, nil
	}
	var conflict *types.TransactionConflictException
	if errors.As(err, &conflict) {
		st.count(MetricTransactionConflict, op)
		return &cancellation{reasons: []types.CancellationReason{{Code: aws.String(codeConflict)}}}, nil
	}
	st.countAPIError(op, err)
	return nil, err
}

// backoff sleeps before retry attempt (1-based) with full jitter, capped.
func backoff(ctx context.Context, attempt int) error {
	base := 5 * time.Millisecond << min(attempt, 6)
	d := time.Duration(rand.Int64N(int64(min(base, 250*time.Millisecond))) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ErrTooManyConflicts is returned (wrapped) when a transaction kept meeting conflicts or
// throttling through every attempt; the caller may retry later.
var ErrTooManyConflicts = errors.New("transaction kept conflicting")

// ErrThrottled is returned (wrapped) when DynamoDB kept throttling a transaction through every
// attempt: the caller should slow down and retry.
var ErrThrottled = errors.New("DynamoDB kept throttling the transaction")

// outboxPut is the record of a change that left r as it is, put only if its id is new.
func (st *Store) outboxPut(t outbox.Type, r reservation.Reservation, reason string, notify bool) (types.TransactWriteItem, error) {
	env, err := outbox.ForReservation(t, r, reason, notify)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(st.outboxTable),
		Item:                     env.Item(st.retention),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": tables.AttrOutboxEventID},
	}}, nil
}
