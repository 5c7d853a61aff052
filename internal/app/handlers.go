package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// Base is what the handlers of one process share, built once: a Lambda builds it from its
// environment (NewBase), the local stack from its local clients and clock. Each builder uses a
// part of it: Relay needs neither DynamoDB nor Payments, Consumer no Payments or SFN.
type Base struct {
	Config   config.Config
	DynamoDB *dynamodb.Client
	SFN      *sfn.Client
	Payments payment.Provider
	Now      func() time.Time
	Logger   *slog.Logger
	Metrics  metrics.Recorder
	// ReconcileAttempts and ReconcileBackoff override the saga's defaults when positive.
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
}

// The DynamoDB inventory implements the saga's store port itself, and so the webhook
// handler's narrower one; nothing renames or drops what the saga asks it to store.
var (
	_ saga.Store    = (*inventory.Store)(nil)
	_ webhook.Store = (*inventory.Store)(nil)
)

// StripeProvider is the Stripe payment adapter every handler uses: a client for cfg's API base
// (stripe-go's default when empty) with the given request timeout and stripe-go's retries.
func StripeProvider(cfg config.Config, key string, timeout time.Duration, logger *slog.Logger) *stripeadapter.Adapter {
	return stripeadapter.New(stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key: key, BaseURL: cfg.StripeAPIBase, MaxNetworkRetries: stripeadapter.DefaultMaxNetworkRetries,
		HTTPClient: &http.Client{Timeout: timeout}, Logger: logger,
	}), logger)
}

// Steps builds the saga steps (the six step Lambdas, and the sweeper's reconciler).
func Steps(b *Base) (*saga.Steps, error) {
	d := SagaDeps{Payments: b.Payments, Now: b.Now, Metrics: b.Metrics, Logger: b.Logger,
		ReconcileAttempts: b.ReconcileAttempts, ReconcileBackoff: b.ReconcileBackoff}
	if b.DynamoDB != nil {
		d.DynamoDB = b.DynamoDB
	}
	return NewSteps(b.Config, d)
}

// API builds the reservation API handler.
func API(b *Base) (*api.Handler, error) {
	b = b.withDefaults()
	inv, err := b.inventory()
	if err != nil {
		return nil, err
	}
	return api.New(api.Deps{
		Reservations:    inv,
		Seats:           &api.DynamoCatalog{Client: b.DynamoDB, Table: b.Config.Tables.Of(tables.SeatsTable)},
		SFN:             b.SFN,
		Payments:        b.Payments,
		StateMachineARN: b.Config.StateMachineARN,
		MaxSeats:        b.Config.MaxSeats,
		Now:             b.Now,
		Logger:          b.Logger,
		Metrics:         b.Metrics,
	})
}

// Webhook builds the Stripe webhook handler; it verifies signatures with secret and b's clock,
// accepting timestamps up to tolerance old (0: Stripe's 5 minutes).
func Webhook(b *Base, secret string, tolerance time.Duration) (*webhook.Handler, error) {
	b = b.withDefaults()
	inv, err := b.inventory()
	if err != nil {
		return nil, err
	}
	return webhook.New(webhook.Deps{
		Verifier: stripeadapter.NewWebhookVerifier(secret, stripeadapter.WebhookOptions{Now: b.Now, Tolerance: tolerance}),
		Payments: b.Payments,
		Store:    inv,
		Dedupe:   &webhook.DynamoDedupe{Client: b.DynamoDB, Table: b.Config.Tables.Of(tables.ProcessedEventsTable), Now: b.Now},
		SFN:      b.SFN,
		Now:      b.Now,
		Logger:   b.Logger,
		Metrics:  b.Metrics,
	})
}

// Sweeper builds the scheduled sweeper; reconciler is the saga's reconcile logic (the
// *saga.Steps of Steps(b)), so that the sweeper settles payments exactly as the saga does.
func Sweeper(b *Base, reconciler sweeper.Reconciler) (*sweeper.Sweeper, error) {
	b = b.withDefaults()
	inv, err := b.inventory()
	if err != nil {
		return nil, err
	}
	return sweeper.New(sweeper.Deps{
		Backlog:         inv,
		Expirer:         inv,
		Reconciler:      reconciler,
		SFN:             b.SFN,
		StateMachineARN: b.Config.StateMachineARN,
		Grace:           b.Config.SweepGrace,
		Now:             b.Now,
		Logger:          b.Logger,
		Metrics:         b.Metrics,
	})
}

// Consumer builds the example EventBridge consumer, which notifies customers through sender.
func Consumer(b *Base, sender consumer.Sender) *consumer.Notifier {
	b = b.withDefaults()
	return &consumer.Notifier{
		DB:      b.DynamoDB,
		Table:   b.Config.Tables.Of(tables.ProcessedEventsTable),
		Sender:  sender,
		Now:     b.Now,
		Metrics: b.Metrics,
		Log:     b.Logger,
	}
}

// Relay builds the outbox relay, which publishes to bus (EventBridge, or the local stack's
// in-memory bus) on the configured event bus.
func Relay(b *Base, bus relay.EventBridgeAPI) (*relay.Relay, error) {
	b = b.withDefaults()
	r := &relay.Relay{Bus: bus, EventBusName: b.Config.EventBusName, Metrics: b.Metrics, Log: b.Logger}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// withDefaults is a copy of b with the clock, logger and metrics it was not given filled in
// (obs.Defaults), so that every handler of a process gets the same ones.
func (b *Base) withDefaults() *Base {
	c := *b
	c.Now, c.Logger, c.Metrics = obs.Defaults(c.Now, c.Logger, c.Metrics)
	return &c
}

// inventory is the DynamoDB inventory the api, webhook and sweeper handlers read and write. It
// checks the clients those handlers need: a nil client stored in a handler's interface field
// would pass the handler's own check and fail on the first request instead.
func (b *Base) inventory() (*inventory.Store, error) {
	if b.DynamoDB == nil || b.SFN == nil {
		return nil, errors.New("wiring: DynamoDB and SFN are required")
	}
	inv, err := inventory.New(inventory.Config{Client: b.DynamoDB, Names: b.Config.Tables, Now: b.Now, Metrics: b.Metrics, Logger: b.Logger})
	if err != nil {
		return nil, fmt.Errorf("wiring: inventory: %w", err)
	}
	return inv, nil
}
