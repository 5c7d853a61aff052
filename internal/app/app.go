// Package app builds seatsaga's handlers once per process, in one place, so that the Lambda
// mains (lambdas/*) and the local stack (internal/twin/stack) assemble the same objects the
// same way:
//
//	lambda.Start(app.Lambda(ctx, app.FnClaim)) // a main: clients from its environment (lambda.go)
//	a, err := app.New(app.Deps{...})            // the local stack: its own clients and clock
//	for name, h := range a.Handlers() { host.Register(name, h) }
//
// Both go through build. Clients are built here and handed to adapters; adapters never build
// them.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/secrets"
	"github.com/seatsaga/seatsaga/internal/starter"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/sweeper/sfnadapter"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// Function names: the Lambda functions (internal/deploy names them), and the keys of
// App.Handlers.
const (
	FnClaim      = deploy.FnClaim
	FnAuthorize  = deploy.FnAuthorize
	FnConfirm    = deploy.FnConfirm
	FnCapture    = deploy.FnCapture
	FnCompensate = deploy.FnCompensate
	FnReconcile  = deploy.FnReconcile
	FnAPI        = deploy.FnAPI
	FnWebhook    = deploy.FnWebhook
	FnSweeper    = deploy.FnSweeper
	FnConsumer   = deploy.FnConsumer
	FnRelay      = deploy.FnRelay
	FnStarter    = deploy.FnStarter
)

// functions is every function, the relay last (New leaves it out without a bus).
var functions = []string{FnClaim, FnAuthorize, FnConfirm, FnCapture, FnCompensate, FnReconcile,
	FnAPI, FnWebhook, FnSweeper, FnConsumer, FnStarter, FnRelay}

// Functions lists every function the app builds, the relay last: the names the CDK build,
// lambdas/ and the state machine must agree with.
func Functions() []string { return append([]string(nil), functions...) }

// DynamoDB is every DynamoDB call the handlers make; *dynamodb.Client satisfies it. Deps take
// interfaces rather than clients so that a client left out reaches each handler as the plain
// nil its own constructor refuses; nothing here has to guard against a typed nil.
type DynamoDB interface {
	inventory.DynamoDB
	api.DynamoReader
	webhook.DynamoDB
	consumer.DynamoDB
}

// StepFunctions is every Step Functions call the handlers make; *sfn.Client satisfies it.
type StepFunctions interface {
	api.StepFunctions
	webhook.StepFunctions
	sweeper.Executions
	sfnadapter.ListExecutionsAPI
}

var (
	_ DynamoDB      = (*dynamodb.Client)(nil)
	_ StepFunctions = (*sfn.Client)(nil)
	// The DynamoDB inventory implements the saga's store port itself, and so the webhook
	// handler's narrower one; nothing renames or drops what the saga asks it to store.
	_ saga.Store    = (*inventory.Store)(nil)
	_ webhook.Store = (*inventory.Store)(nil)
)

// Deps are what the handlers of one process share. Each handler uses a part: the relay only
// Bus, the consumer DynamoDB and Sender, the rest DynamoDB, SFN and Payments, and the webhook
// WebhookSecret besides.
type Deps struct {
	Config   config.Config
	DynamoDB DynamoDB
	SFN      StepFunctions
	Payments payment.Provider
	// Bus is where the relay publishes: EventBridge, or the local stack's in-memory bus.
	Bus relay.EventBridgeAPI
	// Sender delivers the consumer's notifications.
	Sender consumer.Sender
	// WebhookSecret yields the secret Stripe's signatures are verified with, on timestamps up
	// to WebhookTolerance old (0: Stripe's 5 minutes). A Lambda's is a cache over Secrets
	// Manager, so a rolled secret is picked up without a cold start; tests give a
	// secrets.Static.
	WebhookSecret    secrets.Source
	WebhookTolerance time.Duration
	// Now, Logger and Metrics default as obs.Defaults says, the same for every handler.
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics metrics.Recorder
	// ReconcileAttempts and ReconcileBackoff override the saga's defaults when positive.
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
}

