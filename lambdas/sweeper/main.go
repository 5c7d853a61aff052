// Command sweeper runs on a schedule and settles what the saga dropped: orphaned expired holds
// and payments needing reconciliation; its logic is internal/sweeper.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	ctx := context.Background()
	logger := obs.FromEnv()
	fail := func(what string, err error) {
		logger.Error("cold start failed", "function", "sweeper", "step", what, "error", err.Error())
		os.Exit(1)
	}
	cfg, err := config.FromEnv()
	if err != nil {
		fail("config", err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fail("aws config", err)
	}
	ddb, err := wiring.DynamoDB(ctx, cfg, awsCfg)
	if err != nil {
		fail("dynamodb", err)
	}
	recorder := emf.New(os.Stdout, cfg.MetricsNamespace)
	inv, err := inventory.New(inventory.Config{Client: ddb, Names: cfg.Tables, Now: time.Now, Metrics: recorder, Logger: logger})
	if err != nil {
		fail("inventory", err)
	}
	// The reconcile logic is the saga's own (internal/saga), built as the step Lambdas build it.
	steps, err := wiring.LambdaSteps(ctx)
	if err != nil {
		fail("saga steps", err)
	}
	s, err := sweeper.New(sweeper.Deps{
		Backlog:    inv,
		Expirer:    inv,
		Reconciler: steps,
		SFN: sfn.NewFromConfig(awsCfg, func(o *sfn.Options) {
			if cfg.SFNEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.SFNEndpoint)
			}
		}),
		StateMachineARN: cfg.StateMachineARN,
		Grace:           cfg.SweepGrace,
		Now:             time.Now,
		Logger:          logger,
		Metrics:         recorder,
	})
	if err != nil {
		fail("handler", err)
	}
	slog.SetDefault(logger)
	lambda.Start(s.Handle)
}
