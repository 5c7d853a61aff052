// Command relay publishes the Outbox table's stream to EventBridge; its logic is
// internal/relay. The event source mapping reports batch item failures and bisects on error.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/relay"
)

func main() {
	ctx := context.Background()
	log := obs.FromEnv()
	cfg, err := config.FromEnv()
	if err != nil {
		fail(log, "config", err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	r := &relay.Relay{
		Bus:          eventbridge.NewFromConfig(awsCfg),
		EventBusName: cfg.EventBusName,
		Metrics:      emf.New(os.Stdout, cfg.MetricsNamespace, emf.WithDimensions(metrics.Dim{Name: "Service", Value: "relay"})),
		Log:          log,
	}
	if err := r.Validate(); err != nil {
		fail(log, "relay", err)
	}
	lambda.Start(r.Handle)
}

func fail(log *slog.Logger, what string, err error) {
	log.Error("cold start failed", "function", "relay", "stage", what, "err", err)
	os.Exit(1)
}
