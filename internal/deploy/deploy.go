// Package deploy holds what each seatsaga Lambda function is deployed with: its handler,
// memory, timeout and reserved concurrency, the environment variables it receives, the secrets
// it may read, and every permission its role carries. It is the one source for both the CDK
// stack (infra/stack renders it into the template) and the local stack (internal/twin/stack
// gives each function exactly this environment and refuses any AWS call its grants do not
// allow), so what deploys is what was tested.
//
// The package names resources, not ARNs: a Resolver turns each Resource into an ARN, as CDK
// tokens in the template and as local ARNs in the twin.
package deploy

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Function names: the Lambda functions, the lambdas/<name> entry points and the names the state
// machine's steps are invoked by.
const (
	FnClaim      = "claim"
	FnAuthorize  = "authorize"
	FnConfirm    = "confirm"
	FnCapture    = "capture"
	FnCompensate = "compensate"
	FnReconcile  = "reconcile"
	FnAPI        = "api"
	FnWebhook    = "webhook"
	FnSweeper    = "sweeper"
	FnConsumer   = "consumer"
	FnRelay      = "relay"
	FnStarter    = "starter"
)

// Kind is the kind of a resource a grant names.
type Kind string

const (
	// Table is a DynamoDB table; Name is its logical name (tables.SeatsTable, ...).
	Table Kind = "table"
	// TableIndex is one index of a table: <table ARN>/index/<Index>.
	TableIndex Kind = "table-index"
	// TableStream is a table's stream: <table ARN>/stream/<label>.
	TableStream Kind = "table-stream"
	// StateMachine is the reservation saga's state machine.
	StateMachine Kind = "state-machine"
	// Executions is every execution of the saga's state machine: execution:<name>:*.
	Executions Kind = "executions"
	// Secret is a Secrets Manager secret; Name is a SecretName.
	Secret Kind = "secret"
	// EventBus is the bus the relay publishes the outbox to.
	EventBus Kind = "event-bus"
	// Queue is an SQS queue; Name is a QueueName.
	Queue Kind = "queue"
	// LogGroup is the function's own log group.
	LogGroup Kind = "log-group"
	// Any is "*", for the few actions AWS authorizes on no resource (xray:PutTraceSegments,
	// dynamodb:ListStreams).
	Any Kind = "*"
)

// Resource is one resource a grant names.
type Resource struct {
	Kind Kind
	// Name is the table, secret or queue; empty for the kinds there is one of.
	Name string
	// Index is the index of a TableIndex.
	Index string
}

// Secret names.
const (
	StripeSecretKey     = "StripeSecretKey"
	StripeWebhookSecret = "StripeWebhookSecret"
)

// The API stage's default throttle: steady requests per second and the token bucket's size.
// The CDK stack deploys them (context apiRateLimit, apiBurstLimit) and the twin's API Gateway
// refuses past them as the deployed stage would.
const (
	DefaultAPIRateLimit  = 500
	DefaultAPIBurstLimit = 1000
)

// Queue names.
const (
	RelayDLQ    = "RelayDLQ"
	ConsumerDLQ = "ConsumerDLQ"
	StarterDLQ  = "StarterDLQ"
)

// SecretEnv names the variable that carries each secret's ARN.
var SecretEnv = map[string]string{
	StripeSecretKey:     config.EnvStripeSecretARN,
	StripeWebhookSecret: config.EnvStripeWebhookSecretARN,
}

// Grant allows Actions on Resources. When the function's code does not make the calls itself
// but AWS makes them under the function's role (Lambda reading a stream for an event source
// mapping, writing logs or traces, sending a failed event to its DLQ), Platform says so: the
// twin's enforcement then applies to whatever plays that part locally, if anything does.
type Grant struct {
	Actions   []string
	Resources []Resource
	Platform  bool
}

// Function is one Lambda function.
type Function struct {
	Name        string
	Description string
	// Handler is the executable the provided.al2023 runtime starts.
	Handler  string
	MemoryMB int
	Timeout  time.Duration
	// ReservedConcurrency, when positive, is reserved for the function (and caps it).
	ReservedConcurrency int
	// Env lists the configuration variables the function receives (config.Env*), besides
	// the ARN variables of its Secrets.
	Env []string
	// Secrets lists the secrets (StripeSecretKey, StripeWebhookSecret) the function may read;
	// each reaches it as the ARN in SecretEnv[name] and a grant of GetSecretValue on it.
	Secrets []string
	// Grants are the function's own permissions; Policy adds the secrets' reads.
	Grants []Grant
}

