package stack

import (
	"context"
	"fmt"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/relay"
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

// registerHandlers builds every handler as the Lambda mains build theirs (internal/app), with
// the local clients, the stack's clock and its metrics, and registers each under its function
// name. The in-memory bus exists only when the relay runs: without one the outbox is left
// unpublished and the checks skip the bus.
func (st *Stack) registerHandlers(ctx context.Context) error {
	st.Notifications = &consumer.MemorySender{}
	d := app.Deps{
		Config:            st.AppConfig,
		DynamoDB:          st.DynamoDB,
		SFN:               st.SFN,
		Payments:          app.StripeProvider(st.AppConfig, LocalStripeKey, st.cfg.PaymentsTimeout, st.log),
		Sender:            st.Notifications,
		WebhookSecret:     st.WebhookSecret,
		WebhookTolerance:  st.cfg.WebhookTolerance,
		Now:               st.Clock.Now,
		Logger:            st.log,
		Metrics:           st.Metrics,
		ReconcileAttempts: st.cfg.ReconcileAttempts,
		ReconcileBackoff:  st.cfg.ReconcileBackoff,
	}
	if !st.cfg.DisableRelay {
		st.Bus = relay.NewMemoryBus()
		st.Bus.Region, st.Bus.AccountID, st.Bus.Now = Region, AccountID, st.Clock.Now
		d.Bus = st.Bus
	}
	a, err := app.New(d)
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.Steps, st.relay = a.Steps, a.Relay
	for name, h := range a.Handlers() {
		st.Lambdas.Register(name, h)
	}
	return nil
}
