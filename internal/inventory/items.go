package inventory

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// TimeLayout stores instants as fixed-width UTC strings, so that comparing them as strings in
// condition expressions and index sort keys orders them by time.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// Short names for the item attributes internal/tables owns.
const (
	attrState           = tables.AttrSeatState
	attrVersion         = tables.AttrVersion
	attrUpdatedAt       = tables.AttrUpdatedAt
	attrCustomerID      = tables.AttrCustomerID
	attrSeatIDs         = tables.AttrSeatIDs
	attrAmount          = tables.AttrAmount
	attrCurrency        = tables.AttrCurrency
	attrPriceMinor      = tables.AttrPriceMinor
	attrInvState        = tables.AttrInventoryState
	attrPayState        = tables.AttrPaymentState
	attrIdempotencyKey  = tables.AttrIdempotencyKey
	attrRequestHash     = tables.AttrRequestHash
	attrPaymentIntentID = tables.AttrPaymentIntentID
	attrTaskToken       = tables.AttrTaskToken
	attrExecutionARN    = tables.AttrExecutionARN
	attrCorrelationID   = tables.AttrCorrelationID
	attrOutcome         = tables.AttrOutcome
	attrCaptureBefore   = tables.AttrCaptureBefore
	attrCancelAttempts  = tables.AttrCancelAttempts
	attrCustomerCancel  = tables.AttrCustomerCanceled
	attrRefundID        = tables.AttrRefundID
	attrRefundAttempts  = tables.AttrRefundAttempts
	attrUnwinding       = tables.AttrUnwinding
	attrCreatedAt       = tables.AttrCreatedAt
	attrRevision        = tables.AttrRevision
)

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(TimeLayout, s)
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// shardOf spreads reservations over the sparse indexes' write shards.
func shardOf(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return strconv.Itoa(int(h.Sum32() % tables.WriteShards))
}

