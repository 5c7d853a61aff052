package inventory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// AdmissionRetention is how long an admission record lives before TTL: as long as a client
// may sensibly retry a POST with the same Idempotency-Key.
const AdmissionRetention = 7 * 24 * time.Hour

// MetricAdmission counts the gate's answers; dimension "outcome": admitted, replayed,
// unavailable, conflict, rejected, error.
const MetricAdmission = "AdmissionOutcome"

// The lease clause is shared by the gate and the claim: a seat is free of leases when it has
// none, its lease has passed, or the lease is the caller's own.
const leaseFree = "(attribute_not_exists(#lb) OR #lu <= :now OR #lb = :rid)"

// claimableSeat is the claim's condition on a seat's state: it exists, and is AVAILABLE or
// HELD past its deadline (never PAYMENT_PENDING or CONFIRMED).
const claimableSeat = "attribute_exists(seatKey) AND (#st = :available OR (#st = :held AND #exp <= :now))"

// Admit is the admission gate, outside the claim: one transaction that leases every requested
// seat to the reservation until req.LeaseUntil (only a seat no one holds and no other buyer
// leases), writes the admission record (only a new one, or this same request's own while it
// is still ADMITTED, so a retry may pass again), checks that the Claim step has not written the
// reservation and, under a cap, takes one of the customer's hold slots. It never reads before
// it writes, so two buyers can never both pass for one seat; the Claim step honours the lease
// and stays the authority on who holds a seat.
//
// One reservation takes one slot however often its request comes: the admission record names
// its slot, and a retry's write holds only if the record still names the slot the retry takes,
// or names one that is no longer the reservation's (its time ran out and another reservation of
// the customer has it). A retry of a reservation the Claim step wrote is answered Claimed, with
// nothing written, however its hold has ended since.
//
// Errors, unwrapped: *reservation.SeatUnavailable (held or leased by someone else),
// *reservation.IdempotencyConflict (the reservation id was admitted for another request),
// *reservation.ValidationError (a seat that does not exist), *reservation.HoldLimit (every
// slot of the customer is another live reservation's); anything else is wrapped.
func (st *Store) Admit(ctx context.Context, req reservation.AdmissionRequest) (reservation.AdmitResult, error) {
	res, err := st.admit(ctx, req)
	outcome := "admitted"
	var (
		su *reservation.SeatUnavailable
		ic *reservation.IdempotencyConflict
		ve *reservation.ValidationError
	)
	switch {
	case err == nil && res.Claimed:
		outcome = "replayed"
	case err == nil && res.Rejected != nil:
		outcome = "rejected"
	case errors.As(err, &su):
		outcome = "unavailable"
	case errors.As(err, &ic), errors.As(err, &ve):
		outcome = "conflict"
	case err != nil:
		outcome = "error"
	}
	st.count(MetricAdmission, outcome)
	return res, err
}

