package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// create handles POST /events/{eventId}/reservations: validate, derive the reservation id,
// answer a replay from the existing execution, pre-check admission, start the saga.
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
	body, e := DecodeCreateRequest(req.Body, req.IsBase64Encoded, h.d.MaxSeats)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	id := ReservationID(customer, key)
	hash := RequestHash(customer, eventID, body)
	log := h.d.Logger.With("reservationId", id, "eventId", eventID)

	// A replay must be answered before the pre-check, which would see the seats held by the
	// very reservation being replayed.
	ex, err := h.describe(ctx, id)
	if err != nil {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "describe execution", err, "reservationId", id)
	}
	if ex != nil {
		return h.replay(ctx, id, hash, ex)
	}
	if e := h.admit(ctx, id, eventID, body); e != nil {
		h.d.Metrics.Count("AdmissionRefused", 1, metrics.Dim{Name: "code", Value: e.Code})
		log.InfoContext(ctx, "api: admission refused", "code", e.Code)
		return events.APIGatewayProxyResponse{}, e
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
		Amount:         body.Amount,
		Currency:       body.Currency,
		IdempotencyKey: key,
		RequestHash:    hash,
		PaymentMethod:  body.PaymentMethod,
		CorrelationID:  correlationID,
	})
	if err != nil {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "encode execution input", err, "reservationId", id)
	}
	_, err = h.d.SFN.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.d.StateMachineARN),
		Name:            aws.String(id),
		Input:           aws.String(string(input)),
	})
	var exists *sfntypes.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		// A concurrent retry of the same POST won the start; answer as a replay.
		ex, derr := h.describe(ctx, id)
		if derr != nil || ex == nil {
			return events.APIGatewayProxyResponse{}, h.serverError(ctx, "describe execution after conflict", errors.Join(err, derr), "reservationId", id)
		}
		return h.replay(ctx, id, hash, ex)
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "start execution", err, "reservationId", id)
	}
	h.d.Metrics.Count("ReservationsStarted", 1)
	log.InfoContext(ctx, "api: saga started", "seats", len(body.SeatIDs), "correlationId", correlationID)
	return accepted(ReservationStatus{ReservationID: id, Status: StatusPending, StatusURL: StatusURL(id)}), nil
}

// replay answers a POST whose reservation id already names an execution: the same request
// gets the same reservation back, another request under the same key is a conflict.
func (h *Handler) replay(ctx context.Context, id, hash string, ex *execution) (events.APIGatewayProxyResponse, *Error) {
	if ex.input.RequestHash != hash {
		h.d.Metrics.Count("IdempotencyConflicts", 1)
		return events.APIGatewayProxyResponse{}, conflict("idempotency_key_reused",
			"this Idempotency-Key was already used for a different request")
	}
	h.d.Metrics.Count("ReservationReplays", 1)
	view, e := h.status(ctx, id, ex)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	return accepted(view), nil
}

func accepted(v ReservationStatus) events.APIGatewayProxyResponse {
	resp := jsonResponse(http.StatusAccepted, v)
	resp.Headers["Location"] = v.StatusURL
	return resp
}

