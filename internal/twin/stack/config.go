// Package stack runs the whole of seatsaga in one process, with no AWS account: DynamoDB
// Local (the real one, tables from internal/tables), the payment simulator, the Lambda host
// serving every handler under its function name, the local Step Functions engine running
// statemachine/reservation.asl.json, an HTTP server playing API Gateway for the api and webhook
// functions, a local Cognito user pool, the sweeper on a ticker, and a reader of the outbox
// stream that invokes the relay function as the event source mapping would; the relay
// publishes to an in-memory bus that feeds the example consumer.
//
// Each function is built from the environment its deployment spec (internal/deploy) renders
// against the local services, with credentials of its own; all its AWS calls go through the
// gate (internal/twin/awsgate), which refuses what its grants do not allow and serves Secrets
// Manager and EventBridge.
//
// The stack keeps the metrics CloudWatch would hold (internal/twin/cloudwatch): the EMF lines
// each function writes, and the AWS/States, AWS/Lambda and AWS/ApiGateway metrics of its
// engine, Lambda host and API, all stamped on the stack's clock. The deployment's alarms
// (internal/alarms) are evaluated over them every minute of that clock (Stack.Alarms), so a
// fault that would page someone on AWS fires an alarm locally.
//
// It is the integration point of the project: end-to-end tests, `go run ./infra/local` (up,
// demo, load, inspect) and the invariant checker all start a Stack.
//
//	st, err := stack.Start(ctx, stack.Config{Clock: clock.NewFake(t0)})
//	if err != nil { ... }
//	defer st.Close()
//	seats, _ := st.SeedEvent(ctx, "ev1", 10)
//	token, _ := st.Token("customer-1")
//	// POST st.Endpoints.API + "/events/ev1/reservations" with "Authorization: Bearer "+token
//	verdict, _ := st.Check(ctx)
//
// Every service is addressed by endpoint (Endpoints), so the same SDK clients a Lambda builds
// on AWS talk to the local services here.
package stack

