package stack

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// LocalStripeKey is the secret key the handlers present to the payment simulator.
const LocalStripeKey = "sk_test_seatsaga_local"

// EventBusName is the local bus the relay publishes to.
const EventBusName = "seatsaga-local"

// adminAccessKeyID signs the stack's own clients (seeding, checks), which may do anything, as
// the account that deployed the stack may. DynamoDB Local keeps one database per access key
// id, so it is also the id every call reaches DynamoDB Local under.
const adminAccessKeyID = awsgate.DefaultDynamoDBAccessKeyID

// AccessKeyID is the access key id a function's calls are signed with; the gate knows it as
// that function's role, allowed exactly what the function's spec grants.
func AccessKeyID(function string) string {
	return "ASIALOCAL" + strings.ToUpper(function)
}

// RoleName is the name of a function's execution role on the local stack: what the gate
// names its caller by in a denial and counts its calls under (awsgate.Call.Role).
func RoleName(function string) string { return "seatsaga-local-" + function }

// FunctionCredentials are the credentials of a function's role, as Lambda hands them to the
// function in its environment.
func FunctionCredentials(function string) aws.Credentials {
	return aws.Credentials{AccessKeyID: AccessKeyID(function), SecretAccessKey: "local", SessionToken: "local", Source: "twin"}
}

// startGate starts the front door every function's AWS calls go through: it forwards DynamoDB
// and Step Functions calls to the local services, serves Secrets Manager and the event bus
// itself, and refuses what the caller's grants do not allow, as IAM would.
func (st *Stack) startGate() error {
	engine := st.sfnServer.Engine()
	gate, err := awsgate.New(awsgate.Options{
		Region: Region, AccountID: AccountID,
		DynamoDBEndpoint:      st.Endpoints.DynamoDB,
		DynamoDBAccessKeyID:   adminAccessKeyID,
		StepFunctionsEndpoint: st.Endpoints.StepFunctions,
		TaskStateMachine:      engine.TokenStateMachine,
		LoseResponse:          st.cfg.StepFunctionsLoseResponse,
		Clock:                 st.Clock,
		Logger:                st.log,
	})
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	url, err := gate.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.onClose(gate.Close)
	gate.AddAdmin(adminAccessKeyID)
	st.Gate = gate
	st.Endpoints.AWS = url

	st.deployment = &localDeployment{st: st, secretARNs: map[string]string{}}
	for name, value := range map[string]string{deploy.StripeSecretKey: LocalStripeKey, deploy.StripeWebhookSecret: st.WebhookSecret} {
		arn, err := gate.CreateSecret(st.Names.Prefix+name, value)
		if err != nil {
			return fmt.Errorf("stack: %w", err)
		}
		st.deployment.secretARNs[name] = arn
	}
	st.deployment.streams = map[string]string{}
	for _, t := range tables.All() {
		if !t.StreamNewImage {
			continue
		}
		if st.deployment.streams[t.Name], err = relay.StreamARN(context.Background(), st.DynamoDB, st.Names.Of(t.Name)); err != nil {
			return fmt.Errorf("stack: %w", err)
		}
	}
	return nil
}

// FunctionEnvironment is the environment a function runs with on the local stack: what its
// spec renders against the local services, plus the Stripe API base pointing at the payment
// simulator (on AWS the Stripe client's default, api.stripe.com).
func (st *Stack) FunctionEnvironment(function string) map[string]string {
	return maps.Clone(st.environments[function])
}

// SecretARN is the local Secrets Manager ARN of a deploy secret (deploy.StripeSecretKey, ...).
func (st *Stack) SecretARN(name string) string { return st.deployment.secretARNs[name] }

// FunctionAWSConfig is the SDK configuration a function's clients are built from: its own
// credentials, the local region, and the gate as every service's endpoint (what
// AWS_ENDPOINT_URL gives a process).
func (st *Stack) FunctionAWSConfig(function string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return FunctionCredentials(function), nil })),
		BaseEndpoint: aws.String(st.Endpoints.AWS),
		// The state machine and the gateway retry as on AWS; the SDK's own retries stay on.
		RetryMaxAttempts: 0,
	}
}

