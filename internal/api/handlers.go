package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// create handles POST /events/{eventId}/reservations: validate, derive the reservation id,
// answer a replay from DynamoDB, pre-check the catalog, pass the admission gate, start the saga.
// The only Step Functions call is the start.
func (h *Handler) create(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, *Error) {
	customer, ok := customerOf(req)
	if !ok {
		return events.APIGatewayProxyResponse{}, errUnauthorized
	}
	eventID := pathParam(req, "eventId")
	if e := ValidateEventID(eventID); e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	key, _ := header(req, IdempotencyKeyHeader)
	if e := ValidateIdempotencyKey(key); e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	if e := ValidateContentType(headerValues(req, "Content-Type")); e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	body, e := DecodeCreateRequest(req.Body, req.IsBase64Encoded, h.d.MaxSeats)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	id := ReservationID(customer, key)
	hash := RequestHash(customer, eventID, body)
	log := h.d.Logger.With("reservationId", id, "eventId", eventID)

	// A replay must be answered before the pre-check, which would see the seats held by the
	// very reservation being replayed. The catalog reads both at once when it can.
	first, e := h.readFirst(ctx, id, eventID, body.SeatIDs)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	prior, resp, done, e := h.replay(ctx, id, hash, first)
	if done {
		return resp, e
	}
	price, e := h.admit(ctx, id, eventID, body, first.Seats)
	if e != nil {
		return events.APIGatewayProxyResponse{}, h.refused(ctx, log, e)
	}
	admission := reservation.Admission{
		ReservationID: id, CustomerID: customer, EventID: eventID, SeatIDs: body.SeatIDs,
		Amount: price.Amount, Currency: strings.ToUpper(price.Currency), RequestHash: hash, HoldSlot: prior.HoldSlot,
	}
	now := h.d.Now()
	gate, err := h.d.Admissions.Admit(ctx, reservation.AdmissionRequest{
		Admission: admission, LeaseUntil: now.Add(h.d.AdmissionLease),
		// The hold counts from the claim, which follows within the lease.
		MaxActive: h.d.MaxActiveReservations, SlotUntil: now.Add(h.d.AdmissionLease + h.d.Hold),
	})
	if e := h.gateRefusal(ctx, id, err); e != nil {
		return events.APIGatewayProxyResponse{}, h.refused(ctx, log, e)
	}
	admission.HoldSlot = gate.HoldSlot
	switch {
	case gate.Claimed:
		// The saga wrote the reservation after the replay read found none, and its hold may
		// have ended since: the answer is the stored reservation, as a replay's is. Once TTL
		// removed the admission, the reservation is the only record of the request the key
		// was used for, so another request under the key is refused here.
		r, stored, e := h.read(ctx, id)
		if e != nil {
			return events.APIGatewayProxyResponse{}, e
		}
		if stored && !sameRequest(r, eventID, body.SeatIDs) {
			h.d.Metrics.Count("IdempotencyConflicts", 1)
			return events.APIGatewayProxyResponse{}, h.refused(ctx, log, errKeyReused)
		}
		return h.answerRead(r, stored, admission), nil
	case gate.Rejected != nil:
		h.d.Metrics.Count("ReservationReplays", 1)
		return accepted(admissionView(*gate.Rejected)), nil
	}

	correlationID := req.RequestContext.RequestID
	if correlationID == "" {
		correlationID = id
	}
	input, err := json.Marshal(saga.Input{
		ReservationID:  id,
		EventID:        eventID,
		SeatIDs:        body.SeatIDs,
		CustomerID:     customer,
		Amount:         price.Amount,
		Currency:       price.Currency,
		IdempotencyKey: key,
		RequestHash:    hash,
		PaymentMethod:  body.PaymentMethod,
		CorrelationID:  correlationID,
		SlotKey:        slotKey(customer, gate.HoldSlot),
	})
	if err != nil {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "encode execution input", err, "reservationId", id)
	}
	if h.d.Now().Before(first.StartBacklogUntil) {
		// Starts already wait in the queue: this winner joins it rather than spend a call
		// Step Functions would throttle (and jump the queue when it would not).
		return h.queueStart(ctx, admission, string(input), log.With("correlationId", correlationID), "backlog")
	}
	_, err = h.d.SFN.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.d.StateMachineARN),
		Name:            aws.String(id),
		Input:           aws.String(string(input)),
	}, noThrottleRetries)
	var exists *sfntypes.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		// A concurrent retry of the same POST started it (the gate let both through: the
		// admission is the same request's), or this retry follows one whose answer was lost.
		return h.answerStored(ctx, id, admission)
	}
	if throttled(err) || openExecutionsFull(err) {
		// Past the StartExecution quota, or the open-executions one, the winner is queued, not
		// failed: the starter starts the execution from the admission in turn, and the winners
		// admitted meanwhile join the queue without a call of their own.
		resp, e := h.queueStart(ctx, admission, string(input), log.With("correlationId", correlationID), "throttled")
		// After the buyer's durable write, so that a slow mark never delays it.
		if merr := h.d.Admissions.MarkStartBacklog(ctx); merr != nil {
			log.WarnContext(ctx, "api: the start backlog could not be marked; the next winners call StartExecution", "error", merr.Error())
		}
		return resp, e
	}
	if err != nil {
		// The admission stays, and its seats' leases lapse on their own: a retry with the same
		// key passes the gate again and starts the execution.
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "start execution", err, "reservationId", id)
	}
	h.d.Metrics.Count("ReservationsStarted", 1)
	log.InfoContext(ctx, "api: saga started", "seats", len(body.SeatIDs), "amount", price.Amount, "currency", price.Currency,
		"correlationId", correlationID)
	return accepted(ReservationStatus{ReservationID: id, Status: StatusPending, StatusURL: StatusURL(id)}), nil
}

