package consumer

import (
	"context"
	"log/slog"
	"sync"
)

// LogSender "sends" a notification by logging it as a structured line: the example consumer's
// channel on AWS, where a real one would call an e-mail or push service.
type LogSender struct{ Log *slog.Logger }

// Send implements Sender.
func (s LogSender) Send(ctx context.Context, n Notification) error {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	log.InfoContext(ctx, "notification", "eventId", n.EventID, "reservationId", n.ReservationID,
		"customerId", n.CustomerID, "kind", n.Kind, "aggregateVersion", n.AggregateVersion, "reason", n.Reason)
	return nil
}

// MemorySender records what it sends, for the local stack and tests; it can be told to fail.
type MemorySender struct {
	mu    sync.Mutex
	sent  []Notification
	fails []error
}

// FailNext makes the next len(errs) sends fail with errs, in order, sending nothing.
func (s *MemorySender) FailNext(errs ...error) {
	s.mu.Lock()
	s.fails = append(s.fails, errs...)
	s.mu.Unlock()
}

// Send implements Sender.
func (s *MemorySender) Send(_ context.Context, n Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fails) > 0 {
		err := s.fails[0]
		s.fails = s.fails[1:]
		return err
	}
	s.sent = append(s.sent, n)
	return nil
}

// Sent returns a copy of every notification sent, in order.
func (s *MemorySender) Sent() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.sent...)
}