func (st *Store) admit(ctx context.Context, req reservation.AdmissionRequest) (reservation.AdmitResult, error) {
	a := req.Admission
	// recorded is the slot the stored admission names, as far as the gate knows: what the
	// api read, until a write finds the record naming another.
	recorded := recordedSlot{slot: a.HoldSlot, known: a.HoldSlot >= 0}
	// A retry starts from the slot its admission took, so it does not take a second one.
	first := recorded.start(req.MaxActive)
	tried := 0
	for attempt := 1; ; attempt++ {
		now := st.now()
		slot := (first + tried) % max(req.MaxActive, 1)
		tx := st.admissionItems(req, slot, recorded, now)
		c, err := st.transact(ctx, "admit", tx.items)
		if err != nil {
			return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w", a.ReservationID, err)
		}
		if c == nil {
			return reservation.AdmitResult{Admitted: true, HoldSlot: heldSlot(req, slot)}, nil
		}
		// The stored admission decides first: another request under the id is a conflict
		// whatever its seats look like now.
		var stored *reservation.Admission
		if c.conditionFailed(tx.admission) {
			got, err := DecodeAdmission(c.reasons[tx.admission].Item)
			if err != nil {
				return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w", a.ReservationID, err)
			}
			if got.RequestHash != a.RequestHash {
				return reservation.AdmitResult{}, &reservation.IdempotencyConflict{ReservationID: a.ReservationID}
			}
			if got.State != reservation.Admitted {
				return reservation.AdmitResult{Rejected: &got}, nil
			}
			stored = &got
		}
		if c.conditionFailed(tx.reservation) {
			// The Claim step wrote the reservation: it is the answer, however its hold ended.
			return reservation.AdmitResult{Claimed: true}, nil
		}
		if stored != nil {
			// The same request is admitted in another slot (a duplicate got there first, or a
			// retry moved): take that one instead, so the reservation keeps one.
			if attempt >= st.maxAttempts {
				return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w after %d attempts (its slot kept moving)", a.ReservationID, ErrTooManyConflicts, attempt)
			}
			recorded = recordedSlot{slot: stored.HoldSlot, known: true}
			first, tried = recorded.start(req.MaxActive), 0
			continue
		}
		var taken, missing []string
		for i, id := range a.SeatIDs {
			if !c.conditionFailed(i) {
				continue
			}
			old := c.reasons[i].Item
			if len(old) == 0 {
				missing = append(missing, id)
				continue
			}
			seat, err := DecodeSeat(old)
			switch {
			case err != nil:
				return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w", a.ReservationID, err)
			case seat.ReservationID == a.ReservationID && seat.State != reservation.Available:
				// The seat is this reservation's already: the Claim step answered the request.
				return reservation.AdmitResult{Claimed: true}, nil
			default:
				taken = append(taken, id)
			}
		}
		if len(missing) > 0 {
			return reservation.AdmitResult{}, &reservation.ValidationError{Problems: []reservation.Problem{{Field: "seatIds", Reason: "unknown seats: " + strings.Join(missing, ", ")}}}
		}
		if len(taken) > 0 {
			return reservation.AdmitResult{}, &reservation.SeatUnavailable{EventID: a.EventID, SeatIDs: taken}
		}
		if tx.slot >= 0 && c.conditionFailed(tx.slot) {
			// Another live reservation of the customer has this slot: try the next one. Each
			// try is a conditional write, so two reservations never share a slot.
			if tried++; tried >= req.MaxActive {
				return reservation.AdmitResult{}, &reservation.HoldLimit{CustomerID: a.CustomerID, Limit: req.MaxActive}
			}
			continue
		}
		if tx.left >= 0 && c.conditionFailed(tx.left) {
			// The slot the admission names is this reservation's again (a duplicate took it
			// back meanwhile): stay in it.
			if attempt >= st.maxAttempts {
				return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w after %d attempts (its slot kept moving)", a.ReservationID, ErrTooManyConflicts, attempt)
			}
			first, tried = recorded.start(req.MaxActive), 0
			continue
		}
		if !c.transient() {
			return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s cancelled: %s", a.ReservationID, c.describe())
		}
		if attempt >= st.maxAttempts {
			return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w", a.ReservationID, c.exhausted(attempt))
		}
		if err := backoff(ctx, attempt); err != nil {
			return reservation.AdmitResult{}, fmt.Errorf("inventory: admit %s: %w", a.ReservationID, err)
		}
	}
}

// recordedSlot is the hold slot a reservation's stored admission names: known once the api
// read the admission or a write found it, else the admission may be new.
type recordedSlot struct {
	slot  int
	known bool
}

// start is the slot a try starts from: the recorded one when it is a slot of the cap.
func (r recordedSlot) start(maxActive int) int {
	if r.known && r.slot >= 0 && r.slot < maxActive {
		return r.slot
	}
	return 0
}

// admissionTx is the gate's transaction and where its items are: the reservation check, the
// admission, the slot taken and the check that the slot left is no longer the reservation's
// (-1 when the transaction has none).
type admissionTx struct {
	items                              []types.TransactWriteItem
	admission, reservation, slot, left int
}

