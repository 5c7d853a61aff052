package console

import (
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// Records is what only this system knows about a reservation, as the page shows it: the
// items rendered as `inspect` prints them, each section with the error its read met.
type Records struct {
	ReservationID     string        `json:"reservationId"`
	ReservationsTable string        `json:"reservationsTable"`
	Reservation       [][2]string   `json:"reservation"`
	ReservationErr    string        `json:"reservationError,omitempty"`
	SeatsTable        string        `json:"seatsTable"`
	Seats             []Seat        `json:"seats"`
	SeatsErr          string        `json:"seatsError,omitempty"`
	Outbox            []OutboxEvent `json:"outbox"`
	OutboxErr         string        `json:"outboxError,omitempty"`
	// Ledger is nil when the console has no ledger to read.
	Ledger    *Ledger `json:"ledger,omitempty"`
	LedgerErr string  `json:"ledgerError,omitempty"`
}

// Seat is one seat item by its key.
type Seat struct {
	Key    string      `json:"key"`
	Fields [][2]string `json:"fields"`
}

// OutboxEvent is one event the reservation published through the outbox.
type OutboxEvent struct {
	Version   int64  `json:"version"`
	Type      string `json:"type"`
	EventID   string `json:"eventId"`
	CreatedAt string `json:"createdAt"`
	Payload   string `json:"payload"`
}

// Ledger is the provider's books on the reservation.
type Ledger struct {
	Entries   []LedgerEntry `json:"entries"`
	Movements []Movement    `json:"movements"`
}

// LedgerEntry is one PaymentIntent and what moved on it.
type LedgerEntry struct {
	PaymentIntentID string `json:"paymentIntentId"`
	Status          string `json:"status"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	Authorized      int64  `json:"authorized"`
	Captured        int64  `json:"captured"`
	Voided          int64  `json:"voided"`
	Refunded        int64  `json:"refunded"`
	Captures        int    `json:"captures"`
	Refunds         int    `json:"refunds"`
	Declines        int    `json:"declines"`
}

// Movement is one movement of money.
type Movement struct {
	At              string `json:"at"`
	Kind            string `json:"kind"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	PaymentIntentID string `json:"paymentIntentId"`
}

// recordsOf renders what stack's inspector read.
func recordsOf(r stack.ReservationRecords) *Records {
	out := &Records{ReservationID: r.ReservationID, ReservationsTable: r.ReservationsTable, SeatsTable: r.SeatsTable,
		Reservation: stack.ItemFields(r.Reservation, "taskToken"), ReservationErr: errText(r.ReservationErr),
		SeatsErr: errText(r.SeatsErr), OutboxErr: errText(r.OutboxErr), LedgerErr: errText(r.LedgerErr),
		Seats: []Seat{}, Outbox: []OutboxEvent{}}
	for _, s := range r.Seats {
		out.Seats = append(out.Seats, Seat{Key: s.Key, Fields: stack.ItemFields(s.Item)})
	}
	for _, e := range r.Outbox {
		out.Outbox = append(out.Outbox, OutboxEvent{Version: e.AggregateVersion, Type: string(e.Type), EventID: e.EventID,
			CreatedAt: e.CreatedAt.UTC().Format(time.RFC3339Nano), Payload: pretty(string(e.Payload))})
	}
	if l := r.Ledger; l != nil {
		out.Ledger = &Ledger{Entries: []LedgerEntry{}, Movements: []Movement{}}
		for _, e := range l.Entries {
			out.Ledger.Entries = append(out.Ledger.Entries, LedgerEntry{PaymentIntentID: e.PaymentIntentID, Status: e.Status,
				Amount: e.Amount, Currency: e.Currency, Authorized: e.Authorized, Captured: e.Captured, Voided: e.Voided,
				Refunded: e.Refunded, Captures: e.Captures, Refunds: e.Refunds, Declines: e.Declines})
		}
		for _, m := range l.Movements {
			out.Ledger.Movements = append(out.Ledger.Movements, Movement{At: m.At.UTC().Format(time.RFC3339Nano), Kind: string(m.Kind),
				Amount: m.Amount, Currency: m.Currency, PaymentIntentID: m.PaymentIntentID})
		}
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