// App is the handlers of one process, each built once.
type App struct {
	// Steps are the saga's steps, shared by the six step functions and the sweeper.
	Steps *saga.Steps
	// Relay is the outbox relay, which the local stack also feeds from its stream reader.
	Relay    *relay.Relay
	handlers map[string]any
	// deps are what FromEnvironment built the handlers from.
	deps Deps
}

// Handlers returns each function's Lambda handler by function name.
func (a *App) Handlers() map[string]any { return maps.Clone(a.handlers) }

// New builds every function's handler from d, as the local stack runs them: the relay only
// when d.Bus is set, since the stack may leave the outbox unpublished.
func New(d Deps) (*App, error) {
	fns := functions
	if d.Bus == nil {
		fns = slices.DeleteFunc(slices.Clone(fns), func(fn string) bool { return fn == FnRelay })
	}
	return build(d, fns...)
}

// stripeProvider is the Stripe payment adapter every function that pays uses: a client for
// cfg's API base (stripe-go's default when empty) with the given request timeout and
// stripe-go's retries, sending each request with the key keys yields.
func stripeProvider(cfg config.Config, keys secrets.Source, timeout time.Duration, logger *slog.Logger) *stripeadapter.Adapter {
	return stripeadapter.New(stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		KeySource: keys, BaseURL: cfg.StripeAPIBase, MaxNetworkRetries: stripeadapter.DefaultMaxNetworkRetries,
		HTTPClient: &http.Client{Timeout: timeout}, Logger: logger,
	}), logger)
}

// build builds the handlers of fns from d, and once what several share (the inventory, the
// steps). Lambdas and the local stack both build here, so they cannot drift apart.
func build(d Deps, fns ...string) (*App, error) {
	d.Now, d.Logger, d.Metrics = obs.Defaults(d.Now, d.Logger, d.Metrics)
	b := &builder{d: d, app: &App{handlers: make(map[string]any, len(fns))}}
	for _, fn := range fns {
		h, err := b.handler(fn)
		if err == nil {
			// Every handler begins its invocations here, once, for its logs (logging.go).
			h, err = withInvocation(fn, h)
		}
		if err != nil {
			return nil, fmt.Errorf("app: %s: %w", fn, err)
		}
		b.app.handlers[fn] = h
	}
	return b.app, nil
}

type builder struct {
	d   Deps
	app *App
	inv *inventory.Store
}

