package stack

import (
	"context"
	"fmt"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
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

// registerHandlers builds every handler as its Lambda main builds it (internal/app), with the
// local clients, the stack's clock and its metrics, and registers it under its function name.
func (st *Stack) registerHandlers(ctx context.Context) error {
	st.base = &app.Base{
		Config:            st.AppConfig,
		DynamoDB:          st.DynamoDB,
		SFN:               st.SFN,
		Payments:          app.StripeProvider(st.AppConfig, LocalStripeKey, st.cfg.PaymentsTimeout, st.log),
		Now:               st.Clock.Now,
		Logger:            st.log,
		Metrics:           st.Metrics,
		ReconcileAttempts: st.cfg.ReconcileAttempts,
		ReconcileBackoff:  st.cfg.ReconcileBackoff,
	}
	steps, err := app.Steps(st.base)
	if err != nil {
		return fmt.Errorf("localstack: saga steps: %w", err)
	}
	st.Steps = steps
	for name, h := range steps.Handlers() {
		st.Lambdas.Register(name, h)
	}

	webhook, err := app.Webhook(st.base, st.WebhookSecret, st.cfg.WebhookTolerance)
	if err != nil {
		return fmt.Errorf("localstack: webhook handler: %w", err)
	}
	st.Lambdas.Register(FnWebhook, webhook.Handle)

	apiHandler, err := app.API(st.base)
	if err != nil {
		return fmt.Errorf("localstack: api handler: %w", err)
	}
	st.Lambdas.Register(FnAPI, apiHandler.Handle)

	sweep, err := app.Sweeper(st.base, steps)
	if err != nil {
		return fmt.Errorf("localstack: sweeper: %w", err)
	}
	st.Lambdas.Register(FnSweeper, sweep.Handle)

	st.Notifications = &consumer.MemorySender{}
	st.Lambdas.Register(FnConsumer, app.Consumer(st.base, st.Notifications).Handle)
	return nil
}
