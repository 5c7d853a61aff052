package stack

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/infra/build"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Access is what one function may do with one table.
type Access int

const (
	Read Access = iota + 1
	Write
	ReadWrite
)

// FunctionSpec describes one Lambda: what it is for and exactly what it may touch.
type FunctionSpec struct {
	Name        string
	Description string
	TimeoutSec  int
	MemoryMB    int
	// Tables lists the tables the function reads or writes; nothing else is granted.
	Tables map[string]Access
	// StripeKey grants read on the Stripe API secret key.
	StripeKey bool
	// WebhookSecret grants read on the Stripe webhook signing secret.
	WebhookSecret bool
}

// A saga step writes its transition, the reservation and the outbox record in one
// transaction, so it needs the seat and reservation tables both ways and the outbox for writes.
var sagaStepTables = map[string]Access{
	tables.SeatsTable:        ReadWrite,
	tables.ReservationsTable: ReadWrite,
	tables.OutboxTable:       Write,
}

// Specs lists every function; the order of build.Functions is kept.
func Specs() []FunctionSpec {
	return []FunctionSpec{
		// The api reads seats and reservations; its one write is the customer's cancel, recorded
		// on the reservation with its outbox record before it is acknowledged (it never
		// touches seats). It reads the Stripe key to hand the reservation's owner the
		// PaymentIntent client secret.
		{Name: "api", Description: "Customer API: create, read and cancel reservations", TimeoutSec: 10, MemoryMB: 512,
			Tables: map[string]Access{tables.SeatsTable: Read, tables.ReservationsTable: ReadWrite, tables.OutboxTable: Write}, StripeKey: true},
		{Name: "webhook", Description: "Stripe webhook: verify, dedupe, apply, complete the waiting task", TimeoutSec: 15, MemoryMB: 256,
			Tables: map[string]Access{tables.SeatsTable: ReadWrite, tables.ReservationsTable: ReadWrite,
				tables.OutboxTable: Write, tables.ProcessedEventsTable: ReadWrite},
			StripeKey: true, WebhookSecret: true},
		{Name: "sweeper", Description: "Scheduled: release orphaned expired holds, reconcile stuck payments, publish backlog figures", TimeoutSec: 120, MemoryMB: 256,
			Tables: sagaStepTables, StripeKey: true},
		{Name: "relay", Description: "Outbox stream to EventBridge", TimeoutSec: 60, MemoryMB: 256},
		{Name: "consumer", Description: "Example outbox event consumer, idempotent by event id", TimeoutSec: 30, MemoryMB: 128,
			Tables: map[string]Access{tables.ProcessedEventsTable: ReadWrite}},
		{Name: "claim", Description: "Saga step: claim the seats", TimeoutSec: 15, MemoryMB: 256, Tables: sagaStepTables},
		{Name: "authorize", Description: "Saga step: authorize the payment and park the task token", TimeoutSec: 30, MemoryMB: 256, Tables: sagaStepTables, StripeKey: true},
		// Confirm asks the provider for the truth when the webhook's report is not yet visible.
		{Name: "confirm", Description: "Saga step: confirm the seats", TimeoutSec: 15, MemoryMB: 256, Tables: sagaStepTables, StripeKey: true},
		{Name: "capture", Description: "Saga step: capture the payment", TimeoutSec: 30, MemoryMB: 256, Tables: sagaStepTables, StripeKey: true},
		{Name: "compensate", Description: "Saga step: release, void or refund", TimeoutSec: 30, MemoryMB: 256, Tables: sagaStepTables, StripeKey: true},
		{Name: "reconcile", Description: "Saga step: learn the provider's truth and resolve", TimeoutSec: 30, MemoryMB: 256, Tables: sagaStepTables, StripeKey: true},
	}
}

// Settings are the application settings every function receives.
type Settings struct {
	Stage                  string
	LateSuccessPolicy      string
	HoldSeconds            int
	MaxSeatsPerReservation int
	SweepGraceSeconds      int
}

// FunctionsProps configures the functions.
type FunctionsProps struct {
	// AssetDir holds <name>/bootstrap for every function (infra/build lays it out).
	AssetDir     string
	Production   bool
	LogRetention awslogs.RetentionDays
	Settings     Settings
	Data         *Data
	Secrets      *Secrets
	// Specs overrides Specs(); tests use it.
	Specs []FunctionSpec
}

