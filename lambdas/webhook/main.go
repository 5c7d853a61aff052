// Command webhook receives Stripe's webhooks behind API Gateway; its logic is
// internal/webhookhandler.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/webhookhandler"
	"github.com/seatsaga/seatsaga/internal/wiring"
)

// envWebhookSecret, when set, is the webhook signing secret itself (local runs); on AWS it comes
// from the Secrets Manager secret named by config.EnvStripeWebhookSecretARN.
const envWebhookSecret = "SEATSAGA_STRIPE_WEBHOOK_SECRET"

func main() {
	ctx := context.Background()
	logger := obs.FromEnv()
	fail := func(what string, err error) {
		logger.Error("cold start failed", "function", "webhook", "step", what, "error", err.Error())
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
	secret, err := webhookSecret(ctx, cfg, awsCfg)
	if err != nil {
		fail("webhook secret", err)
	}
	provider := stripeadapter.New(stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key: key, BaseURL: cfg.StripeAPIBase, MaxNetworkRetries: stripeadapter.DefaultMaxNetworkRetries,
		HTTPClient: &http.Client{Timeout: stripeadapter.DefaultHTTPTimeout}, Logger: logger,
	}), logger)
	h, err := webhookhandler.New(webhookhandler.Deps{
		Verifier: stripeadapter.NewWebhookVerifier(secret, stripeadapter.WebhookOptions{Now: time.Now}),
		Payments: provider,
		Store:    wiring.StoreAdapter{Store: inv},
		Dedupe:   &webhookhandler.DynamoDedupe{Client: ddb, Table: cfg.Tables.Of(tables.ProcessedEventsTable), Now: time.Now},
		SFN: sfn.NewFromConfig(awsCfg, func(o *sfn.Options) {
			if cfg.SFNEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.SFNEndpoint)
			}
		}),
		Now:     time.Now,
		Logger:  logger,
		Metrics: recorder,
	})
	if err != nil {
		fail("handler", err)
	}
	slog.SetDefault(logger)
	lambda.Start(h.Handle)
}

// webhookSecret reads the signing secret once per cold start; it is never logged.
func webhookSecret(ctx context.Context, cfg config.Config, awsCfg aws.Config) (string, error) {
	if s := os.Getenv(envWebhookSecret); s != "" {
		return s, nil
	}
	if cfg.StripeWebhookSecretARN == "" {
		return "", fmt.Errorf("set %s or %s", config.EnvStripeWebhookSecretARN, envWebhookSecret)
	}
	out, err := secretsmanager.NewFromConfig(awsCfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(cfg.StripeWebhookSecretARN)})
	if err != nil {
		return "", fmt.Errorf("read the webhook secret: %w", err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", errors.New("the webhook secret is empty")
	}
	return *out.SecretString, nil
}