// registerHandlers builds every function as its Lambda main builds it (app.FromEnvironment):
// from the environment its spec renders, with credentials of its own whose grants the gate
// enforces, and with the stack's clock. Its metrics go to the stack's CloudWatch as the EMF
// lines its Lambda would write, and to the stack's own counts. Each is registered under its
// function name.
// The in-memory bus exists only when the relay runs: without one the outbox is left
// unpublished and the checks skip the bus.
func (st *Stack) registerHandlers(ctx context.Context) error {
	st.Notifications = &consumer.MemorySender{}
	if !st.cfg.DisableRelay {
		st.Bus = relay.NewMemoryBus()
		st.Bus.Region, st.Bus.AccountID, st.Bus.Now = Region, AccountID, st.Clock.Now
		if _, err := st.Gate.AddEventBus(EventBusName, st.Bus); err != nil {
			return fmt.Errorf("stack: %w", err)
		}
	}
	var dynamoOptions []func(*dynamodb.Options)
	if st.cfg.DynamoDBFault != nil {
		dynamoOptions = append(dynamoOptions, func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, faultMiddleware(st.cfg.DynamoDBFault))
		})
	}
	st.environments = map[string]map[string]string{}
	st.handlers = map[string]any{}
	st.skews = map[string]*atomic.Int64{}
	specs := st.cfg.Functions
	if specs == nil {
		specs = deploy.Functions()
	}
	for _, fn := range specs {
		if fn.Name == FnRelay && st.cfg.DisableRelay {
			continue
		}
		st.Gate.AddAssumedRole(AccessKeyID(fn.Name), RoleName(fn.Name), fn.Name, fn.Policy(st.deployment))
		env := fn.Environment(st.deployment)
		env[config.EnvStripeAPIBase] = st.Endpoints.Payments
		st.environments[fn.Name] = env
		a, err := app.FromEnvironment(ctx, fn.Name, app.Runtime{
			Lookup: config.MapLookup(env),
			AWS:    st.FunctionAWSConfig(fn.Name),
			Now:    st.functionNow(fn.Name), Logger: st.functionLogger(fn.Name), Metrics: st.functionMetrics(fn.Name, env),
			Sender:            st.Notifications,
			StripeTimeout:     st.cfg.PaymentsTimeout,
			WebhookTolerance:  st.cfg.WebhookTolerance,
			ReconcileAttempts: st.cfg.ReconcileAttempts, ReconcileBackoff: st.cfg.ReconcileBackoff,
			DynamoDBOptions: st.meteredDynamoDB(fn.Name, dynamoOptions),
		})
		if err != nil {
			return fmt.Errorf("stack: %s does not start with what its spec deploys: %w", fn.Name, err)
		}
		h := a.Handlers()[fn.Name]
		st.handlers[fn.Name] = h
		st.Lambdas.RegisterWith(fn.Name, h, lambdahost.FunctionConfig{ReservedConcurrency: st.reservedConcurrency(fn)})
	}
	cfg, err := config.FromLookup(config.MapLookup(st.environments[FnSweeper]))
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.AppConfig = cfg
	return nil
}

// functionNow is a function's clock: the stack's, shifted by the skew the chaos gives it
// (load.ClockSkew; none outside a chaos run).
func (st *Stack) functionNow(fn string) func() time.Time {
	skew := &atomic.Int64{}
	st.skews[fn] = skew
	return func() time.Time { return st.Clock.Now().Add(time.Duration(skew.Load())) }
}

// Handler is the handler the local stack built for a function (tests wrap one to break it and
// Register the wrapper on Lambdas).
func (st *Stack) Handler(function string) any { return st.handlers[function] }

// streamsOf reads a table's stream as Lambda's event source mapping does: under the role of the
// function it invokes, through the gate.
func (st *Stack) streamsOf(function string) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(st.FunctionAWSConfig(function))
}
