package stack

import (
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/outbox"
)

// The environment variable names come from internal/config, which the Lambda mains read, so
// the stack and the handlers cannot disagree on them.
const (
	EnvStage                 = config.EnvStage
	EnvTablePrefix           = config.EnvTablePrefix
	EnvEventBusName          = config.EnvEventBusName
	EnvStateMachineArn       = config.EnvStateMachineARN
	EnvStripeSecretKeyArn    = config.EnvStripeSecretARN
	EnvStripeWebhookSecret   = config.EnvStripeWebhookSecretARN
	EnvLateSuccessPolicy     = config.EnvLateSuccessPolicy
	EnvHoldSeconds           = config.EnvHoldSeconds
	EnvMaxSeats              = config.EnvMaxSeats
	EnvSweepGraceSeconds     = config.EnvSweepGraceSeconds
	EnvAdmissionLeaseSeconds = config.EnvAdmissionLeaseSeconds
	EnvMaxActiveReservations = config.EnvMaxActiveReservations
	EnvMetricsNamespace      = config.EnvMetricsNamespace
	EnvAllowedOrigins        = config.EnvAllowedOrigins
)

// MetricsNamespace is the prefix of each stage's CloudWatch namespace of seatsaga's
// embedded-metric-format metrics (alarms.StageNamespace).
const MetricsNamespace = config.DefaultMetricsNamespace

// EventSource is the EventBridge source the relay publishes outbox events under.
const EventSource = outbox.Source
