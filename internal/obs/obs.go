// Package obs sets up the structured JSON logs (log/slog) every seatsaga function writes, in
// the shape AWS Lambda Powertools gives its logs and operators query by: on every line the
// level, an RFC 3339 UTC timestamp with milliseconds, the message and the service (the function's
// name); on every line of an invocation the Lambda request id, the X-Ray trace id and whether it
// is the cold start (see Invocations); and the reservation and correlation ids the context
// carries. A redaction rule keeps card data, client secrets and keys out of every log, whatever
// a caller passes.
package obs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/seatsaga/seatsaga/internal/metrics"
)

// Attribute names on every line that has them. The Lambda request id keeps the key seatsaga
// has always logged it under (Powertools' function_request_id); the others are Powertools'.
const (
	KeyTimestamp     = "timestamp"
	KeyLevel         = "level"
	KeyMessage       = "message"
	KeyService       = "service"
	KeyColdStart     = "cold_start"
	KeyRequestID     = "requestId"
	KeyTraceID       = "xray_trace_id"
	KeyReservationID = "reservationId"
	KeyCorrelationID = "correlationId"
)

// ShadowedPrefix is put before the name of a caller's top-level attribute that would repeat a
// key the handler writes itself (or slog's own time and msg), so that no line carries a key
// twice and a query on "message" never meets a caller's field of that name.
const ShadowedPrefix = "attr_"

// handlerKeys are the top-level keys the handler writes, and slog's names for its built-ins.
var handlerKeys = map[string]bool{
	slog.TimeKey: true, slog.MessageKey: true, KeyTimestamp: true, KeyLevel: true, KeyMessage: true,
	KeyService: true, KeyColdStart: true, KeyRequestID: true, KeyTraceID: true,
}

// TimestampLayout is the timestamp's format: RFC 3339 in UTC with milliseconds, which Lambda's
// log-level filtering requires of a JSON line and CloudWatch Logs Insights parses.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// Redacted replaces every value the redaction rule removes.
const Redacted = "[REDACTED]"

// Environment variables read by LevelFromEnv, first set wins. AWS_LAMBDA_LOG_LEVEL comes first:
// Lambda sets it from the function's ApplicationLogLevel when the log format is JSON, and drops
// JSON lines below that level itself, so a lower level of the function's own would only write
// lines nobody receives. The others serve local runs.
var levelVars = []string{"AWS_LAMBDA_LOG_LEVEL", "SEATSAGA_LOG_LEVEL", "LOG_LEVEL"}

// LevelFromEnv returns the level named by the first of AWS_LAMBDA_LOG_LEVEL, SEATSAGA_LOG_LEVEL
// and LOG_LEVEL that is set (Lambda's TRACE, DEBUG, INFO, WARN, ERROR, FATAL; case-insensitive),
// else info. TRACE is debug, slog's lowest; FATAL is above error, since seatsaga logs nothing
// fatal and Lambda would drop its error lines at that level anyway.
func LevelFromEnv(lookup func(string) (string, bool)) slog.Level {
	for _, name := range levelVars {
		v, ok := lookup(name)
		if !ok || v == "" {
			continue
		}
		v = strings.ToUpper(strings.TrimSpace(v))
		switch v {
		case "TRACE":
			return slog.LevelDebug
		case "FATAL":
			return slog.LevelError + 4
		}
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(v)); err == nil {
			return lvl
		}
	}
	return slog.LevelInfo
}

// Option configures a logger beyond its writer and level.
type Option func(*handler)

// WithService names the service on the lines logged outside any invocation (a cold start's
// failure, for one); an invocation's own service (Invocation.Service) wins on its lines.
func WithService(name string) Option { return func(h *handler) { h.service = name } }

// NewLogger returns a JSON logger writing to w at level, with context ids and redaction.
func NewLogger(w io.Writer, level slog.Leveler, opts ...Option) *slog.Logger {
	return slog.New(NewHandler(w, level, opts...))
}

// FromEnv returns the logger a Lambda main uses: JSON on stdout, level from the environment.
//
// The lines are JSON whatever AWS_LAMBDA_LOG_FORMAT says. Lambda sets it to JSON from the
// function's LoggingConfig (the stack configures every function so), and then filters and
// indexes lines by their level and timestamp; were a function switched to Text, Lambda would
// pass the lines through unchanged, and JSON lines stay queryable by field in Logs Insights
// where text lines would not.
func FromEnv(opts ...Option) *slog.Logger {
	return NewLogger(os.Stdout, LevelFromEnv(os.LookupEnv), opts...)
}

// NewHandler returns the slog.Handler behind NewLogger, for callers that wrap it further.
func NewHandler(w io.Writer, level slog.Leveler, opts ...Option) slog.Handler {
	h := &handler{inner: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr})}
	for _, o := range opts {
		o(h)
	}
	return h
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

