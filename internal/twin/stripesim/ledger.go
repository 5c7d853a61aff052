package stripesim

import (
	"sort"
	"time"
)

// MovementKind is what happened to money.
type MovementKind string

// Movement kinds. Authorized money is held on the card; captured is taken; voided is
// released (cancel, the uncaptured rest of a partial capture, a lapsed authorization);
// refunded is returned after capture, once the refund succeeded. A refund that does not
// settle at once is first recorded as refund_pending (no money moves yet) and later as
// refunded or refund_failed (the merchant keeps the money). Declined records a refused
// attempt (no money moves).
const (
	MovementAuthorized    MovementKind = "authorized"
	MovementCaptured      MovementKind = "captured"
	MovementVoided        MovementKind = "voided"
	MovementRefunded      MovementKind = "refunded"
	MovementRefundPending MovementKind = "refund_pending"
	MovementRefundFailed  MovementKind = "refund_failed"
	MovementDeclined      MovementKind = "declined"
)

// Movement is one entry of the ledger.
type Movement struct {
	At              time.Time
	Kind            MovementKind
	ReservationID   string
	PaymentIntentID string
	ChargeID        string
	RefundID        string
	Amount          int64
	Currency        string
}

// LedgerEntry sums one PaymentIntent's movements.
type LedgerEntry struct {
	ReservationID   string
	PaymentIntentID string
	// Status is the PaymentIntent's current Stripe status.
	Status     string
	Amount     int64
	Currency   string
	Authorized int64
	Captured   int64
	Voided     int64
	// Refunded is what succeeded refunds returned. RefundPendingAmount is what refunds
	// still pending would return (not yet money moved); RefundFailedAmount what failed
	// refunds did not return.
	Refunded            int64
	RefundPendingAmount int64
	RefundFailedAmount  int64
	// Captures, Refunds and Declines count the operations, so a double capture shows even
	// if amounts were to cancel out. Refunds counts succeeded refunds; RefundsPending those
	// still pending and RefundsFailed those that failed.
	Captures       int
	Refunds        int
	RefundsPending int
	RefundsFailed  int
	Declines       int
	Created        time.Time
}

// Net is what the merchant kept: captured minus what succeeded refunds returned. Pending
// refunds do not count, since they may still fail.
func (e LedgerEntry) Net() int64 { return e.Captured - e.Refunded }

// Held is what is still authorized and neither captured nor released.
func (e LedgerEntry) Held() int64 { return e.Authorized - e.Captured - e.Voided }

// Ledger is a consistent copy of the simulator's books.
type Ledger struct {
	// Entries has one entry per PaymentIntent, in creation order.
	Entries []LedgerEntry
	// Movements lists every movement in the order it happened.
	Movements []Movement
}

// ForReservation returns the entries of one reservation (normally one; more would mean the
// saga created a second PaymentIntent).
func (l Ledger) ForReservation(reservationID string) []LedgerEntry {
	var out []LedgerEntry
	for _, e := range l.Entries {
		if e.ReservationID == reservationID {
			out = append(out, e)
		}
	}
	return out
}

// ByReservation sums entries per reservation id.
func (l Ledger) ByReservation() map[string]LedgerEntry {
	out := map[string]LedgerEntry{}
	for _, e := range l.Entries {
		sum, ok := out[e.ReservationID]
		if !ok {
			out[e.ReservationID] = e
			continue
		}
		sum.PaymentIntentID += "," + e.PaymentIntentID
		sum.Status += "," + e.Status
		sum.Amount += e.Amount
		sum.Authorized += e.Authorized
		sum.Captured += e.Captured
		sum.Voided += e.Voided
		sum.Refunded += e.Refunded
		sum.RefundPendingAmount += e.RefundPendingAmount
		sum.RefundFailedAmount += e.RefundFailedAmount
		sum.Captures += e.Captures
		sum.Refunds += e.Refunds
		sum.RefundsPending += e.RefundsPending
		sum.RefundsFailed += e.RefundsFailed
		sum.Declines += e.Declines
		out[e.ReservationID] = sum
	}
	return out
}

// Ledger returns a copy of the books.
func (s *Sim) Ledger() Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.order {
		s.expireIfLapsed(s.intents[id])
	}
	entries := make(map[string]*LedgerEntry, len(s.order))
	l := Ledger{Movements: append([]Movement(nil), s.movements...)}
	for _, id := range s.order {
		pi := s.intents[id]
		entries[id] = &LedgerEntry{
			ReservationID:   pi.metadata["reservation_id"],
			PaymentIntentID: pi.id,
			Status:          pi.status,
			Amount:          pi.amount,
			Currency:        pi.currency,
			Created:         pi.created,
		}
	}
	// pending holds the refunds recorded pending and not settled yet, so their settlement
	// moves them out of the pending sums.
	pending := map[string]bool{}
	settle := func(e *LedgerEntry, m Movement) {
		if pending[m.RefundID] {
			delete(pending, m.RefundID)
			e.RefundPendingAmount -= m.Amount
			e.RefundsPending--
		}
	}
	for _, m := range s.movements {
		e := entries[m.PaymentIntentID]
		switch m.Kind {
		case MovementAuthorized:
			e.Authorized += m.Amount
		case MovementCaptured:
			e.Captured += m.Amount
			e.Captures++
		case MovementVoided:
			e.Voided += m.Amount
		case MovementRefundPending:
			pending[m.RefundID] = true
			e.RefundPendingAmount += m.Amount
			e.RefundsPending++
		case MovementRefunded:
			settle(e, m)
			e.Refunded += m.Amount
			e.Refunds++
		case MovementRefundFailed:
			settle(e, m)
			e.RefundFailedAmount += m.Amount
			e.RefundsFailed++
		case MovementDeclined:
			e.Declines++
		}
	}
	for _, id := range s.order {
		l.Entries = append(l.Entries, *entries[id])
	}
	sort.SliceStable(l.Entries, func(i, j int) bool { return l.Entries[i].Created.Before(l.Entries[j].Created) })
	return l
}

// record appends a movement; must hold s.mu.
func (s *Sim) record(kind MovementKind, pi *intent, chargeID, refundID string, amount int64) {
	s.movements = append(s.movements, Movement{
		At: s.now(), Kind: kind, ReservationID: pi.metadata["reservation_id"], PaymentIntentID: pi.id,
		ChargeID: chargeID, RefundID: refundID, Amount: amount, Currency: pi.currency,
	})
}
