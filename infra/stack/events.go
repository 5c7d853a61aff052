package stack

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/starter"
)

// EventsSettings bound how the relay reads the outbox stream and how the consumer's events are
// retried. They are the deployment spec's delivery settings (internal/deploy), which the twin
// plays with the same values; context overrides some of them (context.go) for one stage.
type EventsSettings struct {
	deploy.Delivery
}

// EventsProps configures the event plumbing.
type EventsProps struct {
	Settings EventsSettings
	Outbox   awsdynamodb.Table
	Relay    *Function
	Consumer *Function
	// Admissions' stream carries the starts Step Functions throttled to Starter.
	Admissions awsdynamodb.Table
	Starter    *Function
	Production bool
}

// Events holds the EventBridge bus, the relay's outbox stream subscription and the example
// consumer's rule, each with its dead-letter queue.
type Events struct {
	constructs.Construct
	Bus          awsevents.EventBus
	RelayDLQ     awssqs.Queue
	ConsumerDLQ  awssqs.Queue
	StarterDLQ   awssqs.Queue
	ConsumerRule awsevents.Rule
}

// NewEvents declares the bus, the stream event source and the consumer rule. The relay's and
// the consumer's permissions on them (PutEvents, the stream reads, SendMessage to their DLQs)
// are in their specs (internal/deploy), rendered by Functions.Render.
func NewEvents(scope constructs.Construct, id string, p EventsProps) *Events {
	c := constructs.NewConstruct(scope, jsii.String(id))
	e := &Events{Construct: c}
	e.Bus = awsevents.NewEventBus(c, jsii.String("Bus"), &awsevents.EventBusProps{
		Description: jsii.String("seatsaga reservation events published from the outbox"),
	})
	d := p.Settings.Delivery
	e.RelayDLQ = deadLetterQueue(c, deploy.RelayDLQ, d.DLQRetention, p.Production)
	e.ConsumerDLQ = deadLetterQueue(c, deploy.ConsumerDLQ, d.DLQRetention, p.Production)
	e.StarterDLQ = deadLetterQueue(c, deploy.StarterDLQ, d.DLQRetention, p.Production)

	// The queued starts: the starter reports the first start Step Functions throttles again as
	// its batch item failure, so the mapping retries from it until the record is too old for
	// a buyer still to be waiting, and then parks it in StarterDLQ.
	p.Starter.Function.AddEventSource(awslambdaeventsources.NewDynamoEventSource(p.Admissions, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(float64(d.StarterBatchSize)),
		RetryAttempts:           jsii.Number(float64(d.StarterRetryAttempts)),
		MaxRecordAge:            seconds(d.StarterMaxRecordAge),
		ReportBatchItemFailures: jsii.Bool(true),
		ParallelizationFactor:   jsii.Number(1),
		OnFailure:               awslambdaeventsources.NewSqsDlq(e.StarterDLQ),
		// Only queued starts invoke it, not every buyer the gate lets through.
		Filters: &[]*map[string]interface{}{awslambda.FilterCriteria_Filter(starterFilter())},
	}))

	relay := p.Relay.Function
	// One batch per shard at a time keeps each reservation's events in stream order; a
	// failing record is isolated by bisection and by reporting item failures, retried a
	// bounded number of times, and then parked in the DLQ (its stream coordinates, not the
	// payload) instead of blocking the shard.
	relay.AddEventSource(awslambdaeventsources.NewDynamoEventSource(p.Outbox, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(float64(d.RelayBatchSize)),
		BisectBatchOnError:      jsii.Bool(d.RelayBisectBatchOnError),
		RetryAttempts:           jsii.Number(float64(d.RelayRetryAttempts)),
		MaxRecordAge:            seconds(d.RelayMaxRecordAge),
		ReportBatchItemFailures: jsii.Bool(d.RelayReportBatchItemFailures),
		// The twin reads each shard with one reader, so a factor above 1 would deploy an
		// ordering the twin never tested: it stays out of the shared settings.
		ParallelizationFactor: jsii.Number(1),
		OnFailure:             awslambdaeventsources.NewSqsDlq(e.RelayDLQ),
	}))

	consumer := p.Consumer.Function
	// Failed asynchronous invocations (after Lambda's own retries) land in the same DLQ as
	// events EventBridge could not deliver.
	awslambda.NewEventInvokeConfig(c, jsii.String("ConsumerInvokeConfig"), &awslambda.EventInvokeConfigProps{
		Function:      consumer,
		RetryAttempts: jsii.Number(float64(d.ConsumerRetryAttempts)),
		MaxEventAge:   seconds(d.ConsumerMaxEventAge),
		OnFailure:     awslambdadestinations.NewSqsDestination(e.ConsumerDLQ),
	})
	e.ConsumerRule = awsevents.NewRule(c, jsii.String("ConsumerRule"), &awsevents.RuleProps{
		Description:  jsii.String("Every seatsaga reservation event to the example consumer"),
		EventBus:     e.Bus,
		EventPattern: &awsevents.EventPattern{Source: jsii.Strings(EventSource)},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(consumer, &awseventstargets.LambdaFunctionProps{
			DeadLetterQueue: e.ConsumerDLQ,
			RetryAttempts:   jsii.Number(float64(d.ConsumerRuleRetryAttempts)),
			MaxEventAge:     seconds(d.ConsumerRuleMaxEventAge),
		})},
	})
	return e
}

// seconds renders a delivery duration, which the spec keeps in whole seconds as AWS does.
func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

// deadLetterQueue is an encrypted, TLS-only queue that keeps messages for retention (the spec's
// 14 days, the SQS maximum), so an operator has two weeks to look before anything is lost.
func deadLetterQueue(scope constructs.Construct, id string, retention time.Duration, production bool) awssqs.Queue {
	removal := awscdk.RemovalPolicy_DESTROY
	if production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	return awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: seconds(retention),
		RemovalPolicy:   removal,
	})
}

// starterFilter is starter.FilterPattern as the CDK takes a filter: the same JSON, decoded.
func starterFilter() *map[string]interface{} {
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(starter.FilterPattern), &m); err != nil {
		panic("stack: starter.FilterPattern is not JSON: " + err.Error())
	}
	return &m
}