// refused counts and logs a buyer turned away before any execution started.
func (h *Handler) refused(ctx context.Context, log *slog.Logger, e *Error) *Error {
	h.d.Metrics.Count("AdmissionRefused", 1, metrics.Dim{Name: "code", Value: e.Code})
	log.InfoContext(ctx, "api: admission refused", "code", e.Code)
	return e
}

// gateRefusal turns the gate's refusal into the client's answer, or nil when it let the buyer
// through (or found the request answered already).
func (h *Handler) gateRefusal(ctx context.Context, id string, err error) *Error {
	var (
		su *reservation.SeatUnavailable
		ic *reservation.IdempotencyConflict
		ve *reservation.ValidationError
		hl *reservation.HoldLimit
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &su):
		return conflict("seats_unavailable", "seats already taken: "+strings.Join(quoteAll(su.SeatIDs), ", "))
	case errors.As(err, &ic):
		h.d.Metrics.Count("IdempotencyConflicts", 1)
		return errKeyReused
	case errors.As(err, &ve):
		return badRequest("unknown_seat", ve.Error())
	case errors.As(err, &hl):
		return conflict("hold_limit", fmt.Sprintf("you already have %d reservations in progress, the most one customer may hold at once; "+
			"finish paying for one or cancel it, then try again", hl.Limit))
	}
	return h.serverError(ctx, "admission gate", err, "reservationId", id)
}

// FirstRead is what a POST reads before it decides anything: the reservation's admission
// (Found false when there is none) and, when the catalog read them in the same request, the
// seats of its request (nil otherwise) and until when starts are known to wait in the queue.
type FirstRead struct {
	Admission reservation.Admission
	Found     bool
	Seats     map[string]CatalogSeat
	// StartBacklogUntil: while it is in the future, Step Functions' start quota is spent and
	// starts wait in the queue, so a winner joins it without a StartExecution call.
	StartBacklogUntil time.Time
}

