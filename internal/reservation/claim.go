package reservation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Limits bounds claim requests. A zero MaxSeats or MaxHold means the default.
type Limits struct {
	// MaxSeats per reservation; DynamoDB's transaction limit (100 items, seats + reservation +
	// outbox + admission check) caps it at 97.
	MaxSeats int
	MinHold  time.Duration
	MaxHold  time.Duration
}

// MaxSeatsPerTransaction is the most seats one claim transaction can carry: DynamoDB's 100
// items less the reservation, its outbox record and the admission check.
const MaxSeatsPerTransaction = 97

// maxIDLength bounds every identifier; keys stay far below DynamoDB's limits.
const maxIDLength = 128

// DefaultLimits: at most 10 seats, holds from 1 second to 2 hours.
func DefaultLimits() Limits {
	return Limits{MaxSeats: 10, MinHold: time.Second, MaxHold: 2 * time.Hour}
}

// ClaimRequest asks to hold seats for a new reservation. Amount is in minor units of Currency.
type ClaimRequest struct {
	ReservationID  string
	CustomerID     string
	EventID        string
	SeatIDs        []string
	Amount         int64
	Currency       string
	HoldDuration   time.Duration
	IdempotencyKey string
	CorrelationID  string
	// SlotKey names the customer's hold slot (HoldSlotKey) the admission took; empty without a
	// cap. The reservation keeps it, so the write that ends the hold gives the place back.
	SlotKey string
}

// Validate returns a *ValidationError listing every problem, or nil.
func (req ClaimRequest) Validate(l Limits) error {
	if l.MaxSeats <= 0 {
		l.MaxSeats = DefaultLimits().MaxSeats
	}
	l.MaxSeats = min(l.MaxSeats, MaxSeatsPerTransaction)
	if l.MaxHold <= 0 {
		l.MinHold, l.MaxHold = DefaultLimits().MinHold, DefaultLimits().MaxHold
	}
	var ps []Problem
	add := func(field, format string, args ...any) { ps = append(ps, Problem{field, fmt.Sprintf(format, args...)}) }
	checkID := func(field, v string) {
		if reason := idProblem(v); reason != "" {
			add(field, "%s", reason)
		}
	}
	checkID("reservationId", req.ReservationID)
	checkID("customerId", req.CustomerID)
	checkID("eventId", req.EventID)
	checkID("idempotencyKey", req.IdempotencyKey)
	switch n := len(req.SeatIDs); {
	case n == 0:
		add("seatIds", "at least one seat is required")
	case n > l.MaxSeats:
		add("seatIds", "%d seats requested, at most %d per reservation", n, l.MaxSeats)
	}
	seen := map[string]bool{}
	for i, s := range req.SeatIDs {
		if reason := idProblem(s); reason != "" {
			add("seatIds", "seat %d: %s", i, reason)
			continue
		}
		if seen[s] {
			add("seatIds", "seat %q requested twice", s)
		}
		seen[s] = true
	}
	if req.Amount <= 0 {
		add("amount", "must be a positive number of minor units, got %d", req.Amount)
	}
	if !validCurrency(req.Currency) {
		add("currency", "must be a three-letter ISO 4217 code, got %q", req.Currency)
	}
	if req.HoldDuration < l.MinHold || req.HoldDuration > l.MaxHold {
		add("holdDuration", "must be between %s and %s, got %s", l.MinHold, l.MaxHold, req.HoldDuration)
	}
	if len(req.CorrelationID) > 256 {
		add("correlationId", "longer than 256 characters")
	}
	if len(ps) > 0 {
		return &ValidationError{Problems: ps}
	}
	return nil
}

// idProblem says what is wrong with an identifier, or "". '#' is refused because seat keys join
// event and seat ids with it.
func idProblem(v string) string {
	switch {
	case v == "":
		return "required"
	case len(v) > maxIDLength:
		return fmt.Sprintf("longer than %d bytes", maxIDLength)
	case strings.ContainsRune(v, '#'):
		return "must not contain '#'"
	}
	for _, r := range v {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return "must be printable and contain no spaces"
		}
	}
	return ""
}

// NormalizeCurrency returns c in the stored form, upper case ("eur" -> "EUR"), and whether it
// is a three-letter ISO 4217 code at all.
func NormalizeCurrency(c string) (string, bool) {
	if !validCurrency(c) {
		return "", false
	}
	return strings.ToUpper(c), true
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for _, r := range c {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}

// Hash fingerprints what the request asks for (not its idempotency key or correlation id), so a
// replay with the same key can be told apart from a different request reusing the key. Seat
// order does not matter.
func (req ClaimRequest) Hash() string {
	seats := slices.Clone(req.SeatIDs)
	slices.Sort(seats)
	h := sha256.New()
	for _, part := range []string{req.ReservationID, req.CustomerID, req.EventID, strings.Join(seats, "\x1f"),
		strconv.FormatInt(req.Amount, 10), strings.ToUpper(req.Currency), strconv.FormatInt(int64(req.HoldDuration), 10)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NewReservation validates req and returns the reservation a successful claim creates: HELD,
// payment NOT_STARTED, version 1, hold deadline now+HoldDuration.
func NewReservation(req ClaimRequest, l Limits, now time.Time) (Reservation, error) {
	if err := req.Validate(l); err != nil {
		return Reservation{}, err
	}
	now = now.UTC()
	return Reservation{
		ID:             req.ReservationID,
		CustomerID:     req.CustomerID,
		EventID:        req.EventID,
		SeatIDs:        slices.Clone(req.SeatIDs),
		Amount:         req.Amount,
		Currency:       strings.ToUpper(req.Currency),
		HoldExpiresAt:  now.Add(req.HoldDuration),
		Inventory:      Held,
		Payment:        NotStarted,
		Version:        1,
		IdempotencyKey: req.IdempotencyKey,
		RequestHash:    req.Hash(),
		CorrelationID:  req.CorrelationID,
		SlotKey:        req.SlotKey,
		CreatedAt:      now,
		UpdatedAt:      now,
	}, nil
}

// Seat is one seat of an event as the inventory stores it. A seat is AVAILABLE, or HELD,
// PAYMENT_PENDING or CONFIRMED by ReservationID; releasing it makes it AVAILABLE again.
// PriceMinor and Currency are the seat's price, set when the seat is created and never changed
// by a claim or transition; a seat without one (PriceMinor 0) is not on sale.
type Seat struct {
	EventID       string
	SeatID        string
	State         InventoryState
	ReservationID string
	HoldExpiresAt time.Time
	Version       int64
	PriceMinor    int64
	// Currency is ISO 4217 in upper case, as reservations store it.
	Currency string
}

// SeatKey is the Seats table key of a seat: {eventId}#{seatId}.
func SeatKey(eventID, seatID string) string { return eventID + "#" + seatID }

// ClaimableAt reports whether a new reservation may take the seat at now: it is AVAILABLE, or
// HELD and its deadline has passed. A PAYMENT_PENDING seat is never claimable, because money may
// be moving for it; only its owner's reconciliation gives it back.
func (s Seat) ClaimableAt(now time.Time) bool {
	switch s.State {
	case Available:
		return true
	case Held:
		return !now.Before(s.HoldExpiresAt)
	}
	return false
}

// IDFor derives a reservation id from the customer and their idempotency key, so that a
// retried request names the same reservation and the claim's conditional put dedupes it.
func IDFor(customerID, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(customerID + "\x00" + idempotencyKey))
	return "r_" + hex.EncodeToString(sum[:16])
}
