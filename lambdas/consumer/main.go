// Command consumer is the example EventBridge consumer: it notifies customers of their
// reservation's outcome, idempotently by event id; its logic is internal/consumer.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/wiring"
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
	ddb, err := wiring.DynamoDB(ctx, cfg, awsCfg)
	if err != nil {
		fail(log, "dynamodb", err)
	}
	n := &consumer.Notifier{
		DB:      ddb,
		Table:   cfg.Tables.Of(tables.ProcessedEventsTable),
		Sender:  consumer.LogSender{Log: log},
		Now:     time.Now,
		Metrics: emf.New(os.Stdout, cfg.MetricsNamespace, emf.WithDimensions(metrics.Dim{Name: "Service", Value: "consumer"})),
		Log:     log,
	}
	lambda.Start(n.Handle)
}

func fail(log *slog.Logger, what string, err error) {
	log.Error("cold start failed", "function", "consumer", "stage", what, "err", err)
	os.Exit(1)
}