// handler builds fn's Lambda handler.
func (b *builder) handler(fn string) (any, error) {
	d, cfg := b.d, b.d.Config
	switch fn {
	case FnClaim, FnAuthorize, FnConfirm, FnCapture, FnCompensate, FnReconcile:
		s, err := b.steps()
		if err != nil {
			return nil, err
		}
		return s.Handlers()[fn], nil
	case FnAPI:
		inv, err := b.inventory()
		if err != nil {
			return nil, err
		}
		h, err := api.New(api.Deps{
			Reservations:          inv,
			Admissions:            inv,
			AdmissionLease:        cfg.AdmissionLease,
			MaxActiveReservations: cfg.MaxActiveReservations,
			Hold:                  cfg.Hold,
			Seats: &api.DynamoCatalog{Client: d.DynamoDB, Table: cfg.Tables.Of(tables.SeatsTable),
				AdmissionsTable: cfg.Tables.Of(tables.AdmissionsTable)},
			SFN:             d.SFN,
			Payments:        d.Payments,
			StateMachineARN: cfg.StateMachineARN,
			MaxSeats:        cfg.MaxSeats,
			AllowedOrigins:  cfg.AllowedOrigins,
			Now:             d.Now, Logger: d.Logger, Metrics: d.Metrics,
		})
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case FnWebhook:
		if d.WebhookSecret == nil {
			// Without it every event would be rejected as forged.
			return nil, errors.New("no webhook secret")
		}
		inv, err := b.inventory()
		if err != nil {
			return nil, err
		}
		h, err := webhook.New(webhook.Deps{
			Verifier: stripeadapter.NewWebhookVerifierFromSource(d.WebhookSecret, stripeadapter.WebhookOptions{Now: d.Now, Tolerance: d.WebhookTolerance}),
			Payments: d.Payments,
			Store:    inv,
			Dedupe:   &webhook.DynamoDedupe{Client: d.DynamoDB, Table: cfg.Tables.Of(tables.ProcessedEventsTable), Now: d.Now},
			SFN:      d.SFN,
			Now:      d.Now, Logger: d.Logger, Metrics: d.Metrics,
		})
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case FnSweeper:
		inv, err := b.inventory()
		if err != nil {
			return nil, err
		}
		// The sweeper settles payments with the saga's own reconcile logic, as the saga does.
		steps, err := b.steps()
		if err != nil {
			return nil, err
		}
		// The age of the oldest running execution is read through the Step Functions
		// adapter; without a client the sweeper is handed the plain nil it refuses.
		var running sweeper.RunningExecutions
		if d.SFN != nil {
			running = sfnadapter.New(d.SFN)
		}
		h, err := sweeper.New(sweeper.Deps{
			Backlog:         inv,
			Expirer:         inv,
			Reconciler:      steps,
			SFN:             d.SFN,
			Running:         running,
			StateMachineARN: cfg.StateMachineARN,
			Grace:           cfg.SweepGrace,
			Now:             d.Now, Logger: d.Logger, Metrics: d.Metrics,
		})
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case FnConsumer:
		h, err := consumer.New(consumer.Deps{
			DB:     d.DynamoDB,
			Table:  cfg.Tables.Of(tables.ProcessedEventsTable),
			Sender: d.Sender,
			Now:    d.Now, Logger: d.Logger, Metrics: d.Metrics,
		})
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case FnStarter:
		inv, err := b.inventory()
		if err != nil {
			return nil, err
		}
		h, err := starter.New(starter.Deps{SFN: d.SFN, StateMachineARN: cfg.StateMachineARN, Backlog: inv,
			Logger: d.Logger, Metrics: d.Metrics})
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case FnRelay:
		h, err := relay.New(relay.Deps{Bus: d.Bus, EventBusName: cfg.EventBusName, Logger: d.Logger, Metrics: d.Metrics})
		if err != nil {
			return nil, err
		}
		b.app.Relay = h
		return h.Handle, nil
	}
	return nil, fmt.Errorf("no such function (want one of %v)", functions)
}

// steps builds the saga steps once, over the shared inventory.
func (b *builder) steps() (*saga.Steps, error) {
	if b.app.Steps != nil {
		return b.app.Steps, nil
	}
	inv, err := b.inventory()
	if err != nil {
		return nil, err
	}
	cfg := b.d.Config
	hold := cfg.Hold
	if hold <= 0 {
		hold = config.DefaultHold
	}
	s, err := saga.New(saga.Deps{
		Store: inv, Payments: b.d.Payments,
		Now: b.d.Now, Log: b.d.Logger, Metrics: b.d.Metrics,
		// saga.New parses the policy, so a bad setting fails the cold start.
		Policy: reservation.LateSuccessPolicy(cfg.LateSuccessPolicy),
		Hold:   hold, Limits: limits(cfg),
		ReconcileAttempts: b.d.ReconcileAttempts, ReconcileBackoff: b.d.ReconcileBackoff,
	})
	if err != nil {
		return nil, err
	}
	b.app.Steps = s
	return s, nil
}

// inventory builds the DynamoDB inventory once; every handler of the process shares it (its
// claim limits matter to the claim step only, the one caller of Claim).
func (b *builder) inventory() (*inventory.Store, error) {
	if b.inv != nil {
		return b.inv, nil
	}
	inv, err := inventory.New(inventory.Config{Client: b.d.DynamoDB, Names: b.d.Config.Tables,
		Now: b.d.Now, Metrics: b.d.Metrics, Logger: b.d.Logger, Limits: limits(b.d.Config)})
	if err != nil {
		return nil, err
	}
	b.inv = inv
	return inv, nil
}

// limits are the claim limits cfg sets; a configured hold shorter than the default minimum
// lowers the minimum, so that the hold every claim asks for is accepted.
func limits(cfg config.Config) reservation.Limits {
	l := reservation.DefaultLimits()
	if cfg.MaxSeats > 0 {
		l.MaxSeats = cfg.MaxSeats
	}
	if cfg.Hold > 0 && cfg.Hold < l.MinHold {
		l.MinHold = cfg.Hold
	}
	return l
}
