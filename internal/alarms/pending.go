package alarms

import (
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
)

// Metric names the new alarms read, from their producers.
const (
	MetricCompensationFailed               = saga.MetricCompensationFailed
	MetricStepRetryableError               = saga.MetricStepRetryableError
	MetricOldestRunningExecutionAgeSeconds = sweeper.MetricOldestRunningExecutionAgeSeconds
	MetricWebhookNeverArrived              = saga.MetricWebhookNeverArrived
	// Producers being added.
	MetricStepFunctionsThrottled = "StepFunctionsThrottled"
)
