package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// Limits on what a client may send. They keep every identifier safe inside a DynamoDB key
// ({eventId}#{seatId}), a Step Functions execution name and a Stripe metadata value.
const (
	// MaxBodyBytes bounds a create request; ten seats fit in well under a kilobyte.
	MaxBodyBytes = 16 << 10
	// MaxIdempotencyKeyLen matches what Stripe accepts for its own keys' suffixes and keeps
	// the derived values bounded.
	MaxIdempotencyKeyLen = 64
	// MaxIDLen bounds event and seat ids.
	MaxIDLen = 64
	// MaxPaymentMethodLen bounds a payment method reference (Stripe ids are ~30 characters).
	MaxPaymentMethodLen = 255
	// MaxAmount bounds the amount in minor units: Stripe charges at most 99,999,999 minor units,
	// so a larger reservation would be admitted only to be refused at authorization.
	MaxAmount int64 = 99_999_999
)

// CreateRequest is the body of POST /events/{eventId}/reservations.
//
// Price: the server prices the reservation as the sum of its seats' prices (Seats attributes
// priceMinor and currency, see DynamoCatalog); the client never sets what is charged. Amount and
// Currency are optional: a client that sends them states the price it showed the buyer, and the
// request is refused with 409 price_changed (the body carrying the server's amount and
// currency) when it differs, so a stale price is never charged silently.
type CreateRequest struct {
	SeatIDs []string `json:"seatIds"`
	// Amount is the price the client expects, in minor units; nil when not stated.
	Amount *int64 `json:"amount,omitempty"`
	// Currency is the currency the client expects (lower case once decoded); "" when not stated.
	Currency      string `json:"currency,omitempty"`
	PaymentMethod string `json:"paymentMethod"`
}

// Reservation ids look like r_ followed by 26 base32 characters.
const reservationIDLen = 2 + 26

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ReservationID derives the reservation id from the customer and the client's idempotency
// key, so a retried POST names the same reservation and the same Step Functions execution.
// The separator byte cannot occur in either part (both are validated printable text).
func ReservationID(customer, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(customer + "\x00" + idempotencyKey))
	return "r_" + lowerBase32.EncodeToString(sum[:])[:26]
}

// ValidReservationID reports whether id has the shape ReservationID produces, so a probe with
// a malformed id is answered without touching any store.
func ValidReservationID(id string) bool {
	if len(id) != reservationIDLen || !strings.HasPrefix(id, "r_") {
		return false
	}
	for _, c := range id[2:] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// RequestHash fingerprints what a create request asks for, so the same idempotency key sent
// with another body is told apart from a replay. Seat order does not change the request.
func RequestHash(customer, eventID string, req CreateRequest) string {
	seats := slices.Clone(req.SeatIDs)
	slices.Sort(seats)
	canonical, _ := json.Marshal(struct {
		Customer      string   `json:"c"`
		EventID       string   `json:"e"`
		SeatIDs       []string `json:"s"`
		Amount        *int64   `json:"a"`
		Currency      string   `json:"cur"`
		PaymentMethod string   `json:"pm"`
	}{customer, eventID, seats, req.Amount, req.Currency, req.PaymentMethod})
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ValidateIdempotencyKey checks the Idempotency-Key header value.
func ValidateIdempotencyKey(key string) *Error {
	switch {
	case key == "":
		return badRequest("missing_idempotency_key", "the Idempotency-Key header is required")
	case len(key) > MaxIdempotencyKeyLen:
		return badRequest("invalid_idempotency_key", fmt.Sprintf("the Idempotency-Key header must be at most %d characters", MaxIdempotencyKeyLen))
	case !printable(key):
		return badRequest("invalid_idempotency_key", "the Idempotency-Key header must be printable ASCII without spaces")
	}
	return nil
}

// ValidateEventID checks the eventId path parameter.
func ValidateEventID(id string) *Error {
	if !validID(id) {
		return badRequest("invalid_event_id", fmt.Sprintf("eventId must be 1 to %d characters of letters, digits, '-', '_' or '.'", MaxIDLen))
	}
	return nil
}

// ValidateContentType checks a create request's Content-Type header values: the body must be
// declared application/json, with no parameter but an optional charset=utf-8 (JSON is UTF-8,
// RFC 8259). A request that declares another type, or none, is refused before its body is
// read: API Gateway validates a body against the model of its declared type only, so a body
// under another type would arrive unchecked.
func ValidateContentType(values []string) *Error {
	refuse := func(msg string) *Error {
		return &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: msg}
	}
	switch {
	case len(values) == 0 || strings.TrimSpace(values[0]) == "":
		return refuse("the Content-Type header is required and must be application/json")
	case len(values) > 1:
		return refuse("the request must carry one Content-Type header, application/json")
	}
	media, params, err := mime.ParseMediaType(values[0])
	if err != nil || media != "application/json" {
		return refuse("the body must be sent as application/json")
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return refuse("application/json takes no parameter but charset=utf-8")
		}
	}
	return nil
}