// readFirst reads the admission, with the seats in the same request when the catalog can.
func (h *Handler) readFirst(ctx context.Context, id, eventID string, seatIDs []string) (FirstRead, *Error) {
	if c, ok := h.d.Seats.(AdmissionAndSeats); ok {
		first, err := c.AdmissionAndSeats(ctx, id, eventID, seatIDs)
		if err == nil {
			return first, nil
		}
		if !errors.Is(err, errNoAdmissionAndSeats) {
			return FirstRead{}, h.serverError(ctx, "read admission and seats", err, "reservationId", id)
		}
	}
	a, found, err := h.d.Admissions.GetAdmission(ctx, id)
	if err != nil {
		return FirstRead{}, h.serverError(ctx, "read admission", err, "reservationId", id)
	}
	return FirstRead{Admission: a, Found: found}, nil
}

// replay answers a POST whose reservation id the gate admitted before, from DynamoDB: the same
// request gets the same reservation back, another request under the same key is a conflict.
// done is false when the request must go through the gate again: it was admitted, but the
// saga has not written the reservation, so its start may have failed; prior is then its
// admission (the zero one, HoldSlot -1, when there is none).
func (h *Handler) replay(ctx context.Context, id, hash string, first FirstRead) (prior reservation.Admission, resp events.APIGatewayProxyResponse, done bool, e *Error) {
	none := reservation.Admission{HoldSlot: -1}
	a := first.Admission
	if !first.Found {
		return none, resp, false, nil
	}
	if a.RequestHash != hash {
		h.d.Metrics.Count("IdempotencyConflicts", 1)
		return none, resp, true, errKeyReused
	}
	if a.State != reservation.Admitted {
		// Turned away by the claim, or canceled by the customer: decided, and final.
		h.d.Metrics.Count("ReservationReplays", 1)
		return none, accepted(admissionView(a)), true, nil
	}
	if a.StartQueued {
		// The starter starts it; passing the gate again could only lose a seat the queued
		// start still leases, or answer 409 for a buyer who is in fact waiting.
		resp, e := h.answerStored(ctx, id, a)
		return none, resp, true, e
	}
	r, stored, e := h.read(ctx, id)
	if e != nil {
		return none, resp, true, e
	}
	if !stored {
		return a, resp, false, nil
	}
	h.d.Metrics.Count("ReservationReplays", 1)
	return none, accepted(viewOf(r)), true, nil
}

// answerDecided answers a request the saga decided after the api last read its admission:
// from the reservation once the Claim step wrote it, else from the admission as it is now.
func (h *Handler) answerDecided(ctx context.Context, id string) (events.APIGatewayProxyResponse, *Error) {
	a, found, err := h.d.Admissions.GetAdmission(ctx, id)
	if err != nil {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "read admission", err, "reservationId", id)
	}
	if !found {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "read admission", errors.New("the admission is gone"), "reservationId", id)
	}
	if a.State != reservation.Admitted {
		h.d.Metrics.Count("ReservationReplays", 1)
		return accepted(admissionView(a)), nil
	}
	return h.answerStored(ctx, id, a)
}

// answerStored answers a request the saga is already handling: the reservation once the Claim
// step wrote it, else the admission's PENDING view.
func (h *Handler) answerStored(ctx context.Context, id string, a reservation.Admission) (events.APIGatewayProxyResponse, *Error) {
	r, stored, e := h.read(ctx, id)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	return h.answerRead(r, stored, a), nil
}

// answerRead is answerStored's answer once the reservation was read: r when stored, else a's
// PENDING view.
func (h *Handler) answerRead(r reservation.Reservation, stored bool, a reservation.Admission) events.APIGatewayProxyResponse {
	h.d.Metrics.Count("ReservationReplays", 1)
	if stored {
		return accepted(viewOf(r))
	}
	a.State = reservation.Admitted
	return accepted(admissionView(a))
}

// sameRequest reports whether r was claimed for the event and seats a request names: what of
// the request a reservation records.
func sameRequest(r reservation.Reservation, eventID string, seatIDs []string) bool {
	have, want := slices.Clone(r.SeatIDs), slices.Clone(seatIDs)
	slices.Sort(have)
	slices.Sort(want)
	return r.EventID == eventID && slices.Equal(have, want)
}

