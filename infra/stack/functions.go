package stack

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/infra/build"
	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// Settings are the application settings the functions' environments are rendered from.
type Settings struct {
	Stage                  string
	LateSuccessPolicy      string
	HoldSeconds            int
	MaxSeatsPerReservation int
	SweepGraceSeconds      int
	AdmissionLeaseSeconds  int
	MaxActiveReservations  int
	// AllowedOrigins are the browser origins the api's answers name (ApiSettings).
	AllowedOrigins []string
}

// FunctionsProps configures the functions.
type FunctionsProps struct {
	// AssetDir holds <name>/bootstrap for every function (infra/build lays it out).
	AssetDir     string
	Production   bool
	LogRetention awslogs.RetentionDays
	// Specs overrides deploy.Functions(); tests use it.
	Specs []deploy.Function
	// WithoutReservedConcurrency leaves the specs' reserved concurrency out, for accounts whose
	// concurrency quota cannot spare it (Lambda keeps 100 unreserved).
	WithoutReservedConcurrency bool
	// constructGrants hands each function its role itself instead of one without policy
	// updates, so that the constructs binding to it add their own statements; a test uses it
	// to prove those are all in the spec.
	constructGrants bool
}

// Function is one deployed Lambda with its own role and log group.
type Function struct {
	Spec     deploy.Function
	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// Functions holds every Lambda, each with a least-privilege role of its own.
type Functions struct {
	constructs.Construct
	ByName map[string]*Function
	// names keeps the specs' order, so that rendering is deterministic.
	names    []string
	rendered bool
}

// NewFunctions declares every function from its spec: provided.al2023 on arm64 from its
// bootstrap, the spec's handler, memory, timeout and reserved concurrency, X-Ray tracing, JSON
// logs at INFO (Lambda's own at WARN) and a log group with retention. Environments and role
// statements name resources declared after the functions (the state machine, the event bus),
// so Render adds them once those exist.
func NewFunctions(scope constructs.Construct, id string, p FunctionsProps) *Functions {
	c := constructs.NewConstruct(scope, jsii.String(id))
	specs := p.Specs
	if specs == nil {
		specs = deploy.Functions()
	}
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	fs := &Functions{Construct: c, ByName: map[string]*Function{}}
	for _, s := range specs {
		name := alarms.Pascal(s.Name)
		logs := awslogs.NewLogGroup(c, jsii.String(name+"Logs"), &awslogs.LogGroupProps{
			Retention:     p.LogRetention,
			RemovalPolicy: removal,
		})
		// A role of its own, without the AWSLambdaBasicExecutionRole managed policy: it holds
		// the spec's statements and nothing else.
		role := awsiam.NewRole(c, jsii.String(name+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String("seatsaga " + s.Name + " function"),
		})
		// The function sees its role without policy updates: what the constructs binding to
		// it would grant on their own (X-Ray writes for tracing, the stream reads of the event
		// source, SendMessage to a DLQ or destination) is dropped, so the spec is the one
		// source of the role's permissions. The spec names those grants as Platform ones.
		var fnRole awsiam.IRole = role.WithoutPolicyUpdates(nil)
		if p.constructGrants {
			fnRole = role
		}
		var reserved *float64
		if s.ReservedConcurrency > 0 && !p.WithoutReservedConcurrency {
			reserved = jsii.Number(float64(s.ReservedConcurrency))
		}
		fn := awslambda.NewFunction(c, jsii.String(name), &awslambda.FunctionProps{
			Description:                  jsii.String(s.Description),
			Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:                 awslambda.Architecture_ARM_64(),
			Handler:                      jsii.String(s.Handler),
			Code:                         awslambda.Code_FromAsset(jsii.String(build.AssetDir(p.AssetDir, s.Name)), nil),
			MemorySize:                   jsii.Number(float64(s.MemoryMB)),
			Timeout:                      awscdk.Duration_Seconds(jsii.Number(s.Timeout.Seconds())),
			ReservedConcurrentExecutions: reserved,
			Tracing:                      awslambda.Tracing_ACTIVE,
			LogGroup:                     logs,
			// JSON logs at INFO. Lambda hands both to the binary (AWS_LAMBDA_LOG_FORMAT,
			// AWS_LAMBDA_LOG_LEVEL), internal/obs logs at that level and Lambda drops lines
			// below it by their level field. The level must stay INFO or below: the
			// embedded-metric-format lines carry no level, Lambda reads them as INFO, and a
			// higher level would drop every custom metric (a test holds it). Lambda's own lines
			// stay at INFO too: its REPORT line says a function timed out or ran out of memory,
			// which a Go binary killed mid-invocation cannot log itself.
			LoggingFormat:         awslambda.LoggingFormat_JSON,
			ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
			SystemLogLevelV2:      awslambda.SystemLogLevel_INFO,
			Role:                  fnRole,
		})
		// The log group must exist before the function first runs, or Lambda would create an
		// unmanaged one without retention; the dependency is stated, not left to the Ref.
		fn.Node().AddDependency(logs)
		fs.ByName[s.Name] = &Function{Spec: s, Function: fn, Role: role, LogGroup: logs}
		fs.names = append(fs.names, s.Name)
	}
	return fs
}

// Render gives every function the environment and the role statements its spec renders
// through r, each statement one grant. It runs once, after everything r resolves exists.
func (fs *Functions) Render(r deploy.Resolver) {
	if fs.rendered {
		panic("stack: the functions are rendered twice")
	}
	fs.rendered = true
	for _, name := range fs.names {
		f := fs.ByName[name]
		env := f.Spec.Environment(r)
		for _, k := range sortedKeys(env) {
			f.Function.AddEnvironment(jsii.String(k), jsii.String(env[k]), nil)
		}
		for _, st := range f.Spec.Policy(r) {
			f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings(st.Actions...),
				Resources: jsii.Strings(st.Resources...),
			}))
		}
	}
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

