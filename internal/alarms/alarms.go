// Package alarms defines seatsaga's CloudWatch alarms once: the metric each one watches (its
// namespace, name and the resource whose dimension it carries), the statistic over which
// period, the threshold, how many periods must breach and what missing data means. The CDK
// stack renders these definitions (infra/stack) and the local twin evaluates the same values on
// the stack's clock (internal/twin/cloudwatch), so an alarm that fires locally is one that
// would fire on AWS, and an alarm the fault matrix never sees fire is one nobody has proven.
package alarms

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/starter"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// Namespaces of the metrics the alarms read.
const (
	// Custom is seatsaga's own embedded-metric-format namespace, and the prefix of each
	// stage's (StageNamespace).
	Custom     = config.DefaultMetricsNamespace
	States     = "AWS/States"
	Lambda     = "AWS/Lambda"
	APIGateway = "AWS/ApiGateway"
	SQS        = "AWS/SQS"
)

// SubjectKind is the kind of resource an AWS metric is published for.
type SubjectKind string

// Subject kinds. A custom metric has none: alarms read its series without dimensions, so
// every EMF record includes the empty dimension set besides any finer one.
const (
	NoSubject    SubjectKind = ""
	StateMachine SubjectKind = "state-machine"
	Function     SubjectKind = "function"
	RestAPI      SubjectKind = "rest-api"
	Queue        SubjectKind = "queue"
)

// Subject is the resource whose dimension a metric carries: the state machine, a function by
// name, the REST API, or a dead-letter queue by its deploy name (deploy.RelayDLQ).
type Subject struct {
	Kind SubjectKind
	Name string
}

// Dimension is the CloudWatch dimension the subject's metrics carry, "" for none.
func (s Subject) Dimension() string {
	switch s.Kind {
	case StateMachine:
		return "StateMachineArn"
	case Function:
		return "FunctionName"
	case RestAPI:
		return "ApiName"
	case Queue:
		return "QueueName"
	}
	return ""
}

// Statistics the alarms use.
const (
	Sum     = "Sum"
	Maximum = "Maximum"
	P99     = "p99"
)

// Metric is one metric series and how it is aggregated per period.
type Metric struct {
	Namespace string
	Name      string
	Subject   Subject
	Statistic string
	Period    time.Duration
}

// Comparison is how the aggregated value is compared with the threshold.
type Comparison string

// The comparisons the alarms use, with CloudWatch's names.
const (
	AtLeast Comparison = "GreaterThanOrEqualToThreshold"
	Below   Comparison = "LessThanThreshold"
)

// Missing is how periods without data count, with CloudWatch's names.
type Missing string

// Missing-data treatments the alarms use.
const (
	MissingNotBreaching Missing = "notBreaching"
	MissingBreaching    Missing = "breaching"
)

// Alarm is one alarm definition. It fires when DatapointsToAlarm of the last
// EvaluationPeriods periods breach (here always all of them).
type Alarm struct {
	// Name is the short name; deployed alarms are named "<stack>-<Name>".
	Name string
	// Description tells the operator what it means and what to look at first.
	Description       string
	Metric            Metric
	Threshold         float64
	Comparison        Comparison
	EvaluationPeriods int
	DatapointsToAlarm int
	TreatMissing      Missing
}

// Breaches reports whether one period's aggregated value breaches the threshold.
func (a Alarm) Breaches(v float64) bool {
	if a.Comparison == Below {
		return v < a.Threshold
	}
	return v >= a.Threshold
}