// Resolver renders resources and settings for one deployment: CDK tokens in the template,
// local ARNs and values in the twin.
type Resolver interface {
	// ARN is a resource's ARN, for the function named fn (the log group is per function).
	ARN(fn string, r Resource) string
	// Setting is the value of the configuration variable name (config.Env*) in this
	// deployment; the ARN variables of secrets are resolved through ARN instead.
	Setting(name string) string
}

// Environment is the function's whole environment in the deployment r describes.
func (f Function) Environment(r Resolver) map[string]string {
	env := make(map[string]string, len(f.Env)+len(f.Secrets))
	for _, name := range f.Env {
		env[name] = r.Setting(name)
	}
	for _, s := range f.Secrets {
		env[SecretEnv[s]] = r.ARN(f.Name, Resource{Kind: Secret, Name: s})
	}
	return env
}

// Statement is one rendered policy statement: Actions allowed on Resources (ARNs).
type Statement struct {
	Actions   []string
	Resources []string
}

// Policy renders the function's grants and its secrets' reads, each grant one statement.
func (f Function) Policy(r Resolver) []Statement {
	var out []Statement
	for _, g := range f.AllGrants() {
		st := Statement{Actions: slices.Sorted(slices.Values(g.Actions))}
		for _, res := range g.Resources {
			st.Resources = append(st.Resources, r.ARN(f.Name, res))
		}
		out = append(out, st)
	}
	return out
}

// AllGrants is Grants plus one GetSecretValue grant per secret.
func (f Function) AllGrants() []Grant {
	gs := slices.Clone(f.Grants)
	for _, s := range f.Secrets {
		gs = append(gs, Grant{Actions: []string{"secretsmanager:GetSecretValue"},
			Resources: []Resource{{Kind: Secret, Name: s}}})
	}
	return gs
}

// ByName returns the function named name; asking for an unknown one is a programming error.
func ByName(name string) Function {
	for _, f := range Functions() {
		if f.Name == name {
			return f
		}
	}
	panic(fmt.Sprintf("deploy: no function %q", name))
}

