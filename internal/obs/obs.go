// Package obs sets up the structured JSON logs (log/slog) every seatsaga handler writes: the
// level from the environment, the reservation id, correlation id and Lambda request id taken
// from the context onto every line, and a redaction rule so that card data, client secrets and
// keys never reach a log, whatever a caller passes.
package obs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// Attribute names on every line that has them.
const (
	KeyReservationID = "reservationId"
	KeyCorrelationID = "correlationId"
	KeyRequestID     = "requestId"
)

// Redacted replaces every value the redaction rule removes.
const Redacted = "[REDACTED]"

// Environment variables read by LevelFromEnv, first set wins. AWS_LAMBDA_LOG_LEVEL is what
// Lambda's advanced logging controls set.
var levelVars = []string{"SEATSAGA_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL"}

// LevelFromEnv returns the level named by the first of SEATSAGA_LOG_LEVEL, LOG_LEVEL and
// AWS_LAMBDA_LOG_LEVEL that is set (debug, info, warn, error; case-insensitive), else info.
func LevelFromEnv(lookup func(string) (string, bool)) slog.Level {
	for _, name := range levelVars {
		v, ok := lookup(name)
		if !ok || v == "" {
			continue
		}
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(strings.ToUpper(strings.TrimSpace(v)))); err == nil {
			return lvl
		}
		if strings.EqualFold(v, "trace") {
			return slog.LevelDebug
		}
	}
	return slog.LevelInfo
}

// NewLogger returns a JSON logger writing to w at level, with context ids and redaction.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(NewHandler(w, level))
}

// FromEnv returns the logger a Lambda main uses: JSON on stdout, level from the environment.
func FromEnv() *slog.Logger {
	return NewLogger(os.Stdout, LevelFromEnv(os.LookupEnv))
}

// NewHandler returns the slog.Handler behind NewLogger, for callers that wrap it further.
func NewHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return contextHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr})}
}

type ctxKey int

const (
	reservationKey ctxKey = iota
	correlationKey
)

// WithReservation returns ctx carrying a reservation id, logged as reservationId.
func WithReservation(ctx context.Context, reservationID string) context.Context {
	return context.WithValue(ctx, reservationKey, reservationID)
}

// WithCorrelation returns ctx carrying a correlation id, logged as correlationId.
func WithCorrelation(ctx context.Context, correlationID string) context.Context {
	return context.WithValue(ctx, correlationKey, correlationID)
}

// ReservationID returns the reservation id in ctx, if any.
func ReservationID(ctx context.Context) string {
	s, _ := ctx.Value(reservationKey).(string)
	return s
}

// CorrelationID returns the correlation id in ctx, if any.
func CorrelationID(ctx context.Context) string {
	s, _ := ctx.Value(correlationKey).(string)
	return s
}

// Logger returns base with the ids in ctx attached, for code that logs without a context.
// Lines logged through the *Context methods of any obs logger get them anyway.
func Logger(ctx context.Context, base *slog.Logger) *slog.Logger {
	if attrs := contextAttrs(ctx); len(attrs) > 0 {
		args := make([]any, len(attrs))
		for i, a := range attrs {
			args[i] = a
		}
		return base.With(args...)
	}
	return base
}

func contextAttrs(ctx context.Context) []slog.Attr {
	if ctx == nil {
		return nil
	}
	var attrs []slog.Attr
	if id := ReservationID(ctx); id != "" {
		attrs = append(attrs, slog.String(KeyReservationID, id))
	}
	if id := CorrelationID(ctx); id != "" {
		attrs = append(attrs, slog.String(KeyCorrelationID, id))
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		attrs = append(attrs, slog.String(KeyRequestID, lc.AwsRequestID))
	}
	return attrs
}

// contextHandler adds the context's ids to each record.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs := contextAttrs(ctx); len(attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(attrs...)
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(attrs)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}