// admissionItems are the gate's transaction taking slot: a lease per seat, the admission
// record, the check that no reservation has the id yet, and under a cap the customer's hold
// slot, with, when the admission moves from the slot it names to another, the check that the
// one it leaves is not the reservation's any more.
func (st *Store) admissionItems(req reservation.AdmissionRequest, slot int, recorded recordedSlot, now time.Time) admissionTx {
	a := req.Admission
	tx := admissionTx{items: make([]types.TransactWriteItem, 0, len(a.SeatIDs)+4), slot: -1, left: -1}
	for _, id := range a.SeatIDs {
		tx.items = append(tx.items, types.TransactWriteItem{Update: &types.Update{
			TableName:           aws.String(st.seats),
			Key:                 seatKeyAV(a.EventID, id),
			ConditionExpression: aws.String(st.admissionCondition()),
			// The lease leaves the seat's version alone: it changes nothing a fenced write of
			// the seat relies on.
			UpdateExpression: aws.String("SET #lb = :rid, #lu = :until"),
			ExpressionAttributeNames: map[string]string{
				"#st": attrState, "#exp": tables.AttrHoldExpiresAt, "#lb": tables.AttrAdmittedBy, "#lu": tables.AttrAdmittedUntil,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":available": s(string(reservation.Available)), ":held": s(string(reservation.Held)),
				":now": s(FormatTime(now)), ":rid": s(a.ReservationID), ":until": s(FormatTime(req.LeaseUntil)),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	a.State = reservation.Admitted
	a.AdmittedAt = now
	a.HoldSlot = heldSlot(req, slot)
	// A retry of the same request may pass again while the saga has not turned it away; under
	// a cap, only while the record names the slot this write takes, or the slot it leaves.
	cond := "attribute_not_exists(#id) OR (#hash = :hash AND #as = :admitted)"
	names := map[string]string{"#id": tables.AttrReservationID, "#hash": attrRequestHash, "#as": tables.AttrAdmissionState}
	values := map[string]types.AttributeValue{":hash": s(a.RequestHash), ":admitted": s(string(reservation.Admitted))}
	leaving := false
	if req.MaxActive > 0 {
		expect := a.HoldSlot
		if recorded.known {
			expect = recorded.slot
			leaving = expect != a.HoldSlot && expect >= 0 && expect < req.MaxActive
		}
		slotClause := "#slot = :slot"
		if expect < 0 {
			// An admission from before slots were recorded names none.
			slotClause = "(attribute_not_exists(#slot) OR #slot = :slot)"
		}
		cond = "attribute_not_exists(#id) OR (#hash = :hash AND #as = :admitted AND " + slotClause + ")"
		names["#slot"] = attrHoldSlot
		values[":slot"] = n(int64(expect))
	}
	tx.admission = len(tx.items)
	tx.items = append(tx.items, types.TransactWriteItem{Put: &types.Put{
		TableName:                           aws.String(st.admissions),
		Item:                                admissionItem(a),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	// Once the Claim step wrote the reservation the request is answered, even after its hold
	// ended and gave its slot back: a retry must not take a slot or lease the seats again.
	tx.reservation = len(tx.items)
	tx.items = append(tx.items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                aws.String(st.reservations),
		Key:                      reservationKeyAV(a.ReservationID),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": tables.AttrReservationID},
	}})
	if req.MaxActive <= 0 {
		return tx
	}
	tx.slot = len(tx.items)
	tx.items = append(tx.items, types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(st.admissions),
		Item: map[string]types.AttributeValue{
			tables.AttrReservationID: s(reservation.HoldSlotKey(a.CustomerID, slot)),
			attrSlotHolder:           s(a.ReservationID),
			attrSlotUntil:            s(FormatTime(req.SlotUntil)),
			tables.AttrExpiresAtTTL:  &types.AttributeValueMemberN{Value: strconv.FormatInt(req.SlotUntil.Add(24*time.Hour).Unix(), 10)},
		},
		// A slot is free when no one has it, its holder's hold has ended, or it is this
		// reservation's own (a retry).
		ConditionExpression:      aws.String("attribute_not_exists(#id) OR #until <= :now OR #holder = :rid"),
		ExpressionAttributeNames: map[string]string{"#id": tables.AttrReservationID, "#until": attrSlotUntil, "#holder": attrSlotHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": s(FormatTime(now)), ":rid": s(a.ReservationID),
		},
	}})
	if !leaving {
		return tx
	}
	// The slot the admission leaves must not be the reservation's live slot any more, or a
	// duplicate that took it back meanwhile and this write would hold two.
	tx.left = len(tx.items)
	tx.items = append(tx.items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                aws.String(st.admissions),
		Key:                      reservationKeyAV(reservation.HoldSlotKey(a.CustomerID, recorded.slot)),
		ConditionExpression:      aws.String("attribute_not_exists(#id) OR #holder <> :rid OR #until <= :now"),
		ExpressionAttributeNames: map[string]string{"#id": tables.AttrReservationID, "#until": attrSlotUntil, "#holder": attrSlotHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": s(FormatTime(now)), ":rid": s(a.ReservationID),
		},
	}})
	return tx
}

// heldSlot is the hold slot an admission takes: slot under a cap, -1 without one.
func heldSlot(req reservation.AdmissionRequest, slot int) int {
	if req.MaxActive > 0 {
		return slot
	}
	return -1
}

// Hold slot attributes: the reservation holding the slot, and the latest its hold can end.
const (
	attrSlotHolder = "holder"
	attrSlotUntil  = "until"
	attrHoldSlot   = "holdSlot"
)

// attrCanceledAt is when the customer canceled an admission (CancelAdmission).
const attrCanceledAt = "canceledAt"

// GiveBackHoldSlot frees the customer's hold slot that reservationID took, if it still has
// it: a reservation whose hold ended gives its place under the cap back at once instead of when
// the slot's time runs out.
func (st *Store) GiveBackHoldSlot(ctx context.Context, customerID, reservationID string, slot int) error {
	if slot < 0 {
		return nil
	}
	d := st.slotDelete(reservation.HoldSlotKey(customerID, slot), reservationID)
	_, err := st.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: d.TableName, Key: d.Key, ConditionExpression: d.ConditionExpression,
		ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// Another reservation has the slot already: this one's time in it had run out.
		return nil
	}
	if err != nil {
		st.countAPIError("give_back_hold_slot", err)
		return fmt.Errorf("inventory: give back hold slot %d of %s: %w", slot, reservationID, err)
	}
	return nil
}

// slotRetention are the values of a slot kept from a claim at now: until the admission's
// retention, and collected a day later.
func slotRetention(reservationID string, now time.Time) map[string]types.AttributeValue {
	until := now.Add(AdmissionRetention)
	return map[string]types.AttributeValue{
		":rid": s(reservationID), ":until": s(FormatTime(until)),
		":ttl": &types.AttributeValueMemberN{Value: strconv.FormatInt(until.Add(24*time.Hour).Unix(), 10)},
	}
}

// slotDelete frees hold slot key while reservationID has it; a slot that is gone already passes
// too, and one another reservation has taken since fails the condition and is left alone.
func (st *Store) slotDelete(key, reservationID string) *types.Delete {
	return &types.Delete{
		TableName:                 aws.String(st.admissions),
		Key:                       reservationKeyAV(key),
		ConditionExpression:       aws.String("attribute_not_exists(#id) OR #holder = :rid"),
		ExpressionAttributeNames:  map[string]string{"#id": tables.AttrReservationID, "#holder": attrSlotHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rid": s(reservationID)},
	}
}

// admissionCondition is the gate's condition on each seat; a test may drop its lease clause to
// show what the clause prevents.
func (st *Store) admissionCondition() string {
	if st.gateWithoutLease {
		return claimableSeat
	}
	return claimableSeat + " AND " + leaseFree
}

// ErrNotAdmitted is what QueueStart's error wraps when the admission is no longer ADMITTED:
// the saga it would start already ran and answered (its start took effect, and the retry of
// the lost answer was throttled), so there is nothing left to queue.
var ErrNotAdmitted = errors.New("the admission is no longer admitted")

// QueueStart records on an admission the input of the execution Step Functions would not start
// at once; the Admissions stream carries it to the starter (internal/starter). Only an admission
// the saga has not turned away is queued. In the same transaction the admission's seat leases
// are extended to leaseUntil (and its hold slot, after, to slotUntil), so the queued winner keeps the seats it was let
// through for while it waits its turn; a lease another buyer took meanwhile is left alone and
// the claim decides.
func (st *Store) QueueStart(ctx context.Context, a reservation.Admission, input string, leaseUntil, slotUntil time.Time) error {
	now := st.now()
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName:           aws.String(st.admissions),
		Key:                 reservationKeyAV(a.ReservationID),
		ConditionExpression: aws.String("attribute_exists(#id) AND #as = :admitted"),
		UpdateExpression:    aws.String("SET #q = :true, #in = :input, #qat = :now"),
		ExpressionAttributeNames: map[string]string{
			"#id": tables.AttrReservationID, "#as": tables.AttrAdmissionState, "#q": tables.AttrStartQueued, "#in": tables.AttrStartInput,
			"#qat": tables.AttrStartQueuedAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":admitted": s(string(reservation.Admitted)), ":true": &types.AttributeValueMemberBOOL{Value: true}, ":input": s(input),
			":now": s(FormatTime(now)),
		},
	}}}
	for _, id := range a.SeatIDs {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(st.seats), Key: seatKeyAV(a.EventID, id),
			// Only a lease still this reservation's: attribute_exists keeps the update from
			// creating a seat, and a seat claimed meanwhile has no lease any more.
			ConditionExpression:       aws.String("attribute_exists(seatKey) AND #lb = :rid"),
			UpdateExpression:          aws.String("SET #lu = :until"),
			ExpressionAttributeNames:  map[string]string{"#lb": tables.AttrAdmittedBy, "#lu": tables.AttrAdmittedUntil},
			ExpressionAttributeValues: map[string]types.AttributeValue{":rid": s(a.ReservationID), ":until": s(FormatTime(leaseUntil))},
		}})
	}
	c, err := st.transact(ctx, "queue_start", items)
	if err == nil && c != nil && !c.conditionFailed(0) && c.any(codeCondition) {
		// A lease lapsed and moved on, or the claim already ended it: queue the start alone.
		c, err = st.transact(ctx, "queue_start", items[:1])
	}
	switch {
	case err != nil:
		return fmt.Errorf("inventory: queue the start of %s: %w", a.ReservationID, err)
	case c != nil && c.conditionFailed(0):
		return fmt.Errorf("inventory: queue the start of %s: %w", a.ReservationID, ErrNotAdmitted)
	case c != nil && c.any(codeThrottling, codeProvisioned):
		return fmt.Errorf("inventory: queue the start of %s: %w (%s)", a.ReservationID, ErrThrottled, c.describe())
	case c != nil:
		return fmt.Errorf("inventory: queue the start of %s cancelled: %s", a.ReservationID, c.describe())
	}
	if a.HoldSlot >= 0 {
		// The slot must outlast the wait too; if another reservation has it by now the wait
		// does not count against the cap, which errs towards the buyer. It is only ever
		// lengthened: a start queued after its execution claimed (a lost answer, then a
		// throttled retry) must not cut the claim's slot down to the queue's time.
		_, _ = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(st.admissions),
			Key:                       reservationKeyAV(reservation.HoldSlotKey(a.CustomerID, a.HoldSlot)),
			ConditionExpression:       aws.String("#holder = :rid AND #until < :until"),
			UpdateExpression:          aws.String("SET #until = :until"),
			ExpressionAttributeNames:  map[string]string{"#holder": attrSlotHolder, "#until": attrSlotUntil},
			ExpressionAttributeValues: map[string]types.AttributeValue{":rid": s(a.ReservationID), ":until": s(FormatTime(slotUntil))},
		})
	}
	return nil
}

