package stripesim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// WebhookConfig configures event delivery. Every event is delivered at least once while a
// URL is set; events emitted while no URL is set are kept (Events) but not delivered.
type WebhookConfig struct {
	URL string
	// Secret is the endpoint signing secret (whsec_…).
	Secret string
	// DuplicateRate is the probability (0..1) that an event is delivered a second time.
	DuplicateRate float64
	// Delay is added before every first attempt.
	Delay time.Duration
	// Reorder adds a random extra delay in [0, ReorderWindow) to each delivery, so later
	// events may arrive first.
	Reorder       bool
	ReorderWindow time.Duration
	// MaxAttempts bounds deliveries of one copy (first try included); default 5.
	MaxAttempts int
	// RetryBackoff is the wait before the first retry, doubling each time; default 1 s.
	RetryBackoff time.Duration
	// Timeout bounds one delivery request (real time); default 5 s.
	Timeout time.Duration
}

func (c WebhookConfig) withDefaults() WebhookConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.ReorderWindow <= 0 {
		c.ReorderWindow = 2 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	return c
}

// SetWebhook replaces the delivery configuration for events emitted from now on.
func (s *Sim) SetWebhook(cfg WebhookConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhook = cfg.withDefaults()
}

// Delivery is one delivery attempt.
type Delivery struct {
	EventID   string
	EventType string
	// Copy is 1 for the first copy of an event, 2 for a duplicate.
	Copy    int
	Attempt int
	At      time.Time
	// Status is the receiver's HTTP status, 0 when the request itself failed (Err).
	Status int
	Err    string
}

// Delivered reports whether the receiver acknowledged this attempt with a 2xx.
func (d Delivery) Delivered() bool { return d.Status >= 200 && d.Status < 300 }

type hookState struct {
	deliveries []Delivery
	pending    int
}

type event struct {
	id             string
	typ            string
	created        time.Time
	payload        []byte
	requestID      string
	idempotencyKey string
}

// EventRecord is an emitted event as delivered: Payload is the exact signed body.
type EventRecord struct {
	ID      string
	Type    string
	Created time.Time
	Payload []byte
}

// Events lists every event emitted so far, in order.
func (s *Sim) Events() []EventRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]EventRecord, 0, len(s.events))
	for _, e := range s.events {
		out = append(out, EventRecord{ID: e.id, Type: e.typ, Created: e.created, Payload: append([]byte(nil), e.payload...)})
	}
	return out
}

// Deliveries lists every delivery attempt so far, in order.
func (s *Sim) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.hooks.deliveries...)
}

// PendingWebhooks is how many event copies are scheduled or being retried.
func (s *Sim) PendingWebhooks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hooks.pending
}

// SignPayload returns the Stripe-Signature header for payload signed at t, exactly as Stripe
// computes it: t=<unix seconds>,v1=hex(HMAC-SHA256(secret, "<t>.<payload>")).
func SignPayload(payload []byte, secret string, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(payload)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// emit records an event about obj (rendered now) and queues it for delivery; must hold s.mu.
func (s *Sim) emit(typ string, obj map[string]any, req requestInfo) {
	ev := &event{id: s.newID("evt"), typ: typ, created: s.now(), requestID: req.id, idempotencyKey: req.idempotencyKey}
	var request any
	if req.id != "" {
		request = map[string]any{"id": req.id, "idempotency_key": nullable(req.idempotencyKey)}
	} else {
		request = map[string]any{"id": nil, "idempotency_key": nil}
	}
	body := map[string]any{
		"id":               ev.id,
		"object":           "event",
		"api_version":      APIVersion,
		"created":          ev.created.Unix(),
		"data":             map[string]any{"object": obj},
		"livemode":         false,
		"pending_webhooks": 1,
		"request":          request,
		"type":             typ,
	}
	payload, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("stripesim: render event: %v", err))
	}
	ev.payload = payload
	s.events = append(s.events, ev)
	s.outbox = append(s.outbox, ev)
}

// scheduleDeliveries arms delivery timers for queued events; must hold s.mu.
func (s *Sim) scheduleDeliveries() {
	cfg := s.webhook
	queued := s.outbox
	s.outbox = nil
	if cfg.URL == "" {
		return
	}
	for _, ev := range queued {
		copies := 1
		if cfg.DuplicateRate > 0 && s.rng.Float64() < cfg.DuplicateRate {
			copies = 2
		}
		for c := 1; c <= copies; c++ {
			delay := cfg.Delay
			if cfg.Reorder {
				delay += time.Duration(s.rng.Int63n(int64(cfg.ReorderWindow)))
			}
			s.hooks.pending++
			ev, c := ev, c
			s.after(delay, func() { s.deliver(cfg, ev, c, 1) })
		}
	}
}

// deliver makes one attempt and schedules the next on failure. It runs in the clock's
// callback: a goroutine of its own on the wall clock, the advancing goroutine on a fake one,
// which keeps fake-clock tests deterministic.
func (s *Sim) deliver(cfg WebhookConfig, ev *event, copyNo, attempt int) {
	at := s.now()
	status, err := s.post(cfg, ev, at)
	d := Delivery{EventID: ev.id, EventType: ev.typ, Copy: copyNo, Attempt: attempt, At: at, Status: status}
	if err != nil {
		d.Err = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks.deliveries = append(s.hooks.deliveries, d)
	s.log.Info("webhook delivery", "event", ev.id, "type", ev.typ, "copy", copyNo, "attempt", attempt,
		"status", status, "error", d.Err)
	if d.Delivered() || attempt >= cfg.MaxAttempts || s.closed {
		s.hooks.pending--
		return
	}
	backoff := cfg.RetryBackoff << (attempt - 1)
	s.after(backoff, func() { s.deliver(cfg, ev, copyNo, attempt+1) })
	if s.closed {
		s.hooks.pending--
	}
}

func (s *Sim) post(cfg WebhookConfig, ev *event, at time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(ev.payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", SignPayload(ev.payload, cfg.Secret, at))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