// sensitiveKey reports whether an attribute named key (in the given groups) may hold card
// data, a secret or a key. Names are compared lower-cased with separators removed, so that
// card_number, cardNumber and card-number are one name.
func sensitiveKey(groups []string, key string) bool {
	k := normalize(key)
	switch k {
	case "pan", "cvc", "cvv", "cvc2", "cvv2", "cardnumber", "number", "expmonth", "expyear",
		"password", "passwd", "authorization", "signature", "stripesignature", "token",
		"accesskeyid", "secretaccesskey", "sessiontoken":
		if k == "number" || k == "expmonth" || k == "expyear" || k == "token" {
			// Only inside card data: a seat "number" is harmless, a card's is not.
			return inCard(groups)
		}
		return true
	}
	for _, frag := range []string{"secret", "password", "apikey", "privatekey", "secretkey", "cardnumber", "webhookkey", "signingkey"} {
		if strings.Contains(k, frag) {
			return true
		}
	}
	return inCard(groups) && k != "brand" && k != "last4" && k != "country" && k != "funding"
}

func inCard(groups []string) bool {
	for _, g := range groups {
		switch normalize(g) {
		case "card", "paymentmethod", "paymentmethoddata":
			return true
		}
	}
	return false
}

var separators = strings.NewReplacer("_", "", "-", "", ".", "", " ", "")

func normalize(s string) string { return separators.Replace(strings.ToLower(s)) }

// Values that are secrets whatever they are called: Stripe secret and restricted keys,
// webhook signing secrets, PaymentIntent client secrets, and card numbers (checked by Luhn).
var (
	secretValue = regexp.MustCompile(`\b(sk|rk)_(live|test)_[0-9A-Za-z]+|\bwhsec_[0-9A-Za-z]+|\b(pi|seti)_[0-9A-Za-z]+_secret_[0-9A-Za-z]+`)
	digitRun    = regexp.MustCompile(`\b(?:\d[ -]?){12,18}\d\b`)
)

// RedactString removes secret-looking values from s.
func RedactString(s string) string {
	s = secretValue.ReplaceAllString(s, Redacted)
	return digitRun.ReplaceAllStringFunc(s, func(m string) string {
		digits := strings.NewReplacer(" ", "", "-", "").Replace(m)
		if len(digits) >= 13 && len(digits) <= 19 && luhn(digits) {
			return Redacted
		}
		return m
	})
}

func luhn(digits string) bool {
	sum, double := 0, false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

func redactAttr(groups []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindGroup {
		return a
	}
	if sensitiveKey(groups, a.Key) {
		return slog.String(a.Key, Redacted)
	}
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); s != "" {
			if r := RedactString(s); r != s {
				return slog.String(a.Key, r)
			}
		}
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			return slog.String(a.Key, RedactString(v.Error()))
		case json.Marshaler, nil:
			return a
		default:
			return slog.Any(a.Key, redactStructured(groups, a.Key, v))
		}
	}
	return a
}

// redactStructured renders a struct, map or slice the way the JSON handler would, then removes
// sensitive members at any depth, so that a struct logged whole cannot leak a card number.
func redactStructured(groups []string, key string, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return v
	}
	return scrub(append(append([]string(nil), groups...), key), tree)
}

func scrub(path []string, v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if sensitiveKey(path, k) {
				t[k] = Redacted
				continue
			}
			t[k] = scrub(append(path, k), child)
		}
		return t
	case []any:
		for i, child := range t {
			t[i] = scrub(path, child)
		}
		return t
	case string:
		return RedactString(t)
	}
	return v
}

// Defaults fills what a handler's constructor was not given of the clock, logger and metrics
// recorder every handler takes: time.Now, slog.Default() and a recorder that drops everything.
func Defaults(now func() time.Time, logger *slog.Logger, recorder metrics.Recorder) (func() time.Time, *slog.Logger, metrics.Recorder) {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	if recorder == nil {
		recorder = metrics.Discard{}
	}
	return now, logger, recorder
}
