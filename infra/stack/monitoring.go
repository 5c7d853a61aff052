package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// Names of the custom metrics the alarms read, in the Seatsaga namespace (CloudWatch embedded
// metric format). They are the producers' own constants, so a renamed metric cannot leave an
// alarm watching nothing. Alarms read each metric's series without dimensions: every EMF
// record must therefore include the empty dimension set ([]) besides any finer one.
const (
	MetricConditionalCheckFailed            = inventory.MetricConditionalCheckFailed
	MetricTransactionConflict               = inventory.MetricTransactionConflict
	MetricThrottled                         = inventory.MetricThrottle
	MetricStepOutcome                       = saga.MetricStepOutcome
	MetricCompensationOutcome               = saga.MetricCompensationOutcome
	MetricExpiredHoldsUnreleased            = sweeper.MetricExpiredHoldsUnreleased
	MetricExpiredHoldOldestAgeSeconds       = sweeper.MetricExpiredHoldOldestAgeSeconds
	MetricUnresolvedPayments                = sweeper.MetricUnresolvedPayments
	MetricUnresolvedPaymentOldestAgeSeconds = sweeper.MetricUnresolvedPaymentOldestAgeSeconds
	MetricReconciliationBacklog             = sweeper.MetricReconciliationBacklog
	MetricAuthorizationsNearCaptureDeadline = sweeper.MetricAuthorizationsNearCaptureDeadline
	MetricSettlementEscalated               = saga.MetricSettlementEscalated
	MetricProviderRefusals                  = saga.MetricProviderRefusals
	MetricWebhookRejected                   = webhook.MetricWebhookRejected
	MetricWebhookUnverifiable               = webhook.MetricWebhookUnverifiable
)

// Thresholds set when each alarm fires. Zero fields take the defaults of DefaultThresholds.
type Thresholds struct {
	// Counts per five minutes.
	ConditionalCheckFailed float64
	TransactionConflict    float64
	Throttled              float64
	CompensationOutcome    float64
	ExecutionsFailed       float64
	ExecutionsTimedOut     float64
	// ExecutionTimeP99Seconds: the 99th percentile of execution duration.
	ExecutionTimeP99Seconds float64
	// StreamIteratorAgeSeconds: how far the relay may lag behind the outbox stream.
	StreamIteratorAgeSeconds float64
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
	// SettlementEscalated: reservations the settlement decision handed to a person (a refund
	// that keeps failing, a record no transition can fix), per five minutes.
	SettlementEscalated float64
	// ProviderRefusals: the provider refusing the system's own requests (a wrong or rotated
	// key, a permission), per five minutes.
	ProviderRefusals float64
}

// DefaultThresholds are sized for a flash sale of a few thousand seats. Conditional-check
// failures are how losers of a seat race are told no, so only a storm of them is alarming.
func DefaultThresholds() Thresholds {
	return Thresholds{
		ConditionalCheckFailed:            1000,
		TransactionConflict:               50,
		Throttled:                         1,
		CompensationOutcome:               25,
		ExecutionsFailed:                  1,
		ExecutionsTimedOut:                1,
		ExecutionTimeP99Seconds:           1800,
		StreamIteratorAgeSeconds:          60,
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
	}
}