// reservationItem renders r. The sparse index keys exist only while they mean something:
// holdShard while the hold keeps seats (HELD or PAYMENT_PENDING), reconShard and reconSince while
// seats and money disagree (reservation.Unsettled; reconSince is r.ReconcileSince, or
// r.UpdatedAt when that is unset).
func reservationItem(r reservation.Reservation, revision int64) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		tables.AttrReservationID: s(r.ID),
		attrCustomerID:           s(r.CustomerID),
		tables.AttrEventID:       s(r.EventID),
		attrSeatIDs:              strList(r.SeatIDs),
		attrAmount:               n(r.Amount),
		attrCurrency:             s(r.Currency),
		tables.AttrHoldExpiresAt: s(FormatTime(r.HoldExpiresAt)),
		attrInvState:             s(string(r.Inventory)),
		attrPayState:             s(string(r.Payment)),
		attrVersion:              n(r.Version),
		attrIdempotencyKey:       s(r.IdempotencyKey),
		attrRequestHash:          s(r.RequestHash),
		attrCreatedAt:            s(FormatTime(r.CreatedAt)),
		attrUpdatedAt:            s(FormatTime(r.UpdatedAt)),
		attrRevision:             n(revision),
	}
	optional := map[string]string{
		attrPaymentIntentID: r.PaymentIntentID,
		attrTaskToken:       r.TaskToken,
		attrExecutionARN:    r.ExecutionARN,
		attrCorrelationID:   r.CorrelationID,
		attrOutcome:         string(r.Outcome),
		attrRefundID:        r.RefundID,
		tables.AttrSlotKey:  r.SlotKey,
	}
	for k, v := range optional {
		if v != "" {
			item[k] = s(v)
		}
	}
	if !r.CaptureBefore.IsZero() {
		item[attrCaptureBefore] = s(FormatTime(r.CaptureBefore))
	}
	if r.CancelAttempts > 0 {
		item[attrCancelAttempts] = n(int64(r.CancelAttempts))
	}
	if r.RefundAttempts > 0 {
		item[attrRefundAttempts] = n(int64(r.RefundAttempts))
	}
	if r.CustomerCanceled {
		item[attrCustomerCancel] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if r.Unwinding {
		item[attrUnwinding] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if r.HoldActive() {
		item[tables.AttrHoldShard] = s(shardOf(r.ID))
	}
	if r.Unsettled() {
		since := r.ReconcileSince
		if since.IsZero() {
			since = r.UpdatedAt
		}
		item[tables.AttrReconShard] = s(shardOf(r.ID))
		item[tables.AttrReconSince] = s(FormatTime(since))
	}
	return item
}

type itemReader struct {
	item map[string]types.AttributeValue
	err  error
}

func (ir *itemReader) str(name string) string {
	if v, ok := ir.item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// strs reads a list of strings (nil when the attribute is missing).
func (ir *itemReader) strs(name string) []string {
	l, ok := ir.item[name].(*types.AttributeValueMemberL)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range l.Value {
		if sv, ok := v.(*types.AttributeValueMemberS); ok {
			out = append(out, sv.Value)
		}
	}
	return out
}

// strList renders a list of strings as strs reads it.
func strList(ss []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(ss))
	for i, v := range ss {
		l[i] = s(v)
	}
	return &types.AttributeValueMemberL{Value: l}
}

func (ir *itemReader) num(name string) int64 {
	v, ok := ir.item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	i, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil && ir.err == nil {
		ir.err = fmt.Errorf("attribute %s: %w", name, err)
	}
	return i
}

func (ir *itemReader) flag(name string) bool {
	v, ok := ir.item[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func (ir *itemReader) time(name string) time.Time {
	t, err := parseTime(ir.str(name))
	if err != nil && ir.err == nil {
		ir.err = fmt.Errorf("attribute %s: %w", name, err)
	}
	return t
}

// DecodeReservation reads a Reservations table item as the Store wrote it; an unknown state or
// a malformed number or instant is an error naming the reservation.
func DecodeReservation(item map[string]types.AttributeValue) (reservation.Reservation, error) {
	ir := &itemReader{item: item}
	r := reservation.Reservation{
		ID:               ir.str(tables.AttrReservationID),
		CustomerID:       ir.str(attrCustomerID),
		EventID:          ir.str(tables.AttrEventID),
		Amount:           ir.num(attrAmount),
		Currency:         ir.str(attrCurrency),
		HoldExpiresAt:    ir.time(tables.AttrHoldExpiresAt),
		Version:          ir.num(attrVersion),
		IdempotencyKey:   ir.str(attrIdempotencyKey),
		RequestHash:      ir.str(attrRequestHash),
		PaymentIntentID:  ir.str(attrPaymentIntentID),
		TaskToken:        ir.str(attrTaskToken),
		ExecutionARN:     ir.str(attrExecutionARN),
		CorrelationID:    ir.str(attrCorrelationID),
		Outcome:          reservation.Outcome(ir.str(attrOutcome)),
		CaptureBefore:    ir.time(attrCaptureBefore),
		CancelAttempts:   int(ir.num(attrCancelAttempts)),
		CustomerCanceled: ir.flag(attrCustomerCancel),
		Unwinding:        ir.flag(attrUnwinding),
		RefundID:         ir.str(attrRefundID),
		RefundAttempts:   int(ir.num(attrRefundAttempts)),
		CreatedAt:        ir.time(attrCreatedAt),
		UpdatedAt:        ir.time(attrUpdatedAt),
		ReconcileSince:   ir.time(tables.AttrReconSince),
		SlotKey:          ir.str(tables.AttrSlotKey),
	}
	r.SeatIDs = ir.strs(attrSeatIDs)
	var err error
	if r.Inventory, err = reservation.ParseInventoryState(ir.str(attrInvState)); err != nil {
		return r, fmt.Errorf("reservation %s: %w", r.ID, err)
	}
	if r.Payment, err = reservation.ParsePaymentState(ir.str(attrPayState)); err != nil {
		return r, fmt.Errorf("reservation %s: %w", r.ID, err)
	}
	if ir.err != nil {
		return r, fmt.Errorf("reservation %s: %w", r.ID, ir.err)
	}
	return r, nil
}

// DecodeSeat reads a Seats table item as the Store wrote it, price included (PriceMinor 0 and
// Currency "" for a seat written without one); an unknown state or a malformed number or
// instant is an error naming the seat.
func DecodeSeat(item map[string]types.AttributeValue) (reservation.Seat, error) {
	ir := &itemReader{item: item}
	st := reservation.Seat{
		EventID:       ir.str(tables.AttrEventID),
		SeatID:        ir.str(tables.AttrSeatID),
		ReservationID: ir.str(tables.AttrReservationID),
		HoldExpiresAt: ir.time(tables.AttrHoldExpiresAt),
		Version:       ir.num(attrVersion),
		PriceMinor:    ir.num(attrPriceMinor),
		Currency:      strings.ToUpper(ir.str(attrCurrency)),
	}
	var err error
	if st.State, err = reservation.ParseInventoryState(ir.str(attrState)); err != nil {
		return st, fmt.Errorf("seat %s: %w", ir.str(tables.AttrSeatKey), err)
	}
	if ir.err != nil {
		return st, fmt.Errorf("seat %s: %w", ir.str(tables.AttrSeatKey), ir.err)
	}
	return st, nil
}

func seatKeyAV(eventID, seatID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrSeatKey: s(reservation.SeatKey(eventID, seatID))}
}

func reservationKeyAV(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrReservationID: s(id)}
}

// used keeps only the placeholders an expression mentions; DynamoDB refuses unused ones.
func used(expr string, values map[string]types.AttributeValue, names map[string]string) (map[string]types.AttributeValue, map[string]string) {
	v := map[string]types.AttributeValue{}
	for k, val := range values {
		if containsToken(expr, k) {
			v[k] = val
		}
	}
	nm := map[string]string{}
	for k, val := range names {
		if containsToken(expr, k) {
			nm[k] = val
		}
	}
	return v, nm
}

// containsToken reports whether expr mentions placeholder tok as a whole word (":pp" must not
// match ":ppx").
func containsToken(expr, tok string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], tok)
		if j < 0 {
			return false
		}
		end := i + j + len(tok)
		if end == len(expr) || !isIdentChar(expr[end]) {
			return true
		}
		i = end
	}
}

func isIdentChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
