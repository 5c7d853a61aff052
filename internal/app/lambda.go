package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// Secrets a Lambda may be given directly (local runs and tests); on AWS each comes from the
// Secrets Manager secret named by its config.Env*ARN variable.
const (
	// EnvStripeSecretKey is the Stripe secret key (else config.EnvStripeSecretARN).
	EnvStripeSecretKey = "SEATSAGA_STRIPE_SECRET_KEY"
	// EnvStripeWebhookSecret is the webhook signing secret (else config.EnvStripeWebhookSecretARN).
	EnvStripeWebhookSecret = "SEATSAGA_STRIPE_WEBHOOK_SECRET"
)

// ExitColdStart logs why a Lambda could not build its handler, as JSON like every other log
// line, and exits non-zero: Lambda then reports an init error rather than serving with a broken
// handler.
func ExitColdStart(function string, err error) {
	obs.FromEnv().Error("cold start failed", "function", function, "error", err.Error())
	os.Exit(1)
}

// lambdaEnv reads what every Lambda reads once per cold start: its configuration, the AWS SDK's
// configuration and its JSON logger.
func lambdaEnv(ctx context.Context) (config.Config, aws.Config, *slog.Logger, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return config.Config{}, aws.Config{}, nil, fmt.Errorf("wiring: config: %w", err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return config.Config{}, aws.Config{}, nil, fmt.Errorf("wiring: aws config: %w", err)
	}
	return cfg, awsCfg, obs.FromEnv(), nil
}

// NewBase builds the Base of a Lambda that reserves and pays: DynamoDB (DYNAMODB_ENDPOINT
// overrides the endpoint), Step Functions (SFN_ENDPOINT), the Stripe provider (key from
// SEATSAGA_STRIPE_SECRET_KEY, else Secrets Manager), the real clock and EMF metrics on stdout.
func NewBase(ctx context.Context, cfg config.Config, awsCfg aws.Config, logger *slog.Logger) (*Base, error) {
	ddb, err := DynamoDB(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	key, err := StripeKey(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	return &Base{
		Config:   cfg,
		DynamoDB: ddb,
		SFN:      SFN(cfg, awsCfg),
		Payments: StripeProvider(cfg, key, stripeadapter.DefaultHTTPTimeout, logger),
		Now:      time.Now,
		Logger:   logger,
		Metrics:  emf.New(os.Stdout, cfg.MetricsNamespace),
	}, nil
}

// lambdaBase reads the environment and builds the Base of a Lambda that reserves and pays.
func lambdaBase(ctx context.Context) (*Base, aws.Config, error) {
	cfg, awsCfg, logger, err := lambdaEnv(ctx)
	if err != nil {
		return nil, aws.Config{}, err
	}
	b, err := NewBase(ctx, cfg, awsCfg, logger)
	return b, awsCfg, err
}

// LambdaSteps builds the saga steps of a step Lambda from its environment.
func LambdaSteps(ctx context.Context) (*saga.Steps, error) {
	b, _, err := lambdaBase(ctx)
	if err != nil {
		return nil, err
	}
	return Steps(b)
}

// LambdaAPI builds the api Lambda's handler from its environment and makes its logger the
// default one.
func LambdaAPI(ctx context.Context) (*api.Handler, error) {
	b, _, err := lambdaBase(ctx)
	if err != nil {
		return nil, err
	}
	h, err := API(b)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(b.Logger)
	return h, nil
}

// LambdaWebhook builds the webhook Lambda's handler from its environment (the signing secret
// from SEATSAGA_STRIPE_WEBHOOK_SECRET, else Secrets Manager) and makes its logger the default.
func LambdaWebhook(ctx context.Context) (*webhook.Handler, error) {
	b, awsCfg, err := lambdaBase(ctx)
	if err != nil {
		return nil, err
	}
	secret, err := WebhookSecret(ctx, b.Config, awsCfg)
	if err != nil {
		return nil, err
	}
	h, err := Webhook(b, secret, 0)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(b.Logger)
	return h, nil
}

// LambdaSweeper builds the sweeper Lambda's handler from its environment, with the saga's own
// reconcile logic built as the step Lambdas build it, and makes its logger the default.
func LambdaSweeper(ctx context.Context) (*sweeper.Sweeper, error) {
	b, _, err := lambdaBase(ctx)
	if err != nil {
		return nil, err
	}
	steps, err := Steps(b)
	if err != nil {
		return nil, err
	}
	s, err := Sweeper(b, steps)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(b.Logger)
	return s, nil
}

// LambdaConsumer builds the example consumer from its environment; it logs the notifications
// it would send. It needs no payment provider, so it reads no Stripe secret.
func LambdaConsumer(ctx context.Context) (*consumer.Notifier, error) {
	cfg, awsCfg, logger, err := lambdaEnv(ctx)
	if err != nil {
		return nil, err
	}
	ddb, err := DynamoDB(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	b := &Base{Config: cfg, DynamoDB: ddb, Now: time.Now, Logger: logger, Metrics: serviceMetrics(cfg, "consumer")}
	return Consumer(b, consumer.LogSender{Log: logger}), nil
}

// LambdaRelay builds the outbox relay from its environment, publishing to EventBridge.
func LambdaRelay(ctx context.Context) (*relay.Relay, error) {
	cfg, awsCfg, logger, err := lambdaEnv(ctx)
	if err != nil {
		return nil, err
	}
	b := &Base{Config: cfg, Now: time.Now, Logger: logger, Metrics: serviceMetrics(cfg, "relay")}
	return Relay(b, eventbridge.NewFromConfig(awsCfg))
}

// serviceMetrics is EMF on stdout with the Service dimension the outbox side's dashboards
// select on.
func serviceMetrics(cfg config.Config, service string) metrics.Recorder {
	return emf.New(os.Stdout, cfg.MetricsNamespace, emf.WithDimensions(metrics.Dim{Name: "Service", Value: service}))
}

// DynamoDB returns the AWS config's DynamoDB client, with the endpoint overridden when one is
// set. A loopback endpoint is DynamoDB Local, which sends no CRC32 with cancelled
// transactions, so response checksums are not validated there.
func DynamoDB(ctx context.Context, cfg config.Config, awsCfg aws.Config) (*dynamodb.Client, error) {
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.DynamoDBEndpoint)
			o.DisableValidateResponseChecksum = config.LoopbackEndpoint(cfg.DynamoDBEndpoint)
		}
	}), nil
}

