package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go/middleware"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/apigateway"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/cognito"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/sqs"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
	"github.com/seatsaga/seatsaga/statemachine"
)

// Endpoints are the base URLs of the local services.
type Endpoints struct {
	// API is the API Gateway stand-in: POST /events/{eventId}/reservations,
	// GET|DELETE /reservations/{id}, POST /webhooks/stripe.
	API string
	// StepFunctions serves the Step Functions API (aws-sdk-go-v2/service/sfn).
	StepFunctions string
	// Lambda serves the Lambda Invoke API (aws-sdk-go-v2/service/lambda).
	Lambda string
	// DynamoDB is DynamoDB Local (also its Streams API).
	DynamoDB string
	// Payments is the Stripe-compatible payment simulator (stripe-go's base URL).
	Payments string
	// Cognito is the local user pool (cognito-idp API) whose ID tokens the gateway accepts.
	Cognito string
	// AWS is the gate in front of DynamoDB, DynamoDB Streams, Step Functions, Secrets Manager
	// and EventBridge that every function's calls go through (what AWS_ENDPOINT_URL names).
	AWS string
}

// Stack is a running local seatsaga. Its fields are ready to use after Start and must not be
// replaced.
type Stack struct {
	Endpoints Endpoints
	// AppConfig is the configuration the sweeper was built from (the function whose spec
	// carries the most settings), as its environment gives it.
	AppConfig config.Config
	Names     tables.Names
	// StateMachineARN is the saga's state machine; executions are named by reservation id.
	StateMachineARN string

	// Clients of the local services, built as the Lambdas build theirs.
	DynamoDB *dynamodb.Client
	SFN      *sfn.Client
	Lambda   *lambda.Client

	Clock clock.Clock
	// Lambdas is the Lambda host: fault hooks (FailBefore, FailAfter, SetLatency) and
	// Register, which replaces a handler (the control tests inject a broken step with it).
	Lambdas *lambdahost.Host
	// Payments is the payment simulator: its ledger, faults and webhook configuration.
	Payments *stripesim.Sim
	// Bus is the in-memory EventBridge the relay publishes the outbox to.
	Bus *relay.MemoryBus
	// Metrics receives every handler's counts.
	Metrics *metrics.Memory
	// CloudWatch keeps the metric data points the functions and the twin's services publish,
	// stamped on Clock; the deployment's alarms are evaluated over it.
	CloudWatch *cloudwatch.Store
	// Alarms evaluates the deployment's alarms (internal/alarms, AlarmSettings) over
	// CloudWatch every minute of Clock: their states, every transition, and those that fired.
	Alarms *cloudwatch.Evaluator
	// Gate enforces each function's grants on its AWS calls; its Denials list what it refused.
	Gate *awsgate.Gate
	// SQS holds the deployment's dead-letter queues (Queue(deploy.RelayDLQ), ...), which the
	// relay's event source mapping and the consumer's asynchronous queue send what they gave
	// up on to; it publishes their metrics into CloudWatch every minute of Clock.
	SQS *sqs.Service
	// Notifications records what the example consumer sent customers.
	Notifications *consumer.MemorySender
	// Cognito is the local user pool: it signs in users with the deployed app client's flows
	// and issues ID tokens Auth accepts.
	Cognito *cognito.Server
	// Auth issues dev bearer tokens for the customer routes.
	Auth *apigateway.DevAuthorizer
	// WebhookSecret is the simulator's signing secret the webhook handler verifies with.
	WebhookSecret string
	// Definition is the ASL the engine runs (statemachine/reservation.asl.json).
	Definition []byte

	cfg    Config
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	ddb       *dynamodblocal.Server
	gateway   *apigateway.Server
	sfnServer *stepfunctions.Server
	sweeper   *sweepLoop

	deployment   *localDeployment
	environments map[string]map[string]string
	handlers     map[string]any
	// skews are the chaos's clock skew of each function (load.ClockSkew), in nanoseconds.
	skews map[string]*atomic.Int64
	// usage counts what AWS would bill that the twin's services do not count (usage.go).
	usage usageMeter

	closeOnce sync.Once
	wg        sync.WaitGroup
	closers   []func() error
}