// Thresholds set when each tunable alarm fires; a deployment overrides them by field name
// (infra/stack's alarmThresholds context). Zero fields take DefaultThresholds.
type Thresholds struct {
	// Counts per five minutes.
	ConditionalCheckFailed float64
	TransactionConflict    float64
	Throttled              float64
	ExecutionsFailed       float64
	ExecutionsTimedOut     float64
	// ExecutionTimeP99Seconds: the 99th percentile of execution duration.
	ExecutionTimeP99Seconds float64
	// OldestRunningExecutionAgeSeconds: how old the oldest running execution may be. The
	// default, two hours, is past a ten-minute hold, the reconcile loop's fifty minutes at
	// its longest backoff and the capture's retries; a deployment with longer holds raises it.
	OldestRunningExecutionAgeSeconds float64
	// StreamIteratorAgeSeconds: how far the relay may lag behind the outbox stream.
	StreamIteratorAgeSeconds float64
	// QueuedStartAgeSeconds: how long a winner whose start Step Functions throttled may wait
	// for the starter to start the saga.
	QueuedStartAgeSeconds float64
	// DLQDepth: messages visible in any dead-letter queue.
	DLQDepth float64
	// DLQOldestAgeSeconds: the age of the oldest dead-lettered message.
	DLQOldestAgeSeconds float64
	// Backlog gauges published by the sweeper.
	ExpiredHoldsUnreleased            float64
	ExpiredHoldOldestAgeSeconds       float64
	UnresolvedPayments                float64
	UnresolvedPaymentOldestAgeSeconds float64
	ReconciliationBacklog             float64
	AuthorizationsNearCaptureDeadline float64
	// SettlementEscalated: reservations the settlement decision handed to a person, per five
	// minutes.
	SettlementEscalated float64
	// ProviderRefusals: the provider refusing the system's own requests, per five minutes.
	ProviderRefusals float64
	// UnknownPaymentMethods: buyers declined for a payment method the provider does not know,
	// per five minutes. A few are buyers' mistakes; every buyer's is a key of another account.
	UnknownPaymentMethods float64
	// ProviderUnavailable: provider calls per five minutes that got no usable answer; a few
	// are the lost responses any network has.
	ProviderUnavailable float64
	// CompensationFailed: compensations (void, refund, release) that failed, per five minutes.
	CompensationFailed float64
	// StepRetries: saga step attempts the state machine retries, per five minutes. Under
	// a healthy provider and DynamoDB there are none; a few are the retries doing their job.
	StepRetries float64
	// WebhooksNotArriving: payment waits per five minutes that timed out although the
	// provider had decided; one can be a delivery racing the deadline.
	WebhooksNotArriving float64
	// Api5xx: 5xx answers of the API per five minutes.
	Api5xx float64
	// ApiLatencyP99Seconds: the API's 99th-percentile latency.
	ApiLatencyP99Seconds float64
}

// DefaultThresholds are sized for a flash sale of a few thousand seats. Conditional-check
// failures are how losers of a seat race are told no, so only a storm of them is alarming.
func DefaultThresholds() Thresholds {
	return Thresholds{
		ConditionalCheckFailed:            1000,
		TransactionConflict:               50,
		Throttled:                         1,
		ExecutionsFailed:                  1,
		ExecutionsTimedOut:                1,
		ExecutionTimeP99Seconds:           1800,
		OldestRunningExecutionAgeSeconds:  7200,
		StreamIteratorAgeSeconds:          60,
		QueuedStartAgeSeconds:             60,
		DLQDepth:                          1,
		DLQOldestAgeSeconds:               3600,
		ExpiredHoldsUnreleased:            1,
		ExpiredHoldOldestAgeSeconds:       600,
		UnresolvedPayments:                10,
		UnresolvedPaymentOldestAgeSeconds: 3600,
		ReconciliationBacklog:             1,
		AuthorizationsNearCaptureDeadline: 1,
		SettlementEscalated:               1,
		ProviderRefusals:                  1,
		UnknownPaymentMethods:             10,
		CompensationFailed:                1,
		ProviderUnavailable:               10,
		StepRetries:                       25,
		WebhooksNotArriving:               5,
		Api5xx:                            10,
		ApiLatencyP99Seconds:              5,
	}
}

// ByName exposes each threshold by its field name, for overrides.
func (t *Thresholds) ByName() map[string]*float64 {
	v := reflect.ValueOf(t).Elem()
	out := make(map[string]*float64, v.NumField())
	for i := 0; i < v.NumField(); i++ {
		out[v.Type().Field(i).Name] = v.Field(i).Addr().Interface().(*float64)
	}
	return out
}