// DecodeCreateRequest parses and validates a create request body. maxSeats is the most seats
// one reservation may hold (config MaxSeats). The returned request is normalised: currency, when
// stated, in lower case.
func DecodeCreateRequest(body string, base64Encoded bool, maxSeats int) (CreateRequest, *Error) {
	raw := []byte(body)
	if base64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return CreateRequest{}, badRequest("invalid_body", "the body is not valid base64")
		}
		raw = decoded
	}
	if len(raw) > MaxBodyBytes {
		return CreateRequest{}, &Error{Status: 413, Code: "body_too_large", Message: fmt.Sprintf("the body must be at most %d bytes", MaxBodyBytes)}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return CreateRequest{}, badRequest("invalid_json", "the body must be a JSON object")
	}
	if e := checkKeys(raw); e != nil {
		return CreateRequest{}, e
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var req CreateRequest
	if err := dec.Decode(&req); err != nil {
		return CreateRequest{}, jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return CreateRequest{}, badRequest("invalid_json", "the body must hold exactly one JSON object")
	}
	if e := validateCreate(&req, maxSeats); e != nil {
		return CreateRequest{}, e
	}
	return req, nil
}

func validateCreate(req *CreateRequest, maxSeats int) *Error {
	switch {
	case len(req.SeatIDs) == 0:
		return badRequest("no_seats", "seatIds must name at least one seat")
	case len(req.SeatIDs) > maxSeats:
		return badRequest("too_many_seats", fmt.Sprintf("seatIds may name at most %d seats", maxSeats))
	}
	seen := make(map[string]bool, len(req.SeatIDs))
	for _, s := range req.SeatIDs {
		if !validID(s) {
			return badRequest("invalid_seat_id", fmt.Sprintf("each seat id must be 1 to %d characters of letters, digits, '-', '_' or '.'", MaxIDLen))
		}
		if seen[s] {
			return badRequest("duplicate_seat", fmt.Sprintf("seat %q is named twice", s))
		}
		seen[s] = true
	}
	if req.Amount != nil && (*req.Amount <= 0 || *req.Amount > MaxAmount) {
		return badRequest("invalid_amount", fmt.Sprintf("amount, when stated, must be a whole number of minor units from 1 to %d", MaxAmount))
	}
	if req.Currency != "" {
		// The letters are checked before any case folding: Unicode folding maps a few other
		// characters onto ASCII letters (the Kelvin sign onto "k"), which would turn a code
		// nobody can send to Stripe into one that passes.
		if len(req.Currency) != 3 || strings.Trim(req.Currency, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			return badRequest("invalid_currency", "currency, when stated, must be a three-letter ISO 4217 code")
		}
		req.Currency = strings.ToLower(req.Currency)
	}
	if req.PaymentMethod == "" || len(req.PaymentMethod) > MaxPaymentMethodLen || !printable(req.PaymentMethod) {
		return badRequest("invalid_payment_method", fmt.Sprintf("paymentMethod must be 1 to %d printable characters without spaces", MaxPaymentMethodLen))
	}
	return nil
}

// createFields are the keys a create request may carry, spelled exactly: encoding/json would
// match "SeatIds" or "SEATIDS" to seatIds, and take the last of a key given twice, so a body
// could mean one thing to this decoder and another to API Gateway's model validation or to
// any other reader of the same bytes.
var createFields = map[string]bool{"seatIds": true, "amount": true, "currency": true, "paymentMethod": true}

// checkKeys walks the top-level object of raw and refuses a key that is not one of
// createFields exactly, and a key given twice. Syntax errors are reported as the decoder
// reports them.
func checkKeys(raw []byte) *Error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	if tok != json.Delim('{') {
		return badRequest("invalid_json", "the body must be a JSON object")
	}
	seen := make(map[string]bool, len(createFields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err)
		}
		key, _ := tok.(string)
		switch {
		case !createFields[key]:
			return badRequest("unknown_field", fmt.Sprintf("field %q is not accepted (field names are case-sensitive)", key))
		case seen[key]:
			return badRequest("invalid_json", fmt.Sprintf("field %q is given twice", key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return jsonError(err)
		}
	}
	return nil
}

// jsonError turns a decoding error into a message that says what was wrong without echoing
// the whole body back.
func jsonError(err error) *Error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("invalid_json", "the body is not valid JSON")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badRequest("invalid_json", "the body must be a JSON object")
		}
		return badRequest("invalid_field", fmt.Sprintf("field %q has the wrong type (want %s)", field, typ.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown_field", strings.TrimPrefix(err.Error(), "json: ")+" is not accepted")
	}
	return badRequest("invalid_json", "the body is not valid JSON")
}

func validID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// printable reports whether s is visible ASCII (no spaces, no control characters).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
