// Package api is the reservation API behind API Gateway (REST API, Lambda proxy integration,
// Cognito/JWT authorizer):
//
//	POST   /events/{eventId}/reservations   Idempotency-Key header; starts the saga
//	GET    /reservations/{id}               the owner's view of a reservation
//	DELETE /reservations/{id}               the owner cancels anything not yet sold
//
// The customer is always the authorizer's claims.sub, never anything in the body. A
// reservation's id is derived from the customer and the Idempotency-Key, and names the Step
// Functions execution, so a retried POST finds the same reservation and cannot start a second
// saga. Every bad input is refused with a 4xx JSON body {code, message} before anything is
// written or started.
//
// Price: the server prices every reservation. The amount charged is the sum of the requested
// seats' prices (priceMinor and currency on each Seats item, written by inventory.CreateSeats);
// the body's amount and currency are optional and, when present, must equal the server's
// figures. The contract of POST, beyond input validation:
//
//	409 seat_not_priced   a requested seat has no price: the event is not on sale for it
//	422 mixed_currency    the requested seats are priced in more than one currency
//	422 amount_too_large  the seats together cost more than MaxAmount
//	409 seats_unavailable a requested seat is held, sold, or leased by the admission gate to
//	                      another buyer a moment ago; nothing was written
//	409 hold_limit        the customer has as many reservations in progress as the cap allows
//	409 price_changed     the stated amount or currency differs from the server's price; the
//	                      error body carries the server's "amount" and "currency" so a client
//	                      showing a stale price can show the right one and ask again
//
// price_changed is a 409 (the request was well formed but conflicts with the catalog's current
// state), like seats_unavailable. Currencies go out in lower case (Stripe's form); seats and
// reservations store them in upper case (ISO 4217's form).
//
// Cancel: DELETE records the cancel on the reservation (a guarded write) before it answers,
// and only then tells a saga waiting for the payment (SendTaskFailure CustomerCanceled), best
// effort: the saga's confirm and capture conditions, its reconciliation and the sweeper act on
// the record, so a wait that already closed or a Step Functions outage changes nothing about
// the answer. Repeating it is harmless and answers the same. The contract of DELETE:
//
//	202 cancelRequested       the cancel is recorded; the saga still has to settle the money
//	                          or give the seats back
//	200 cancelRequested       recorded, and already settled: seats RELEASED, no money held
//	409 already_confirmed     the seats are sold, nothing was written; "money" is captured or
//	                          being_captured
//	200 cancelRequested       before the Claim step held anything (a queued start, or a saga
//	                          that has not claimed yet): the admission is CANCELED, the claim
//	                          refuses to hold for it, the seats are on sale again; the view is
//	                          RELEASED with money none. Once the claim turned the buyer away,
//	                          200 with the REJECTED view
//	404 not_found             no such reservation, or someone else's
//	503 unavailable           the reservation kept changing under the write, or a dependency is
//	                          busy; retry
//
// The "money" field of a reservation with a recorded cancel (on GET too) is derived from the
// stored states: none (nothing was charged or held), will_be_voided (an authorization or a
// payment still authorizing: the saga voids it), voided, reconciling (the provider's answer is
// awaited: money found held is voided, money found taken refunded), will_be_refunded (money
// taken for seats being given back), refund_pending, refunded.
//
// Events catalog: seatsaga has no Events table. An event exists iff the Seats table has a seat
// for it, and it is on sale unless the requested seats carry onSaleFrom/onSaleUntil bounds that
// exclude now (see DynamoCatalog).
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Routes as API Gateway names its resources.
const (
	ResourceCreate      = "/events/{eventId}/reservations"
	ResourceReservation = "/reservations/{id}"
)

// IdempotencyKeyHeader is the header that makes POST safe to retry.
const IdempotencyKeyHeader = "Idempotency-Key"

// Status values the API reports besides the inventory states of internal/reservation.
const (
	// StatusPending: the saga started but the Claim step has not written the reservation yet.
	StatusPending = "PENDING"
	// StatusRejected: the saga ended without ever holding seats (the buyer lost the race).
	StatusRejected = "REJECTED"
)

