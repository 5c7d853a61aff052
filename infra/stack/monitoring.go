package stack

import (
	"time"

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

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// Names of the custom metrics the dashboard graphs, in the Seatsaga namespace (CloudWatch
// embedded metric format). They are the producers' own constants, so a renamed metric cannot
// leave a graph or an alarm watching nothing.
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
	MetricUnknownPaymentMethods             = saga.MetricUnknownPaymentMethods
	MetricWebhookRejected                   = webhook.MetricWebhookRejected
	MetricWebhookUnverifiable               = webhook.MetricWebhookUnverifiable
)

// Thresholds set when each tunable alarm fires (internal/alarms, which the local stack
// evaluates too).
type Thresholds = alarms.Thresholds

// DefaultThresholds are the thresholds a deployment gets unless it overrides them.
func DefaultThresholds() Thresholds { return alarms.DefaultThresholds() }

// MonitoringProps configures the alarms and the dashboard.
type MonitoringProps struct {
	// Settings select and tune the alarm set (Props.monitoringSettings).
	Settings     alarms.Settings
	StateMachine awsstepfunctions.StateMachine
	// Functions are every function, by spec name.
	Functions *Functions
	// DLQs maps each dead-letter queue's deploy name (deploy.RelayDLQ) to the queue.
	DLQs map[string]awssqs.Queue
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

// metric renders one alarm metric, naming its subject by the resource's token.
func (p MonitoringProps) metric(m alarms.Metric) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace:  jsii.String(m.Namespace),
		MetricName: jsii.String(m.Name),
		Statistic:  jsii.String(m.Statistic),
		Period:     awscdk.Duration_Seconds(jsii.Number(m.Period.Seconds())),
	}
	var value *string
	switch m.Subject.Kind {
	case alarms.StateMachine:
		value = p.StateMachine.StateMachineArn()
	case alarms.Function:
		value = p.Functions.Get(m.Subject.Name).Function.FunctionName()
	case alarms.RestAPI:
		value = p.RestApi.RestApiName()
	case alarms.Queue:
		value = p.DLQs[m.Subject.Name].QueueName()
	}
	if value != nil {
		props.DimensionsMap = &map[string]*string{m.Subject.Dimension(): value}
	}
	return awscloudwatch.NewMetric(props)
}

// NewMonitoring declares every alarm of internal/alarms and the dashboard.
func NewMonitoring(scope constructs.Construct, id string, p MonitoringProps) *Monitoring {
	c := constructs.NewConstruct(scope, jsii.String(id))
	five := awscdk.Duration_Minutes(jsii.Number(5))
	custom := func(name, statistic string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:  jsii.String(p.Settings.Namespace),
			MetricName: jsii.String(name),
			Statistic:  jsii.String(statistic),
			Period:     five,
		})
	}
	sum := func(name string) awscloudwatch.Metric { return custom(name, "Sum") }
	gauge := func(name string) awscloudwatch.Metric { return custom(name, "Maximum") }
	sm := p.StateMachine
	relay, sweeperFn := p.Functions.Get(deploy.FnRelay), p.Functions.Get(deploy.FnSweeper)

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
	var alarmList []awscloudwatch.IAlarm
	for _, def := range alarms.Definitions(p.Settings) {
		cmp := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
		if def.Comparison == alarms.Below {
			cmp = awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD
		}
		missing := awscloudwatch.TreatMissingData_NOT_BREACHING
		if def.TreatMissing == alarms.MissingBreaching {
			missing = awscloudwatch.TreatMissingData_BREACHING
		}
		a := awscloudwatch.NewAlarm(c, jsii.String(def.Name), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(stackName + "-" + def.Name),
			AlarmDescription:   jsii.String(def.Description),
			Metric:             p.metric(def.Metric),
			Threshold:          jsii.Number(def.Threshold),
			EvaluationPeriods:  jsii.Number(float64(def.EvaluationPeriods)),
			DatapointsToAlarm:  jsii.Number(float64(def.DatapointsToAlarm)),
			ComparisonOperator: cmp,
			TreatMissingData:   missing,
		})
		// Operators hear when an alarm clears, too.
		a.AddAlarmAction(action)
		a.AddOkAction(action)
		m.Alarms[def.Name] = a
		alarmList = append(alarmList, a)
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
		Title: jsii.String("seatsaga alarms"), Alarms: alarmRefsOf(alarmList), Width: jsii.Number(24), Height: jsii.Number(4),
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
		graph("Relay iterator age (ms)", relay.Function.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum")})),
		graph("Dead-letter queues", dlqMetrics...),
		graph("Sweeper runs", sweeperFn.Function.MetricInvocations(nil), sweeperFn.Function.MetricErrors(nil)),
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

// monitoringSettings are the alarm set's inputs in this deployment.
func (p Props) monitoringSettings() alarms.Settings {
	return alarms.Deployed(alarms.StageNamespace(p.Stage), p.Thresholds, time.Duration(p.SweepEveryMinutes)*time.Minute)
}
