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

	seats, reservations, outboxTable string
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
		limits: cfg.Limits, maxAttempts: cfg.MaxAttempts, retention: cfg.OutboxRetention}
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
	return st, nil
}

// Limits returns the claim limits in force.
func (st *Store) Limits() reservation.Limits { return st.limits }

// Get reads a reservation (strongly consistent); *reservation.NotFound when there is none.
func (st *Store) Get(ctx context.Context, id string) (reservation.Reservation, error) {
	r, _, err := st.get(ctx, id)
	return r, err
}

// get also returns the item's write revision.
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
	return r, ir.num(attrRevision), err
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

// CreateSeats puts AVAILABLE seats for an event. Seats that already exist are left as they are,
// so creating an event twice is harmless and never frees a held seat.
func (st *Store) CreateSeats(ctx context.Context, eventID string, seatIDs []string) error {
	if eventID == "" || len(seatIDs) == 0 {
		return &reservation.ValidationError{Problems: []reservation.Problem{{Field: "seatIds", Reason: "event id and seats are required"}}}
	}
	now := FormatTime(st.now())
	for _, id := range seatIDs {
		if id == "" {
			return &reservation.ValidationError{Problems: []reservation.Problem{{Field: "seatIds", Reason: "empty seat id"}}}
		}
		_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(st.seats),
			Item: map[string]types.AttributeValue{
				"seatKey": s(reservation.SeatKey(eventID, id)), tables.AttrEventID: s(eventID), tables.AttrSeatID: s(id),
				attrState: s(string(reservation.Available)), attrVersion: n(1), attrUpdatedAt: s(now),
			},
			ConditionExpression: aws.String("attribute_not_exists(seatKey)"),
		})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			st.countAPIError("create_seats", err)
			return fmt.Errorf("inventory: create seat %s: %w", reservation.SeatKey(eventID, id), err)
		}
	}
	return nil
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

func (st *Store) outboxPut(t outbox.Type, r reservation.Reservation, reason string) (types.TransactWriteItem, outbox.Envelope, error) {
	env, err := outbox.New(t, r.ID, r.Version, r.UpdatedAt, r.CorrelationID, outbox.ReservationSnapshot{
		CustomerID: r.CustomerID, EventID: r.EventID, SeatIDs: r.SeatIDs, Amount: r.Amount, Currency: r.Currency,
		InventoryState: string(r.Inventory), PaymentState: string(r.Payment), HoldExpiresAt: r.HoldExpiresAt,
		PaymentIntentID: r.PaymentIntentID, Outcome: string(r.Outcome), Reason: reason,
	})
	if err != nil {
		return types.TransactWriteItem{}, env, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(st.outboxTable),
		Item:                     env.Item(st.retention),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": tables.AttrOutboxEventID},
	}}, env, nil
}