// Deps is what the handler needs. Reservations, Admissions, Seats and SFN are required.
type Deps struct {
	Reservations ReservationStore
	// Admissions is the admission gate and its records (*inventory.Store).
	Admissions Admissions
	// AdmissionLease is how long the gate keeps other buyers off the seats of a buyer it let
	// through, when no claim follows (config.DefaultAdmissionLease when zero): long enough for
	// Step Functions to start the execution and run its claim, short enough that a buyer whose
	// start failed keeps the seats from no one for long.
	AdmissionLease time.Duration
	// MaxActiveReservations caps a customer's reservations in progress at once (no cap when
	// zero); Hold is how long a claim holds seats, which bounds how long one takes a place
	// under the cap.
	MaxActiveReservations int
	Hold                  time.Duration
	Seats                 SeatCatalog
	SFN                   StepFunctions
	// Payments, when set, lets GET return the PaymentIntent's client secret to its owner.
	Payments PaymentReader
	// StateMachineARN is the saga's state machine; executions are named by reservation id.
	StateMachineARN string
	// MaxSeats bounds seats per reservation (config MaxSeats).
	MaxSeats int
	// AllowedOrigins are the browser origins whose pages may read the answers ("*" alone:
	// any); API Gateway answers the preflight, the function every actual request.
	AllowedOrigins []string
	Now            func() time.Time
	Logger         *slog.Logger
	Metrics        metrics.Recorder
}

// Handler serves the API Gateway proxy events of the reservation API.
type Handler struct {
	d Deps
}

// New checks deps and returns the handler.
func New(d Deps) (*Handler, error) {
	switch {
	case d.Reservations == nil:
		return nil, errors.New("api: Reservations is required")
	case d.Admissions == nil:
		return nil, errors.New("api: Admissions is required")
	case d.Seats == nil:
		return nil, errors.New("api: Seats is required")
	case d.SFN == nil:
		return nil, errors.New("api: SFN is required")
	case !strings.Contains(d.StateMachineARN, ":stateMachine:"):
		return nil, fmt.Errorf("api: StateMachineARN %q is not a state machine ARN", d.StateMachineARN)
	}
	if d.MaxSeats <= 0 {
		d.MaxSeats = 10
	}
	if d.AdmissionLease <= 0 {
		d.AdmissionLease = config.DefaultAdmissionLease
	}
	if d.Hold <= 0 {
		d.Hold = config.DefaultHold
	}
	d.MaxSeats = min(d.MaxSeats, reservation.MaxSeatsPerTransaction)
	d.Now, d.Logger, d.Metrics = obs.Defaults(d.Now, d.Logger, d.Metrics)
	d.SFN = throttleCounted{sfn: d.SFN, m: d.Metrics}
	return &Handler{d: d}, nil
}

// Handle routes one request. It returns an error only for nothing: every failure becomes a
// JSON response, so API Gateway never answers a bare 502.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	route := routeOf(req)
	resp, e := h.dispatch(ctx, route, req)
	if e != nil {
		resp = errorResponse(e)
	}
	code := ""
	if e != nil {
		code = e.Code
	}
	h.d.Metrics.Count("ApiResponses", 1, metrics.Dim{Name: "route", Value: route}, metrics.Dim{Name: "status", Value: statusClass(resp.StatusCode)})
	level := slog.LevelInfo
	if resp.StatusCode >= 500 {
		level = slog.LevelError
	}
	h.d.Logger.Log(ctx, level, "api: request", "route", route, "status", resp.StatusCode, "code", code,
		// The Lambda request id is already on every line (obs.KeyRequestID); this is API
		// Gateway's own, under a name of its own so neither hides the other.
		"apiRequestId", req.RequestContext.RequestID)
	return h.withCORS(req, resp), nil
}

