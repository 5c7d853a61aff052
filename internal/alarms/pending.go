package alarms

// Metric names whose producers are being added; each moves to its producer's constant.
const (
	MetricCompensationFailed               = "CompensationFailed"
	MetricStepRetryableError               = "StepRetryableError"
	MetricOldestRunningExecutionAgeSeconds = "OldestRunningExecutionAgeSeconds"
	MetricStepFunctionsThrottled           = "StepFunctionsThrottled"
	MetricWebhookNeverArrived              = "WebhookNeverArrived"
)
