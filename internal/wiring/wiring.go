// Package wiring builds seatsaga's adapters from a config.Config once, so that the six saga
// Lambda mains (lambdas/claim … lambdas/reconcile) and the local stack (internal/localstack)
// assemble the same objects the same way:
//
//	steps, err := wiring.NewSteps(cfg, wiring.SagaDeps{DynamoDB: ddb, Payments: provider, Now: clock.Now, ...})
//	host.Register("claim", steps.ClaimHandler) // or: for name, h := range steps.Handlers()
//
// Mains call LambdaSteps, which reads the environment and builds the AWS clients too. Clients
// are built here and handed to adapters; adapters never build them.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/ddblocal"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// EnvStripeSecretKey, when set, is the Stripe secret key itself (local runs and tests); on AWS
// the key comes from the Secrets Manager secret named by config.EnvStripeSecretARN.
const EnvStripeSecretKey = "SEATSAGA_STRIPE_SECRET_KEY"

// SagaDeps are the clients and process-wide services the saga steps need.
type SagaDeps struct {
	DynamoDB inventory.DynamoDB
	Payments saga.Payments
	// SFN reports to waiting tasks (optional); when nil and cfg.SFNEndpoint is set, a client
	// for that endpoint is built (local stacks).
	SFN     *sfn.Client
	Now     func() time.Time
	Metrics metrics.Recorder
	Logger  *slog.Logger
	// ReconcileAttempts and ReconcileBackoff override the saga's defaults when positive.
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
}

// NewSteps builds the saga steps over the DynamoDB inventory and the given payment provider.
func NewSteps(cfg config.Config, d SagaDeps) (*saga.Steps, error) {
	if d.DynamoDB == nil || d.Payments == nil {
		return nil, errors.New("wiring: DynamoDB and Payments are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Metrics == nil {
		d.Metrics = metrics.Discard{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
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
	if d.SFN == nil && cfg.SFNEndpoint != "" {
		d.SFN = sfn.New(sfn.Options{Region: ddblocal.Region, BaseEndpoint: aws.String(cfg.SFNEndpoint),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "wiring"}, nil
			})})
	}
	var tasks saga.Tasks
	if d.SFN != nil {
		tasks = TasksAdapter{Client: d.SFN}
	}
	return &saga.Steps{
		Store: StoreAdapter{Store: store}, Payments: d.Payments, Tasks: tasks, Now: d.Now, Log: d.Logger, Metrics: d.Metrics,
		Policy: policy, Hold: hold, Limits: limits,
		ReconcileAttempts: d.ReconcileAttempts, ReconcileBackoff: d.ReconcileBackoff,
	}, nil
}

// LambdaSteps builds the saga steps of a Lambda from its environment: config once per cold
// start, the AWS config, DynamoDB (DYNAMODB_ENDPOINT overrides the endpoint), the Stripe key
// (SEATSAGA_STRIPE_SECRET_KEY, else Secrets Manager), EMF metrics on stdout and JSON logs.
func LambdaSteps(ctx context.Context) (*saga.Steps, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("wiring: config: %w", err)
	}
	logger := obs.FromEnv()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("wiring: aws config: %w", err)
	}
	ddb, err := DynamoDB(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	key, err := StripeKey(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	provider := stripeadapter.New(stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key: key, BaseURL: cfg.StripeAPIBase, MaxNetworkRetries: stripeadapter.DefaultMaxNetworkRetries,
		HTTPClient: &http.Client{Timeout: stripeadapter.DefaultHTTPTimeout}, Logger: logger,
	}), logger)
	sfnClient := sfn.NewFromConfig(awsCfg, func(o *sfn.Options) {
		if cfg.SFNEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SFNEndpoint)
		}
	})
	return NewSteps(cfg, SagaDeps{
		DynamoDB: ddb, Payments: provider, SFN: sfnClient, Now: time.Now, Logger: logger,
		Metrics: emf.New(os.Stdout, cfg.MetricsNamespace),
	})
}

// DynamoDB returns a DynamoDB client: DynamoDB Local's (checksums off) when cfg names a
// local endpoint, else the AWS config's, with the endpoint overridden when one is set.
func DynamoDB(ctx context.Context, cfg config.Config, awsCfg aws.Config) (*dynamodb.Client, error) {
	if cfg.DynamoDBEndpoint != "" && ddblocal.IsLocalEndpoint(cfg.DynamoDBEndpoint) {
		c, err := ddblocal.NewClient(ctx, cfg.DynamoDBEndpoint)
		if err != nil {
			return nil, fmt.Errorf("wiring: dynamodb local: %w", err)
		}
		return c, nil
	}
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.DynamoDBEndpoint)
		}
	}), nil
}

// StripeKey returns the Stripe secret key: SEATSAGA_STRIPE_SECRET_KEY when set, else the
// Secrets Manager secret cfg.StripeSecretARN (its string value is the key). Never logged.
func StripeKey(ctx context.Context, cfg config.Config, awsCfg aws.Config) (string, error) {
	if key := os.Getenv(EnvStripeSecretKey); key != "" {
		return key, nil
	}
	if cfg.StripeSecretARN == "" {
		return "", fmt.Errorf("wiring: set %s or %s", config.EnvStripeSecretARN, EnvStripeSecretKey)
	}
	out, err := secretsmanager.NewFromConfig(awsCfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(cfg.StripeSecretARN)})
	if err != nil {
		return "", fmt.Errorf("wiring: read the Stripe key secret: %w", err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", errors.New("wiring: the Stripe key secret is empty")
	}
	return *out.SecretString, nil
}

// TasksAdapter reports task outcomes through the Step Functions API.
type TasksAdapter struct {
	Client *sfn.Client
}

// SendTaskSuccess implements saga.Tasks.
func (t TasksAdapter) SendTaskSuccess(ctx context.Context, taskToken string, output []byte) error {
	_, err := t.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(taskToken), Output: aws.String(string(output))})
	return err
}