// resolver renders the spec's resources and settings as this stack's tokens. Every field is
// set before Render uses it.
type resolver struct {
	settings  Settings
	data      *Data
	secrets   *Secrets
	functions *Functions
	workflow  *Workflow
	events    *Events
}

var _ deploy.Resolver = (*resolver)(nil)

// ARN is the token of r's ARN; a resource the stack does not declare is a programming error.
func (r *resolver) ARN(fn string, res deploy.Resource) string {
	switch res.Kind {
	case deploy.Table:
		return *r.data.Table(res.Name).TableArn()
	case deploy.TableIndex:
		return *r.data.Table(res.Name).TableArn() + "/index/" + res.Index
	case deploy.TableStream:
		if arn := r.data.Table(res.Name).TableStreamArn(); arn != nil {
			return *arn
		}
	case deploy.StateMachine:
		return *r.workflow.StateMachine.StateMachineArn()
	case deploy.Executions:
		// Execution ARNs carry the state machine's name, not its ARN.
		return *awscdk.Stack_Of(r.workflow.StateMachine).FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("states"),
			Resource:     jsii.String("execution"),
			ResourceName: jsii.String(*r.workflow.StateMachine.StateMachineName() + ":*"),
			ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
	case deploy.Secret:
		switch res.Name {
		case deploy.StripeSecretKey:
			return *r.secrets.StripeSecretKey.SecretArn()
		case deploy.StripeWebhookSecret:
			return *r.secrets.StripeWebhookSecret.SecretArn()
		}
	case deploy.EventBus:
		return *r.events.Bus.EventBusArn()
	case deploy.Queue:
		switch res.Name {
		case deploy.RelayDLQ:
			return *r.events.RelayDLQ.QueueArn()
		case deploy.ConsumerDLQ:
			return *r.events.ConsumerDLQ.QueueArn()
		case deploy.StarterDLQ:
			return *r.events.StarterDLQ.QueueArn()
		}
	case deploy.LogGroup:
		return *r.functions.Get(fn).LogGroup.LogGroupArn()
	case deploy.Any:
		return "*"
	}
	panic(fmt.Sprintf("stack: %s: the stack declares no %s %q", fn, res.Kind, res.Name))
}

// Setting is the token or value of one configuration variable in this stack.
func (r *resolver) Setting(name string) string {
	switch name {
	case EnvStage:
		return r.settings.Stage
	case EnvLateSuccessPolicy:
		return r.settings.LateSuccessPolicy
	case EnvHoldSeconds:
		return strconv.Itoa(r.settings.HoldSeconds)
	case EnvMaxSeats:
		return strconv.Itoa(r.settings.MaxSeatsPerReservation)
	case EnvSweepGraceSeconds:
		return strconv.Itoa(r.settings.SweepGraceSeconds)
	case EnvAdmissionLeaseSeconds:
		return strconv.Itoa(r.settings.AdmissionLeaseSeconds)
	case EnvMaxActiveReservations:
		return strconv.Itoa(r.settings.MaxActiveReservations)
	case EnvMetricsNamespace:
		// One namespace per stage: two stages in one account must not feed each other's
		// alarms.
		return alarms.StageNamespace(r.settings.Stage)
	case EnvTablePrefix:
		return *r.data.Prefix()
	case EnvStateMachineArn:
		return *r.workflow.StateMachine.StateMachineArn()
	case EnvEventBusName:
		return *r.events.Bus.EventBusName()
	case EnvAllowedOrigins:
		return strings.Join(r.settings.AllowedOrigins, ",")
	}
	panic(fmt.Sprintf("stack: the stack has no setting %s", name))
}

// AssetPaths lists the bootstrap path each function's asset needs, for a clear error before
// synthesis when one is missing.
func AssetPaths(assetDir string, specs []deploy.Function) []string {
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