// GetAdmission reads a reservation's admission record (strongly consistent); ok is false when
// the gate never let it through.
func (st *Store) GetAdmission(ctx context.Context, reservationID string) (a reservation.Admission, ok bool, err error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.admissions), Key: reservationKeyAV(reservationID), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		st.countAPIError("get_admission", err)
		return reservation.Admission{}, false, fmt.Errorf("inventory: get admission %s: %w", reservationID, err)
	}
	if len(out.Item) == 0 {
		return reservation.Admission{}, false, nil
	}
	a, err = DecodeAdmission(out.Item)
	return a, err == nil, err
}

// RejectAdmission records that the saga turned an admitted buyer away, so their replays and
// status reads say REJECTED without asking Step Functions. A reservation the gate never
// admitted (a saga started some other way) has nothing to record, and a customer's cancel
// stays what the record says (the claim refused to hold for it). A rejection already recorded
// is written again, so a retry gives the hold slot back if the first attempt could not.
func (st *Store) RejectAdmission(ctx context.Context, reservationID string) error {
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		ReturnValues:             types.ReturnValueAllNew,
		TableName:                aws.String(st.admissions),
		Key:                      reservationKeyAV(reservationID),
		ConditionExpression:      aws.String("attribute_exists(#id) AND #as <> :canceled"),
		UpdateExpression:         aws.String("SET #as = :rejected"),
		ExpressionAttributeNames: map[string]string{"#id": tables.AttrReservationID, "#as": tables.AttrAdmissionState},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rejected": s(string(reservation.AdmissionRejected)), ":canceled": s(string(reservation.AdmissionCanceled)),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		st.countAPIError("reject_admission", err)
		return fmt.Errorf("inventory: reject admission %s: %w", reservationID, err)
	}
	st.log.LogAttrs(ctx, slog.LevelInfo, "admission rejected", slog.String("reservationId", reservationID))
	a, err := DecodeAdmission(out.Attributes)
	if err != nil {
		return fmt.Errorf("inventory: reject admission %s: %w", reservationID, err)
	}
	// Nothing was held: the customer's place under the cap is free again.
	return st.GiveBackHoldSlot(ctx, a.CustomerID, reservationID, a.HoldSlot)
}

