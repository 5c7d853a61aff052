// Package stripesim is a stateful, Stripe-compatible payment simulator: an HTTP server that
// speaks the part of Stripe's API seatsaga's adapter uses (PaymentIntents with manual
// capture, refunds), with Stripe's status machine, error bodies and idempotency rules, test
// payment methods that authorize, decline, demand 3-D Secure, authorize late or refuse their
// refunds, refunds that stay pending before they settle, signed webhooks delivered at least
// once (duplicated, reordered, delayed, retried), injectable faults, and a ledger of every
// money movement for the invariant checker.
//
// Business delays (3-D Secure completion, late authorization, refund settlement, webhook
// delays and retries) run on the injected clock, so a fake clock drives them in tests;
// HTTP-level faults (latency, holding a lost response) use real time because the client's
// timeouts do.
package stripesim

import (
	"context"
	"log/slog"
	"math/rand"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/serve"
)

// APIVersion is the Stripe API version the simulator renders objects and events for; it
// matches stripe-go v76, so webhook verification needs no version override.
const APIVersion = "2023-10-16"

// Options configures a Sim. The zero value is usable.
type Options struct {
	// Clock drives business delays and timestamps; nil means the wall clock.
	Clock clock.Clock
	// APIKey, when set, is the only secret key accepted; otherwise any non-empty key is.
	APIKey string
	// ThreeDSDelay is how long the simulated buyer takes to complete 3-D Secure
	// (PaymentMethodThreeDSecure); default 2 s.
	ThreeDSDelay time.Duration
	// LateAuthorizationDelay is how long PaymentMethodAuthorizeLate stays processing; default 30 s.
	LateAuthorizationDelay time.Duration
	// RefundDelay is how long a refund stays pending before it settles: succeeded, or failed
	// for PaymentMethodRefundFail. Zero (the default, unlike the other delays) settles every
	// refund within the call that creates it, so a refund succeeds at once, as card refunds
	// usually do at Stripe, and a PaymentMethodRefundFail refund is answered failed.
	RefundDelay time.Duration
	// RefuseCancelWhileProcessing makes a cancel of a processing PaymentIntent fail with
	// payment_intent_unexpected_state, stored under its idempotency key, as Stripe does in all
	// but rare cases; by default such a cancel goes through.
	RefuseCancelWhileProcessing bool
	// AuthorizationValidity is how long an authorization can be captured; default 7 days.
	AuthorizationValidity time.Duration
	// LostResponseHold bounds how long a lost response keeps the connection open when the
	// client never gives up; default 30 s.
	LostResponseHold time.Duration
	// Webhook configures event delivery; it can be changed later with SetWebhook.
	Webhook WebhookConfig
	// Seed makes ids, duplicates and reordering reproducible; 0 means 1.
	Seed int64
	// Logger receives one line per request and delivery; nil discards.
	Logger *slog.Logger
}

// Sim is the simulator. All methods are safe for concurrent use.
type Sim struct {
	opts  Options
	clock clock.Clock
	log   *slog.Logger

	mu        sync.Mutex
	rng       *rand.Rand
	intents   map[string]*intent
	order     []string // PaymentIntent ids in creation order
	charges   map[string]*charge
	refunds   map[string]*refund
	idem      map[string]*idemEntry
	faults    map[Endpoint][]*activeFault
	latency   map[Endpoint]time.Duration
	movements []Movement
	webhook   WebhookConfig
	events    []*event
	outbox    []*event // emitted under mu, scheduled for delivery after it is released
	hooks     hookState
	timers    map[clock.Timer]struct{}
	// methodsUnknown makes every payment method unknown (ForgetPaymentMethods).
	methodsUnknown bool
	closed         bool
	done           chan struct{}

	server serve.Server
}

// New returns a simulator; serve it with Handler or Start.
func New(opts Options) *Sim {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.ThreeDSDelay <= 0 {
		opts.ThreeDSDelay = 2 * time.Second
	}
	if opts.LateAuthorizationDelay <= 0 {
		opts.LateAuthorizationDelay = 30 * time.Second
	}
	if opts.AuthorizationValidity <= 0 {
		opts.AuthorizationValidity = 7 * 24 * time.Hour
	}
	if opts.LostResponseHold <= 0 {
		opts.LostResponseHold = 30 * time.Second
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sim{
		opts:    opts,
		clock:   opts.Clock,
		log:     log.With("component", "stripesim"),
		rng:     rand.New(rand.NewSource(opts.Seed)),
		intents: map[string]*intent{},
		charges: map[string]*charge{},
		refunds: map[string]*refund{},
		idem:    map[string]*idemEntry{},
		faults:  map[Endpoint][]*activeFault{},
		latency: map[Endpoint]time.Duration{},
		timers:  map[clock.Timer]struct{}{},
		done:    make(chan struct{}),
		server:  serve.Server{Name: "stripesim", ReadHeaderTimeout: 5 * time.Second, ShutdownTimeout: 2 * time.Second},
	}
	s.webhook = opts.Webhook.withDefaults()
	return s
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until ctx is done or
// Close is called.
func (s *Sim) Start(ctx context.Context, addr string) error {
	if _, err := s.server.Start(addr, s.Handler()); err != nil {
		return err
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return nil
}

// URL is the base URL to give stripe-go, e.g. http://127.0.0.1:41234; empty before Start.
func (s *Sim) URL() string { return s.server.URL() }

// Close stops the server, every pending timer and webhook delivery. Held (lost) responses
// are released.
func (s *Sim) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	for t := range s.timers {
		t.Stop()
	}
	s.timers = map[clock.Timer]struct{}{}
	s.mu.Unlock()
	_ = s.server.Close()
}

// after schedules f on the sim's clock unless the sim is closed; must hold s.mu.
func (s *Sim) after(d time.Duration, f func()) {
	if s.closed {
		return
	}
	var t clock.Timer
	t = s.clock.AfterFunc(d, func() {
		s.mu.Lock()
		_, live := s.timers[t]
		delete(s.timers, t)
		s.mu.Unlock()
		if live {
			f()
		}
	})
	s.timers[t] = struct{}{}
}

// now is the sim's clock, truncated to Stripe's resolution of one second.
func (s *Sim) now() time.Time { return s.clock.Now() }

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newID returns a Stripe-shaped id; must hold s.mu.
func (s *Sim) newID(prefix string) string {
	b := make([]byte, 24)
	for i := range b {
		b[i] = idAlphabet[s.rng.Intn(len(idAlphabet))]
	}
	return prefix + "_" + string(b)
}