// queueStart queues the start of an admitted winner's execution for the starter and answers
// 202 queued; why says what sent it there: "throttled" (Step Functions refused the start) or
// "backlog" (starts already wait).
func (h *Handler) queueStart(ctx context.Context, admission reservation.Admission, input string, log *slog.Logger, why string) (events.APIGatewayProxyResponse, *Error) {
	id := admission.ReservationID
	queuedAt := h.d.Now()
	qerr := h.d.Admissions.QueueStart(ctx, admission, input, queuedAt.Add(QueuedLease), queuedAt.Add(QueuedLease+h.d.Hold))
	if errors.Is(qerr, inventory.ErrNotAdmitted) {
		// The start took effect before (its answer was lost, this retry was throttled) and
		// the saga already answered, or the customer canceled: the buyer is told what was
		// decided.
		return h.answerDecided(ctx, id)
	}
	if qerr != nil {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "queue start", qerr, "reservationId", id)
	}
	h.d.Metrics.Count("ReservationsQueued", 1, metrics.Dim{Name: "reason", Value: why})
	log.InfoContext(ctx, "api: start queued for the starter", "reason", why)
	admission.State, admission.StartQueued = reservation.Admitted, true
	return accepted(admissionView(admission)), nil
}

// QueuedLease is how long a queued winner keeps the seats the gate let it through for: as long as
// the starter's event source mapping keeps trying to start it (deploy.Delivery's
// StarterMaxRecordAge), after which the start goes to StarterDLQ.
const QueuedLease = time.Hour

// noThrottleRetries makes a throttled start come back at once: the buyer is queued instead of
// waiting out the SDK's backoff on a quota a burst has spent. What else the SDK retries it
// still retries: a start whose answer was lost (a broken connection, a 5xx) is sent again
// under the same name, which Step Functions answers with the execution the first attempt
// started, or ExecutionAlreadyExists once that one ended.
func noThrottleRetries(o *sfn.Options) { o.Retryer = startRetryer }

var startRetryer = retry.NewStandard(func(o *retry.StandardOptions) {
	o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
		if throttled(err) {
			return aws.FalseTernary
		}
		return aws.UnknownTernary
	})}, o.Retryables...)
})

// openExecutionsFull reports Step Functions refusing a start because the account runs as many
// executions as its quota allows: room comes back as executions close.
func openExecutionsFull(err error) bool {
	var full *sfntypes.ExecutionLimitExceeded
	return errors.As(err, &full)
}

var errKeyReused = conflict("idempotency_key_reused", "this Idempotency-Key was already used for a different request")

func accepted(v ReservationStatus) events.APIGatewayProxyResponse {
	resp := jsonResponse(http.StatusAccepted, v)
	resp.Headers["Location"] = v.StatusURL
	return resp
}

// Price is what the server charges for a reservation: the sum of its seats' prices.
type Price struct {
	Amount int64
	// Currency is ISO 4217 in lower case, as the API speaks it.
	Currency string
}