// ErrClaimed is what CancelAdmission's error wraps when the Claim step wrote the reservation
// first: the cancel is then the reservation's to record.
var ErrClaimed = errors.New("the claim wrote the reservation")

// CancelAdmission records a customer's cancel of a reservation the Claim step has not written:
// one transaction turns the admission CANCELED only while it is ADMITTED and no reservation
// exists, so of the cancel and the claim exactly one goes first and the other sees it (the
// claim's condition refuses a CANCELED admission). Then the seats' leases and the customer's
// hold slot are given back, so the seats are on sale again at once; a cancel found recorded
// already gives them back again, which makes a retried DELETE finish what a failed one left.
// A lease it cannot give back lapses on its own.
//
// It returns the admission as stored, CANCELED or REJECTED, and whether this call wrote the
// cancel; errors wrap ErrClaimed (the reservation exists: cancel that), ErrThrottled, or
// anything else.
func (st *Store) CancelAdmission(ctx context.Context, a reservation.Admission) (reservation.Admission, bool, error) {
	wrote := false
	for attempt := 1; ; attempt++ {
		if a.State != reservation.Admitted {
			break
		}
		c, err := st.transact(ctx, "cancel_admission", st.cancelAdmissionItems(a))
		if err != nil {
			return a, false, fmt.Errorf("inventory: cancel admission %s: %w", a.ReservationID, err)
		}
		if c == nil {
			st.log.LogAttrs(ctx, slog.LevelInfo, "admission canceled", slog.String("reservationId", a.ReservationID))
			a.State, wrote = reservation.AdmissionCanceled, true
			break
		}
		if c.conditionFailed(1) {
			return a, false, fmt.Errorf("inventory: cancel admission %s: %w", a.ReservationID, ErrClaimed)
		}
		if c.conditionFailed(0) {
			if len(c.reasons[0].Item) == 0 {
				return a, false, fmt.Errorf("inventory: cancel admission %s: the admission is gone", a.ReservationID)
			}
			// Decided meanwhile (rejected, or canceled by a concurrent DELETE), or still
			// admitted in another hold slot (a retry of its POST moved it): decide again.
			got, err := DecodeAdmission(c.reasons[0].Item)
			if err != nil {
				return a, false, fmt.Errorf("inventory: cancel admission %s: %w", a.ReservationID, err)
			}
			a = got
		} else if !c.transient() {
			return a, false, fmt.Errorf("inventory: cancel admission %s cancelled: %s", a.ReservationID, c.describe())
		}
		if attempt >= st.maxAttempts {
			return a, false, fmt.Errorf("inventory: cancel admission %s: %w", a.ReservationID, c.exhausted(attempt))
		}
		if err := backoff(ctx, attempt); err != nil {
			return a, false, fmt.Errorf("inventory: cancel admission %s: %w", a.ReservationID, err)
		}
	}
	if a.State != reservation.AdmissionCanceled {
		return a, false, nil
	}
	for _, id := range a.SeatIDs {
		st.releaseLease(ctx, a.EventID, id, a.ReservationID)
	}
	return a, wrote, st.GiveBackHoldSlot(ctx, a.CustomerID, a.ReservationID, a.HoldSlot)
}