// SFN returns a Step Functions client: the AWS config's, or the local engine's when
// cfg.SFNEndpoint is set.
func SFN(cfg config.Config, awsCfg aws.Config) *sfn.Client {
	return sfn.NewFromConfig(awsCfg, func(o *sfn.Options) {
		if cfg.SFNEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SFNEndpoint)
		}
	})
}

// StripeKey returns the Stripe secret key: SEATSAGA_STRIPE_SECRET_KEY when set, else the
// Secrets Manager secret cfg.StripeSecretARN (its string value is the key). Never logged.
func StripeKey(ctx context.Context, cfg config.Config, awsCfg aws.Config) (string, error) {
	return secret(ctx, awsCfg, "Stripe key", EnvStripeSecretKey, config.EnvStripeSecretARN, cfg.StripeSecretARN)
}

// WebhookSecret returns the Stripe webhook signing secret: SEATSAGA_STRIPE_WEBHOOK_SECRET when
// set, else the Secrets Manager secret cfg.StripeWebhookSecretARN. Never logged.
func WebhookSecret(ctx context.Context, cfg config.Config, awsCfg aws.Config) (string, error) {
	return secret(ctx, awsCfg, "webhook", EnvStripeWebhookSecret, config.EnvStripeWebhookSecretARN, cfg.StripeWebhookSecretARN)
}

// secret reads a secret once per cold start: the variable env when set, else the string value
// of the Secrets Manager secret arn (named by the variable arnEnv).
func secret(ctx context.Context, awsCfg aws.Config, what, env, arnEnv, arn string) (string, error) {
	if v := os.Getenv(env); v != "" {
		return v, nil
	}
	if arn == "" {
		return "", fmt.Errorf("wiring: set %s or %s", arnEnv, env)
	}
	out, err := secretsmanager.NewFromConfig(awsCfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("wiring: read the %s secret: %w", what, err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", fmt.Errorf("wiring: the %s secret is empty", what)
	}
	return *out.SecretString, nil
}
