package app

import (
	"context"
	"fmt"
	"io"
	"log"
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
	"github.com/seatsaga/seatsaga/internal/secrets"
)

// Lambda is what a Lambda main hands lambda.Start: function's handler, built from the
// environment. If it cannot be built, Lambda logs why, as JSON like every other log line, and
// exits non-zero: Lambda then reports an init error rather than serving a broken handler.
func Lambda(ctx context.Context, function string) any {
	h, err := FromEnv(ctx, function)
	if err != nil {
		obs.FromEnv(obs.WithService(function)).Error("cold start failed", "function", function, "error", err.Error())
		os.Exit(1)
	}
	return h
}

// FromEnv builds function's handler from the process environment and the AWS SDK's default
// configuration (credentials, region, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>), as on
// AWS, and makes its logger the default one.
func FromEnv(ctx context.Context, function string) (any, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("app: aws config: %w", err)
	}
	a, err := FromEnvironment(ctx, function, Runtime{Lookup: os.LookupEnv, AWS: awsCfg})
	if err != nil {
		return nil, err
	}
	setDefaultLogger(a.deps.Logger)
	return a.handlers[function], nil
}

// setDefaultLogger makes logger slog's default, for code that logs through slog.Default(),
// and leaves the standard log package writing plain text to stderr, as the Go runtime would.
// slog.SetDefault would send the log package's lines through logger to stdout, where every
// line is one of an invocation's JSON lines. The writer of those in a function is
// aws-lambda-go, which logs a failed invocation's error document after the handler returned,
// with no context, so such a line could carry none of the invocation's ids; the handlers log
// their own failures with them, and Lambda returns the error document to the caller.
func setDefaultLogger(logger *slog.Logger) {
	slog.SetDefault(logger)
	log.SetOutput(os.Stderr)
	log.SetFlags(log.LstdFlags)
}

// Runtime is what a function runs with besides its environment variables. On AWS it is the
// process environment and the SDK's configuration; the local stack gives each function the
// environment its deployment spec renders, credentials of its own against the local endpoints,
// and the stack's clock and sinks, so that a function missing a variable or a grant fails
// locally as it would on AWS. Every client goes where AWS sends it (its BaseEndpoint, or the
// SDK's AWS_ENDPOINT_URL_<SERVICE>): no variable of seatsaga's can send a client past the
// local stack's gate or around IAM.
type Runtime struct {
	// Lookup reads an environment variable.
	Lookup func(string) (string, bool)
	// AWS is the SDK configuration every client is built from (credentials, region, base
	// endpoint), and the only source of endpoints.
	AWS aws.Config

	// The rest are the local stack's: zero values are what a Lambda uses.
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics metrics.Recorder
	// Sender delivers the consumer's notifications (default: logged).
	Sender consumer.Sender
	// StripeTimeout bounds one exchange with Stripe (default stripeadapter.DefaultHTTPTimeout).
	StripeTimeout time.Duration
	// WebhookTolerance is how old a webhook signature may be (default Stripe's 5 minutes).
	WebhookTolerance time.Duration
	// ReconcileAttempts and ReconcileBackoff override the saga's defaults when positive.
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
	// DynamoDBOptions adjust the DynamoDB client (the local stack injects faults with them).
	DynamoDBOptions []func(*dynamodb.Options)
}

// FromEnvironment builds function's handler, and what it shares (App.Steps, App.Relay), from
// rt: the configuration from rt.Lookup, and the clients and secrets function uses and no
// others. The relay publishes to EventBridge and touches no table, the consumer needs neither
// payments nor Step Functions, claim holds no Stripe key, and only the webhook reads the
// signing secret.
func FromEnvironment(ctx context.Context, function string, rt Runtime) (*App, error) {
	d, err := runtimeDeps(ctx, function, rt)
	if err != nil {
		return nil, err
	}
	a, err := build(d, function)
	if err != nil {
		return nil, err
	}
	a.deps = d
	return a, nil
}

