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

// seatPlan says how a change touches the reservation's seats.
type seatPlan struct {
	condition string
	update    string
	// onlyOurs limits the change to seats the reservation still owns (read first); the others
	// were taken by someone else after the hold expired and are left alone. A seat that
	// changes hands between the read and the write fails its condition and the change is
	// tried again from a fresh read.
	onlyOurs bool
	// failure turns the seats whose condition failed into the caller's error.
	failure func(r reservation.Reservation, seats []string) error
}

// The seat side of each inventory event. Every condition names the owner, so a seat someone
// else holds is never changed by this reservation's write.
var (
	seatsStartPayment = &seatPlan{
		condition: "#rid = :rid AND #st = :held AND #exp > :now",
		update:    "SET #st = :pp, #upd = :now, #v = #v + :one",
		failure:   notOwnerOfSeats,
	}
	seatsConfirm = &seatPlan{
		condition: "#rid = :rid AND #st = :pp AND #exp > :now",
		update:    "SET #st = :confirmed, #upd = :now, #v = #v + :one REMOVE #exp",
		failure:   notOwnerOfSeats,
	}
	seatsGiveBack = &seatPlan{
		condition: "#rid = :rid AND #st IN (:held, :pp, :confirmed)",
		update:    "SET #st = :available, #upd = :now, #v = #v + :one REMOVE #rid, #exp",
		onlyOurs:  true,
	}
	seatsReacquire = &seatPlan{
		condition: "attribute_exists(seatKey) AND (#st = :available OR (#rid = :rid AND #st IN (:held, :pp)) OR (#st = :held AND #exp <= :now))",
		update:    "SET #st = :confirmed, #rid = :rid, #upd = :now, #v = if_not_exists(#v, :zero) + :one REMOVE #exp",
		failure:   seatsUnavailable,
	}
)

// Extra conditions on the reservation item, on top of its version, revision and both states.
const (
	condHoldLive = "#exp > :now"
	condLapsed   = "#exp <= :now"
	// condNotCanceled keeps a write that would sell the seats or take the money from landing
	// on a reservation the customer cancelled, whatever version the writer read.
	condNotCanceled = "(attribute_not_exists(#cc) OR #cc = :false)"
)

// write is what the domain decided a change writes.
type write struct {
	next reservation.Reservation
	// event is the outbox record's type; a change that keeps the version (a detail-only
	// update) writes no record.
	event  outbox.Type
	reason string
	notify bool
	conds  []string
	seats  *seatPlan
	// unchanged: the domain found nothing to do (a cancel already recorded); nothing is written.
	unchanged bool
}

type change struct {
	op string
	id string
	// decide applies the domain's rules to the stored reservation at now.
	decide func(cur reservation.Reservation, now time.Time) (write, error)
	// with, when set, gives the conditional writes on other tables made in the same
	// transaction, after the change's own items, for the reservation the attempt would write:
	// they land with the change or not at all, and are decided anew with every attempt.
	with func(next reservation.Reservation) []types.TransactWriteItem
}

func notOwnerOfSeats(r reservation.Reservation, seats []string) error {
	return &reservation.NotOwner{ReservationID: r.ID, Resource: "seats " + fmt.Sprint(seats) + " of event " + r.EventID}
}

func seatsUnavailable(r reservation.Reservation, seats []string) error {
	return &reservation.SeatUnavailable{EventID: r.EventID, SeatIDs: seats}
}

// inventoryWrite is the write of inventory event ev: its seat plan and conditions.
func inventoryWrite(next reservation.Reservation, ev reservation.InventoryEvent) write {
	w := write{next: next}
	switch ev {
	case reservation.StartPayment:
		w.event, w.seats, w.conds = outbox.PaymentPending, seatsStartPayment, []string{condHoldLive}
	case reservation.Confirm:
		w.event, w.seats, w.conds = outbox.ReservationConfirmed, seatsConfirm, []string{condHoldLive, condNotCanceled}
	case reservation.Release:
		w.event, w.seats = outbox.SeatsReleased, seatsGiveBack
	case reservation.Expire:
		w.event, w.seats, w.conds = outbox.SeatsReleased, seatsGiveBack, []string{condLapsed}
	case reservation.Reacquire:
		w.event, w.seats, w.conds = outbox.SeatsReacquired, seatsReacquire, []string{condNotCanceled}
		w.reason = outbox.ReasonLatePayment
	}
	return w
}

