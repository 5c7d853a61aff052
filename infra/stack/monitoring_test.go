package stack

import (
	"encoding/json"
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
	apiID, _ := s.byPath(t, "Functions/Api/Resource")
	webhookID, _ := s.byPath(t, "Functions/Webhook/Resource")
	consumerID, _ := s.byPath(t, "Functions/Consumer/Resource")
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
		{"SweeperErrors", "AWS/Lambda", "Errors", "Sum", sweeperID, 1},
		{"WebhookRejected", "Seatsaga", MetricWebhookRejected, "Sum", "", 1},
		{"WebhookUnverifiable", "Seatsaga", MetricWebhookUnverifiable, "Sum", "", 1},
		{"ApiErrors", "AWS/Lambda", "Errors", "Sum", apiID, 1},
		{"ApiThrottles", "AWS/Lambda", "Throttles", "Sum", apiID, 1},
		{"WebhookErrors", "AWS/Lambda", "Errors", "Sum", webhookID, 1},
		{"WebhookThrottles", "AWS/Lambda", "Throttles", "Sum", webhookID, 1},
		{"RelayErrors", "AWS/Lambda", "Errors", "Sum", relayID, 1},
		{"RelayThrottles", "AWS/Lambda", "Throttles", "Sum", relayID, 1},
		{"ConsumerErrors", "AWS/Lambda", "Errors", "Sum", consumerID, 1},
		{"ConsumerThrottles", "AWS/Lambda", "Throttles", "Sum", consumerID, 1},
		{"ExecutionsThrottled", "AWS/States", "ExecutionThrottled", "Sum", smID, 1},
		{"Api5xx", "AWS/ApiGateway", "5XXError", "Sum", "", 10},
		{"ApiLatencyP99", "AWS/ApiGateway", "Latency", "p99", "", 5000},
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
			if tc.namespace == "AWS/ApiGateway" {
				// API Gateway's series are named by the API.
				if !strings.Contains(dims, "ApiName") {
					t.Errorf("dimensions %s, want the API's name", dims)
				}
			} else if tc.dimension == "" && a["Dimensions"] != nil {
				t.Errorf("custom metric alarm has dimensions %s; alarms read the dimensionless series", dims)
			}
			if tc.dimension != "" && !strings.Contains(dims, tc.dimension) {
				t.Errorf("dimensions %s, want %s", dims, tc.dimension)
			}
			if len(a["AlarmActions"].([]any)) != 1 {
				t.Errorf("alarm actions %s, want the alarm topic", asJSON(a["AlarmActions"]))
			}
			if ok, _ := a["OKActions"].([]any); len(ok) != 1 || asJSON(ok) != asJSON(a["AlarmActions"]) {
				t.Errorf("OK actions %s, want the alarm topic too, so operators hear an alarm clear", asJSON(a["OKActions"]))
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

// The topic's policy is the only one it has (EnforceSSL writes it): it must let CloudWatch
// publish, for this account's alarms of this stack only, or no alarm reaches anyone.
func TestTheAlarmTopicLetsThisStacksAlarmsPublish(t *testing.T) {
	s := synthesized(t)
	policies := s.ofType("AWS::SNS::TopicPolicy")
	if len(policies) != 1 {
		t.Fatalf("%d topic policies, want 1", len(policies))
	}
	var doc struct {
		Statement []struct {
			Sid       string
			Effect    string
			Principal any
			Action    any
			Condition map[string]map[string]any
		}
	}
	for _, p := range policies {
		raw := asJSON(props(p)["PolicyDocument"])
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatal(err)
		}
	}
	var allows int
	for _, st := range doc.Statement {
		if st.Effect != "Allow" {
			continue
		}
		allows++
		if asJSON(st.Principal) != `{"Service":"cloudwatch.amazonaws.com"}` || asJSON(st.Action) != `"sns:Publish"` {
			t.Errorf("an Allow for %s of %s, want CloudWatch's sns:Publish", asJSON(st.Principal), asJSON(st.Action))
		}
		if asJSON(st.Condition["StringEquals"]["aws:SourceAccount"]) != `{"Ref":"AWS::AccountId"}` {
			t.Errorf("the publish is not limited to this account: %s", asJSON(st.Condition))
		}
		if src := asJSON(st.Condition["ArnLike"]["aws:SourceArn"]); !strings.Contains(src, ":alarm:"+*s.stack.StackName()+"-*") {
			t.Errorf("the publish is not limited to this stack's alarms: %s", src)
		}
	}
	if allows != 1 {
		t.Errorf("%d Allow statements, want the one for CloudWatch", allows)
	}
}

// The sweeper's gauges are published on every run: when they go silent the sweeper has
// stopped or fails, and that must not read as a healthy backlog.
func TestSilentSweeperGaugesBreach(t *testing.T) {
	alarms := synthesized(t).alarmsByName(t)
	for _, name := range []string{"ExpiredHoldsUnreleased", "ExpiredHoldOldestAgeSeconds", "UnresolvedPayments",
		"UnresolvedPaymentOldestAgeSeconds", "ReconciliationBacklog", "AuthorizationsNearCaptureDeadline", "SweeperNotRunning"} {
		if got := alarms[name]["TreatMissingData"]; got != "breaching" {
			t.Errorf("%s treats missing data as %v, want breaching", name, got)
		}
	}
	// The control: an alarm on a count that is absent when nothing happens stays quiet.
	if got := alarms["WebhookRejected"]["TreatMissingData"]; got != "notBreaching" {
		t.Errorf("WebhookRejected treats missing data as %v, want notBreaching", got)
	}
}