// Logger returns base bound to ctx, for code that logs without a context: its lines carry the
// ids in ctx as lines logged through the *Context methods do. A line logged with a context of
// its own takes each id from that context first. A base whose handler is not obs's gets the
// ids as attributes.
func Logger(ctx context.Context, base *slog.Logger) *slog.Logger {
	if ctx == nil {
		return base
	}
	if h, ok := base.Handler().(*handler); ok {
		c := h.clone()
		c.bound = ctx
		return slog.New(c)
	}
	if attrs := idsOf(ctx).attrs(""); len(attrs) > 0 {
		args := make([]any, len(attrs))
		for i, a := range attrs {
			args[i] = a
		}
		return base.With(args...)
	}
	return base
}

// ids are what a line says about where it was logged.
type ids struct {
	inv         Invocation
	invoked     bool   // inv is set
	requestID   string // the Lambda context's, for a handler that never began an invocation
	reservation string
	correlation string
}

func idsOf(ctx context.Context) ids {
	var d ids
	if ctx == nil {
		return d
	}
	d.inv, d.invoked = InvocationFrom(ctx)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		d.requestID = lc.AwsRequestID
	}
	d.reservation, d.correlation = ReservationID(ctx), CorrelationID(ctx)
	return d
}

// or fills what d lacks from other.
func (d ids) or(other ids) ids {
	if !d.invoked {
		d.inv, d.invoked = other.inv, other.invoked
	}
	d.requestID = cmpOr(d.requestID, other.requestID)
	d.reservation = cmpOr(d.reservation, other.reservation)
	d.correlation = cmpOr(d.correlation, other.correlation)
	return d
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// attrs are the handler's own top-level attributes for d: the service (service when no
// invocation names one), the invocation's fields, then the domain's ids.
func (d ids) attrs(service string) []slog.Attr {
	var out []slog.Attr
	if d.invoked && d.inv.Service != "" {
		service = d.inv.Service
	}
	if service != "" {
		out = append(out, slog.String(KeyService, service))
	}
	if d.invoked {
		out = append(out, slog.Bool(KeyColdStart, d.inv.ColdStart))
	}
	if id := cmpOr(d.inv.RequestID, d.requestID); id != "" {
		out = append(out, slog.String(KeyRequestID, id))
	}
	if d.invoked && d.inv.TraceID != "" {
		out = append(out, slog.String(KeyTraceID, d.inv.TraceID))
	}
	if d.reservation != "" {
		out = append(out, slog.String(KeyReservationID, d.reservation))
	}
	if d.correlation != "" {
		out = append(out, slog.String(KeyCorrelationID, d.correlation))
	}
	return out
}

// handler writes each record through the JSON handler inner with the handler's own fields at
// the top level. It keeps its callers' attributes and groups itself rather than handing them to
// inner, so that its fields stay top-level however deep a caller's group is, where a query
// finds them, and so that a caller's attribute cannot repeat one of its keys.
type handler struct {
	inner   slog.Handler
	service string
	// bound is the context Logger bound, for lines logged without one.
	bound context.Context
	// attrs were added before any group; groups are the open groups, outermost first.
	attrs  []slog.Attr
	groups []group
}

// group is an open group and the attributes added inside it.
type group struct {
	name  string
	attrs []slog.Attr
}

func (h *handler) clone() *handler {
	c := *h
	c.attrs = slices.Clip(h.attrs)
	c.groups = slices.Clip(h.groups)
	return &c
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := h.clone()
	if n := len(c.groups); n > 0 {
		c.groups = slices.Clone(c.groups)
		c.groups[n-1].attrs = append(slices.Clip(c.groups[n-1].attrs), attrs...)
	} else {
		c.attrs = append(c.attrs, attrs...)
	}
	return c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := h.clone()
	c.groups = append(c.groups, group{name: name})
	return c
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	d := idsOf(ctx).or(idsOf(h.bound))

	// The caller's attributes: those added before any group and, without a group, the
	// record's at the top level; inside groups, nested as the JSON handler would.
	top := slices.Clone(h.attrs)
	inner := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		inner = append(inner, a)
		return true
	})
	for i := len(h.groups) - 1; i >= 0; i-- {
		g := h.groups[i]
		inner = []slog.Attr{{Key: g.name, Value: slog.GroupValue(append(slices.Clone(g.attrs), inner...)...)}}
	}
	top = append(top, inner...)

	// A domain id the caller logs itself is not repeated from the context.
	for _, a := range top {
		switch a.Key {
		case KeyReservationID:
			d.reservation = ""
		case KeyCorrelationID:
			d.correlation = ""
		}
	}
	for i, a := range top {
		if handlerKeys[a.Key] {
			top[i].Key = ShadowedPrefix + a.Key
		}
	}

	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(d.attrs(h.service)...)
	out.AddAttrs(top...)
	return h.inner.Handle(ctx, out)
}

// replaceAttr renames slog's time and msg to Powertools' timestamp (in UTC, with milliseconds)
// and message, and redacts everything else but the invocation's ids.
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey:
			if a.Value.Kind() == slog.KindTime {
				return slog.String(KeyTimestamp, a.Value.Time().UTC().Format(TimestampLayout))
			}
		case slog.MessageKey:
			a = redactAttr(groups, a)
			a.Key = KeyMessage
			return a
		case KeyRequestID, KeyTraceID:
			// The handler's own (a caller's is renamed): ids, whose digits must not be
			// mistaken for a card number.
			return a
		}
	}
	return redactAttr(groups, a)
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
