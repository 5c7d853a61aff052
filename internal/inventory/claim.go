package inventory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// ClaimResult is a successful claim: the reservation, and whether it was a replay of an earlier
// identical request (nothing was written then).
type ClaimResult struct {
	Reservation reservation.Reservation
	Replayed    bool
	Attempts    int
}

// Claim holds req's seats for a new reservation (ClaimDetailed without the details); a replay
// with the same idempotency key returns the reservation it created.
func (st *Store) Claim(ctx context.Context, req reservation.ClaimRequest) (reservation.Reservation, error) {
	res, err := st.ClaimDetailed(ctx, req)
	return res.Reservation, err
}

// ClaimDetailed holds req's seats for a new reservation in one transaction: a conditional
// update per seat (AVAILABLE, or HELD past its deadline; never PAYMENT_PENDING or CONFIRMED),
// the reservation put (only if its id is new) and the SeatsHeld outbox record. All or nothing.
//
// Errors, returned unwrapped so callers and the state machine can route on them:
// *reservation.ValidationError (bad input, unknown event or seat; nothing written),
// *reservation.SeatUnavailable (definitive: do not retry), *reservation.IdempotencyConflict
// (the reservation id was used for a different request). A replay of the same request returns
// the stored reservation with Replayed set.
func (st *Store) ClaimDetailed(ctx context.Context, req reservation.ClaimRequest) (ClaimResult, error) {
	res, err := st.claim(ctx, req)
	outcome := "won"
	var (
		ve *reservation.ValidationError
		su *reservation.SeatUnavailable
		ic *reservation.IdempotencyConflict
	)
	switch {
	case err == nil && res.Replayed:
		outcome = "replayed"
	case errors.As(err, &ve), errors.As(err, &ic):
		outcome = "invalid"
	case errors.As(err, &su):
		outcome = "unavailable"
	case err != nil:
		outcome = "error"
	}
	if outcome == "unavailable" || errors.As(err, &ve) {
		// The buyer the gate let through is turned away: say so where the API reads it. Until
		// that is written the claim has not finished, so a failure here is the claim's.
		if rerr := st.RejectAdmission(ctx, req.ReservationID); rerr != nil {
			res, err, outcome = ClaimResult{}, rerr, "error"
		}
	}
	st.metrics.Count(MetricClaim, 1, metrics.Dim{Name: "outcome", Value: outcome})
	if err != nil && outcome == "error" {
		st.log.LogAttrs(ctx, slog.LevelError, "claim failed", slog.String("reservationId", req.ReservationID),
			slog.String("eventId", req.EventID), slog.String("correlationId", req.CorrelationID), slog.Any("error", err))
	}
	return res, err
}

func (st *Store) claim(ctx context.Context, req reservation.ClaimRequest) (ClaimResult, error) {
	// slotLost: the admission's hold slot passed to another reservation of the customer before
	// this claim (it came more than lease + hold after the admission), so the hold goes ahead
	// without keeping it.
	slotLost := false
	for attempt := 1; ; attempt++ {
		r, err := reservation.NewReservation(req, st.limits, st.now())
		if err != nil {
			return ClaimResult{}, err
		}
		if slotLost {
			r.SlotKey = ""
		}
		items, err := st.claimItems(r)
		if err != nil {
			return ClaimResult{}, err
		}
		c, err := st.transact(ctx, "claim", items)
		if err != nil {
			return ClaimResult{}, fmt.Errorf("inventory: claim %s: %w", r.ID, err)
		}
		if c == nil {
			st.log.LogAttrs(ctx, slog.LevelInfo, "seats held", slog.String("reservationId", r.ID),
				slog.String("eventId", r.EventID), slog.Int("seats", len(r.SeatIDs)),
				slog.String("holdExpiresAt", FormatTime(r.HoldExpiresAt)), slog.String("correlationId", r.CorrelationID))
			return ClaimResult{Reservation: r, Attempts: attempt}, nil
		}
		seatsN := len(r.SeatIDs)
		// The reservation or its first event exists already: a replay or a reused id.
		if c.conditionFailed(seatsN) || c.conditionFailed(seatsN+1) {
			return st.replay(ctx, req, attempt)
		}
		if c.conditionFailed(seatsN + 2) {
			// An earlier attempt turned the buyer away and said so, or the customer canceled
			// before this claim: that answer is final, even if the seats are free by now.
			why := "the buyer was turned away earlier"
			if a, err := DecodeAdmission(c.reasons[seatsN+2].Item); err == nil && a.State == reservation.AdmissionCanceled {
				why = "the customer canceled before the claim"
			}
			return ClaimResult{}, &reservation.SeatUnavailable{EventID: r.EventID, SeatIDs: r.SeatIDs, Why: why}
		}
		if r.SlotKey != "" && c.conditionFailed(seatsN+3) {
			slotLost = true
			attempt--
			continue
		}
		var failed []string
		var missing []string
		for i, id := range r.SeatIDs {
			if c.conditionFailed(i) {
				// ALL_OLD returns the seat as it was; no item means no such seat.
				if len(c.reasons[i].Item) == 0 {
					missing = append(missing, id)
				} else {
					failed = append(failed, id)
				}
			}
		}
		if len(missing) > 0 {
			return ClaimResult{}, st.unknownSeats(ctx, r.EventID, missing)
		}
		if len(failed) > 0 {
			return ClaimResult{}, &reservation.SeatUnavailable{EventID: r.EventID, SeatIDs: failed}
		}
		if !c.transient() {
			return ClaimResult{}, fmt.Errorf("inventory: claim %s cancelled: %s", r.ID, c.describe())
		}
		if attempt >= st.maxAttempts {
			return ClaimResult{}, fmt.Errorf("inventory: claim %s: %w after %d attempts (%s)", r.ID, ErrTooManyConflicts, attempt, c.describe())
		}
		if err := backoff(ctx, attempt); err != nil {
			return ClaimResult{}, fmt.Errorf("inventory: claim %s: %w", r.ID, err)
		}
	}
}

