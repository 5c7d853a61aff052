package inventory

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// PaymentDetails are facts about the payment workflow stored on the reservation; empty fields
// leave the stored value as it is.
type PaymentDetails struct {
	PaymentIntentID string
	TaskToken       string
	ExecutionARN    string
	CaptureBefore   time.Time
	// CancelAttempts records refused voids; it only ever grows, so a stale or replayed
	// update cannot hand an old attempt (and its stored refusal) back to the next void.
	CancelAttempts int
	// CustomerCanceled, when true, records the customer's cancel; it is never cleared.
	CustomerCanceled bool
}

func (d PaymentDetails) applyTo(r *reservation.Reservation) {
	if d.PaymentIntentID != "" {
		r.PaymentIntentID = d.PaymentIntentID
	}
	if d.TaskToken != "" {
		r.TaskToken = d.TaskToken
	}
	if d.ExecutionARN != "" {
		r.ExecutionARN = d.ExecutionARN
	}
	if !d.CaptureBefore.IsZero() {
		r.CaptureBefore = d.CaptureBefore.UTC()
	}
	if d.CancelAttempts > r.CancelAttempts {
		r.CancelAttempts = d.CancelAttempts
	}
	if d.CustomerCanceled {
		r.CustomerCanceled = true
	}
}

// seatPlan says how a change touches the reservation's seats.
type seatPlan struct {
	condition string
	update    string
	// onlyOurs limits the change to seats the reservation still owns (read first); the others
	// were taken by someone else after the hold expired and are left alone.
	onlyOurs bool
	// failure turns the seats whose condition failed into the caller's error.
	failure func(r reservation.Reservation, seats []string) error
}

type change struct {
	op      string
	id      string
	guard   reservation.Guard
	apply   func(reservation.Reservation, time.Time) (reservation.Reservation, error)
	details PaymentDetails
	event   outbox.Type
	reason  string
	resCond string // extra condition on the reservation, may use :now
	seats   *seatPlan
	noBump  bool // detail-only update: no version bump, no event
}

func notOwnerOfSeats(r reservation.Reservation, seats []string) error {
	return &reservation.NotOwner{ReservationID: r.ID, Resource: "seats " + fmt.Sprint(seats) + " of event " + r.EventID}
}

func seatsUnavailable(r reservation.Reservation, seats []string) error {
	return &reservation.SeatUnavailable{EventID: r.EventID, SeatIDs: seats}
}

// MarkPaymentPending moves a live hold to PAYMENT_PENDING (reservation and seats) before any
// money moves, recording the given payment details. Typed errors: *reservation.StaleVersion,
// *NotOwner, *UnexpectedState, *IllegalTransition, *HoldExpired, *GuardFailed, *NotFound.
func (st *Store) MarkPaymentPending(ctx context.Context, id string, g reservation.Guard, d PaymentDetails) (reservation.Reservation, error) {
	return st.run(ctx, change{
		op: "mark_payment_pending", id: id, guard: g, details: d, event: outbox.PaymentPending,
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			return r.ApplyInventory(reservation.StartPayment, reservation.Held, g, now)
		},
		resCond: "#exp > :now",
		seats: &seatPlan{
			condition: "#rid = :rid AND #st = :held AND #exp > :now",
			update:    "SET #st = :pp, #upd = :now, #v = #v + :one",
			failure:   notOwnerOfSeats,
		},
	})
}

// Confirm sells the seats of a PAYMENT_PENDING reservation whose payment is authorized. Owner,
// version and deadline are all in the condition expressions, so a writer holding an old
// version or acting after the deadline changes nothing. Typed errors as MarkPaymentPending.
func (st *Store) Confirm(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return st.run(ctx, change{
		op: "confirm", id: id, guard: g, event: outbox.ReservationConfirmed,
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			return r.ApplyInventory(reservation.Confirm, reservation.PaymentPending, g, now)
		},
		resCond: "#exp > :now AND #pay = :authorized",
		seats: &seatPlan{
			condition: "#rid = :rid AND #st = :pp AND #exp > :now",
			update:    "SET #st = :confirmed, #upd = :now, #v = #v + :one REMOVE #exp",
			failure:   notOwnerOfSeats,
		},
	})
}

// Release gives back the seats of a reservation in state from (HELD, PAYMENT_PENDING, or
// CONFIRMED whose payment was voided or refunded). Every seat must still be the reservation's:
// a release whose seats were taken after its hold expired changes nothing and returns
// *reservation.NotOwner (the sweeper's Expire retires such a reservation). A stale or foreign
// release changes nothing and returns *reservation.StaleVersion or *reservation.NotOwner.
func (st *Store) Release(ctx context.Context, id string, from reservation.InventoryState, g reservation.Guard, reason string) (reservation.Reservation, error) {
	return st.run(ctx, change{
		op: "release", id: id, guard: g, event: outbox.SeatsReleased, reason: reason,
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			return r.ApplyInventory(reservation.Release, from, g, now)
		},
		seats: &seatPlan{
			condition: "#rid = :rid AND #st IN (:held, :pp, :confirmed)",
			update:    "SET #st = :available, #upd = :now, #v = #v + :one REMOVE #rid, #exp",
			failure:   notOwnerOfSeats,
		},
	})
}

