package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
)

// Secrets a Lambda may be given directly (local runs and tests); on AWS each comes from the
// Secrets Manager secret named by its config.Env*ARN variable.
const (
	// EnvStripeSecretKey is the Stripe secret key (else config.EnvStripeSecretARN).
	EnvStripeSecretKey = "SEATSAGA_STRIPE_SECRET_KEY"
	// EnvStripeWebhookSecret is the webhook signing secret (else config.EnvStripeWebhookSecretARN).
	EnvStripeWebhookSecret = "SEATSAGA_STRIPE_WEBHOOK_SECRET"
)

// Lambda is what a Lambda main hands lambda.Start: function's handler, built from the
// environment. If it cannot be built, Lambda logs why, as JSON like every other log line, and
// exits non-zero: Lambda then reports an init error rather than serving a broken handler.
func Lambda(ctx context.Context, function string) any {
	h, err := FromEnv(ctx, function)
	if err != nil {
		obs.FromEnv().Error("cold start failed", "function", function, "error", err.Error())
		os.Exit(1)
	}
	return h
}

// FromEnv builds function's handler through build, as the local stack builds it, and makes its
// logger the default one.
func FromEnv(ctx context.Context, function string) (any, error) {
	d, err := envDeps(ctx, function)
	if err != nil {
		return nil, err
	}
	a, err := build(d, function)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(d.Logger)
	return a.handlers[function], nil
}

// envDeps reads, once per cold start, the configuration, the AWS SDK's configuration, a JSON
// logger, the real clock, and the clients and secrets function uses and no others: the relay
// publishes to EventBridge and touches no table, the consumer needs neither payments nor Step
// Functions, only the webhook reads the signing secret. DYNAMODB_ENDPOINT and SFN_ENDPOINT
// override the endpoints.
func envDeps(ctx context.Context, function string) (Deps, error) {
	if !slices.Contains(functions, function) {
		return Deps{}, fmt.Errorf("app: no function %q", function)
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return Deps{}, fmt.Errorf("app: config: %w", err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return Deps{}, fmt.Errorf("app: aws config: %w", err)
	}
	d := Deps{Config: cfg, Now: time.Now, Logger: obs.FromEnv()}
	switch function {
	case FnRelay:
		d.Bus = eventbridge.NewFromConfig(awsCfg)
		d.Metrics = serviceMetrics(cfg, function)
		return d, nil
	case FnConsumer:
		// It logs the notifications it would send.
		d.DynamoDB = dynamoDB(cfg, awsCfg)
		d.Sender = consumer.LogSender{Log: d.Logger}
		d.Metrics = serviceMetrics(cfg, function)
		return d, nil
	}
	// The rest reserve and pay.
	d.DynamoDB, d.SFN = dynamoDB(cfg, awsCfg), stepFunctions(cfg, awsCfg)
	d.Metrics = emf.New(os.Stdout, cfg.MetricsNamespace)
	if function == FnClaim {
		// Claim only holds seats: its role reads no Stripe secret, so it gets none.
		d.Payments = payment.Unavailable{Why: "the claim function has no payment access"}
		return d, nil
	}
	key, err := stripeKey(ctx, cfg, awsCfg)
	if err != nil {
		return Deps{}, err
	}
	d.Payments = StripeProvider(cfg, key, stripeadapter.DefaultHTTPTimeout, d.Logger)
	if function == FnWebhook {
		if d.WebhookSecret, err = webhookSecret(ctx, cfg, awsCfg); err != nil {
			return Deps{}, err
		}
	}
	return d, nil
}

// serviceMetrics is EMF on stdout with the Service dimension the outbox side's dashboards
// select on.
func serviceMetrics(cfg config.Config, service string) metrics.Recorder {
	return emf.New(os.Stdout, cfg.MetricsNamespace, emf.WithDimensions(metrics.Dim{Name: "Service", Value: service}))
}

// dynamoDB returns the AWS config's DynamoDB client, with the endpoint overridden when one is
// set. A loopback endpoint is DynamoDB Local, which sends no CRC32 with cancelled
// transactions, so response checksums are not validated there.
func dynamoDB(cfg config.Config, awsCfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.DynamoDBEndpoint)
			o.DisableValidateResponseChecksum = config.LoopbackEndpoint(cfg.DynamoDBEndpoint)
		}
	})
}

// stepFunctions returns a Step Functions client: the AWS config's, or the local engine's when
// cfg.SFNEndpoint is set.
func stepFunctions(cfg config.Config, awsCfg aws.Config) *sfn.Client {
	return sfn.NewFromConfig(awsCfg, func(o *sfn.Options) {
		if cfg.SFNEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SFNEndpoint)
		}
	})
}

// stripeKey returns the Stripe secret key: SEATSAGA_STRIPE_SECRET_KEY when set, else the
// Secrets Manager secret cfg.StripeSecretARN (its string value is the key). Never logged.
func stripeKey(ctx context.Context, cfg config.Config, awsCfg aws.Config) (string, error) {
	return secret(ctx, awsCfg, "Stripe key", EnvStripeSecretKey, config.EnvStripeSecretARN, cfg.StripeSecretARN)
}

// webhookSecret returns the Stripe webhook signing secret: SEATSAGA_STRIPE_WEBHOOK_SECRET when
// set, else the Secrets Manager secret cfg.StripeWebhookSecretARN. Never logged.
func webhookSecret(ctx context.Context, cfg config.Config, awsCfg aws.Config) (string, error) {
	return secret(ctx, awsCfg, "webhook", EnvStripeWebhookSecret, config.EnvStripeWebhookSecretARN, cfg.StripeWebhookSecretARN)
}

// secret reads a secret once per cold start: the variable env when set, else the string value
// of the Secrets Manager secret arn (named by the variable arnEnv).
func secret(ctx context.Context, awsCfg aws.Config, what, env, arnEnv, arn string) (string, error) {
	if v := os.Getenv(env); v != "" {
		return v, nil
	}
	if arn == "" {
		return "", fmt.Errorf("app: set %s or %s", arnEnv, env)
	}
	out, err := secretsmanager.NewFromConfig(awsCfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("app: read the %s secret: %w", what, err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", fmt.Errorf("app: the %s secret is empty", what)
	}
	return *out.SecretString, nil
}