// cancelAdmissionItems are CancelAdmission's transaction: the admission, still ADMITTED in the
// slot a names, becomes CANCELED; and the reservation does not exist.
func (st *Store) cancelAdmissionItems(a reservation.Admission) []types.TransactWriteItem {
	values := map[string]types.AttributeValue{
		":admitted": s(string(reservation.Admitted)), ":canceled": s(string(reservation.AdmissionCanceled)),
		":now": s(FormatTime(st.now())), ":slot": n(int64(max(a.HoldSlot, -1))),
	}
	slotClause := "#slot = :slot"
	if a.HoldSlot < 0 {
		// An admission without a cap, or from before slots were recorded, names none.
		slotClause = "(attribute_not_exists(#slot) OR #slot = :slot)"
	}
	return []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:           aws.String(st.admissions),
			Key:                 reservationKeyAV(a.ReservationID),
			ConditionExpression: aws.String("#as = :admitted AND " + slotClause),
			UpdateExpression:    aws.String("SET #as = :canceled, #cat = :now"),
			ExpressionAttributeNames: map[string]string{
				"#as": tables.AttrAdmissionState, "#slot": attrHoldSlot, "#cat": attrCanceledAt,
			},
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(st.reservations),
			Key:                      reservationKeyAV(a.ReservationID),
			ConditionExpression:      aws.String("attribute_not_exists(#id)"),
			ExpressionAttributeNames: map[string]string{"#id": tables.AttrReservationID},
		}},
	}
}