// Function is one deployed Lambda with its own role and log group.
type Function struct {
	Spec     FunctionSpec
	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// Functions holds every Lambda, each with a least-privilege role of its own.
type Functions struct {
	constructs.Construct
	ByName map[string]*Function
}

// NewFunctions declares every function: provided.al2023 on arm64 from its bootstrap, X-Ray
// tracing, a log group with retention, settings and the table-name prefix in the environment,
// and the grants its spec names.
func NewFunctions(scope constructs.Construct, id string, p FunctionsProps) *Functions {
	c := constructs.NewConstruct(scope, jsii.String(id))
	specs := p.Specs
	if specs == nil {
		specs = Specs()
	}
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	fs := &Functions{Construct: c, ByName: map[string]*Function{}}
	for _, s := range specs {
		name := pascal(s.Name)
		logs := awslogs.NewLogGroup(c, jsii.String(name+"Logs"), &awslogs.LogGroupProps{
			Retention:     p.LogRetention,
			RemovalPolicy: removal,
		})
		// A role of its own, without the AWSLambdaBasicExecutionRole managed policy: the
		// function may write only to its own log group.
		role := awsiam.NewRole(c, jsii.String(name+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String("seatsaga " + s.Name + " function"),
		})
		logs.GrantWrite(role)

		env := map[string]*string{
			EnvStage:             jsii.String(p.Settings.Stage),
			EnvLateSuccessPolicy: jsii.String(p.Settings.LateSuccessPolicy),
			EnvHoldSeconds:       jsii.String(strconv.Itoa(p.Settings.HoldSeconds)),
			EnvMaxSeats:          jsii.String(strconv.Itoa(p.Settings.MaxSeatsPerReservation)),
			EnvSweepGraceSeconds: jsii.String(strconv.Itoa(p.Settings.SweepGraceSeconds)),
			EnvMetricsNamespace:  jsii.String(MetricsNamespace),
		}
		if len(s.Tables) > 0 {
			env[EnvTablePrefix] = p.Data.Prefix()
		}
		fn := awslambda.NewFunction(c, jsii.String(name), &awslambda.FunctionProps{
			Description:  jsii.String(s.Description),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(build.AssetDir(p.AssetDir, s.Name)), nil),
			MemorySize:   jsii.Number(float64(s.MemoryMB)),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(float64(s.TimeoutSec))),
			Tracing:      awslambda.Tracing_ACTIVE,
			LogGroup:     logs,
			Role:         role,
			Environment:  &env,
		})
		// The log group must exist before the function first runs, or Lambda would create an
		// unmanaged one without retention.
		fn.Node().AddDependency(logs)

		for _, logical := range sortedKeys(s.Tables) {
			t := p.Data.Table(logical)
			switch s.Tables[logical] {
			case Read:
				t.GrantReadData(role)
			case Write:
				t.GrantWriteData(role)
			case ReadWrite:
				t.GrantReadWriteData(role)
			default:
				panic(fmt.Sprintf("stack: %s: unknown access to %s", s.Name, logical))
			}
		}
		if s.StripeKey {
			p.Secrets.StripeSecretKey.GrantRead(role, nil)
			fn.AddEnvironment(jsii.String(EnvStripeSecretKeyArn), p.Secrets.StripeSecretKey.SecretArn(), nil)
		}
		if s.WebhookSecret {
			p.Secrets.StripeWebhookSecret.GrantRead(role, nil)
			fn.AddEnvironment(jsii.String(EnvStripeWebhookSecret), p.Secrets.StripeWebhookSecret.SecretArn(), nil)
		}
		fs.ByName[s.Name] = &Function{Spec: s, Function: fn, Role: role, LogGroup: logs}
	}
	return fs
}

// Get returns a declared function by name; asking for an undeclared one is a programming
// error in the stack.
func (fs *Functions) Get(name string) *Function {
	f, ok := fs.ByName[name]
	if !ok {
		panic(fmt.Sprintf("stack: function %q is not declared", name))
	}
	return f
}

// AssetPaths lists the bootstrap path each function's asset needs, for a clear error before
// synthesis when one is missing.
func AssetPaths(assetDir string, specs []FunctionSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, filepath.Join(build.AssetDir(assetDir, s.Name), "bootstrap"))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// pascal turns a function name into a construct id: "compensate" -> "Compensate".
func pascal(name string) string {
	if name == "" {
		return name
	}
	b := []byte(name)
	if b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
	return string(b)
}