func (c cancellation) describe() string {
	codes := make([]string, len(c.reasons))
	for i := range c.reasons {
		codes[i] = c.code(i)
		if m := aws.ToString(c.reasons[i].Message); m != "" && codes[i] != codeNone {
			codes[i] += " (" + m + ")"
		}
	}
	return strings.Join(codes, ", ")
}

func (st *Store) claimItems(r reservation.Reservation) ([]types.TransactWriteItem, error) {
	now := FormatTime(r.CreatedAt)
	items := make([]types.TransactWriteItem, 0, len(r.SeatIDs)+2)
	for _, id := range r.SeatIDs {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(st.seats),
			Key:       seatKeyAV(r.EventID, id),
			// A seat must exist; it is claimable when AVAILABLE or HELD with a passed deadline,
			// and not leased by the admission gate to another buyer. The claim ends the lease.
			ConditionExpression: aws.String(claimableSeat + " AND " + leaseFree),
			UpdateExpression:    aws.String("SET #st = :held, #rid = :rid, #exp = :exp, #upd = :now, #v = if_not_exists(#v, :zero) + :one REMOVE #lb, #lu"),
			ExpressionAttributeNames: map[string]string{
				"#st": attrState, "#rid": tables.AttrReservationID, "#exp": tables.AttrHoldExpiresAt,
				"#upd": attrUpdatedAt, "#v": attrVersion, "#lb": tables.AttrAdmittedBy, "#lu": tables.AttrAdmittedUntil,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":available": s(string(reservation.Available)), ":held": s(string(reservation.Held)),
				":now": s(now), ":rid": s(r.ID), ":exp": s(FormatTime(r.HoldExpiresAt)), ":zero": n(0), ":one": n(1),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	items = append(items, types.TransactWriteItem{Put: &types.Put{
		TableName:                           aws.String(st.reservations),
		Item:                                reservationItem(r, 1),
		ConditionExpression:                 aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames:            map[string]string{"#id": tables.AttrReservationID},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureNone,
	}})
	ob, err := st.outboxPut(outbox.SeatsHeld, r, "", false)
	if err != nil {
		return nil, err
	}
	// A buyer whose admission says REJECTED was told so, and one whose says CANCELED gave the
	// seats up: no later attempt may hold seats for them. A claim the gate never admitted (a
	// saga started another way) has no admission.
	items = append(items, ob, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                           aws.String(st.admissions),
		Key:                                 reservationKeyAV(r.ID),
		ConditionExpression:                 aws.String("attribute_not_exists(#id) OR #as = :admitted"),
		ExpressionAttributeNames:            map[string]string{"#id": tables.AttrReservationID, "#as": tables.AttrAdmissionState},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":admitted": s(string(reservation.Admitted))},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	if r.SlotKey == "" {
		return items, nil
	}
	// From the hold on, the customer's slot is the reservation's until the write that ends the
	// hold gives it back, however long the claim came after the admission and however long
	// the payment keeps the seats: its time no longer frees it (only retention, the TTL's
	// safety net for a slot nothing gave back).
	return append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.admissions),
		Key:                       reservationKeyAV(r.SlotKey),
		ConditionExpression:       aws.String("#holder = :rid"),
		UpdateExpression:          aws.String("SET #until = :until, #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#holder": attrSlotHolder, "#until": attrSlotUntil, "#ttl": tables.AttrExpiresAtTTL},
		ExpressionAttributeValues: slotRetention(r.ID, r.CreatedAt),
	}}), nil
}

// replay answers a claim whose reservation id exists: the same request gets the stored
// reservation back, a different one an IdempotencyConflict.
func (st *Store) replay(ctx context.Context, req reservation.ClaimRequest, attempt int) (ClaimResult, error) {
	existing, err := st.Get(ctx, req.ReservationID)
	if err != nil {
		return ClaimResult{}, fmt.Errorf("inventory: claim %s: read existing reservation: %w", req.ReservationID, err)
	}
	if existing.RequestHash != req.Hash() {
		return ClaimResult{}, &reservation.IdempotencyConflict{IdempotencyKey: req.IdempotencyKey, ReservationID: req.ReservationID}
	}
	return ClaimResult{Reservation: existing, Replayed: true, Attempts: attempt}, nil
}

func (st *Store) unknownSeats(ctx context.Context, eventID string, missing []string) error {
	known, err := st.eventExists(ctx, eventID)
	if err != nil {
		return err
	}
	if !known {
		return &reservation.ValidationError{Problems: []reservation.Problem{{Field: "eventId", Reason: fmt.Sprintf("unknown event %q", eventID)}}}
	}
	return &reservation.ValidationError{Problems: []reservation.Problem{{Field: "seatIds", Reason: "unknown seats: " + strings.Join(missing, ", ")}}}
}
