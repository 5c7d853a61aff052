package stack

import (
	"strings"
	"testing"
)

// alarmsByName maps each alarm's short name (after "<stack>-") to its properties.
func (s *synth) alarmsByName(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	prefix := *s.stack.StackName() + "-"
	for _, a := range s.ofType("AWS::CloudWatch::Alarm") {
		p := props(a)
		name, _ := p["AlarmName"].(string)
		out[strings.TrimPrefix(name, prefix)] = p
	}
	return out
}

func TestEveryAlarmExistsWithItsMetric(t *testing.T) {
	s := synthesized(t)
	alarms := s.alarmsByName(t)
	relayID, _ := s.byPath(t, "Functions/Relay/Resource")
	sweeperID, _ := s.byPath(t, "Functions/Sweeper/Resource")
	smID, _ := s.byPath(t, "Workflow/StateMachine/Resource")
	relayDLQ, _ := s.byPath(t, "Events/RelayDLQ/Resource")
	consumerDLQ, _ := s.byPath(t, "Events/ConsumerDLQ/Resource")
	d := DefaultThresholds()

	for _, tc := range []struct {
		alarm, namespace, metric, statistic, dimension string
		threshold                                      float64
	}{
		{"ConditionalCheckFailed", "Seatsaga", MetricConditionalCheckFailed, "Sum", "", d.ConditionalCheckFailed},
		{"TransactionConflict", "Seatsaga", MetricTransactionConflict, "Sum", "", d.TransactionConflict},
		{"Throttled", "Seatsaga", MetricThrottled, "Sum", "", d.Throttled},
		{"CompensationOutcome", "Seatsaga", MetricCompensationOutcome, "Sum", "", d.CompensationOutcome},
		{"ExpiredHoldsUnreleased", "Seatsaga", MetricExpiredHoldsUnreleased, "Maximum", "", d.ExpiredHoldsUnreleased},
		{"ExpiredHoldOldestAgeSeconds", "Seatsaga", MetricExpiredHoldOldestAgeSeconds, "Maximum", "", d.ExpiredHoldOldestAgeSeconds},
		{"UnresolvedPayments", "Seatsaga", MetricUnresolvedPayments, "Maximum", "", d.UnresolvedPayments},
		{"UnresolvedPaymentOldestAgeSeconds", "Seatsaga", MetricUnresolvedPaymentOldestAgeSeconds, "Maximum", "", d.UnresolvedPaymentOldestAgeSeconds},
		{"ReconciliationBacklog", "Seatsaga", MetricReconciliationBacklog, "Maximum", "", d.ReconciliationBacklog},
		{"AuthorizationsNearCaptureDeadline", "Seatsaga", MetricAuthorizationsNearCaptureDeadline, "Maximum", "", d.AuthorizationsNearCaptureDeadline},
		{"SettlementEscalated", "Seatsaga", MetricSettlementEscalated, "Sum", "", d.SettlementEscalated},
		{"ProviderRefusals", "Seatsaga", MetricProviderRefusals, "Sum", "", d.ProviderRefusals},
		{"ExecutionsFailed", "AWS/States", "ExecutionsFailed", "Sum", smID, d.ExecutionsFailed},
		{"ExecutionsTimedOut", "AWS/States", "ExecutionsTimedOut", "Sum", smID, d.ExecutionsTimedOut},
		{"ExecutionTimeP99", "AWS/States", "ExecutionTime", "p99", smID, d.ExecutionTimeP99Seconds * 1000},
		{"RelayIteratorAge", "AWS/Lambda", "IteratorAge", "Maximum", relayID, d.StreamIteratorAgeSeconds * 1000},
		{"RelayDLQDepth", "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", relayDLQ, d.DLQDepth},
		{"RelayDLQOldestAge", "AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", relayDLQ, d.DLQOldestAgeSeconds},
		{"ConsumerDLQDepth", "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", consumerDLQ, d.DLQDepth},
		{"ConsumerDLQOldestAge", "AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", consumerDLQ, d.DLQOldestAgeSeconds},
		{"SweeperNotRunning", "AWS/Lambda", "Invocations", "Sum", sweeperID, 1},
	} {
		t.Run(tc.alarm, func(t *testing.T) {
			a, ok := alarms[tc.alarm]
			if !ok {
				t.Fatalf("alarm missing; have %v", keysOf(alarms))
			}
			if a["Namespace"] != tc.namespace || a["MetricName"] != tc.metric {
				t.Errorf("metric %v/%v, want %s/%s", a["Namespace"], a["MetricName"], tc.namespace, tc.metric)
			}
			stat := a["Statistic"]
			if stat == nil {
				stat = a["ExtendedStatistic"]
			}
			if stat != tc.statistic {
				t.Errorf("statistic %v, want %s", stat, tc.statistic)
			}
			if a["Threshold"] != tc.threshold {
				t.Errorf("threshold %v, want %v", a["Threshold"], tc.threshold)
			}
			dims := asJSON(a["Dimensions"])
			if tc.dimension == "" && a["Dimensions"] != nil {
				t.Errorf("custom metric alarm has dimensions %s; alarms read the dimensionless series", dims)
			}
			if tc.dimension != "" && !strings.Contains(dims, tc.dimension) {
				t.Errorf("dimensions %s, want %s", dims, tc.dimension)
			}
			if len(a["AlarmActions"].([]any)) != 1 {
				t.Errorf("alarm actions %s, want the alarm topic", asJSON(a["AlarmActions"]))
			}
			if d, _ := a["AlarmDescription"].(string); len(d) < 20 {
				t.Errorf("alarm description %q does not say what it means", d)
			}
		})
	}
	if got := len(s.ofType("AWS::CloudWatch::Dashboard")); got != 1 {
		t.Errorf("%d dashboards, want 1", got)
	}
}

func TestThresholdsComeFromProps(t *testing.T) {
	p := DefaultProps()
	p.Thresholds = Thresholds{TransactionConflict: 7, UnresolvedPaymentOldestAgeSeconds: 99}
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	alarms := s.alarmsByName(t)
	if got := alarms["TransactionConflict"]["Threshold"]; got != float64(7) {
		t.Errorf("TransactionConflict threshold %v, want 7", got)
	}
	if got := alarms["UnresolvedPaymentOldestAgeSeconds"]["Threshold"]; got != float64(99) {
		t.Errorf("UnresolvedPaymentOldestAgeSeconds threshold %v, want 99", got)
	}
	// Unset thresholds keep their defaults.
	if got := alarms["ConditionalCheckFailed"]["Threshold"]; got != DefaultThresholds().ConditionalCheckFailed {
		t.Errorf("ConditionalCheckFailed threshold %v, want the default", got)
	}
}
