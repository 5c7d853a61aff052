// Command api is the reservation API behind API Gateway (POST /events/{eventId}/reservations,
// GET and DELETE /reservations/{id}); its logic is internal/api.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/wiring"
)

func main() {
	ctx := context.Background()
	logger := obs.FromEnv()
	fail := func(what string, err error) {
		logger.Error("cold start failed", "function", "api", "step", what, "error", err.Error())
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
	key, err := wiring.StripeKey(ctx, cfg, awsCfg)
	if err != nil {
		fail("stripe key", err)
	}
	provider := stripeadapter.New(stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key: key, BaseURL: cfg.StripeAPIBase, MaxNetworkRetries: stripeadapter.DefaultMaxNetworkRetries,
		HTTPClient: &http.Client{Timeout: stripeadapter.DefaultHTTPTimeout}, Logger: logger,
	}), logger)
	h, err := api.New(api.Deps{
		Reservations:    inv,
		Seats:           &api.DynamoCatalog{Client: ddb, Table: cfg.Tables.Of(tables.SeatsTable)},
		SFN:             sfnClient(cfg, awsCfg),
		Payments:        provider,
		StateMachineARN: cfg.StateMachineARN,
		MaxSeats:        cfg.MaxSeats,
		Now:             time.Now,
		Logger:          logger,
		Metrics:         recorder,
	})
	if err != nil {
		fail("handler", err)
	}
	slog.SetDefault(logger)
	lambda.Start(h.Handle)
}

// sfnClient talks to Step Functions, or to the local engine when SFN_ENDPOINT is set.
func sfnClient(cfg config.Config, awsCfg aws.Config) *sfn.Client {
	return sfn.NewFromConfig(awsCfg, func(o *sfn.Options) {
		if cfg.SFNEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SFNEndpoint)
		}
	})
}