// releaseLease ends reservationID's admission lease on a seat, if it still has it; best effort,
// since a lease lapses on its own.
func (st *Store) releaseLease(ctx context.Context, eventID, seatID, reservationID string) {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.seats),
		Key:                       seatKeyAV(eventID, seatID),
		ConditionExpression:       aws.String("#lb = :rid"),
		UpdateExpression:          aws.String("REMOVE #lb, #lu"),
		ExpressionAttributeNames:  map[string]string{"#lb": tables.AttrAdmittedBy, "#lu": tables.AttrAdmittedUntil},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rid": s(reservationID)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		st.countAPIError("release_lease", err)
		st.log.LogAttrs(ctx, slog.LevelWarn, "admission lease not released; it lapses on its own", slog.String("reservationId", reservationID),
			slog.String("seatId", seatID), slog.Any("error", err))
	}
}

func admissionItem(a reservation.Admission) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tables.AttrReservationID:  s(a.ReservationID),
		attrCustomerID:            s(a.CustomerID),
		tables.AttrEventID:        s(a.EventID),
		attrSeatIDs:               strList(a.SeatIDs),
		attrAmount:                n(a.Amount),
		attrCurrency:              s(a.Currency),
		attrRequestHash:           s(a.RequestHash),
		tables.AttrAdmissionState: s(string(a.State)),
		tables.AttrAdmittedAt:     s(FormatTime(a.AdmittedAt)),
		attrHoldSlot:              n(int64(a.HoldSlot)),
		tables.AttrExpiresAtTTL:   &types.AttributeValueMemberN{Value: strconv.FormatInt(a.AdmittedAt.Add(AdmissionRetention).Unix(), 10)},
	}
}