// withDefaults fills every zero threshold from DefaultThresholds.
func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds()
	fill := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&t.ConditionalCheckFailed, d.ConditionalCheckFailed)
	fill(&t.TransactionConflict, d.TransactionConflict)
	fill(&t.Throttled, d.Throttled)
	fill(&t.CompensationOutcome, d.CompensationOutcome)
	fill(&t.ExecutionsFailed, d.ExecutionsFailed)
	fill(&t.ExecutionsTimedOut, d.ExecutionsTimedOut)
	fill(&t.ExecutionTimeP99Seconds, d.ExecutionTimeP99Seconds)
	fill(&t.StreamIteratorAgeSeconds, d.StreamIteratorAgeSeconds)
	fill(&t.DLQDepth, d.DLQDepth)
	fill(&t.DLQOldestAgeSeconds, d.DLQOldestAgeSeconds)
	fill(&t.ExpiredHoldsUnreleased, d.ExpiredHoldsUnreleased)
	fill(&t.ExpiredHoldOldestAgeSeconds, d.ExpiredHoldOldestAgeSeconds)
	fill(&t.UnresolvedPayments, d.UnresolvedPayments)
	fill(&t.UnresolvedPaymentOldestAgeSeconds, d.UnresolvedPaymentOldestAgeSeconds)
	fill(&t.ReconciliationBacklog, d.ReconciliationBacklog)
	fill(&t.AuthorizationsNearCaptureDeadline, d.AuthorizationsNearCaptureDeadline)
	fill(&t.SettlementEscalated, d.SettlementEscalated)
	fill(&t.ProviderRefusals, d.ProviderRefusals)
	return t
}

// MonitoringProps configures the alarms and the dashboard.
type MonitoringProps struct {
	Thresholds   Thresholds
	StateMachine awsstepfunctions.StateMachine
	Relay        *Function
	Sweeper      *Function
	// DLQs maps a short name ("Relay") to each dead-letter queue.
	DLQs map[string]awssqs.Queue
	// SweepEveryMinutes is the sweeper's period; its gauges are judged over three periods.
	SweepEveryMinutes int
	// Unrouted are the functions whose errors nothing routes (not the saga's steps, whose
	// business errors the state machine catches): any error or throttle of theirs is an
	// incident.
	Unrouted []*Function
	// RestApi is the customer and webhook API.
	RestApi awsapigateway.RestApi
}

// Monitoring holds the alarms, the topic they notify and the dashboard.
type Monitoring struct {
	constructs.Construct
	Topic     awssns.Topic
	Dashboard awscloudwatch.Dashboard
	// Alarms by short name, e.g. "ExecutionsFailed" or "RelayDLQDepth".
	Alarms map[string]awscloudwatch.Alarm
}

// alarmSpec is one alarm: its metric, threshold and how many periods must breach.
type alarmSpec struct {
	name        string
	description string
	metric      awscloudwatch.IMetric
	threshold   float64
	periods     int
	// missingBreaches makes silence an alarm (a metric that must always report).
	missingBreaches bool
	// below alarms when the metric falls under the threshold (a heartbeat) instead of
	// reaching it.
	below bool
}