// withCORS lets a page of an allowed origin read the answer: a browser that sent the preflight
// still refuses the page the response unless it names the origin too.
func (h *Handler) withCORS(req events.APIGatewayProxyRequest, resp events.APIGatewayProxyResponse) events.APIGatewayProxyResponse {
	origin := ""
	for k, v := range req.Headers {
		if strings.EqualFold(k, "Origin") {
			origin = v
		}
	}
	if origin == "" || !(slices.Contains(h.d.AllowedOrigins, origin) || slices.Equal(h.d.AllowedOrigins, []string{"*"})) {
		return resp
	}
	if resp.Headers == nil {
		resp.Headers = map[string]string{}
	}
	resp.Headers["Access-Control-Allow-Origin"] = origin
	resp.Headers["Vary"] = "Origin"
	resp.Headers["Access-Control-Expose-Headers"] = "Retry-After, Location"
	return resp
}

func (h *Handler) dispatch(ctx context.Context, route string, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, *Error) {
	switch route {
	case "POST " + ResourceCreate:
		return h.create(ctx, req)
	case "GET " + ResourceReservation:
		return h.get(ctx, req)
	case "DELETE " + ResourceReservation:
		return h.cancel(ctx, req)
	}
	if r := strings.SplitN(route, " ", 2); len(r) == 2 && (r[1] == ResourceCreate || r[1] == ResourceReservation) {
		return events.APIGatewayProxyResponse{}, &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: "method " + r[0] + " is not allowed here"}
	}
	return events.APIGatewayProxyResponse{}, notFound("no such resource")
}

// routeOf names the route: API Gateway's resource template when it sent one, else the template
// matched from the path (for callers that fill only Path and PathParameters).
func routeOf(req events.APIGatewayProxyRequest) string {
	method := strings.ToUpper(req.HTTPMethod)
	if req.Resource != "" {
		return method + " " + req.Resource
	}
	parts := strings.Split(strings.Trim(req.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "events" && parts[2] == "reservations":
		return method + " " + ResourceCreate
	case len(parts) == 2 && parts[0] == "reservations":
		return method + " " + ResourceReservation
	}
	return method + " " + req.Path
}

func pathParam(req events.APIGatewayProxyRequest, name string) string {
	if v, ok := req.PathParameters[name]; ok {
		return v
	}
	// Fall back to the path for callers that do not fill PathParameters.
	parts := strings.Split(strings.Trim(req.Path, "/"), "/")
	switch name {
	case "eventId":
		if len(parts) == 3 && parts[0] == "events" {
			return parts[1]
		}
	case "id":
		if len(parts) == 2 && parts[0] == "reservations" {
			return parts[1]
		}
	}
	return ""
}

// customerOf reads the authenticated customer from the authorizer's claims. API Gateway's
// Cognito authorizer passes claims as an object; in Lambda's JSON it arrives as map[string]any.
func customerOf(req events.APIGatewayProxyRequest) (string, bool) {
	var sub string
	switch c := req.RequestContext.Authorizer["claims"].(type) {
	case map[string]any:
		sub, _ = c["sub"].(string)
	case map[string]string:
		sub = c["sub"]
	}
	if sub == "" || len(sub) > 128 || !printable(sub) || strings.Contains(sub, "#") {
		return "", false
	}
	return sub, true
}

// header returns a header's value whatever its case.
func header(req events.APIGatewayProxyRequest, name string) (string, bool) {
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	for k, vs := range req.MultiValueHeaders {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0], true
		}
	}
	return "", false
}

// headerValues returns every value of a header whatever its case: API Gateway's proxy event
// carries all of them in MultiValueHeaders and only the last in Headers.
func headerValues(req events.APIGatewayProxyRequest, name string) []string {
	var out []string
	for k, vs := range req.MultiValueHeaders {
		if strings.EqualFold(k, name) {
			out = append(out, vs...)
		}
	}
	if len(out) > 0 {
		return out
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			out = append(out, v)
		}
	}
	return out
}