// Expire retires a HELD or PAYMENT_PENDING reservation whose deadline has passed (the sweeper):
// seats it still owns become AVAILABLE, seats someone else has claimed since are left alone.
// Refused while money may be held (*reservation.GuardFailed) or before the deadline
// (*reservation.HoldStillLive).
func (st *Store) Expire(ctx context.Context, id string, from reservation.InventoryState, g reservation.Guard) (reservation.Reservation, error) {
	return st.run(ctx, change{
		op: "expire", id: id, guard: g, event: outbox.SeatsReleased, reason: "hold expired",
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			return r.ApplyInventory(reservation.Expire, from, g, now)
		},
		resCond: "#exp <= :now",
		seats: &seatPlan{
			condition: "#rid = :rid AND #st IN (:held, :pp)",
			update:    "SET #st = :available, #upd = :now, #v = #v + :one REMOVE #rid, #exp",
			onlyOurs:  true,
			failure:   notOwnerOfSeats,
		},
	})
}

// Reacquire confirms the seats for a payment that succeeded after the hold expired, if every
// seat is still ours or free (AVAILABLE, or HELD by anyone past its deadline). Otherwise nothing
// changes and *reservation.SeatUnavailable lists the lost seats: void or refund, and notify.
func (st *Store) Reacquire(ctx context.Context, id string, from reservation.InventoryState, g reservation.Guard) (reservation.Reservation, error) {
	return st.run(ctx, change{
		op: "reacquire", id: id, guard: g, event: outbox.SeatsReacquired, reason: "late payment success",
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			return r.ApplyInventory(reservation.Reacquire, from, g, now)
		},
		resCond: "#pay IN (:authorized, :paid)",
		seats: &seatPlan{
			condition: "attribute_exists(seatKey) AND (#st = :available OR (#rid = :rid AND #st IN (:held, :pp)) OR (#st = :held AND #exp <= :now))",
			update:    "SET #st = :confirmed, #rid = :rid, #upd = :now, #v = if_not_exists(#v, :zero) + :one REMOVE #exp",
			failure:   seatsUnavailable,
		},
	})
}

var paymentEventTypes = map[reservation.PaymentEvent]outbox.Type{
	reservation.AuthorizationOK: outbox.PaymentAuthorized,
	reservation.PaymentDeclined: outbox.PaymentFailed,
	reservation.CaptureOK:       outbox.PaymentCaptured,
	reservation.VoidPayment:     outbox.PaymentVoided,
	reservation.RefundPayment:   outbox.PaymentRefunded,
	reservation.OutcomeUnknown:  outbox.PaymentUncertain,
}

// SetPaymentState applies a payment event to a reservation whose payment is in state from, at
// version g.Version, recording the details given. Seats are not touched. The same write puts
// the reservation on the reconciliation index or takes it off (Reservation.Unsettled): e.g.
// capture requested for confirmed seats keeps it there, captured takes it off.
func (st *Store) SetPaymentState(ctx context.Context, id string, ev reservation.PaymentEvent, from reservation.PaymentState, g reservation.Guard, d PaymentDetails) (reservation.Reservation, error) {
	t, ok := paymentEventTypes[ev]
	if !ok {
		t = outbox.PaymentStateChanged
	}
	return st.run(ctx, change{
		op: "set_payment_state", id: id, guard: g, details: d, event: t, reason: string(ev),
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			return r.ApplyPayment(ev, from, g, now)
		},
	})
}

// UpdateDetails records payment workflow details (task token, execution ARN, ...) without a
// state change. It is fenced by g.Version but does not bump it and writes no event, so it does
// not invalidate guards other steps hold.
func (st *Store) UpdateDetails(ctx context.Context, id string, g reservation.Guard, d PaymentDetails) (reservation.Reservation, error) {
	return st.run(ctx, change{
		op: "update_details", id: id, guard: g, details: d, noBump: true,
		apply: func(r reservation.Reservation, now time.Time) (reservation.Reservation, error) {
			if g.Owner != r.ID {
				return r, &reservation.NotOwner{ReservationID: g.Owner, Owner: r.ID, Resource: "reservation " + r.ID}
			}
			if g.Version != r.Version {
				return r, &reservation.StaleVersion{ReservationID: r.ID, Expected: g.Version, Actual: r.Version}
			}
			r.SeatIDs = append([]string(nil), r.SeatIDs...)
			return r, nil
		},
	})
}