// NewMonitoring declares every alarm and the dashboard.
func NewMonitoring(scope constructs.Construct, id string, p MonitoringProps) *Monitoring {
	c := constructs.NewConstruct(scope, jsii.String(id))
	t := p.Thresholds.withDefaults()
	five := awscdk.Duration_Minutes(jsii.Number(5))
	custom := func(name, statistic string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:  jsii.String(MetricsNamespace),
			MetricName: jsii.String(name),
			Statistic:  jsii.String(statistic),
			Period:     five,
		})
	}
	sum := func(name string) awscloudwatch.Metric { return custom(name, "Sum") }
	gauge := func(name string) awscloudwatch.Metric { return custom(name, "Maximum") }
	sm := p.StateMachine
	gaugePeriods := 3

	specs := []alarmSpec{
		{name: "ConditionalCheckFailed", description: "Conditional writes refused far beyond normal seat-race losses: a hot seat map, a retry storm, or a writer using stale versions.",
			metric: sum(MetricConditionalCheckFailed), threshold: t.ConditionalCheckFailed, periods: 1},
		{name: "TransactionConflict", description: "DynamoDB transactions cancelled by conflicts with concurrent transactions on the same items; claims are retried with jitter but sustained conflicts mean contention on shared items.",
			metric: sum(MetricTransactionConflict), threshold: t.TransactionConflict, periods: 1},
		{name: "Throttled", description: "DynamoDB throttled a request of the inventory store: table capacity or account limits are being hit.",
			metric: sum(MetricThrottled), threshold: t.Throttled, periods: 1},
		{name: "CompensationOutcome", description: "Many compensations (voids, refunds, releases) in a short time: payments are failing broadly or holds are expiring before payment.",
			metric: sum(MetricCompensationOutcome), threshold: t.CompensationOutcome, periods: 1},
		{name: "ExecutionsFailed", description: "Reservation executions ended in a failure no Catch handled: a bug or an unexpected error; the reservation may need manual attention.",
			metric: sm.MetricFailed(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), threshold: t.ExecutionsFailed, periods: 1},
		{name: "ExecutionsTimedOut", description: "Reservation executions hit their execution timeout.",
			metric: sm.MetricTimedOut(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), threshold: t.ExecutionsTimedOut, periods: 1},
		{name: "ExecutionTimeP99", description: "The slowest reservations run far longer than a hold lasts: payment waits or reconciliation loops are not ending.",
			metric: sm.MetricTime(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("p99")}), threshold: t.ExecutionTimeP99Seconds * 1000, periods: 1},
		{name: "RelayIteratorAge", description: "The outbox relay lags behind the stream: events reach EventBridge late, and records older than the stream retention would be lost.",
			metric:    p.Relay.Function.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}),
			threshold: t.StreamIteratorAgeSeconds * 1000, periods: 1},
		{name: "ExpiredHoldsUnreleased", description: "Seats held past their deadline and not released: the sweeper is failing or a saga is stuck; buyers see seats as taken that are free.",
			metric: gauge(MetricExpiredHoldsUnreleased), threshold: t.ExpiredHoldsUnreleased, periods: gaugePeriods, missingBreaches: true},
		{name: "ExpiredHoldOldestAgeSeconds", description: "The oldest expired, unreleased hold is older than expected.",
			metric: gauge(MetricExpiredHoldOldestAgeSeconds), threshold: t.ExpiredHoldOldestAgeSeconds, periods: 1, missingBreaches: true},
		{name: "UnresolvedPayments", description: "Payments whose outcome is unknown are accumulating: the provider is slow or unreachable, or webhooks are not arriving.",
			metric: gauge(MetricUnresolvedPayments), threshold: t.UnresolvedPayments, periods: gaugePeriods, missingBreaches: true},
		{name: "UnresolvedPaymentOldestAgeSeconds", description: "A payment has been unresolved for too long: money whose fate is unknown.",
			metric: gauge(MetricUnresolvedPaymentOldestAgeSeconds), threshold: t.UnresolvedPaymentOldestAgeSeconds, periods: 1, missingBreaches: true},
		{name: "ReconciliationBacklog", description: "Reservations whose seats and money still disagree after the saga's bounded retries (payment unknown, confirmed seats not captured, money held or captured for released seats, a refund pending): the sweeper keeps settling them; look first at the oldest and at escalations.",
			metric: gauge(MetricReconciliationBacklog), threshold: t.ReconciliationBacklog, periods: 1, missingBreaches: true},
		{name: "AuthorizationsNearCaptureDeadline", description: "Authorized payments close to the provider's capture deadline: capture or void them before the authorization lapses.",
			metric: gauge(MetricAuthorizationsNearCaptureDeadline), threshold: t.AuthorizationsNearCaptureDeadline, periods: 1, missingBreaches: true},
		{name: "SettlementEscalated", description: "The settlement decision handed a reservation to a person (a refund that keeps failing, a record no transition can fix): find the 'settlement needs a person' log line by reservationId and settle it at the provider.",
			metric: sum(MetricSettlementEscalated), threshold: t.SettlementEscalated, periods: 1},
		{name: "ProviderRefusals", description: "The payment provider refuses the system's own requests (authentication, permission, invalid request): check the Stripe secret and its rotation first; buyers are not declined, their holds wait.",
			metric: sum(MetricProviderRefusals), threshold: t.ProviderRefusals, periods: 1},
		{name: "SweeperNotRunning", description: "The sweeper has not run for three periods: expired holds and backlog figures are no longer watched.",
			metric:    p.Sweeper.Function.MetricInvocations(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(float64(p.SweepEveryMinutes))), Statistic: jsii.String("Sum")}),
			threshold: 1, periods: 3, missingBreaches: true, below: true},
		{name: "SweeperErrors", description: "The sweeper failed a run: while it fails, expired holds are not released and its backlog gauges go silent (those alarms then fire too). Read the sweeper's log group for the error first.",
			metric:    p.Sweeper.Function.MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
			threshold: 1, periods: 1},
		{name: "WebhookRejected", description: "Stripe webhook deliveries whose signature did not verify: after a rotation, the webhook signing secret in Secrets Manager differs from the endpoint's in Stripe (check it first), or someone is forging events. Payment waits end only by timeout meanwhile.",
			metric: sum(MetricWebhookRejected), threshold: 1, periods: 1},
		{name: "WebhookUnverifiable", description: "The webhook could not read its signing secret from Secrets Manager, so deliveries are answered 503 and Stripe redelivers them later: check the secret, its KMS key and the webhook role's access.",
			metric: sum(MetricWebhookUnverifiable), threshold: 1, periods: 1},
	}
	lambdaOpts := &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}
	for _, f := range p.Unrouted {
		if f.Spec.Name == "sweeper" {
			// SweeperErrors watches its errors; its one reserved slot throttles overlapping
			// ticks by design.
			continue
		}
		name := pascal(f.Spec.Name)
		specs = append(specs,
			alarmSpec{name: name + "Errors", description: fmt.Sprintf("The %s function failed invocations (an uncaught error, a timeout or a crash): read its log group for the error first.", f.Spec.Name),
				metric: f.Function.MetricErrors(lambdaOpts), threshold: 1, periods: 1},
			alarmSpec{name: name + "Throttles", description: fmt.Sprintf("Lambda throttled the %s function: the account's concurrency (or the function's reserved concurrency) is exhausted; raise the quota or the reservation.", f.Spec.Name),
				metric: f.Function.MetricThrottles(lambdaOpts), threshold: 1, periods: 1},
		)
	}
	if p.RestApi != nil {
		specs = append(specs,
			alarmSpec{name: "Api5xx", description: "The API answered 5xx (a function error, a throttled StartExecution answered 503, or API Gateway itself): look at the api function's errors and Step Functions throttling first.",
				metric: p.RestApi.MetricServerError(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), threshold: 10, periods: 1},
			alarmSpec{name: "ApiLatencyP99", description: "The API's p99 latency is above 5 s: buyers wait; the api function, DynamoDB or Step Functions are slow or throttled.",
				metric: p.RestApi.MetricLatency(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("p99")}), threshold: 5000, periods: 2},
		)
	}
	specs = append(specs, alarmSpec{name: "ExecutionsThrottled", description: "Step Functions throttled executions (state transitions beyond the account's rate): the saga slows down; raise the state-transition quota.",
		metric: sm.MetricThrottled(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), threshold: 1, periods: 1})
	for _, name := range sortedKeys(p.DLQs) {
		q := p.DLQs[name]
		specs = append(specs,
			alarmSpec{name: name + "DLQDepth", description: fmt.Sprintf("Messages in the %s dead-letter queue: events that could not be processed after their retries.", name),
				metric: q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), threshold: t.DLQDepth, periods: 1},
			alarmSpec{name: name + "DLQOldestAge", description: fmt.Sprintf("The oldest message in the %s dead-letter queue has waited too long; it expires after 14 days.", name),
				metric: q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), threshold: t.DLQOldestAgeSeconds, periods: 1},
		)
	}

	m := &Monitoring{Construct: c, Alarms: map[string]awscloudwatch.Alarm{}}
	m.Topic = awssns.NewTopic(c, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("seatsaga alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	// EnforceSSL writes a topic policy, which replaces SNS's default one: without a statement
	// of its own, CloudWatch could not publish and no alarm would reach anyone. Only this
	// account's alarms of this stack may publish.
	stack := awscdk.Stack_Of(c)
	m.Topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsOfThisStack"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*m.Topic.TopicArn()),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]any{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"),
				ResourceName: jsii.String(*stack.StackName() + "-*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})},
		},
	}))
	action := awscloudwatchactions.NewSnsAction(m.Topic)
	stackName := *stack.StackName()
	var alarms []awscloudwatch.IAlarm
	for _, s := range specs {
		cmp := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
		if s.below {
			cmp = awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD
		}
		// A gauge the sweeper publishes on every run going silent means the sweeper stopped
		// (or fails while still being invoked): silence must not read as healthy.
		missing := awscloudwatch.TreatMissingData_NOT_BREACHING
		if s.missingBreaches {
			missing = awscloudwatch.TreatMissingData_BREACHING
		}
		a := awscloudwatch.NewAlarm(c, jsii.String(s.name), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(stackName + "-" + s.name),
			AlarmDescription:   jsii.String(s.description),
			Metric:             s.metric,
			Threshold:          jsii.Number(s.threshold),
			EvaluationPeriods:  jsii.Number(float64(s.periods)),
			ComparisonOperator: cmp,
			TreatMissingData:   missing,
		})
		// Operators hear when an alarm clears, too.
		a.AddAlarmAction(action)
		a.AddOkAction(action)
		m.Alarms[s.name] = a
		alarms = append(alarms, a)
	}

	graph := func(title string, metrics ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &metrics, Width: jsii.Number(8), Height: jsii.Number(6),
		})
	}
	stepOutcomes := sum(MetricStepOutcome)
	var dlqMetrics []awscloudwatch.IMetric
	for _, name := range sortedKeys(p.DLQs) {
		dlqMetrics = append(dlqMetrics, p.DLQs[name].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: five, Statistic: jsii.String("Maximum"), Label: jsii.String(name),
		}))
	}
	m.Dashboard = awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	m.Dashboard.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("seatsaga alarms"), Alarms: alarmRefsOf(alarms), Width: jsii.Number(24), Height: jsii.Number(4),
	}))
	m.Dashboard.AddWidgets(
		graph("Contention: conditional-check failures, conflicts, throttles",
			sum(MetricConditionalCheckFailed), sum(MetricTransactionConflict), sum(MetricThrottled)),
		graph("Executions", sm.MetricStarted(nil), sm.MetricSucceeded(nil), sm.MetricFailed(nil), sm.MetricTimedOut(nil)),
		graph("Execution time p99 (ms)", sm.MetricTime(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99")})),
	)
	m.Dashboard.AddWidgets(
		graph("Step and compensation outcomes", stepOutcomes, sum(MetricCompensationOutcome)),
		graph("Expired holds not released", gauge(MetricExpiredHoldsUnreleased), gauge(MetricExpiredHoldOldestAgeSeconds)),
		graph("Payments: unresolved, backlog, near capture deadline",
			gauge(MetricUnresolvedPayments), gauge(MetricUnresolvedPaymentOldestAgeSeconds),
			gauge(MetricReconciliationBacklog), gauge(MetricAuthorizationsNearCaptureDeadline)),
	)
	m.Dashboard.AddWidgets(
		graph("Relay iterator age (ms)", p.Relay.Function.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum")})),
		graph("Dead-letter queues", dlqMetrics...),
		graph("Sweeper runs", p.Sweeper.Function.MetricInvocations(nil), p.Sweeper.Function.MetricErrors(nil)),
	)
	return m
}

func alarmRefsOf(alarms []awscloudwatch.IAlarm) *[]interfacesawscloudwatch.IAlarmRef {
	refs := make([]interfacesawscloudwatch.IAlarmRef, len(alarms))
	for i, a := range alarms {
		refs[i] = a
	}
	return &refs
}