// DecodeAdmission reads an Admissions item, as a reader that fetched it in a batch of its own
// (the api's first read) needs.
func DecodeAdmission(item map[string]types.AttributeValue) (reservation.Admission, error) {
	ir := &itemReader{item: item}
	a := reservation.Admission{
		ReservationID: ir.str(tables.AttrReservationID),
		CustomerID:    ir.str(attrCustomerID),
		EventID:       ir.str(tables.AttrEventID),
		Amount:        ir.num(attrAmount),
		Currency:      ir.str(attrCurrency),
		RequestHash:   ir.str(attrRequestHash),
		State:         reservation.AdmissionState(ir.str(tables.AttrAdmissionState)),
		AdmittedAt:    ir.time(tables.AttrAdmittedAt),
		HoldSlot:      -1,
	}
	a.StartQueued = ir.flag(tables.AttrStartQueued)
	if _, ok := item[attrHoldSlot]; ok {
		a.HoldSlot = int(ir.num(attrHoldSlot))
	}
	a.SeatIDs = ir.strs(attrSeatIDs)
	if a.State != reservation.Admitted && a.State != reservation.AdmissionRejected && a.State != reservation.AdmissionCanceled {
		return a, fmt.Errorf("admission %s: unknown state %q", a.ReservationID, a.State)
	}
	if ir.err != nil {
		return a, fmt.Errorf("admission %s: %w", a.ReservationID, ir.err)
	}
	return a, nil
}

// StartBacklogKey is the Admissions item that says Step Functions' start quota is spent: the
// api and the starter mark it while starts wait in the queue, and the api reads it with every
// POST's admission (AdmissionAndSeats), in the same request, so that a winner admitted
// meanwhile joins the queue without spending a StartExecution call that would be throttled.
// No reservation id can take this key (ids are the api's "r_" names).
const StartBacklogKey = "backlog#start"

// StartBacklogWindow is how long one mark says starts wait: long enough to cover the starter's
// next batch, short enough that once the queue is drained the api starts executions directly
// again within a moment.
const StartBacklogWindow = 2 * time.Second

// MarkStartBacklog records that starts wait in the queue for StartBacklogWindow from now; it
// only ever lengthens the mark, so concurrent markers cannot shorten each other's.
func (st *Store) MarkStartBacklog(ctx context.Context) error {
	until := st.now().Add(StartBacklogWindow)
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.admissions),
		Key:                      reservationKeyAV(StartBacklogKey),
		ConditionExpression:      aws.String("attribute_not_exists(#until) OR #until < :until"),
		UpdateExpression:         aws.String("SET #until = :until, #ttl = :ttl"),
		ExpressionAttributeNames: map[string]string{"#until": attrSlotUntil, "#ttl": tables.AttrExpiresAtTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until": s(FormatTime(until)),
			":ttl":   &types.AttributeValueMemberN{Value: strconv.FormatInt(until.Add(24*time.Hour).Unix(), 10)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		st.countAPIError("mark_start_backlog", err)
		return fmt.Errorf("inventory: mark the start backlog: %w", err)
	}
	return nil
}

// IsStartBacklog reports whether an Admissions item, or key, is the StartBacklogKey one.
func IsStartBacklog(item map[string]types.AttributeValue) bool {
	k, _ := item[tables.AttrReservationID].(*types.AttributeValueMemberS)
	return k != nil && k.Value == StartBacklogKey
}

// DecodeStartBacklog reads the StartBacklogKey item: until when starts are known to wait.
func DecodeStartBacklog(item map[string]types.AttributeValue) (time.Time, error) {
	ir := &itemReader{item: item}
	until := ir.time(attrSlotUntil)
	if ir.err != nil {
		return time.Time{}, fmt.Errorf("start backlog: %w", ir.err)
	}
	return until, nil
}