// admit is the catalog pre-check before the gate: the event exists and is on sale, every seat
// exists and has a price in one currency, the client's stated price (if any) is the server's,
// and no seat is visibly taken by someone else. It returns the server's price of the seats,
// which is what the saga charges. It reads eventually consistent data: a false "available" is
// caught by the gate's conditional write; a false "taken" (a seat released a moment ago) is a
// 409 the client may retry. Prices are read from the same items; they are written with the seat
// and never change, so a stale read still sees the right price.
func (h *Handler) admit(ctx context.Context, id, eventID string, body CreateRequest, seats map[string]CatalogSeat) (Price, *Error) {
	if seats == nil {
		var err error
		if seats, err = h.d.Seats.Seats(ctx, eventID, body.SeatIDs); err != nil {
			return Price{}, h.serverError(ctx, "read seats", err, "reservationId", id)
		}
	}
	if len(seats) == 0 {
		exists, err := h.d.Seats.EventExists(ctx, eventID)
		if err != nil {
			return Price{}, h.serverError(ctx, "read event", err, "reservationId", id)
		}
		if !exists {
			return Price{}, &Error{Status: http.StatusNotFound, Code: "event_not_found", Message: fmt.Sprintf("event %q does not exist", eventID)}
		}
	}
	var unknown []string
	for _, s := range body.SeatIDs {
		if _, ok := seats[s]; !ok {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) > 0 {
		return Price{}, badRequest("unknown_seat", fmt.Sprintf("event %q has no seat %s", eventID, strings.Join(quoteAll(unknown), ", ")))
	}
	now := h.d.Now()
	var (
		taken, unpriced []string
		price           Price
		currencies      = map[string]bool{}
	)
	for _, s := range body.SeatIDs {
		cs := seats[s]
		if !cs.OnSaleFrom.IsZero() && now.Before(cs.OnSaleFrom) || !cs.OnSaleUntil.IsZero() && !now.Before(cs.OnSaleUntil) {
			return Price{}, conflict("not_on_sale", fmt.Sprintf("event %q is not on sale now", eventID))
		}
		if cs.Seat.PriceMinor <= 0 || cs.Seat.Currency == "" {
			unpriced = append(unpriced, s)
		} else {
			price.Amount += cs.Seat.PriceMinor
			price.Currency = strings.ToLower(cs.Seat.Currency)
			currencies[price.Currency] = true
		}
		// A seat leased to another buyer a moment ago is taken too: refusing here saves the
		// gate's transaction, which would refuse it anyway.
		leased := cs.AdmittedBy != "" && cs.AdmittedBy != id && now.Before(cs.AdmittedUntil)
		if (!cs.Seat.ClaimableAt(now) && cs.Seat.ReservationID != id) || leased {
			taken = append(taken, s)
		}
	}
	switch {
	case len(unpriced) > 0:
		return Price{}, conflict("seat_not_priced", fmt.Sprintf("event %q is not on sale for seat %s: it has no price",
			eventID, strings.Join(quoteAll(unpriced), ", ")))
	case len(currencies) > 1:
		return Price{}, &Error{Status: http.StatusUnprocessableEntity, Code: "mixed_currency",
			Message: fmt.Sprintf("the seats are priced in %s; one reservation takes seats of one currency", strings.Join(keys(currencies), " and "))}
	case price.Amount > MaxAmount:
		return Price{}, &Error{Status: http.StatusUnprocessableEntity, Code: "amount_too_large",
			Message: fmt.Sprintf("the seats cost %d minor units of %s, more than one reservation may charge (%d)", price.Amount, price.Currency, MaxAmount)}
	case body.Amount != nil && *body.Amount != price.Amount, body.Currency != "" && body.Currency != price.Currency:
		e := conflict("price_changed", fmt.Sprintf("the seats cost %d minor units of %s; the request expected %s",
			price.Amount, price.Currency, stated(body)))
		e.Amount, e.Currency = price.Amount, price.Currency
		return Price{}, e
	case len(taken) > 0:
		return Price{}, conflict("seats_unavailable", "seats already taken: "+strings.Join(quoteAll(taken), ", "))
	}
	return price, nil
}

// stated renders the price a client stated, for a price_changed message.
func stated(body CreateRequest) string {
	amount, currency := "any amount", "any currency"
	if body.Amount != nil {
		amount = fmt.Sprintf("%d minor units", *body.Amount)
	}
	if body.Currency != "" {
		currency = body.Currency
	}
	return amount + " of " + currency
}

// get handles GET /reservations/{id} from DynamoDB alone: the reservation, or its admission
// while the saga has not written it.
func (h *Handler) get(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, *Error) {
	_, r, a, e := h.lookup(ctx, req)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	if a != nil {
		return jsonResponse(http.StatusOK, admissionView(*a)), nil
	}
	return jsonResponse(http.StatusOK, h.withPayment(ctx, r, viewOf(r))), nil
}

// lookup finds the caller's reservation named by the path: the stored one, or (a non-nil) the
// admission of one the Claim step has not written. Someone else's reservation is a 404, like a
// missing one, so ids cannot be probed.
func (h *Handler) lookup(ctx context.Context, req events.APIGatewayProxyRequest) (string, reservation.Reservation, *reservation.Admission, *Error) {
	customer, ok := customerOf(req)
	if !ok {
		return "", reservation.Reservation{}, nil, errUnauthorized
	}
	id := pathParam(req, "id")
	if !ValidReservationID(id) {
		return "", reservation.Reservation{}, nil, notFound("no such reservation")
	}
	r, found, e := h.read(ctx, id)
	if e != nil {
		return "", reservation.Reservation{}, nil, e
	}
	if found {
		if r.CustomerID != customer {
			return "", reservation.Reservation{}, nil, notFound("no such reservation")
		}
		return id, r, nil, nil
	}
	a, found, err := h.d.Admissions.GetAdmission(ctx, id)
	if err != nil {
		return "", reservation.Reservation{}, nil, h.serverError(ctx, "read admission", err, "reservationId", id)
	}
	if !found || a.CustomerID != customer {
		return "", reservation.Reservation{}, nil, notFound("no such reservation")
	}
	return id, reservation.Reservation{}, &a, nil
}

// admissionView is the view of a reservation the Claim step has not written: PENDING while the
// saga has not decided, REJECTED once its claim turned the buyer away, RELEASED with the cancel
// recorded once the customer canceled (nothing was held either way).
func admissionView(a reservation.Admission) ReservationStatus {
	v := ReservationStatus{ReservationID: a.ReservationID, Status: StatusPending, EventID: a.EventID,
		SeatIDs: a.SeatIDs, Amount: a.Amount, Currency: strings.ToLower(a.Currency), StatusURL: StatusURL(a.ReservationID)}
	switch a.State {
	case reservation.AdmissionRejected:
		v.Status = StatusRejected
	case reservation.AdmissionCanceled:
		v.Status, v.CancelRequested, v.Money = string(reservation.Released), true, MoneyNone
	}
	v.Queued = a.StartQueued && a.State == reservation.Admitted
	return v
}

// withPayment adds the client secret while the buyer still has to act on the payment.
func (h *Handler) withPayment(ctx context.Context, r reservation.Reservation, v ReservationStatus) ReservationStatus {
	// A cancelled reservation's payment is voided: handing out the secret would only invite an
	// authorization nobody will capture.
	if h.d.Payments == nil || r.PaymentIntentID == "" || r.Inventory != reservation.PaymentPending || r.CustomerCanceled ||
		(r.Payment != reservation.Authorizing && r.Payment != reservation.NotStarted) {
		return v
	}
	a, err := h.d.Payments.Retrieve(ctx, r.PaymentIntentID)
	if err != nil {
		// The status is still worth answering; the client polls again.
		h.d.Logger.WarnContext(ctx, "api: retrieve payment for status", "reservationId", r.ID, "error", err.Error())
		return v
	}
	if a.State == payment.StateAuthorizing {
		v.ClientSecret = a.ClientSecret
		v.NextAction = a.NextAction
	}
	return v
}

func (h *Handler) read(ctx context.Context, id string) (reservation.Reservation, bool, *Error) {
	r, err := h.d.Reservations.Get(ctx, id)
	var nf *reservation.NotFound
	if errors.As(err, &nf) {
		return reservation.Reservation{}, false, nil
	}
	if err != nil {
		return reservation.Reservation{}, false, h.serverError(ctx, "read reservation", err, "reservationId", id)
	}
	return r, true, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// slotKey names the hold slot the gate gave the customer's reservation; "" without a cap.
func slotKey(customerID string, slot int) string {
	if slot < 0 {
		return ""
	}
	return reservation.HoldSlotKey(customerID, slot)
}