// Names lists the functions' names, sorted.
func Names() []string {
	var out []string
	for _, f := range Functions() {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

func table(name string) Resource { return Resource{Kind: Table, Name: name} }
func index(table, name string) Resource {
	return Resource{Kind: TableIndex, Name: table, Index: name}
}

// Every function writes its own log group and, traced, X-Ray segments.
var platform = []Grant{
	{Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []Resource{{Kind: LogGroup}}, Platform: true},
	{Actions: []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}, Resources: []Resource{{Kind: Any}}, Platform: true},
}

// What the saga's store (internal/inventory) does, by what a function asks of it. A
// transaction needs the action of each of its items on that item's table (TransactWriteItems
// is not an IAM action); the store's transactions are a whole-item Put of the reservation,
// Updates of its seats, a Put of the outbox record and, when the change ends a hold, a Delete
// of the customer's hold slot, and nothing else.
var (
	// readReservation is a strongly consistent read of one reservation.
	readReservation = Grant{Actions: []string{"dynamodb:GetItem"}, Resources: []Resource{table(tables.ReservationsTable)}}
	// readSeats reads the seats a release must check are still the reservation's.
	readSeats = Grant{Actions: []string{"dynamodb:GetItem"}, Resources: []Resource{table(tables.SeatsTable)}}
	// transition writes a reservation, its seats and its outbox record in one transaction; a
	// change that ends a hold gives the customer's hold slot back in it.
	transition = []Grant{
		{Actions: []string{"dynamodb:PutItem"}, Resources: []Resource{table(tables.ReservationsTable), table(tables.OutboxTable)}},
		{Actions: []string{"dynamodb:UpdateItem"}, Resources: []Resource{table(tables.SeatsTable)}},
		{Actions: []string{"dynamodb:DeleteItem"}, Resources: []Resource{table(tables.AdmissionsTable)}},
	}
	// seatsOfEvent asks the seats-by-event index whether an event exists.
	seatsOfEvent = Grant{Actions: []string{"dynamodb:Query"}, Resources: []Resource{index(tables.SeatsTable, tables.SeatsByEvent)}}
	// rejectAdmission checks in the claim's transaction that the buyer was not turned away
	// already, marks the admission of a buyer the claim turned away and gives back the
	// customer's hold slot.
	rejectAdmission = Grant{Actions: []string{"dynamodb:ConditionCheckItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, Resources: []Resource{table(tables.AdmissionsTable)}}
	// dedupe records a processed event id, conditionally, and marks it done.
	dedupe = Grant{Actions: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, Resources: []Resource{table(tables.ProcessedEventsTable)}}
)

func grants(gs ...[]Grant) []Grant {
	var out []Grant
	for _, g := range gs {
		out = append(out, g...)
	}
	return out
}

func one(g ...Grant) []Grant { return g }

// sagaEnv is what the saga's steps read: the tables and the claim and settlement settings.
var sagaEnv = []string{config.EnvStage, config.EnvMetricsNamespace, config.EnvTablePrefix,
	config.EnvLateSuccessPolicy, config.EnvHoldSeconds, config.EnvMaxSeats}

// settling is what a step that settles a payment does with the store: it reads the
// reservation and the seats it may release, and writes transitions.
var settling = grants(one(readReservation, readSeats), transition)

func step(name, description string, timeout time.Duration, gs []Grant, secrets ...string) Function {
	return Function{
		Name: name, Description: description, Handler: "bootstrap", MemoryMB: 256, Timeout: timeout,
		Env: sagaEnv, Secrets: secrets, Grants: grants(gs, platform),
	}
}

// Functions lists every function: the saga's steps in saga order, then the rest, the relay last.
func Functions() []Function {
	fs := []Function{
		// Claim only holds seats: it reads no Stripe secret.
		// Claim writes the hold in one transaction, and on a refused claim asks the index
		// whether the event exists at all (an unknown event is answered differently) and
		// marks the buyer's admission rejected.
		step(FnClaim, "Saga step: claim the seats", 15*time.Second,
			grants(one(readReservation, seatsOfEvent, rejectAdmission), transition)),
		step(FnAuthorize, "Saga step: authorize the payment and park the task token", 30*time.Second, settling, StripeSecretKey),
		// Confirm asks the provider for the truth when the webhook's report is not yet visible.
		step(FnConfirm, "Saga step: confirm the seats", 15*time.Second, settling, StripeSecretKey),
		step(FnCapture, "Saga step: capture the payment", 30*time.Second, settling, StripeSecretKey),
		step(FnCompensate, "Saga step: release, void or refund", 30*time.Second, settling, StripeSecretKey),
		step(FnReconcile, "Saga step: learn the provider's truth and resolve", 30*time.Second, settling, StripeSecretKey),
		{
			// The api reads seats and reservations, passes buyers through the admission gate
			// (a lease on each seat, the admission record, the customer's hold slot and a check
			// that the reservation is not written yet, one transaction), records a
			// customer's cancel on the reservation with its outbox record (or, before the
			// claim, on the admission, then gives its seat leases and hold slot back), starts
			// executions (its only Step Functions call on a buyer's path), and fails the
			// waiting task when a customer cancels. It reads the Stripe key to hand the
			// reservation's owner the PaymentIntent client secret.
			Name: FnAPI, Description: "Customer API: create, read and cancel reservations",
			Handler: "bootstrap", MemoryMB: 512, Timeout: 10 * time.Second,
			Env: []string{config.EnvStage, config.EnvMetricsNamespace, config.EnvTablePrefix, config.EnvMaxSeats,
				config.EnvHoldSeconds, config.EnvStateMachineARN, config.EnvAllowedOrigins, config.EnvAdmissionLeaseSeconds,
				config.EnvMaxActiveReservations},
			Secrets: []string{StripeSecretKey},
			Grants: append([]Grant{
				// The seat map is one batch read; a cancel is a whole-item Put of the reservation
				// with its outbox record, never a seat write.
				{Actions: []string{"dynamodb:BatchGetItem"}, Resources: []Resource{table(tables.SeatsTable), table(tables.AdmissionsTable)}},
				seatsOfEvent, readReservation,
				// A retry of a reservation the saga wrote is answered from it, never admitted
				// again: the gate's transaction checks that the reservation does not exist.
				{Actions: []string{"dynamodb:ConditionCheckItem"}, Resources: []Resource{table(tables.ReservationsTable)}},
				{Actions: []string{"dynamodb:PutItem"}, Resources: []Resource{table(tables.ReservationsTable), table(tables.OutboxTable)}},
				{Actions: []string{"dynamodb:UpdateItem"}, Resources: []Resource{table(tables.SeatsTable)}},
				{Actions: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, Resources: []Resource{table(tables.AdmissionsTable)}},
				{Actions: []string{"states:StartExecution"}, Resources: []Resource{{Kind: StateMachine}}},
				{Actions: []string{"states:SendTaskFailure"}, Resources: []Resource{{Kind: StateMachine}}},
			}, platform...),
		},
		{
			// The webhook verifies, dedupes by event id, applies the payment event through the
			// store and completes or fails the waiting task. Reserved concurrency keeps a
			// sale's burst of customer calls from starving it.
			Name: FnWebhook, Description: "Stripe webhook: verify, dedupe, apply, complete the waiting task",
			Handler: "bootstrap", MemoryMB: 256, Timeout: 15 * time.Second, ReservedConcurrency: 20,
			Env:     []string{config.EnvStage, config.EnvMetricsNamespace, config.EnvTablePrefix, config.EnvLateSuccessPolicy},
			Secrets: []string{StripeSecretKey, StripeWebhookSecret},
			Grants: append(append(slices.Clone(settling), dedupe,
				Grant{Actions: []string{"states:SendTaskFailure", "states:SendTaskSuccess"}, Resources: []Resource{{Kind: StateMachine}}},
			), platform...),
		},
		{
			// The sweeper releases orphaned holds and settles stuck payments with the saga's own
			// steps, looks at their executions, and lists the state machine's running ones for
			// the age of the oldest (ListExecutions is authorized on the state machine, not on
			// its executions). One at a time: a reserved concurrency of 1 keeps a slow sweep
			// from overlapping the next and a burst from starving it.
			Name: FnSweeper, Description: "Scheduled: release orphaned expired holds, reconcile stuck payments, publish backlog figures",
			Handler: "bootstrap", MemoryMB: 256, Timeout: 120 * time.Second, ReservedConcurrency: 1,
			Env:     append(slices.Clone(sagaEnv), config.EnvSweepGraceSeconds, config.EnvStateMachineARN),
			Secrets: []string{StripeSecretKey},
			Grants: append(append(slices.Clone(settling),
				Grant{Actions: []string{"dynamodb:Query"}, Resources: []Resource{
					index(tables.ReservationsTable, tables.ActiveHoldsByExpiry), index(tables.ReservationsTable, tables.ReconcileByAge)}},
				Grant{Actions: []string{"states:DescribeExecution"}, Resources: []Resource{{Kind: Executions}}},
				Grant{Actions: []string{"states:ListExecutions"}, Resources: []Resource{{Kind: StateMachine}}},
			), platform...),
		},
		{
			Name: FnConsumer, Description: "Example outbox event consumer, idempotent by event id",
			Handler: "bootstrap", MemoryMB: 128, Timeout: 30 * time.Second,
			Env: []string{config.EnvStage, config.EnvMetricsNamespace, config.EnvTablePrefix},
			Grants: append([]Grant{
				dedupe,
				// Lambda sends an event the consumer failed on to its DLQ, under its role.
				{Actions: []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}, Resources: []Resource{{Kind: Queue, Name: ConsumerDLQ}}, Platform: true},
			}, platform...),
		},
		{
			// The starter starts the executions Step Functions throttled at the api: the
			// Admissions stream carries each queued start to it, and a start it could not make
			// in time is parked in its DLQ. While the quota holds its starts back it marks
			// the start backlog on the Admissions table, so that the api queues new winners
			// behind them.
			Name: FnStarter, Description: "Admissions stream to StartExecution: the starts Step Functions throttled",
			Handler: "bootstrap", MemoryMB: 128, Timeout: 30 * time.Second,
			Env: []string{config.EnvStage, config.EnvMetricsNamespace, config.EnvStateMachineARN, config.EnvTablePrefix},
			Grants: append([]Grant{
				{Actions: []string{"states:StartExecution"}, Resources: []Resource{{Kind: StateMachine}}},
				{Actions: []string{"dynamodb:UpdateItem"}, Resources: []Resource{table(tables.AdmissionsTable)}},
				{Actions: []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}, Resources: []Resource{{Kind: TableStream, Name: tables.AdmissionsTable}}, Platform: true},
				{Actions: []string{"dynamodb:ListStreams"}, Resources: []Resource{{Kind: Any}}, Platform: true},
				{Actions: []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}, Resources: []Resource{{Kind: Queue, Name: StarterDLQ}}, Platform: true},
			}, platform...),
		},
		{
			// The relay publishes what Lambda's event source mapping reads from the outbox
			// stream under the relay's role; a batch it cannot publish is parked in its DLQ.
			Name: FnRelay, Description: "Outbox stream to EventBridge",
			Handler: "bootstrap", MemoryMB: 256, Timeout: 60 * time.Second,
			Env: []string{config.EnvStage, config.EnvMetricsNamespace, config.EnvEventBusName},
			Grants: append([]Grant{
				{Actions: []string{"events:PutEvents"}, Resources: []Resource{{Kind: EventBus}}},
				{Actions: []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}, Resources: []Resource{{Kind: TableStream, Name: tables.OutboxTable}}, Platform: true},
				{Actions: []string{"dynamodb:ListStreams"}, Resources: []Resource{{Kind: Any}}, Platform: true},
				{Actions: []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}, Resources: []Resource{{Kind: Queue, Name: RelayDLQ}}, Platform: true},
			}, platform...),
		},
	}
	return fs
}