// run reads the reservation, lets the domain decide, then writes the change in one
// transaction fenced by the version read. When the transaction is cancelled it rereads: the
// domain then names what changed (stale version, expired hold, ...); seats that failed their
// own conditions become the plan's error; conflicts are retried with jitter.
func (st *Store) run(ctx context.Context, ch change) (reservation.Reservation, error) {
	for attempt := 1; ; attempt++ {
		cur, rev, err := st.get(ctx, ch.id)
		if err != nil {
			return reservation.Reservation{}, err
		}
		now := st.now().UTC()
		next, err := ch.apply(cur, now)
		if err != nil {
			return cur, err
		}
		ch.details.applyTo(&next)
		if ch.noBump {
			next.UpdatedAt = now
		}
		// The reconciliation index entry changes in this same write, never in another one.
		next.ReconcileSince = reconcileSince(cur, next, now)
		items, seatIDs, err := st.changeItems(ctx, ch, cur, rev, next, now)
		if err != nil {
			return cur, err
		}
		c, err := st.transact(ctx, ch.op, items)
		if err != nil {
			return cur, fmt.Errorf("inventory: %s %s: %w", ch.op, ch.id, err)
		}
		if c == nil {
			st.log.LogAttrs(ctx, slog.LevelInfo, "reservation changed", slog.String("op", ch.op),
				slog.String("reservationId", next.ID), slog.Int64("version", next.Version),
				slog.String("inventoryState", string(next.Inventory)), slog.String("paymentState", string(next.Payment)),
				slog.String("correlationId", next.CorrelationID))
			return next, nil
		}
		var failedSeats []string
		for i, sid := range seatIDs {
			if c.conditionFailed(1 + i) {
				failedSeats = append(failedSeats, sid)
			}
		}
		switch {
		case c.conditionFailed(0):
			// The reservation changed under us; the reread tells the caller how.
		case len(failedSeats) > 0:
			return cur, ch.seats.failure(cur, failedSeats)
		case !c.transient():
			return cur, fmt.Errorf("inventory: %s %s cancelled: %s", ch.op, ch.id, c.describe())
		}
		if attempt >= st.maxAttempts {
			return cur, fmt.Errorf("inventory: %s %s: %w after %d attempts (%s)", ch.op, ch.id, ErrTooManyConflicts, attempt, c.describe())
		}
		if !c.conditionFailed(0) {
			if err := backoff(ctx, attempt); err != nil {
				return cur, err
			}
		}
	}
}

func (st *Store) changeItems(ctx context.Context, ch change, cur reservation.Reservation, rev int64, next reservation.Reservation, now time.Time) ([]types.TransactWriteItem, []string, error) {
	nowS := FormatTime(now)
	values := map[string]types.AttributeValue{
		":v": n(cur.Version), ":inv": s(string(cur.Inventory)), ":pay": s(string(cur.Payment)), ":now": s(nowS),
		":rev": n(rev),
	}
	names := map[string]string{"#v": attrVersion, "#inv": attrInvState, "#payst": attrPayState, "#rev": attrRevision}
	cond := "#v = :v AND #rev = :rev AND #inv = :inv AND #payst = :pay"
	if ch.resCond != "" {
		cond += " AND " + ch.resCond
		names["#exp"] = tables.AttrHoldExpiresAt
		names["#pay"] = attrPayState
		values[":authorized"] = s(string(reservation.Authorized))
		values[":paid"] = s(string(reservation.Paid))
	}
	// Only placeholders the expression uses may be sent.
	values, names = used(cond, values, names)
	items := []types.TransactWriteItem{{Put: &types.Put{
		TableName:                 aws.String(st.reservations),
		Item:                      reservationItem(next, rev+1),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}}
	var seatIDs []string
	if ch.seats != nil {
		seatIDs = cur.SeatIDs
		if ch.seats.onlyOurs {
			seatIDs = nil
			for _, sid := range cur.SeatIDs {
				seat, ok, err := st.GetSeat(ctx, cur.EventID, sid)
				if err != nil {
					return nil, nil, err
				}
				if ok && seat.ReservationID == cur.ID {
					seatIDs = append(seatIDs, sid)
				}
			}
		}
		for _, sid := range seatIDs {
			sv := map[string]types.AttributeValue{
				":rid": s(cur.ID), ":now": s(nowS), ":one": n(1), ":zero": n(0),
				":available": s(string(reservation.Available)), ":held": s(string(reservation.Held)),
				":pp": s(string(reservation.PaymentPending)), ":confirmed": s(string(reservation.Confirmed)),
			}
			sn := map[string]string{"#rid": tables.AttrReservationID, "#st": attrState, "#exp": tables.AttrHoldExpiresAt,
				"#upd": attrUpdatedAt, "#v": attrVersion}
			sv, sn = used(ch.seats.condition+" "+ch.seats.update, sv, sn)
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(st.seats),
				Key:                       seatKeyAV(cur.EventID, sid),
				ConditionExpression:       aws.String(ch.seats.condition),
				UpdateExpression:          aws.String(ch.seats.update),
				ExpressionAttributeNames:  sn,
				ExpressionAttributeValues: sv,
			}})
		}
	}
	if !ch.noBump {
		ob, _, err := st.outboxPut(ch.event, next, ch.reason)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, ob)
	}
	return items, seatIDs, nil
}