// inventoryChange performs ev. from, when given, is the state the caller read (the sweeper's
// Expire names it); otherwise the stored state stands, as the write is fenced by it anyway. A
// non-empty reason replaces the event's own.
func (st *Store) inventoryChange(ctx context.Context, op, id string, ev reservation.InventoryEvent, g reservation.Guard, from *reservation.InventoryState, reason string, notify bool) (reservation.Reservation, error) {
	return st.run(ctx, change{op: op, id: id, decide: func(cur reservation.Reservation, now time.Time) (write, error) {
		prior := cur.Inventory
		if from != nil {
			prior = *from
		}
		next, err := cur.ApplyInventory(ev, prior, g, now)
		if err != nil {
			return write{}, err
		}
		w := inventoryWrite(next, ev)
		if reason != "" {
			w.reason = reason
		}
		w.notify = notify
		return w, nil
	}})
}

// StartPayment moves a live hold HELD -> PAYMENT_PENDING (reservation and seats) before any
// money moves; from then on nobody else can claim the seats, even past the deadline. Typed
// errors: *reservation.StaleVersion, *NotOwner, *UnexpectedState, *IllegalTransition,
// *HoldExpired, *GuardFailed, *NotFound.
func (st *Store) StartPayment(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return st.inventoryChange(ctx, "start_payment", id, reservation.StartPayment, g, nil, "", false)
}

// Confirm sells the seats of a PAYMENT_PENDING reservation whose payment is authorized. Owner,
// version, deadline and "not cancelled" are all in the condition expressions, so a writer
// holding an old version, acting after the deadline or after the customer's cancel changes
// nothing. Typed errors as StartPayment.
func (st *Store) Confirm(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return st.inventoryChange(ctx, "confirm", id, reservation.Confirm, g, nil, "", false)
}

// Release gives back the seats of a reservation (reservation.Release, or reservation.Expire
// when req.Expired: the hold lapsed). Seats someone else has taken since are left alone.
// Refused while money may be held (*reservation.GuardFailed), and for an expiry before the
// deadline (*reservation.HoldStillLive); a stale or foreign release changes nothing and
// returns *reservation.StaleVersion or *reservation.NotOwner.
func (st *Store) Release(ctx context.Context, req reservation.ReleaseRequest) (reservation.Reservation, error) {
	ev, op := reservation.Release, "release"
	if req.Expired {
		ev, op = reservation.Expire, "expire"
	}
	return st.inventoryChange(ctx, op, req.ReservationID, ev, req.Guard, nil, req.Reason, req.NotifyCustomer)
}

// Expire retires a HELD or PAYMENT_PENDING reservation whose deadline has passed (the
// sweeper, which names the state it read): seats it still owns become AVAILABLE, seats
// someone else has claimed since are left alone. Refused while money may be held
// (*reservation.GuardFailed) or before the deadline (*reservation.HoldStillLive).
func (st *Store) Expire(ctx context.Context, id string, from reservation.InventoryState, g reservation.Guard) (reservation.Reservation, error) {
	return st.inventoryChange(ctx, "expire", id, reservation.Expire, g, &from, outbox.ReasonHoldExpired, false)
}

// Reacquire confirms the seats for a payment that succeeded after the hold expired, if every
// seat is still ours or free (AVAILABLE, or HELD by anyone past its deadline). Otherwise
// nothing changes and *reservation.SeatUnavailable lists the lost seats: void or refund, and
// notify. Refused in the write condition once the customer cancelled.
func (st *Store) Reacquire(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return st.inventoryChange(ctx, "reacquire", id, reservation.Reacquire, g, nil, "", false)
}

// UpdatePayment performs u (reservation.Reservation.ApplyUpdate): the payment event, the
// details and, with ReleaseSeats, the release of the seats, in one transaction with one
// outbox record carrying u.Reason and u.NotifyCustomer. An update with Event "" and nothing
// to release only records the details: fenced by the version, which it keeps, with no
// record, so it does not invalidate guards other steps hold. A capture request is refused
// in the write condition once the customer cancelled.
func (st *Store) UpdatePayment(ctx context.Context, u reservation.PaymentUpdate) (reservation.Reservation, error) {
	return st.updatePayment(ctx, u, nil)
}

// UpdatePaymentWith performs u as UpdatePayment does and, when with asks for one given the
// reservation the update would write, makes a conditional write on another table in the same
// transaction: it lands only with the update and the update only with it (the webhook takes
// its right to report the payment event it records this way). with is asked again for every
// attempt, so the write always matches the reservation it lands with. When that write's
// condition fails while the reservation is as read, nothing is written and the error is a
// *CompanionRefused; every other error is UpdatePayment's.
func (st *Store) UpdatePaymentWith(ctx context.Context, u reservation.PaymentUpdate,
	with func(next reservation.Reservation) (types.TransactWriteItem, bool)) (reservation.Reservation, error) {
	return st.updatePayment(ctx, u, func(next reservation.Reservation) []types.TransactWriteItem {
		if item, ok := with(next); ok {
			return []types.TransactWriteItem{item}
		}
		return nil
	})
}

