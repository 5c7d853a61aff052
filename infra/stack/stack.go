// Package stack is seatsaga's AWS deployment as CDK constructs, one per concern: data, secrets,
// functions, workflow, api, events, schedules and monitoring. Props are plain Go values. The
// functions are rendered from their specs (internal/deploy): each one's environment and every
// statement of its role come from the spec and nowhere else; the other constructs grant only
// to their own roles (the state machine's) and to services.
package stack

import (
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Props configures a seatsaga deployment.
type Props struct {
	// Stage names the deployment ("dev", "prod", ...); it becomes the API stage name.
	Stage string
	// ProductionStages lists the stages that keep their data: deletion protection on tables,
	// RETAIN on everything stateful. Empty means just "prod".
	ProductionStages []string
	// AssetDir holds <function>/bootstrap for every function.
	AssetDir string
	// LateSuccessPolicy is "reacquire" or "void" (internal/reservation/states.go).
	LateSuccessPolicy string
	// HoldSeconds is how long a claimed seat is held for payment.
	HoldSeconds int
	// LogRetentionDays applies to every log group; one of CloudWatch's allowed values.
	LogRetentionDays int
	// SweepEveryMinutes is the sweeper's period.
	SweepEveryMinutes int
	// SweepGraceSeconds is how long past its deadline a hold may stay before the sweeper
	// releases it (the saga's own timeout normally gets there first).
	SweepGraceSeconds int
	// AdmissionLeaseSeconds is how long the API's admission gate keeps other buyers off the
	// seats of a buyer it let through, if no claim follows.
	AdmissionLeaseSeconds int
	// WithoutReservedConcurrency deploys the webhook and the sweeper without their reserved
	// concurrency (context reservedConcurrency=false): for an account whose Lambda concurrency
	// quota is below the 21 reserved plus the 100 Lambda keeps unreserved.
	WithoutReservedConcurrency bool
	Api                        ApiSettings
	Events                     EventsSettings
	Thresholds                 Thresholds

	// specs overrides deploy.Functions(); tests use it.
	specs []deploy.Function
	// constructGrants lets constructs add their own statements to function roles; see
	// FunctionsProps.
	constructGrants bool
}

// DefaultProps are the settings of a development stage.
func DefaultProps() Props {
	return Props{
		Stage:                 "dev",
		LateSuccessPolicy:     "reacquire",
		HoldSeconds:           600,
		LogRetentionDays:      30,
		SweepEveryMinutes:     1,
		SweepGraceSeconds:     120,
		AdmissionLeaseSeconds: int(config.DefaultAdmissionLease.Seconds()),
		Api:                   ApiSettings{RateLimit: deploy.DefaultAPIRateLimit, BurstLimit: deploy.DefaultAPIBurstLimit, MaxSeatsPerReservation: 10, MaxActiveReservations: config.DefaultMaxActive},
		Events:                EventsSettings{Delivery: deploy.DefaultDelivery()},
		Thresholds:            DefaultThresholds(),
	}
}

// settings are the application settings the functions' environments are rendered from.
func (p Props) settings() Settings {
	return Settings{
		Stage: p.Stage, LateSuccessPolicy: p.LateSuccessPolicy, HoldSeconds: p.HoldSeconds,
		MaxSeatsPerReservation: p.Api.MaxSeatsPerReservation, SweepGraceSeconds: p.SweepGraceSeconds,
		AdmissionLeaseSeconds: p.AdmissionLeaseSeconds,
		MaxActiveReservations: p.Api.MaxActiveReservations,
		AllowedOrigins:        p.Api.AllowedOrigins,
	}
}

// Production reports whether the stage keeps its data.
func (p Props) Production() bool {
	stages := p.ProductionStages
	if len(stages) == 0 {
		stages = []string{"prod"}
	}
	for _, s := range stages {
		if s == p.Stage {
			return true
		}
	}
	return false
}

// Validate refuses settings that would deploy something broken.
func (p Props) Validate() error {
	switch {
	case !stageName.MatchString(p.Stage):
		return fmt.Errorf("stage %q: want a letter followed by letters, digits or dashes (it names the stack and the API stage)", p.Stage)
	case p.AssetDir == "":
		return fmt.Errorf("asset directory is empty")
	case p.LateSuccessPolicy != "reacquire" && p.LateSuccessPolicy != "void":
		return fmt.Errorf("late-success policy %q: want reacquire or void", p.LateSuccessPolicy)
	case p.HoldSeconds <= 0:
		return fmt.Errorf("hold seconds %d: must be positive", p.HoldSeconds)
	case p.SweepGraceSeconds <= 0:
		return fmt.Errorf("sweep grace %d seconds: must be positive", p.SweepGraceSeconds)
	case p.Api.MaxActiveReservations < 0:
		return fmt.Errorf("max active reservations %d: must not be negative (0: no cap)", p.Api.MaxActiveReservations)
	case p.AdmissionLeaseSeconds <= 0:
		return fmt.Errorf("admission lease %d seconds: must be positive", p.AdmissionLeaseSeconds)
	case p.SweepEveryMinutes <= 0:
		return fmt.Errorf("sweep period %d minutes: must be positive", p.SweepEveryMinutes)
	case time.Duration(p.SweepEveryMinutes)*time.Minute > alarms.Period:
		// The sweeper's gauges are judged per alarm period, and a period without one breaches.
		return fmt.Errorf("sweep period %d minutes: at most %s, the alarms' period, or the backlog alarms would fire between sweeps", p.SweepEveryMinutes, alarms.Period)
	case p.Api.RateLimit <= 0 || p.Api.BurstLimit <= 0:
		return fmt.Errorf("api throttling %v/s burst %v: both must be positive", p.Api.RateLimit, p.Api.BurstLimit)
	case p.Api.MaxSeatsPerReservation <= 0 || p.Api.MaxSeatsPerReservation > 99:
		// One transaction holds every seat plus the reservation and its outbox record.
		return fmt.Errorf("max seats per reservation %d: want 1..99", p.Api.MaxSeatsPerReservation)
	}
	if err := p.Events.Validate(); err != nil {
		return err
	}
	if _, err := retention(p.LogRetentionDays); err != nil {
		return err
	}
	if err := ValidateAllowedOrigins(p.Api.AllowedOrigins); err != nil {
		return err
	}
	return nil
}

var stageName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,63}$`)

// Seatsaga is the whole deployment.
type Seatsaga struct {
	awscdk.Stack
	Data       *Data
	Secrets    *Secrets
	Functions  *Functions
	Workflow   *Workflow
	Api        *Api
	Events     *Events
	Schedules  *Schedules
	Monitoring *Monitoring
	stage      string
}

// New declares the stack. It panics on invalid props, as CDK does for invalid construct
// configuration; the app validates first and reports the error itself.
func New(scope constructs.Construct, id string, stackProps *awscdk.StackProps, p Props) *Seatsaga {
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("stack: %v", err))
	}
	logRetention, _ := retention(p.LogRetentionDays)
	prod := p.Production()
	st := awscdk.NewStack(scope, jsii.String(id), stackProps)
	s := &Seatsaga{Stack: st, stage: p.Stage}
	settings := p.settings()

	s.Data = NewData(st, "Data", DataProps{Production: prod})
	s.Secrets = NewSecrets(st, "Secrets", SecretsProps{Production: prod})
	s.Functions = NewFunctions(st, "Functions", FunctionsProps{
		AssetDir: p.AssetDir, Production: prod, LogRetention: logRetention,
		Specs: p.specs, constructGrants: p.constructGrants, WithoutReservedConcurrency: p.WithoutReservedConcurrency,
	})
	s.Workflow = NewWorkflow(st, "Workflow", WorkflowProps{
		Functions: s.Functions, Production: prod, LogRetention: logRetention,
	})
	s.Api = NewApi(st, "Api", ApiProps{
		Settings: p.Api, Stage: p.Stage, Production: prod, LogRetention: logRetention, Functions: s.Functions,
	})
	NewWaf(st, "Waf", WafProps{Stage: s.Api.RestApi.DeploymentStage()})
	s.Events = NewEvents(st, "Events", EventsProps{
		Settings: p.Events, Outbox: s.Data.Table(tables.OutboxTable),
		Relay: s.Functions.Get("relay"), Consumer: s.Functions.Get("consumer"), Production: prod,
		Admissions: s.Data.Table(tables.AdmissionsTable), Starter: s.Functions.Get(deploy.FnStarter),
	})
	// The functions' environments and policies name the state machine and the bus, which
	// exist from here on.
	s.Functions.Render(&resolver{settings: settings, data: s.Data, secrets: s.Secrets,
		functions: s.Functions, workflow: s.Workflow, events: s.Events})
	s.Schedules = NewSchedules(st, "Schedules", SchedulesProps{
		SweepEveryMinutes: p.SweepEveryMinutes, Sweeper: s.Functions.Get("sweeper"),
	})
	s.Monitoring = NewMonitoring(st, "Monitoring", MonitoringProps{
		Settings: p.monitoringSettings(), StateMachine: s.Workflow.StateMachine, Functions: s.Functions,
		DLQs: map[string]awssqs.Queue{deploy.RelayDLQ: s.Events.RelayDLQ, deploy.ConsumerDLQ: s.Events.ConsumerDLQ,
			deploy.StarterDLQ: s.Events.StarterDLQ},
		RestApi: s.Api.RestApi,
	})

	output := func(id, description string, value *string) {
		awscdk.NewCfnOutput(st, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(description)})
	}
	output("ApiUrl", "Base URL of the customer API", s.Api.RestApi.Url())
	output("StripeWebhookUrl", "Register this URL as the Stripe webhook endpoint", s.Api.WebhookURL)
	output("UserPoolId", "Cognito user pool that authorizes customers", s.Api.UserPool.UserPoolId())
	if s.Api.Client != nil {
		output("UserPoolClientId", "Cognito app client for the customer front end", s.Api.Client.UserPoolClientId())
	}
	output("StripeSecretKeyArn", "Put the Stripe API secret key here", s.Secrets.StripeSecretKey.SecretArn())
	output("StripeWebhookSecretArn", "Put the Stripe webhook signing secret here", s.Secrets.StripeWebhookSecret.SecretArn())
	output("StateMachineArn", "The reservation saga", s.Workflow.StateMachine.StateMachineArn())
	output("SeatsTableName", "The seats table `go run ./infra/ops seats load` writes to", s.Data.Table(tables.SeatsTable).TableName())
	output("EventBusName", "Reservation events", s.Events.Bus.EventBusName())
	output("AlarmTopicArn", "Subscribe operators to alarm notifications here", s.Monitoring.Topic.TopicArn())

	addSuppressions(s)
	return s
}

var retentionByDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

func retention(days int) (awslogs.RetentionDays, error) {
	r, ok := retentionByDays[days]
	if !ok {
		return "", fmt.Errorf("log retention %d days is not a CloudWatch Logs retention period (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653)", days)
	}
	return r, nil
}