import (
	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"log/slog"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// Function names under which the Lambda host serves the handlers: the product's own names
// (internal/app), which the state machine's ${…FunctionArn} substitutions point at.
const (
	FnClaim      = app.FnClaim
	FnAuthorize  = app.FnAuthorize
	FnConfirm    = app.FnConfirm
	FnCapture    = app.FnCapture
	FnCompensate = app.FnCompensate
	FnReconcile  = app.FnReconcile
	FnAPI        = app.FnAPI
	FnWebhook    = app.FnWebhook
	FnSweeper    = app.FnSweeper
	FnRelay      = app.FnRelay
	FnConsumer   = app.FnConsumer
	FnStarter    = app.FnStarter
)

// SagaFunctions are the functions the state machine invokes, in saga order.
var SagaFunctions = []string{FnClaim, FnAuthorize, FnConfirm, FnCapture, FnCompensate, FnReconcile}

// Region and AccountID of every local ARN, e.g. arn:aws:lambda:us-east-1:000000000000:function:claim.
const (
	Region    = "us-east-1"
	AccountID = "000000000000"
)

// StateMachineName is the name the saga's state machine is created under.
const StateMachineName = "seatsaga-reservation"

// Config configures a Stack. The zero value is a usable stack on the wall clock with
// production-like durations (10-minute holds); tests set Clock (a *clock.Fake) and short
// durations, the demo a *clock.Scaled.
type Config struct {
	// Clock drives every handler, the engine's waits and timeouts, the payment simulator's
	// delays, hold deadlines and the sweeper. nil means clock.Real{}.
	Clock clock.Clock

	// TablePrefix prefixes every table name; empty picks a unique one per stack, so stacks can
	// share one DynamoDB Local ($DYNAMODB_ENDPOINT).
	TablePrefix string
	// DynamoDBEndpoint reuses a running DynamoDB (Local); empty starts DynamoDB Local (which
	// itself reuses $DYNAMODB_ENDPOINT when set).
	DynamoDBEndpoint string

	// Pricing prices the seats SeedEvent creates (zero value: a flat DefaultSeatPrice EUR).
	Pricing Pricing

	// Hold is how long a claim holds seats (default config.DefaultHold, 10 minutes).
	Hold time.Duration
	// MaxSeats bounds seats per reservation (default config.DefaultMaxSeats).
	MaxSeats int
	// AdmissionLease is how long the API's admission gate keeps other buyers off a seat it let
	// a buyer through for, if no claim follows (default config.DefaultAdmissionLease).
	AdmissionLease time.Duration
	// MaxActiveReservations caps one customer's reservations in progress (default
	// config.DefaultMaxActive; negative: no cap).
	MaxActiveReservations int
	// AllowedOrigins are the browser origins the api's answers name (none by default).
	AllowedOrigins []string
	// LateSuccessPolicy is "reacquire" (default) or "void".
	LateSuccessPolicy string
	// SweepGrace is how long past a hold's deadline the sweeper waits before acting (default
	// config.DefaultSweepGrace); SweepInterval how often it runs on Clock (default 1 minute;
	// negative disables the ticker, Sweep still runs it by hand).
	SweepGrace    time.Duration
	SweepInterval time.Duration
	// ReconcileAttempts and ReconcileBackoff bound the saga's reconcile loop (defaults: the
	// saga's).
	ReconcileAttempts int
	ReconcileBackoff  time.Duration

	// Payments configures the payment simulator's business delays and webhook delivery.
	Payments PaymentsConfig
	// PaymentsTimeout bounds one HTTP exchange of the Stripe client with the simulator (wall
	// clock; default stripeadapter.DefaultHTTPTimeout, 10 s): it is how long a lost response
	// keeps a step waiting.
	PaymentsTimeout time.Duration
	// WebhookTolerance is how old a webhook signature's timestamp may be on Clock (default
	// Stripe's 5 minutes); a compressed clock needs more.
	WebhookTolerance time.Duration

	// LambdaConcurrency is the Lambda host's account concurrency limit (default 1000, AWS's
	// account default; negative, none), out of which each function's reserved concurrency is
	// carved; excess invocations are throttled as on AWS.
	LambdaConcurrency int
	// LambdaTimeout is every function's timeout (default 30 s, wall clock).
	LambdaTimeout time.Duration

	// Unthrottled turns off every AWS quota the twin otherwise applies, for tests that need
	// services that never refuse: the Step Functions API actions' and state transitions' token
	// buckets (stepfunctions.DefaultQuotas, AWS's defaults for Standard workflows in the
	// largest Regions), the Lambda account limit (LambdaConcurrency) and each function's
	// reserved concurrency from its spec, and the API stage's rate and burst. The fields below
	// tune or turn off one each.
	Unthrottled bool
	// StepFunctionsQuotas replaces the engine's quotas (nil: stepfunctions.DefaultQuotas);
	// NoStepFunctionsQuotas turns them off. The stack's own SFN client reads through the
	// engine's inspection endpoint, which is never throttled.
	StepFunctionsQuotas   *stepfunctions.Quotas
	NoStepFunctionsQuotas bool
	// NoReservedConcurrency registers every function without its spec's reserved concurrency.
	NoReservedConcurrency bool
	// APIRateLimit (requests per second of Clock) and APIBurstLimit are the stage's throttle
	// (defaults: the deployed stage's, deploy.DefaultAPIRateLimit and DefaultAPIBurstLimit);
	// NoAPIThrottle turns it off.
	APIRateLimit  float64
	APIBurstLimit int
	NoAPIThrottle bool

	// RelayPollInterval is how often the stream reader polls the outbox stream (default
	// 250 ms, wall clock). DisableRelay leaves the outbox unpublished.
	RelayPollInterval time.Duration
	DisableRelay      bool

	// DynamoDBFault, when set, is asked before every DynamoDB call the stack's clients make
	// (operation name and input, e.g. "TransactWriteItems" and *dynamodb.TransactWriteItemsInput);
	// a non-nil answer fails that call with it, before anything is sent, as a throttle or an
	// outage would. Tests use it to fail one precise write.
	DynamoDBFault func(op string, params any) error
	// StepFunctionsLoseResponse, when set, is asked after every Step Functions call a
	// function made that succeeded (its role name, e.g. RoleName(FnAPI), and the operation):
	// true drops the connection before the answer, so the call took effect and the function
	// sees it fail as a lost response does (awsgate.Options.LoseResponse).
	StepFunctionsLoseResponse func(role, operation string) bool
	// chaos is what WithChaos set up: the fault classes RunSale injects and the stack the
	// DynamoDB hook commits lost writes with.
	chaos *chaosBinding

	// Functions are the specs the stack deploys (nil: deploy.Functions()); the control tests
	// take a grant or a variable away to show the stack refuses what AWS would.
	Functions []deploy.Function

	// Thresholds tune the alarms the stack evaluates (Stack.Alarms), field by field as a
	// deployment's alarmThresholds context does; zero fields take alarms.DefaultThresholds.
	Thresholds alarms.Thresholds

	// Logger receives the structured logs of every component (nil discards them).
	Logger *slog.Logger
}

// PaymentsConfig configures the payment simulator.
type PaymentsConfig struct {
	// ThreeDSDelay is how long a buyer takes to complete 3-D Secure (default 2 s on Clock).
	ThreeDSDelay time.Duration
	// LateAuthorizationDelay is how long a late authorization stays processing (default 30 s
	// on Clock; set it past Hold to produce late success).
	LateAuthorizationDelay time.Duration
	// WebhookDuplicateRate (0..1) delivers that share of webhooks twice; WebhookReorder shuffles
	// deliveries within WebhookReorderWindow; WebhookDelay delays every first delivery.
	WebhookDuplicateRate float64
	WebhookReorder       bool
	WebhookReorderWindow time.Duration
	WebhookDelay         time.Duration
	// RefundDelay is how long a refund stays pending before the provider settles it
	// (succeeded, or failed for stripesim.PaymentMethodRefundFail); 0 settles at once.
	RefundDelay time.Duration
	// Seed makes the simulator's ids and random choices reproducible.
	Seed int64
}

// Compressed is a configuration on a clock that runs scale times faster than the wall clock,
// as the demo, the load run and the fault matrix use it: the business durations (the hold,
// 3-D Secure, late authorizations, the sweeper's grace and period, the reconcile backoff) are
// stack time, and the few wall-clock bounds that meet stack time (a webhook signature's age,
// the reorder window) are stretched to match.
func Compressed(scale float64, hold time.Duration) Config {
	// stretch is d of wall time in stack time, for a fractional scale too.
	stretch := func(d time.Duration) time.Duration { return time.Duration(scale * float64(d)) }
	return Config{
		Clock:         clock.NewScaled(clock.Real{}, scale),
		Hold:          hold,
		SweepGrace:    2 * time.Minute,
		SweepInterval: time.Minute,
		// The lease must outlast a start and a claim in wall time, which the clock does not
		// compress. On AWS that is well under a second; on a two-core machine during a burst
		// of 2,000 buyers it reaches 12 s (the load summary's "saga's view" of the time to
		// hold), and a lease that lapses sooner lets a second buyer through to lose the claim.
		AdmissionLease: stretch(20 * time.Second),
		// The reconcile loop outlasts a late authorization (Payments.LateAuthorizationDelay,
		// a fifth of the hold past it) by its attempts times this.
		ReconcileBackoff: time.Minute,
		// A lost provider response costs one client timeout of wall time.
		PaymentsTimeout:  3 * time.Second,
		WebhookTolerance: stretch(5 * time.Minute),
		Payments: PaymentsConfig{
			ThreeDSDelay:           2 * time.Minute,
			LateAuthorizationDelay: hold + hold/5,
			WebhookReorderWindow:   stretch(time.Second),
		},
	}
}