// ReservationStatus is the JSON a client sees for a reservation.
type ReservationStatus struct {
	ReservationID string `json:"reservationId"`
	// Status is PENDING, REJECTED, or the reservation's inventory state (HELD,
	// PAYMENT_PENDING, CONFIRMED, RELEASED).
	Status        string     `json:"status"`
	PaymentState  string     `json:"paymentState,omitempty"`
	Outcome       string     `json:"outcome,omitempty"`
	EventID       string     `json:"eventId,omitempty"`
	SeatIDs       []string   `json:"seatIds,omitempty"`
	Amount        int64      `json:"amount,omitempty"`
	Currency      string     `json:"currency,omitempty"`
	HoldExpiresAt *time.Time `json:"holdExpiresAt,omitempty"`
	// PaymentIntentID and ClientSecret are what the buyer's browser needs to complete the
	// payment (e.g. 3-D Secure with Stripe.js). The secret goes only to the owner.
	PaymentIntentID string `json:"paymentIntentId,omitempty"`
	ClientSecret    string `json:"clientSecret,omitempty"`
	NextAction      string `json:"nextAction,omitempty"`
	Version         int64  `json:"version,omitempty"`
	// CancelRequested means only that the customer's cancel is recorded: from then on nothing
	// confirms, reacquires or captures the reservation. Money says what that does to the
	// money; both are set whenever a cancel is recorded, on GET as on DELETE.
	CancelRequested bool   `json:"cancelRequested,omitempty"`
	Money           string `json:"money,omitempty"`
	// Queued: the buyer passed the gate but Step Functions could not start the saga at once;
	// it starts in turn (status stays PENDING until the claim), and the hold counts from the
	// claim.
	Queued    bool   `json:"queued,omitempty"`
	StatusURL string `json:"statusUrl"`
}

// StatusURL is where a reservation's status is read.
func StatusURL(reservationID string) string { return "/reservations/" + reservationID }

func viewOf(r reservation.Reservation) ReservationStatus {
	v := ReservationStatus{
		ReservationID:   r.ID,
		Status:          string(r.Inventory),
		PaymentState:    string(r.Payment),
		Outcome:         string(r.Outcome),
		EventID:         r.EventID,
		SeatIDs:         r.SeatIDs,
		Amount:          r.Amount,
		Currency:        strings.ToLower(r.Currency),
		PaymentIntentID: r.PaymentIntentID,
		Version:         r.Version,
		StatusURL:       StatusURL(r.ID),
	}
	if !r.HoldExpiresAt.IsZero() {
		t := r.HoldExpiresAt.UTC()
		v.HoldExpiresAt = &t
	}
	if r.CustomerCanceled {
		v.CancelRequested, v.Money = true, moneyOf(r)
	}
	return v
}

// serverError logs err and returns the client-facing error: 429 for throttling (the buyer
// retries after Retry-After, as API Gateway's own throttling asks), 503 for other failures a
// retry may cure, 500 otherwise.
func (h *Handler) serverError(ctx context.Context, what string, err error, attrs ...any) *Error {
	h.d.Logger.ErrorContext(ctx, "api: "+what, append(attrs, "error", err.Error())...)
	switch {
	case throttled(err):
		return errThrottled
	case retryable(err):
		return errUnavailable
	}
	return errInternal
}

// throttled reports that an AWS service refused a call for its rate (after the SDK's retries,
// or the store's own, inventory.ErrThrottled).
func throttled(err error) bool {
	if errors.Is(err, inventory.ErrThrottled) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "Throttling", "TooManyRequestsException", "ProvisionedThroughputExceededException",
			"RequestLimitExceeded":
			return true
		}
	}
	return false
}

// retryable reports other failures a client should simply retry: an overloaded or unavailable
// service, a transaction conflict, a timeout.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ServiceUnavailable", "ServiceUnavailableException", "TransactionConflictException",
			"InternalServerError", "InternalServerErrorException":
			return true
		}
	}
	if errors.Is(err, inventory.ErrTooManyConflicts) {
		return true
	}
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}

func statusClass(code int) string {
	return fmt.Sprintf("%dxx", code/100)
}
