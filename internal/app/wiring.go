// Package wiring builds seatsaga's handlers once per process, so that the Lambda mains
// (lambdas/*) and the local stack (internal/twin/stack) assemble the same objects the same way.
// A Base holds what the handlers of one process share (configuration, clients, payment provider,
// clock, logger, metrics); the builders turn it into handlers:
//
//	base := &wiring.Base{Config: cfg, DynamoDB: ddb, SFN: sfnClient, Payments: provider, Now: clock.Now, ...}
//	steps, err := wiring.Steps(base) // host.Register("claim", steps.ClaimHandler), or steps.Handlers()
//	h, err := wiring.API(base)       // also Webhook, Sweeper, Consumer, Relay
//
// Mains call the Lambda* functions (lambda.go), which read the environment and build the AWS
// clients too. Clients are built here and handed to adapters; adapters never build them.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// SagaDeps are the clients and process-wide services the saga steps need.
type SagaDeps struct {
	DynamoDB inventory.DynamoDB
	Payments saga.Payments
	Now      func() time.Time
	Metrics  metrics.Recorder
	Logger   *slog.Logger
	// ReconcileAttempts and ReconcileBackoff override the saga's defaults when positive.
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
}

// NewSteps builds the saga steps over the DynamoDB inventory and the given payment provider.
func NewSteps(cfg config.Config, d SagaDeps) (*saga.Steps, error) {
	if d.DynamoDB == nil || d.Payments == nil {
		return nil, errors.New("wiring: DynamoDB and Payments are required")
	}
	d.Now, d.Logger, d.Metrics = obs.Defaults(d.Now, d.Logger, d.Metrics)
	policy, err := reservation.ParseLateSuccessPolicy(cfg.LateSuccessPolicy)
	if err != nil {
		return nil, fmt.Errorf("wiring: %w", err)
	}
	limits := reservation.DefaultLimits()
	if cfg.MaxSeats > 0 {
		limits.MaxSeats = cfg.MaxSeats
	}
	if cfg.Hold > 0 && cfg.Hold < limits.MinHold {
		limits.MinHold = cfg.Hold
	}
	store, err := inventory.New(inventory.Config{Client: d.DynamoDB, Names: cfg.Tables, Now: d.Now,
		Metrics: d.Metrics, Logger: d.Logger, Limits: limits})
	if err != nil {
		return nil, fmt.Errorf("wiring: inventory: %w", err)
	}
	hold := cfg.Hold
	if hold <= 0 {
		hold = config.DefaultHold
	}
	return &saga.Steps{
		Store: store, Payments: d.Payments, Now: d.Now, Log: d.Logger, Metrics: d.Metrics,
		Policy: policy, Hold: hold, Limits: limits,
		ReconcileAttempts: d.ReconcileAttempts, ReconcileBackoff: d.ReconcileBackoff,
	}, nil
}