func (st *Store) updatePayment(ctx context.Context, u reservation.PaymentUpdate, with func(reservation.Reservation) []types.TransactWriteItem) (reservation.Reservation, error) {
	op := "update_payment"
	if u.Event == "" {
		op = "update_details"
	}
	return st.run(ctx, change{op: op, id: u.ReservationID, with: with, decide: func(cur reservation.Reservation, now time.Time) (write, error) {
		next, err := cur.ApplyUpdate(u, now)
		if err != nil {
			return write{}, err
		}
		w := write{next: next, reason: u.Reason, notify: u.NotifyCustomer}
		if cur.Inventory != reservation.Released && next.Inventory == reservation.Released {
			ev := reservation.Release
			if u.Expired {
				ev = reservation.Expire
			}
			w = inventoryWrite(next, ev)
			w.reason, w.notify = u.Reason, u.NotifyCustomer
		}
		if u.Event != "" {
			w.event = outbox.PaymentType(u.Event)
		}
		if u.Event == reservation.RequestCapture {
			w.conds = append(w.conds, condNotCanceled)
		}
		return w, nil
	}})
}

// Cancel records the customer's cancel (reservation.Reservation.Cancel) with a
// ReservationCancelRequested record, fenced by the guard. Refused with
// *reservation.GuardFailed once the seats are CONFIRMED; when the cancel is already recorded
// it writes nothing and returns the stored reservation.
func (st *Store) Cancel(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return st.run(ctx, change{op: "cancel", id: id, decide: func(cur reservation.Reservation, now time.Time) (write, error) {
		next, err := cur.Cancel(g, now)
		if err != nil {
			return write{}, err
		}
		return write{next: next, event: outbox.ReservationCancelRequested, unchanged: next.Version == cur.Version}, nil
	}})
}