// WithDefaults fills every zero threshold from DefaultThresholds.
func (t Thresholds) WithDefaults() Thresholds {
	d := DefaultThresholds()
	defaults := d.ByName()
	for name, p := range t.ByName() {
		if *p == 0 {
			*p = *defaults[name]
		}
	}
	return t
}

// Settings are what the alarm set depends on in a deployment.
type Settings struct {
	// Namespace is the deployment's own namespace of custom metrics ("" is Custom): one per
	// stage, so that two stages in one account never read each other's metrics.
	Namespace  string
	Thresholds Thresholds
	// SweepEvery is the sweeper's period; its gauges are judged over three periods.
	SweepEvery time.Duration
	// Functions are every function of the deployment: a throttle of any is an incident (the
	// account's or the function's concurrency is exhausted), the saga's steps included,
	// whose throttles the state machine only retries.
	Functions []string
	// Unrouted are the functions whose errors nothing routes (not the saga's steps, whose
	// business errors the state machine catches): any error of theirs is an incident.
	Unrouted []string
	// DLQs are the dead-letter queues by deploy name (deploy.RelayDLQ, deploy.ConsumerDLQ).
	DLQs []string
	// API reports whether the deployment has the REST API.
	API bool
}

// UnroutedFunctions are the functions whose every error or throttle is an incident: not the
// saga's steps, whose business errors the state machine routes.
var UnroutedFunctions = []string{deploy.FnAPI, deploy.FnWebhook, deploy.FnSweeper, deploy.FnRelay, deploy.FnConsumer, deploy.FnStarter}

// DeadLetterQueues are the deployment's dead-letter queues by deploy name.
var DeadLetterQueues = []string{deploy.ConsumerDLQ, deploy.RelayDLQ, deploy.StarterDLQ}

// Deployed are the settings of the whole deployment (the stack and the local stack alike):
// every unrouted function, both dead-letter queues and the API.
func Deployed(namespace string, t Thresholds, sweepEvery time.Duration) Settings {
	return Settings{Namespace: namespace, Thresholds: t, SweepEvery: sweepEvery, Functions: deploy.Names(), Unrouted: UnroutedFunctions,
		DLQs: DeadLetterQueues, API: true}
}

// StageNamespace is the custom-metric namespace of a stage's deployment.
func StageNamespace(stage string) string { return Custom + "/" + stage }

// Period is the period of every alarm but the sweeper's heartbeat.
const Period = 5 * time.Minute

// gaugePeriods is how many sweeper-gauge periods must breach before a backlog alarms.
const gaugePeriods = 3

