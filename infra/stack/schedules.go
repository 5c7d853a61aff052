package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// SchedulesProps configures the sweeper's schedule.
type SchedulesProps struct {
	// SweepEveryMinutes is the sweeper's period.
	SweepEveryMinutes int
	Sweeper           *Function
}

// Schedules runs the sweeper on a fixed rate.
type Schedules struct {
	constructs.Construct
	SweeperRule awsevents.Rule
}

// NewSchedules declares the sweeper's rate rule. A missed or failed run is not retried for
// long: the next run a period later does the same work, because every sweep is idempotent.
func NewSchedules(scope constructs.Construct, id string, p SchedulesProps) *Schedules {
	c := constructs.NewConstruct(scope, jsii.String(id))
	period := awscdk.Duration_Minutes(jsii.Number(float64(p.SweepEveryMinutes)))
	rule := awsevents.NewRule(c, jsii.String("SweeperRule"), &awsevents.RuleProps{
		Description: jsii.String("Runs the seatsaga sweeper"),
		Schedule:    awsevents.Schedule_Rate(period),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(p.Sweeper.Function, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(1),
			MaxEventAge:   period,
		})},
	})
	// The rule invokes the sweeper asynchronously. With a reserved concurrency of 1, a tick
	// that arrives while a sweep still runs is throttled and Lambda's own queue would retry it
	// for up to 6 hours, and a failed sweep twice: both only pile sweeps up behind the next
	// tick, which does the same work. Drop them instead.
	awslambda.NewEventInvokeConfig(c, jsii.String("SweeperInvokeConfig"), &awslambda.EventInvokeConfigProps{
		Function:      p.Sweeper.Function,
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
	})
	return &Schedules{Construct: c, SweeperRule: rule}
}