// run reads the reservation, lets the domain decide, then writes the change in one
// transaction fenced by the version and revision read. The first decision rests on the item
// this store last read or wrote, when it remembers one (memory): the fence makes that as safe
// as a fresh read, and an answer without a write is only ever given from a fresh read. A
// decision that changes nothing writes nothing. When the transaction is cancelled it rereads:
// the domain then names what changed (stale version, expired hold, ...); seats that failed
// their own conditions become the plan's error; conflicts are retried with jitter.
func (st *Store) run(ctx context.Context, ch change) (reservation.Reservation, error) {
	recall := true
	// slotLost: the reservation's hold slot passed to another reservation of the customer
	// after its time ran out, so the change no longer gives it back.
	slotLost := false
	for attempt := 1; ; attempt++ {
		cur, rev, fromMemory, err := st.current(ctx, ch.id, recall)
		recall = false
		if err != nil {
			return reservation.Reservation{}, err
		}
		now := st.now().UTC()
		w, err := ch.decide(cur, now)
		if fromMemory && (err != nil || w.unchanged) {
			// The remembered item may be older than the stored one: read it and decide again,
			// without counting an attempt, since nothing was tried.
			attempt--
			continue
		}
		if err != nil {
			return cur, err
		}
		if w.unchanged {
			return cur, nil
		}
		next := w.next
		// The reconciliation index entry changes in this same write, never in another one.
		next.ReconcileSince = reservation.UnsettledSince(cur, next, now)
		w.next = next
		items, seatIDs, err := st.changeItems(ctx, ch.op, w, cur, rev, now)
		if err != nil {
			return cur, err
		}
		// The write that ends a hold gives the customer's place under the cap back with it.
		slotAt := -1
		if cur.SlotKey != "" && cur.HoldActive() && !next.HoldActive() && !slotLost {
			slotAt = len(items)
			items = append(items, types.TransactWriteItem{Delete: st.slotDelete(cur.SlotKey, cur.ID)})
		}
		var with []types.TransactWriteItem
		if ch.with != nil {
			with = ch.with(w.next)
			items = append(items, with...)
		}
		c, err := st.transact(ctx, ch.op, items)
		if err != nil {
			st.mem.forget(ch.id)
			return cur, fmt.Errorf("inventory: %s %s: %w", ch.op, ch.id, err)
		}
		if c == nil {
			st.log.LogAttrs(ctx, slog.LevelInfo, "reservation changed", slog.String("op", ch.op),
				slog.String("reservationId", next.ID), slog.Int64("version", next.Version),
				slog.String("inventoryState", string(next.Inventory)), slog.String("paymentState", string(next.Payment)),
				slog.String("correlationId", next.CorrelationID))
			return st.written(items[0].Put.Item, next, rev+1), nil
		}
		var failedSeats []string
		for i, sid := range seatIDs {
			if c.conditionFailed(1 + i) {
				failedSeats = append(failedSeats, sid)
			}
		}
		reread := c.conditionFailed(0) || (len(failedSeats) > 0 && w.seats.onlyOurs)
		switch {
		case reread:
			// The reservation, or a seat we meant to give back, changed under us; the reread
			// tells the caller how, or finds which seats are still ours.
		case len(failedSeats) > 0:
			return cur, w.seats.failure(cur, failedSeats)
		case len(with) > 0 && c.conditionFailed(len(items)-len(with)):
			// The reservation was as read; only the write made alongside refused.
			return cur, &CompanionRefused{Op: ch.op, ReservationID: ch.id, Item: c.reasons[len(items)-len(with)].Item}
		case slotAt >= 0 && c.conditionFailed(slotAt):
			// Another reservation has the slot now: write the change again without it, at
			// once, as nothing else stood in the way.
			slotLost = true
			attempt--
			continue
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

// current is the reservation a change decides on, with its revision: the remembered item when
// recall allows it and there is one, otherwise a strong read.
func (st *Store) current(ctx context.Context, id string, recall bool) (reservation.Reservation, int64, bool, error) {
	if recall {
		if it, ok := st.mem.recall(id); ok {
			return it.r, it.rev, true, nil
		}
	}
	r, rev, err := st.get(ctx, id)
	return r, rev, false, err
}

// written is the reservation a successful change left, as a read of item would return it
// (the index attributes decoded as stored), and remembers it at revision rev. next, the
// domain's own result, stands in if the item cannot be decoded, and is then not remembered.
func (st *Store) written(item map[string]types.AttributeValue, next reservation.Reservation, rev int64) reservation.Reservation {
	stored, err := DecodeReservation(item)
	if err != nil {
		st.mem.forget(next.ID)
		return next
	}
	st.mem.remember(stored, rev)
	return stored
}

// CompanionRefused says that the write a change made alongside (UpdatePaymentWith) refused its
// condition while the reservation was as read: nothing was written. Item is that write's item
// as stored, when its Put or Update asked for it (ReturnValuesOnConditionCheckFailure ALL_OLD).
type CompanionRefused struct {
	Op, ReservationID string
	Item              map[string]types.AttributeValue
}

func (e *CompanionRefused) Error() string {
	return fmt.Sprintf("inventory: %s %s: the write made alongside refused its condition; nothing was written", e.Op, e.ReservationID)
}

// RefusedItem is the refused write's item as stored (nil when not returned).
func (e *CompanionRefused) RefusedItem() map[string]types.AttributeValue { return e.Item }

func (st *Store) changeItems(ctx context.Context, op string, w write, cur reservation.Reservation, rev int64, now time.Time) ([]types.TransactWriteItem, []string, error) {
	nowS := FormatTime(now)
	values := map[string]types.AttributeValue{
		":v": n(cur.Version), ":inv": s(string(cur.Inventory)), ":pay": s(string(cur.Payment)), ":now": s(nowS),
		":rev": n(rev), ":false": &types.AttributeValueMemberBOOL{Value: false},
	}
	names := map[string]string{"#v": attrVersion, "#inv": attrInvState, "#payst": attrPayState, "#rev": attrRevision,
		"#exp": tables.AttrHoldExpiresAt, "#cc": attrCustomerCancel}
	cond := "#v = :v AND #rev = :rev AND #inv = :inv AND #payst = :pay"
	for _, c := range w.conds {
		cond += " AND " + c
	}
	// Only placeholders the expression uses may be sent.
	values, names = used(cond, values, names)
	items := []types.TransactWriteItem{{Put: &types.Put{
		TableName:                 aws.String(st.reservations),
		Item:                      reservationItem(w.next, rev+1),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}}
	var seatIDs []string
	if w.seats != nil {
		seatIDs = cur.SeatIDs
		if w.seats.onlyOurs {
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
			sv, sn = used(w.seats.condition+" "+w.seats.update, sv, sn)
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(st.seats),
				Key:                       seatKeyAV(cur.EventID, sid),
				ConditionExpression:       aws.String(w.seats.condition),
				UpdateExpression:          aws.String(w.seats.update),
				ExpressionAttributeNames:  sn,
				ExpressionAttributeValues: sv,
			}})
		}
	}
	if w.event != "" {
		ob, err := st.outboxPut(w.event, w.next, w.reason, w.notify)
		if err != nil {
			return nil, nil, fmt.Errorf("inventory: %s %s: %w", op, cur.ID, err)
		}
		items = append(items, ob)
	}
	return items, seatIDs, nil
}
