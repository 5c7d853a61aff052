package stack

import (
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
)

// EventsSettings bound how the relay reads the outbox stream.
type EventsSettings struct {
	// RelayBatchSize is the most stream records per relay invocation.
	RelayBatchSize int
	// RelayRetryAttempts bounds retries of a failing batch (after bisection) before it goes
	// to the DLQ.
	RelayRetryAttempts int
	// RelayMaxRecordAgeHours drops to the DLQ records older than this.
	RelayMaxRecordAgeHours int
}

// EventsProps configures the event plumbing.
type EventsProps struct {
	Settings   EventsSettings
	Outbox     awsdynamodb.Table
	Relay      *Function
	Consumer   *Function
	Production bool
}

// Events holds the EventBridge bus, the relay's outbox stream subscription and the example
// consumer's rule, each with its dead-letter queue.
type Events struct {
	constructs.Construct
	Bus          awsevents.EventBus
	RelayDLQ     awssqs.Queue
	ConsumerDLQ  awssqs.Queue
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
	e.RelayDLQ = deadLetterQueue(c, "RelayDLQ", p.Production)
	e.ConsumerDLQ = deadLetterQueue(c, "ConsumerDLQ", p.Production)

	relay := p.Relay.Function
	// One batch per shard at a time keeps each reservation's events in stream order; a
	// failing record is isolated by bisection and by reporting item failures, retried a
	// bounded number of times, and then parked in the DLQ (its stream coordinates, not the
	// payload) instead of blocking the shard.
	relay.AddEventSource(awslambdaeventsources.NewDynamoEventSource(p.Outbox, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(float64(p.Settings.RelayBatchSize)),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(float64(p.Settings.RelayRetryAttempts)),
		MaxRecordAge:            awscdk.Duration_Hours(jsii.Number(float64(p.Settings.RelayMaxRecordAgeHours))),
		ReportBatchItemFailures: jsii.Bool(true),
		ParallelizationFactor:   jsii.Number(1),
		OnFailure:               awslambdaeventsources.NewSqsDlq(e.RelayDLQ),
	}))

	consumer := p.Consumer.Function
	// Failed asynchronous invocations (after Lambda's own retries) land in the same DLQ as
	// events EventBridge could not deliver.
	awslambda.NewEventInvokeConfig(c, jsii.String("ConsumerInvokeConfig"), &awslambda.EventInvokeConfigProps{
		Function:      consumer,
		RetryAttempts: jsii.Number(2),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(6)),
		OnFailure:     awslambdadestinations.NewSqsDestination(e.ConsumerDLQ),
	})
	e.ConsumerRule = awsevents.NewRule(c, jsii.String("ConsumerRule"), &awsevents.RuleProps{
		Description:  jsii.String("Every seatsaga reservation event to the example consumer"),
		EventBus:     e.Bus,
		EventPattern: &awsevents.EventPattern{Source: jsii.Strings(EventSource)},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(consumer, &awseventstargets.LambdaFunctionProps{
			DeadLetterQueue: e.ConsumerDLQ,
			RetryAttempts:   jsii.Number(8),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(6)),
		})},
	})
	return e
}

// deadLetterQueue is an encrypted, TLS-only queue that keeps messages for the SQS maximum of
// 14 days, so an operator has two weeks to look before anything is lost.
func deadLetterQueue(scope constructs.Construct, id string, production bool) awssqs.Queue {
	removal := awscdk.RemovalPolicy_DESTROY
	if production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	return awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		RemovalPolicy:   removal,
	})
}