// Definitions are the deployment's alarms, sorted by name.
func Definitions(s Settings) []Alarm {
	t := s.Thresholds.WithDefaults()
	namespace := s.Namespace
	if namespace == "" {
		namespace = Custom
	}
	custom := func(name, statistic string) Metric {
		return Metric{Namespace: namespace, Name: name, Statistic: statistic, Period: Period}
	}
	sum := func(name string) Metric { return custom(name, Sum) }
	gauge := func(name string) Metric { return custom(name, Maximum) }
	of := func(namespace, name string, subject Subject, statistic string) Metric {
		return Metric{Namespace: namespace, Name: name, Subject: subject, Statistic: statistic, Period: Period}
	}
	sm := Subject{Kind: StateMachine}
	fn := func(name string) Subject { return Subject{Kind: Function, Name: name} }

	var out []Alarm
	add := func(name, description string, m Metric, threshold float64, periods int, missing Missing) {
		out = append(out, Alarm{Name: name, Description: description, Metric: m, Threshold: threshold, Comparison: AtLeast,
			EvaluationPeriods: periods, DatapointsToAlarm: periods, TreatMissing: missing})
	}
	quiet, silenceBreaches := MissingNotBreaching, MissingBreaching

	add("ConditionalCheckFailed", "Conditional writes refused far beyond normal seat-race losses: a hot seat map, a retry storm, or a writer using stale versions.",
		sum(inventory.MetricConditionalCheckFailed), t.ConditionalCheckFailed, 1, quiet)
	add("TransactionConflict", "DynamoDB transactions cancelled by conflicts with concurrent transactions on the same items; claims are retried with jitter but sustained conflicts mean contention on shared items.",
		sum(inventory.MetricTransactionConflict), t.TransactionConflict, 1, quiet)
	add("Throttled", "DynamoDB throttled a request of the inventory store after the SDK's retries: table capacity or account limits are being hit; look at the tables' consumed capacity first.",
		sum(inventory.MetricThrottle), t.Throttled, 1, quiet)
	add("CompensationFailed", "A compensation (void, refund or release) failed: money may be held or seats kept for a buyer who gave them up. Find the step's error by reservationId in the compensate function's logs; reconciliation retries it.",
		sum(saga.MetricCompensationFailed), t.CompensationFailed, 1, quiet)
	add("QueuedStartsFailed", "A queued winner's saga could not be started (Step Functions refused the start for a reason no retry cures): the buyer passed the gate but nothing holds their seats. Find the reservationId in the starter's logs, fix the cause, and start the execution or tell the buyer.",
		sum(starter.MetricFailed), 1, 1, quiet)
	add("StepRetries", "Saga steps are failing with errors the state machine retries (provider unreachable, DynamoDB throttled, Lambda errors): look at the StepRetryableError metric by step, then that step's logs.",
		sum(saga.MetricStepRetryableError), t.StepRetries, 1, quiet)
	add("ExecutionsFailed", "Reservation executions ended in a state that needs a person (Needs reconciliation, Claim failed) or an error no Catch handled: open the failed executions in the Step Functions console and the reservation by its id.",
		of(States, "ExecutionsFailed", sm, Sum), t.ExecutionsFailed, 1, quiet)
	add("ExecutionsTimedOut", "Reservation executions hit the state machine's TimeoutSeconds, which no legitimate path reaches: a step or a wait is stuck; open the execution's history.",
		of(States, "ExecutionsTimedOut", sm, Sum), t.ExecutionsTimedOut, 1, quiet)
	add("ExecutionsThrottled", "Step Functions throttled executions (state transitions beyond the account's rate): the saga slows down; raise the state-transition quota.",
		of(States, "ExecutionThrottled", sm, Sum), 1, 1, quiet)
	add("ExecutionTimeP99", "The slowest reservations run far longer than a hold lasts: payment waits or reconciliation loops are not ending.",
		of(States, "ExecutionTime", sm, P99), t.ExecutionTimeP99Seconds*1000, 1, quiet)
	add("OldestRunningExecutionAge", "An execution has been running longer than any legitimate path takes: a step or wait is stuck. The sweeper measures it; find the oldest RUNNING execution in the console.",
		gauge(sweeper.MetricOldestRunningExecutionAgeSeconds), t.OldestRunningExecutionAgeSeconds, 1, silenceBreaches)
	add("RelayIteratorAge", "The outbox relay lags behind the stream: events reach EventBridge late, and records older than the stream retention would be lost.",
		of(Lambda, "IteratorAge", fn(deploy.FnRelay), Maximum), t.StreamIteratorAgeSeconds*1000, 1, quiet)
	add("QueuedStartAge", "Buyers who passed the gate wait for their sagas to start: StartExecution is throttled beyond what the starter can catch up with. Raise the account's StartExecution quota (infra/README.md says which for which sale size), or look at the starter's throttles and errors.",
		of(Lambda, "IteratorAge", fn(deploy.FnStarter), Maximum), t.QueuedStartAgeSeconds*1000, 1, quiet)
	add("ExpiredHoldsUnreleased", "Seats held past their deadline and not released: the sweeper is failing or a saga is stuck; buyers see seats as taken that are free.",
		gauge(sweeper.MetricExpiredHoldsUnreleased), t.ExpiredHoldsUnreleased, gaugePeriods, silenceBreaches)
	add("ExpiredHoldOldestAgeSeconds", "The oldest expired, unreleased hold is older than expected.",
		gauge(sweeper.MetricExpiredHoldOldestAgeSeconds), t.ExpiredHoldOldestAgeSeconds, 1, silenceBreaches)
	add("UnresolvedPayments", "Payments whose outcome is unknown are accumulating: the provider is slow or unreachable, or webhooks are not arriving.",
		gauge(sweeper.MetricUnresolvedPayments), t.UnresolvedPayments, gaugePeriods, silenceBreaches)
	add("UnresolvedPaymentOldestAgeSeconds", "A payment has been unresolved for too long: money whose fate is unknown.",
		gauge(sweeper.MetricUnresolvedPaymentOldestAgeSeconds), t.UnresolvedPaymentOldestAgeSeconds, 1, silenceBreaches)
	add("ReconciliationBacklog", "Reservations whose seats and money still disagree after the saga's bounded retries (payment unknown, confirmed seats not captured, money held or captured for released seats, a refund pending): the sweeper keeps settling them; look first at the oldest and at escalations.",
		gauge(sweeper.MetricReconciliationBacklog), t.ReconciliationBacklog, 1, silenceBreaches)
	add("AuthorizationsNearCaptureDeadline", "Authorized payments close to the provider's capture deadline: capture or void them before the authorization lapses.",
		gauge(sweeper.MetricAuthorizationsNearCaptureDeadline), t.AuthorizationsNearCaptureDeadline, 1, silenceBreaches)
	add("SettlementEscalated", "The settlement decision handed a reservation to a person (a refund that keeps failing, a record no transition can fix): find the 'settlement needs a person' log line by reservationId and settle it at the provider.",
		sum(saga.MetricSettlementEscalated), t.SettlementEscalated, 1, quiet)
	add("ProviderRefusals", "The payment provider refuses the system's own requests (authentication, permission, invalid request): check the Stripe secret and its rotation first; buyers are not declined, their holds wait.",
		sum(saga.MetricProviderRefusals), t.ProviderRefusals, 1, quiet)
	add("UnknownPaymentMethods", "Buyers are declined for payment methods Stripe does not know, more than buyers' mistakes explain: the checkout page most likely creates them with the publishable key of another Stripe account or mode than the secret key's. Compare the two keys first.",
		sum(saga.MetricUnknownPaymentMethods), t.UnknownPaymentMethods, 1, quiet)
	add("ProviderUnavailable", "The payment provider is not answering (timeouts, dropped connections, 5xx, rate limiting past the client's retries): holds may expire unpaid and payments wait for reconciliation. Check Stripe's status page and the functions' network path first; the saga and the sweeper settle what was in flight once it answers.",
		sum(payment.MetricProviderUnavailable), t.ProviderUnavailable, 1, quiet)
	add("WebhookRejected", "Stripe webhook deliveries whose signature did not verify: after a rotation, the webhook signing secret in Secrets Manager differs from the endpoint's in Stripe (check it first), or someone is forging events. Payment waits end only by timeout meanwhile.",
		sum(webhook.MetricWebhookRejected), 1, 1, quiet)
	add("WebhooksNotArriving", "Payment waits ended by the hold's timeout although Stripe had already decided the payment: its webhooks are not reaching the API (check the endpoint's delivery log in the Stripe dashboard and the webhook function first). Reconciliation still settles each payment, late.",
		sum(saga.MetricWebhookNeverArrived), t.WebhooksNotArriving, 1, quiet)
	add("WebhookUnverifiable", "The webhook could not read its signing secret from Secrets Manager, so deliveries are answered 503 and Stripe redelivers them later: check the secret, its KMS key and the webhook role's access.",
		sum(webhook.MetricWebhookUnverifiable), 1, 1, quiet)

	// The sweeper's heartbeat is judged per sweep period: fewer than one invocation in three
	// periods in a row means it stopped.
	heartbeat := of(Lambda, "Invocations", fn(deploy.FnSweeper), Sum)
	heartbeat.Period = s.SweepEvery
	out = append(out, Alarm{Name: "SweeperNotRunning", Description: "The sweeper has not run for three periods: expired holds and backlog figures are no longer watched.",
		Metric: heartbeat, Threshold: 1, Comparison: Below, EvaluationPeriods: 3, DatapointsToAlarm: 3, TreatMissing: silenceBreaches})
	add("SweeperErrors", "The sweeper failed a run: while it fails, expired holds are not released and its backlog gauges go silent (those alarms then fire too). Read the sweeper's log group for the error first.",
		of(Lambda, "Errors", fn(deploy.FnSweeper), Sum), 1, 1, quiet)
	for _, f := range s.Unrouted {
		if f == deploy.FnSweeper {
			// SweeperErrors watches its errors.
			continue
		}
		add(Pascal(f)+"Errors", fmt.Sprintf("The %s function failed invocations (an uncaught error, a timeout or a crash): read its log group for the error first.", f),
			of(Lambda, "Errors", fn(f), Sum), 1, 1, quiet)
	}
	for _, f := range s.Functions {
		if f == deploy.FnSweeper {
			// Its one reserved slot throttles overlapping ticks by design; the next tick does
			// the same work.
			continue
		}
		add(Pascal(f)+"Throttles", fmt.Sprintf("Lambda throttled the %s function: the account's concurrency (or the function's reserved concurrency) is exhausted; raise the quota or the reservation.", f),
			of(Lambda, "Throttles", fn(f), Sum), 1, 1, quiet)
	}
	if s.API {
		restAPI := Subject{Kind: RestAPI}
		add("Api5xx", "The API answered 5xx (a function error, a throttled StartExecution answered 503, or API Gateway itself): look at the api function's errors and the StepFunctionsThrottled metric first.",
			of(APIGateway, "5XXError", restAPI, Sum), t.Api5xx, 1, quiet)
		add("ApiLatencyP99", "The API's p99 latency is high: buyers wait; the api function, DynamoDB or Step Functions are slow or throttled.",
			of(APIGateway, "Latency", restAPI, P99), t.ApiLatencyP99Seconds*1000, 2, quiet)
		add("ApiStepFunctionsThrottled", "Step Functions throttled the API's StartExecution (or a cancel's SendTaskFailure): those winners were queued for the starter and wait. Sustained, raise the StartExecution quota; QueuedStartAge says how long they wait.",
			sum(api.MetricStepFunctionsThrottled), 1, 1, quiet)
	}
	for _, q := range s.DLQs {
		name := Pascal(strings.TrimSuffix(q, "DLQ"))
		queue := Subject{Kind: Queue, Name: q}
		add(name+"DLQDepth", fmt.Sprintf("Messages in the %s dead-letter queue: %s", q, dlqAdvice[q]),
			of(SQS, "ApproximateNumberOfMessagesVisible", queue, Maximum), t.DLQDepth, 1, quiet)
		add(name+"DLQOldestAge", fmt.Sprintf("The oldest message in the %s dead-letter queue has waited too long; it expires after 14 days.", q),
			of(SQS, "ApproximateAgeOfOldestMessage", queue, Maximum), t.DLQOldestAgeSeconds, 1, quiet)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// dlqAdvice says what a message in each dead-letter queue is and what to do with it.
var dlqAdvice = map[string]string{
	deploy.RelayDLQ:    "outbox stream batches the relay gave up on. A message names only the shard and sequence numbers; the records leave the stream 24 hours after they were written, so re-read them by then, or publish the events from the Outbox table after fixing the cause.",
	deploy.StarterDLQ:  "queued starts the starter could not make within the hour its mapping keeps trying: those buyers passed the gate but their sagas never started. A message names the Admissions stream's shard and sequence numbers; start by reservation id the admissions marked startQueued whose execution does not exist, or tell the buyers.",
	deploy.ConsumerDLQ: "events the consumer could not process after Lambda's and EventBridge's retries. A message carries the event: read one, fix the cause, redrive the queue.",
}

// Pascal turns a function or queue name ("relay", "relay-dlq") into an alarm name's prefix
// ("Relay", "RelayDlq").
func Pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '-' || r == '_' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