// Start brings the whole stack up and returns it; on error everything already started is
// stopped. ctx bounds start-up only: the stack runs until Close.
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	cfg = withDefaults(cfg)
	// Each function reads these from its environment in whole seconds, as on AWS.
	for what, d := range map[string]time.Duration{"hold": cfg.Hold, "sweep grace": cfg.SweepGrace} {
		if d%time.Second != 0 {
			return nil, fmt.Errorf("stack: %s %s: a deployed function is configured in whole seconds", what, d)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	st := &Stack{
		cfg: cfg, log: cfg.Logger, ctx: runCtx, cancel: cancel,
		Clock:         cfg.Clock,
		Metrics:       metrics.NewMemory(),
		CloudWatch:    cloudwatch.NewStore(),
		Names:         tables.Names{Prefix: cfg.TablePrefix},
		WebhookSecret: "whsec_local_" + randomHex(12),
		Auth:          &apigateway.DevAuthorizer{Secret: []byte(randomHex(32)), Now: cfg.Clock.Now},
	}
	defer func() {
		if err != nil {
			_ = st.Close()
		}
	}()
	if st.Definition, err = loadDefinition(); err != nil {
		return nil, err
	}
	if err := st.startDynamoDB(ctx); err != nil {
		return nil, err
	}
	if err := st.startPayments(); err != nil {
		return nil, err
	}
	if err := st.startLambdaHost(); err != nil {
		return nil, err
	}
	if err := st.startEngine(ctx); err != nil {
		return nil, err
	}
	st.sfnServer.Observe(st.observeExecution)
	if err := st.startGate(); err != nil {
		return nil, err
	}
	if err := st.registerHandlers(ctx); err != nil {
		return nil, err
	}
	if err := st.startGateway(); err != nil {
		return nil, err
	}
	if err := st.startCognito(); err != nil {
		return nil, err
	}
	st.Payments.SetWebhook(st.webhookConfig())
	st.startQueues()
	if !cfg.DisableRelay {
		if err := st.startRelay(ctx); err != nil {
			return nil, err
		}
	}
	st.startStarter()
	st.startSweeper()
	st.startAlarms()
	st.log.Info("stack: up", "api", st.Endpoints.API, "stepFunctions", st.Endpoints.StepFunctions,
		"lambda", st.Endpoints.Lambda, "dynamodb", st.Endpoints.DynamoDB, "payments", st.Endpoints.Payments,
		"tablePrefix", st.Names.Prefix)
	return st, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.TablePrefix == "" {
		cfg.TablePrefix = "ss" + randomHex(4) + "-"
	}
	if cfg.Hold <= 0 {
		cfg.Hold = config.DefaultHold
	}
	if cfg.MaxSeats <= 0 {
		cfg.MaxSeats = config.DefaultMaxSeats
	}
	if cfg.LateSuccessPolicy == "" {
		cfg.LateSuccessPolicy = config.DefaultLateSuccess
	}
	if cfg.AdmissionLease <= 0 {
		cfg.AdmissionLease = config.DefaultAdmissionLease
	}
	switch {
	case cfg.MaxActiveReservations == 0:
		cfg.MaxActiveReservations = config.DefaultMaxActive
	case cfg.MaxActiveReservations < 0:
		cfg.MaxActiveReservations = 0
	}
	if cfg.SweepGrace <= 0 {
		cfg.SweepGrace = config.DefaultSweepGrace
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = time.Minute
	}
	if cfg.LambdaTimeout <= 0 {
		cfg.LambdaTimeout = lambdahost.DefaultTimeout
	}
	if cfg.RelayPollInterval <= 0 {
		cfg.RelayPollInterval = 250 * time.Millisecond
	}
	if cfg.PaymentsTimeout <= 0 {
		cfg.PaymentsTimeout = stripeadapter.DefaultHTTPTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Close stops everything the stack started, in reverse order, within a bounded time; the
// DynamoDB Local process (when the stack started one) is stopped last. Safe to call twice.
func (st *Stack) Close() error {
	var errs []error
	st.closeOnce.Do(func() {
		st.cancel()
		if st.sweeper != nil {
			st.sweeper.stop()
		}
		for i := len(st.closers) - 1; i >= 0; i-- {
			if err := st.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
		done := make(chan struct{})
		go func() { st.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("stack: background loops did not stop within 10s"))
		}
	})
	return errors.Join(errs...)
}

func (st *Stack) onClose(f func() error) { st.closers = append(st.closers, f) }

func (st *Stack) startDynamoDB(ctx context.Context) error {
	endpoint := st.cfg.DynamoDBEndpoint
	if endpoint == "" {
		srv, err := dynamodblocal.Start(ctx)
		if err != nil {
			return fmt.Errorf("stack: %w", err)
		}
		st.ddb = srv
		st.onClose(srv.Stop)
		endpoint = srv.Endpoint()
	}
	client, err := dynamodblocal.NewClient(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	if err := dynamodblocal.CreateTables(ctx, client, st.Names); err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	if st.ddb == nil {
		// A shared DynamoDB outlives the stack: take the tables away with it.
		st.onClose(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return dynamodblocal.DeleteTables(ctx, client, st.Names)
		})
	}
	st.DynamoDB = client
	st.Endpoints.DynamoDB = endpoint
	return nil
}

func (st *Stack) startPayments() error {
	p := st.cfg.Payments
	st.Payments = stripesim.New(stripesim.Options{
		Clock:                  st.Clock,
		ThreeDSDelay:           p.ThreeDSDelay,
		LateAuthorizationDelay: p.LateAuthorizationDelay,
		RefundDelay:            p.RefundDelay,
		// The Stripe client's timeout is what ends a lost response; keep the hold shorter so
		// Close never waits on one.
		LostResponseHold: 15 * time.Second,
		Seed:             p.Seed,
		Logger:           st.log,
	})
	if err := st.Payments.Start(st.ctx, "127.0.0.1:0"); err != nil {
		return fmt.Errorf("stack: start payment simulator: %w", err)
	}
	st.onClose(func() error { st.Payments.Close(); return nil })
	st.Endpoints.Payments = st.Payments.URL()
	return nil
}

func (st *Stack) startLambdaHost() error {
	st.Lambdas = lambdahost.New(lambdahost.Options{
		Region:         Region,
		AccountID:      AccountID,
		MaxConcurrency: st.lambdaConcurrency(),
		Timeout:        st.cfg.LambdaTimeout,
		Logger:         st.log,
		Observer:       st.observeInvocation,
	})
	url, err := st.Lambdas.Start(st.ctx, "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.onClose(st.Lambdas.Close)
	st.Endpoints.Lambda = url
	st.Lambda = lambda.New(lambda.Options{
		Region:       Region,
		BaseEndpoint: aws.String(url),
		Credentials:  localCredentials(),
		// The state machine and the gateway do their own retrying, as on AWS.
		RetryMaxAttempts: 1,
	})
	return nil
}

func (st *Stack) startGateway() error {
	st.gateway = apigateway.New(apigateway.Options{
		Invoker:    apigateway.LambdaInvoker{Client: st.Lambda},
		Authorizer: st.Auth,
		Logger:     st.log,
		Stage:      APIStage,
		Observer:   st.observeRequest,
		Throttle:   st.apiThrottle(),
		Clock:      st.Clock,
		Routes: []apigateway.Route{
			{Method: "POST", Resource: "/events/{eventId}/reservations", Function: FnAPI, Authorized: true},
			{Method: "GET", Resource: "/reservations/{id}", Function: FnAPI, Authorized: true},
			{Method: "DELETE", Resource: "/reservations/{id}", Function: FnAPI, Authorized: true},
			{Method: "POST", Resource: "/webhooks/stripe", Function: FnWebhook},
		},
	})
	url, err := st.gateway.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.onClose(st.gateway.Close)
	st.Endpoints.API = url
	return nil
}

// webhookConfig is how the simulator delivers events to the stack's webhook, signed with its
// current secret.
func (st *Stack) webhookConfig() stripesim.WebhookConfig {
	p := st.cfg.Payments
	return stripesim.WebhookConfig{
		URL:           st.Endpoints.API + "/webhooks/stripe",
		Secret:        st.WebhookSecret,
		DuplicateRate: p.WebhookDuplicateRate,
		Reorder:       p.WebhookReorder,
		ReorderWindow: p.WebhookReorderWindow,
		Delay:         p.WebhookDelay,
		// API Gateway gives an integration 29 s; a busy laptop needs more than the
		// simulator's default 5 s before a slow answer turns into a retry storm.
		Timeout: 25 * time.Second,
	}
}

// RollWebhookSecret does what an operator does when Stripe rolls the endpoint's signing
// secret: the simulator signs with secret from now on, and the webhook function's secret in
// Secrets Manager becomes secret. The running function is not restarted; it must pick the new
// value up itself.
func (st *Stack) RollWebhookSecret(ctx context.Context, secret string) error {
	sm := secretsmanager.NewFromConfig(aws.Config{
		Region: Region, BaseEndpoint: aws.String(st.Endpoints.AWS), Credentials: localCredentials(),
	})
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(st.SecretARN(deploy.StripeWebhookSecret)), SecretString: aws.String(secret),
	}); err != nil {
		return fmt.Errorf("stack: roll the webhook secret: %w", err)
	}
	st.WebhookSecret = secret
	st.Payments.SetWebhook(st.webhookConfig())
	return nil
}

// startCognito starts the local user pool, signing with the gateway's authorizer.
func (st *Stack) startCognito() error {
	st.Cognito = cognito.New(cognito.Options{Tokens: st.Auth, Region: Region, Logger: st.log})
	url, err := st.Cognito.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.onClose(st.Cognito.Close)
	st.Endpoints.Cognito = url
	return nil
}

// Token returns a dev bearer token for customer, valid for a day of the stack's clock.
func (st *Stack) Token(customer string) (string, error) {
	return st.Auth.Token(customer, 24*time.Hour)
}

// FunctionARN is the local ARN of a function.
func FunctionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", Region, AccountID, name)
}

// Substitutions maps the state machine's step placeholders to local function ARNs, and its
// integrations' placeholders to their ARNs in the partition of those (FunctionARN's "aws").
func Substitutions() map[string]string {
	subs := map[string]string{}
	for _, s := range statemachine.Steps {
		subs[s.Placeholder] = FunctionARN(s.Name)
	}
	for _, i := range statemachine.Integrations {
		subs[i.Placeholder] = i.ARN("aws")
	}
	return subs
}

// loadDefinition returns the embedded definition, refusing one with a placeholder no step
// names (the engine would report it only as a missing substitution).
func loadDefinition() ([]byte, error) {
	def := statemachine.Definition()
	if err := statemachine.Check(def); err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	return def, nil
}

func localCredentials() aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "twin"}, nil
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// faultMiddleware asks fault before each call; it runs at the initialize step, before the
// SDK's retries, so an injected failure reaches the caller as the SDK's last error would.
func faultMiddleware(fault func(op string, params any) error) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("seatsagaInjectedFault",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if err := fault(awsmiddleware.GetOperationName(ctx), in.Parameters); err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}