// admit is the admission pre-check: the event exists and is on sale, every seat exists, the
// price matches when seats carry one, and no seat is visibly taken by someone else. It reads
// eventually consistent data: a false "available" costs one execution that the Claim step
// rejects; a false "taken" (a seat released a moment ago) is a 409 the client may retry.
func (h *Handler) admit(ctx context.Context, id, eventID string, body CreateRequest) *Error {
	seats, err := h.d.Seats.Seats(ctx, eventID, body.SeatIDs)
	if err != nil {
		return h.serverError(ctx, "read seats", err, "reservationId", id)
	}
	if len(seats) == 0 {
		exists, err := h.d.Seats.EventExists(ctx, eventID)
		if err != nil {
			return h.serverError(ctx, "read event", err, "reservationId", id)
		}
		if !exists {
			return &Error{Status: http.StatusNotFound, Code: "event_not_found", Message: fmt.Sprintf("event %q does not exist", eventID)}
		}
	}
	var unknown []string
	for _, s := range body.SeatIDs {
		if _, ok := seats[s]; !ok {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) > 0 {
		return badRequest("unknown_seat", fmt.Sprintf("event %q has no seat %s", eventID, strings.Join(quoteAll(unknown), ", ")))
	}
	now := h.d.Now()
	var (
		taken      []string
		price      int64
		priced     = true
		currencies = map[string]bool{}
	)
	for _, s := range body.SeatIDs {
		cs := seats[s]
		if !cs.OnSaleFrom.IsZero() && now.Before(cs.OnSaleFrom) || !cs.OnSaleUntil.IsZero() && !now.Before(cs.OnSaleUntil) {
			return conflict("not_on_sale", fmt.Sprintf("event %q is not on sale now", eventID))
		}
		if cs.PriceMinor > 0 && cs.Currency != "" {
			price += cs.PriceMinor
			currencies[strings.ToLower(cs.Currency)] = true
		} else {
			priced = false
		}
		if !cs.Seat.ClaimableAt(now) && cs.Seat.ReservationID != id {
			taken = append(taken, s)
		}
	}
	if priced && (price != body.Amount || len(currencies) != 1 || !currencies[body.Currency]) {
		return badRequest("amount_mismatch", fmt.Sprintf("the seats cost %d minor units of %s, not %d %s",
			price, strings.Join(keys(currencies), "/"), body.Amount, body.Currency))
	}
	if len(taken) > 0 {
		return conflict("seats_unavailable", "seats already taken: "+strings.Join(quoteAll(taken), ", "))
	}
	return nil
}

// get handles GET /reservations/{id}.
func (h *Handler) get(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, *Error) {
	id, r, ex, e := h.lookup(ctx, req)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	if ex == nil {
		return jsonResponse(http.StatusOK, h.withPayment(ctx, r, viewOf(r))), nil
	}
	view, e := h.status(ctx, id, ex)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	return jsonResponse(http.StatusOK, view), nil
}

// lookup finds the caller's reservation named by the path: the stored one, or (ex non-nil)
// the execution of one the Claim step has not written. Someone else's reservation is a 404,
// like a missing one, so ids cannot be probed.
func (h *Handler) lookup(ctx context.Context, req events.APIGatewayProxyRequest) (string, reservation.Reservation, *execution, *Error) {
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
	ex, err := h.describe(ctx, id)
	if err != nil {
		return "", reservation.Reservation{}, nil, h.serverError(ctx, "describe execution", err, "reservationId", id)
	}
	if ex == nil || ex.input.CustomerID != customer {
		return "", reservation.Reservation{}, nil, notFound("no such reservation")
	}
	return id, reservation.Reservation{}, ex, nil
}

// status is the view of a reservation whose execution exists: the stored reservation when the
// Claim step wrote it, else PENDING while the execution runs and REJECTED once it ended.
func (h *Handler) status(ctx context.Context, id string, ex *execution) (ReservationStatus, *Error) {
	r, found, e := h.read(ctx, id)
	if e != nil {
		return ReservationStatus{}, e
	}
	if found {
		return viewOf(r), nil
	}
	v := ReservationStatus{ReservationID: id, Status: StatusPending, EventID: ex.input.EventID,
		SeatIDs: ex.input.SeatIDs, Amount: ex.input.Amount, Currency: ex.input.Currency, StatusURL: StatusURL(id)}
	if ex.status != sfntypes.ExecutionStatusRunning {
		v.Status = StatusRejected
	}
	return v, nil
}

// withPayment adds the client secret while the buyer still has to act on the payment.
func (h *Handler) withPayment(ctx context.Context, r reservation.Reservation, v ReservationStatus) ReservationStatus {
	if h.d.Payments == nil || r.PaymentIntentID == "" || r.Inventory != reservation.PaymentPending ||
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

// cancel handles DELETE /reservations/{id}: while the saga waits for payment it fails the
// waiting task with CustomerCanceled, and the saga voids and releases. Repeating it is
// harmless; a confirmed reservation cannot be canceled here.
func (h *Handler) cancel(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, *Error) {
	id, r, ex, e := h.lookup(ctx, req)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	if ex != nil {
		if ex.status == sfntypes.ExecutionStatusRunning {
			return events.APIGatewayProxyResponse{}, notReady()
		}
		view, e := h.status(ctx, id, ex)
		if e != nil {
			return events.APIGatewayProxyResponse{}, e
		}
		return jsonResponse(http.StatusOK, view), nil
	}
	log := h.d.Logger.With("reservationId", id, "correlationId", r.CorrelationID)
	switch {
	case r.Inventory == reservation.Confirmed:
		return events.APIGatewayProxyResponse{}, conflict("already_confirmed", "the reservation is confirmed and can no longer be canceled")
	case r.Inventory == reservation.Released:
		return jsonResponse(http.StatusOK, viewOf(r)), nil
	case r.Inventory != reservation.PaymentPending || r.TaskToken == "":
		// The saga has not reached the payment wait yet; there is nothing to fail.
		return events.APIGatewayProxyResponse{}, notReady()
	}
	_, err := h.d.SFN.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(r.TaskToken),
		Error:     aws.String(saga.ErrCustomerCanceled),
		Cause:     aws.String("the customer canceled reservation " + id),
	})
	if err != nil && !taskGone(err) {
		return events.APIGatewayProxyResponse{}, h.serverError(ctx, "send task failure", err, "reservationId", id)
	}
	if err != nil {
		// The saga no longer waits: an earlier cancel or the payment outcome got there first.
		// Report where it stands now.
		log.InfoContext(ctx, "api: cancel found the payment wait closed", "error", err.Error())
		r2, found, e := h.read(ctx, id)
		if e != nil {
			return events.APIGatewayProxyResponse{}, e
		}
		if found && r2.Inventory == reservation.Confirmed {
			return events.APIGatewayProxyResponse{}, conflict("already_confirmed", "the reservation is confirmed and can no longer be canceled")
		}
		if found {
			r = r2
		}
	} else {
		h.d.Metrics.Count("CustomerCancels", 1)
		log.InfoContext(ctx, "api: customer cancel sent to the saga")
	}
	v := viewOf(r)
	v.CancelRequested = true
	return jsonResponse(http.StatusAccepted, v), nil
}

func notReady() *Error {
	return &Error{Status: http.StatusConflict, Code: "not_ready",
		Message: "the reservation is still being set up and cannot be canceled yet; retry shortly", RetryAfter: 1}
}

// taskGone reports whether Step Functions says the task token no longer waits.
func taskGone(err error) bool {
	var (
		timedOut *sfntypes.TaskTimedOut
		missing  *sfntypes.TaskDoesNotExist
		invalid  *sfntypes.InvalidToken
	)
	return errors.As(err, &timedOut) || errors.As(err, &missing) || errors.As(err, &invalid)
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
