package localstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/webhookhandler"
	"github.com/seatsaga/seatsaga/internal/wiring"
)

// LocalStripeKey is the secret key the handlers present to the payment simulator.
const LocalStripeKey = "sk_test_seatsaga_local"

// EventBusName is the local bus the relay publishes to.
const EventBusName = "seatsaga-local"

// appConfig is the configuration a Lambda's environment would carry on AWS, pointed at the local
// services.
func (st *Stack) appConfig() config.Config {
	return config.Config{
		Stage:             "local",
		Tables:            st.Names,
		StateMachineARN:   st.StateMachineARN,
		EventBusName:      EventBusName,
		StripeAPIBase:     st.Endpoints.Payments,
		LateSuccessPolicy: st.cfg.LateSuccessPolicy,
		Hold:              st.cfg.Hold,
		MaxSeats:          st.cfg.MaxSeats,
		SweepGrace:        st.cfg.SweepGrace,
		MetricsNamespace:  config.DefaultMetricsNamespace,
		DynamoDBEndpoint:  st.Endpoints.DynamoDB,
		SFNEndpoint:       st.Endpoints.StepFunctions,
	}
}

// registerHandlers builds every handler as its Lambda main builds it (internal/wiring), with the
// local clients, the stack's clock and its metrics, and registers it under its function name.
func (st *Stack) registerHandlers(ctx context.Context) error {
	cfg := st.AppConfig
	provider := stripeadapter.New(stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key:               LocalStripeKey,
		BaseURL:           st.Endpoints.Payments,
		HTTPClient:        &http.Client{Timeout: st.cfg.PaymentsTimeout},
		MaxNetworkRetries: stripeadapter.DefaultMaxNetworkRetries,
		Logger:            st.log,
	}), st.log)

	steps, err := wiring.NewSteps(cfg, wiring.SagaDeps{
		DynamoDB: st.DynamoDB, Payments: provider, Now: st.Clock.Now, Metrics: st.Metrics, Logger: st.log,
		ReconcileAttempts: st.cfg.ReconcileAttempts, ReconcileBackoff: st.cfg.ReconcileBackoff,
	})
	if err != nil {
		return fmt.Errorf("localstack: saga steps: %w", err)
	}
	st.Steps = steps
	for name, h := range steps.Handlers() {
		st.Lambdas.Register(name, h)
	}

	inv, err := inventory.New(inventory.Config{Client: st.DynamoDB, Names: cfg.Tables, Now: st.Clock.Now, Metrics: st.Metrics, Logger: st.log})
	if err != nil {
		return fmt.Errorf("localstack: inventory: %w", err)
	}
	webhook, err := webhookhandler.New(webhookhandler.Deps{
		Verifier: stripeadapter.NewWebhookVerifier(st.WebhookSecret, stripeadapter.WebhookOptions{
			Now: st.Clock.Now, Tolerance: st.cfg.WebhookTolerance,
		}),
		Payments: provider,
		Store:    wiring.StoreAdapter{Store: inv},
		Dedupe:   &webhookhandler.DynamoDedupe{Client: st.DynamoDB, Table: cfg.Tables.Of(tables.ProcessedEventsTable), Now: st.Clock.Now},
		SFN:      st.SFN,
		Now:      st.Clock.Now,
		Logger:   st.log,
		Metrics:  st.Metrics,
	})
	if err != nil {
		return fmt.Errorf("localstack: webhook handler: %w", err)
	}
	st.Lambdas.Register(FnWebhook, webhook.Handle)

	apiHandler, err := api.New(api.Deps{
		Reservations:    inv,
		Seats:           &api.DynamoCatalog{Client: st.DynamoDB, Table: cfg.Tables.Of(tables.SeatsTable)},
		SFN:             st.SFN,
		Payments:        provider,
		StateMachineARN: cfg.StateMachineARN,
		MaxSeats:        cfg.MaxSeats,
		Now:             st.Clock.Now,
		Logger:          st.log,
		Metrics:         st.Metrics,
	})
	if err != nil {
		return fmt.Errorf("localstack: api handler: %w", err)
	}
	st.Lambdas.Register(FnAPI, apiHandler.Handle)

	sweep, err := sweeper.New(sweeper.Deps{
		Backlog:         inv,
		Expirer:         inv,
		Reconciler:      steps,
		SFN:             st.SFN,
		StateMachineARN: cfg.StateMachineARN,
		Grace:           cfg.SweepGrace,
		Now:             st.Clock.Now,
		Logger:          st.log,
		Metrics:         st.Metrics,
	})
	if err != nil {
		return fmt.Errorf("localstack: sweeper: %w", err)
	}
	st.Lambdas.Register(FnSweeper, sweep.Handle)

	st.Notifications = &consumer.MemorySender{}
	notifier := &consumer.Notifier{
		DB:      st.DynamoDB,
		Table:   cfg.Tables.Of(tables.ProcessedEventsTable),
		Sender:  st.Notifications,
		Now:     st.Clock.Now,
		Metrics: st.Metrics,
		Log:     st.log,
	}
	st.Lambdas.Register(FnConsumer, notifier.Handle)
	return nil
}