func runtimeDeps(ctx context.Context, function string, rt Runtime) (Deps, error) {
	if !slices.Contains(functions, function) {
		return Deps{}, fmt.Errorf("app: no function %q", function)
	}
	if rt.Lookup == nil {
		rt.Lookup = config.MapLookup(nil)
	}
	cfg, err := config.FromLookup(rt.Lookup)
	if err != nil {
		return Deps{}, fmt.Errorf("app: config: %w", err)
	}
	logger := rt.Logger
	if logger == nil {
		// Each invocation's lines name the function themselves (withInvocation); this names
		// it on the lines of the cold start too.
		logger = obs.NewLogger(os.Stdout, obs.LevelFromEnv(rt.Lookup), obs.WithService(function))
	}
	now := rt.Now
	if now == nil {
		now = time.Now
	}
	d := Deps{Config: cfg, Now: now, Logger: logger, Metrics: rt.Metrics,
		WebhookTolerance: rt.WebhookTolerance, ReconcileAttempts: rt.ReconcileAttempts, ReconcileBackoff: rt.ReconcileBackoff}
	if d.Metrics == nil {
		d.Metrics = Metrics(cfg, function, os.Stdout)
	}
	switch function {
	case FnRelay:
		d.Bus = eventbridge.NewFromConfig(rt.AWS)
		return d, nil
	case FnStarter:
		// The starter starts executions and marks the start backlog: no payment.
		d.DynamoDB, d.SFN = dynamoDB(rt), sfn.NewFromConfig(rt.AWS)
		return d, nil
	case FnConsumer:
		d.DynamoDB = dynamoDB(rt)
		d.Sender = rt.Sender
		if d.Sender == nil {
			// It logs the notifications it would send.
			d.Sender = consumer.LogSender{Log: d.Logger}
		}
		return d, nil
	}
	// The rest reserve and pay.
	d.DynamoDB, d.SFN = dynamoDB(rt), sfn.NewFromConfig(rt.AWS)
	if function == FnClaim {
		// Claim only holds seats: its role reads no Stripe secret, so it gets none.
		d.Payments = payment.Unavailable{Why: "the claim function has no payment access"}
		return d, nil
	}
	// The secrets' caches log and tell time as the handlers do.
	cacheOpts := secrets.Options{Now: d.Now, Logger: d.Logger}
	keys, err := stripeKey(ctx, cfg, rt, cacheOpts)
	if err != nil {
		return Deps{}, err
	}
	timeout := rt.StripeTimeout
	if timeout <= 0 {
		timeout = stripeadapter.DefaultHTTPTimeout
	}
	// Counted here, where every function's provider is made, so an outage is seen whichever
	// function meets it.
	d.Payments = payment.Metered(stripeProvider(cfg, keys, timeout, d.Logger), d.Metrics)
	if function == FnWebhook {
		if d.WebhookSecret, err = webhookSecret(ctx, cfg, rt, cacheOpts); err != nil {
			return Deps{}, err
		}
	}
	return d, nil
}

// Metrics is the embedded-metric-format recorder a function writes to w (stdout on Lambda,
// which CloudWatch Logs reads): in the configured namespace, and with the Service dimension
// the outbox side's dashboards select on for the relay and the consumer.
func Metrics(cfg config.Config, function string, w io.Writer, opts ...emf.Option) metrics.Recorder {
	if function == FnRelay || function == FnConsumer {
		opts = append(opts, emf.WithDimensions(metrics.Dim{Name: "Service", Value: function}))
	}
	return emf.New(w, cfg.MetricsNamespace, opts...)
}

// dynamoDB returns the AWS config's DynamoDB client. A loopback endpoint is DynamoDB Local
// (behind the local stack's gate), which sends no CRC32 with cancelled transactions, so
// response checksums are not validated there.
func dynamoDB(rt Runtime) *dynamodb.Client {
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if o.BaseEndpoint != nil {
			o.DisableValidateResponseChecksum = config.LoopbackEndpoint(*o.BaseEndpoint)
		}
	}}, rt.DynamoDBOptions...)
	return dynamodb.NewFromConfig(rt.AWS, opts...)
}

// stripeKey returns the source of the Stripe secret key: the Secrets Manager secret
// cfg.StripeSecretARN, whose string value is the key. Never logged.
func stripeKey(ctx context.Context, cfg config.Config, rt Runtime, opts secrets.Options) (secrets.Source, error) {
	opts.Name = "Stripe key"
	return secret(ctx, rt, opts, config.EnvStripeSecretARN, cfg.StripeSecretARN)
}

// webhookSecret returns the source of the Stripe webhook signing secret: the Secrets Manager
// secret cfg.StripeWebhookSecretARN. Never logged.
func webhookSecret(ctx context.Context, cfg config.Config, rt Runtime, opts secrets.Options) (secrets.Source, error) {
	opts.Name = "webhook secret"
	return secret(ctx, rt, opts, config.EnvStripeWebhookSecretARN, cfg.StripeWebhookSecretARN)
}

// secret returns a cache over the string value of the Secrets Manager secret arn (named by
// the variable arnEnv), so that a rotation is picked up within the cache's TTL, or at once
// when Stripe refuses the old value. A secret's value never sits in the function's
// environment, where it could not be rotated. The cache is read once here: a missing or
// unreadable secret still fails the cold start, and the first request does not wait for
// Secrets Manager.
func secret(ctx context.Context, rt Runtime, opts secrets.Options, arnEnv, arn string) (secrets.Source, error) {
	if arn == "" {
		return nil, fmt.Errorf("app: %s is not set: the %s is read from Secrets Manager by ARN", arnEnv, opts.Name)
	}
	sm := secretsmanager.NewFromConfig(rt.AWS)
	cache := secrets.New(func(ctx context.Context) (string, error) {
		out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			// The cache names the secret in its error and its log line.
			return "", err
		}
		// An empty value is refused by the cache (secrets.ErrEmpty), which keeps the last one.
		return aws.ToString(out.SecretString), nil
	}, opts)
	if _, err := cache.Get(ctx); err != nil {
		return nil, fmt.Errorf("app: read %s=%s: %w", arnEnv, arn, err)
	}
	return cache, nil
}
