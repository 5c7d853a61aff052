package alarms

import (
	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
)

// Metric names the alarms read that live in their producers, named here so the definitions
// read as one list.
const (
	MetricCompensationFailed               = saga.MetricCompensationFailed
	MetricStepRetryableError               = saga.MetricStepRetryableError
	MetricOldestRunningExecutionAgeSeconds = sweeper.MetricOldestRunningExecutionAgeSeconds
	MetricWebhookNeverArrived              = saga.MetricWebhookNeverArrived
	MetricStepFunctionsThrottled           = api.MetricStepFunctionsThrottled
)
