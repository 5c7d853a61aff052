package invariants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Store reads the DynamoDB side: seats and reservations (a full, strongly consistent scan after
// the sale settled).
type Store interface {
	Seats(ctx context.Context) ([]Seat, error)
	Reservations(ctx context.Context) ([]Reservation, error)
}

// Ledger reads the payment provider's ledger.
type Ledger interface {
	Payments(ctx context.Context) ([]Payment, error)
}

// Engine lists the workflow executions of the sale.
type Engine interface {
	Executions(ctx context.Context) ([]Execution, error)
}

// Bus is what the relay published.
type Bus interface {
	Published() []Publication
}

// Consumer is an event consumer's side of the published events: its dedupe records, the
// event id of each effect it applied, and which event types it acts on.
type Consumer interface {
	Records(ctx context.Context) ([]ConsumerRecord, error)
	Sent() []string
	Handles(eventType string) bool
}

// Sources are where Collect reads from. Bus may be nil when no relay ran, Consumer when no
// consumer did.
type Sources struct {
	Store    Store
	Ledger   Ledger
	Engine   Engine
	Bus      Bus
	Consumer Consumer
	// Now is the stack's clock; Grace the sweeper's grace after a hold's deadline.
	Now   func() time.Time
	Grace time.Duration
	// MaxActive is the cap on one customer's reservations in progress (0: no cap).
	MaxActive int
}

// Collect reads a Snapshot from every source.
func Collect(ctx context.Context, src Sources) (Snapshot, error) {
	if src.Store == nil || src.Ledger == nil || src.Engine == nil || src.Now == nil {
		return Snapshot{}, errors.New("invariants: Store, Ledger, Engine and Now are required")
	}
	s := Snapshot{Grace: src.Grace, MaxActive: src.MaxActive}
	var err error
	if s.Executions, err = src.Engine.Executions(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("invariants: list executions: %w", err)
	}
	if s.Reservations, err = src.Store.Reservations(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("invariants: read reservations: %w", err)
	}
	if s.Seats, err = src.Store.Seats(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("invariants: read seats: %w", err)
	}
	if s.Payments, err = src.Ledger.Payments(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("invariants: read the provider's ledger: %w", err)
	}
	if src.Bus != nil {
		s.Published = src.Bus.Published()
	}
	// The consumer is read after the bus, so that every effect it shows is of an event the
	// bus already listed; an event published meanwhile is simply not judged yet.
	if src.Consumer != nil && src.Bus != nil {
		// Records before sends: a record reads SENT only after its send, so no record is
		// judged against a send list older than it.
		view := &ConsumerView{Handled: map[string]bool{}}
		if view.Records, err = src.Consumer.Records(ctx); err != nil {
			return Snapshot{}, fmt.Errorf("invariants: read the consumer's records: %w", err)
		}
		view.Sent = src.Consumer.Sent()
		for _, p := range s.Published {
			var env struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(p.Payload, &env) == nil {
				if _, asked := view.Handled[env.Type]; !asked {
					view.Handled[env.Type] = src.Consumer.Handles(env.Type)
				}
			}
		}
		s.Consumer = view
	}
	// Now is read last so that no item read above is judged against a time before it was read.
	s.Now = src.Now()
	return s, nil
}

// Run collects a snapshot and checks it.
func Run(ctx context.Context, src Sources) (Verdict, error) {
	s, err := Collect(ctx, src)
	if err != nil {
		return Verdict{}, err
	}
	return Check(s), nil
}
