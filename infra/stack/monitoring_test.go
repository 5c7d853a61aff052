package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
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

// The template's alarms are exactly internal/alarms' definitions, value for value, so what
// the local stack evaluates is what CloudWatch evaluates.
func TestTheTemplatesAlarmsAreTheDefinitions(t *testing.T) {
	s := synthesized(t)
	rendered := s.alarmsByName(t)
	subjects := map[alarms.Subject]string{
		{Kind: alarms.StateMachine}:                    s.id(t, "Workflow/StateMachine/Resource"),
		{Kind: alarms.Queue, Name: deploy.RelayDLQ}:    s.id(t, "Events/RelayDLQ/Resource"),
		{Kind: alarms.Queue, Name: deploy.ConsumerDLQ}: s.id(t, "Events/ConsumerDLQ/Resource"),
		{Kind: alarms.Queue, Name: deploy.StarterDLQ}:  s.id(t, "Events/StarterDLQ/Resource"),
	}
	for _, fn := range deploy.Names() {
		subjects[alarms.Subject{Kind: alarms.Function, Name: fn}] = s.id(t, "Functions/"+alarms.Pascal(fn)+"/Resource")
	}
	defs := alarms.Definitions(DefaultProps().monitoringSettings())
	if len(rendered) != len(defs) {
		t.Errorf("%d alarms in the template, %d defined", len(rendered), len(defs))
	}
	for _, d := range defs {
		t.Run(d.Name, func(t *testing.T) {
			if err := renderedAs(rendered[d.Name], d, subjects); err != nil {
				t.Error(err)
			}
			a := rendered[d.Name]
			if len(a["AlarmActions"].([]any)) != 1 {
				t.Errorf("alarm actions %s, want the alarm topic", asJSON(a["AlarmActions"]))
			}
			if ok, _ := a["OKActions"].([]any); len(ok) != 1 || asJSON(ok) != asJSON(a["AlarmActions"]) {
				t.Errorf("OK actions %s, want the alarm topic too, so operators hear an alarm clear", asJSON(a["OKActions"]))
			}
			if a["AlarmDescription"] != d.Description || len(d.Description) < 40 {
				t.Errorf("alarm description %q does not say what it means and what to look at", a["AlarmDescription"])
			}
		})
	}
	if got := len(s.ofType("AWS::CloudWatch::Dashboard")); got != 1 {
		t.Errorf("%d dashboards, want 1", got)
	}
}

// The control: a definition that differs from the template in any value is caught.
func TestARenderedAlarmThatDiffersFromItsDefinitionIsCaught(t *testing.T) {
	s := synthesized(t)
	rendered := s.alarmsByName(t)
	subjects := map[alarms.Subject]string{{Kind: alarms.Function, Name: deploy.FnSweeper}: s.id(t, "Functions/Sweeper/Resource")}
	var errors alarms.Alarm
	for _, d := range alarms.Definitions(DefaultProps().monitoringSettings()) {
		if d.Name == "SweeperErrors" {
			errors = d
		}
	}
	if err := renderedAs(rendered["SweeperErrors"], errors, subjects); err != nil {
		t.Fatalf("the unchanged definition does not match: %v", err)
	}
	for name, change := range map[string]func(*alarms.Alarm){
		"threshold":     func(a *alarms.Alarm) { a.Threshold++ },
		"metric":        func(a *alarms.Alarm) { a.Metric.Name = "Invocations" },
		"statistic":     func(a *alarms.Alarm) { a.Metric.Statistic = alarms.Maximum },
		"period":        func(a *alarms.Alarm) { a.Metric.Period *= 2 },
		"periods":       func(a *alarms.Alarm) { a.EvaluationPeriods++ },
		"missing data":  func(a *alarms.Alarm) { a.TreatMissing = alarms.MissingBreaching },
		"comparison":    func(a *alarms.Alarm) { a.Comparison = alarms.Below },
		"subject":       func(a *alarms.Alarm) { a.Metric.Subject.Name = deploy.FnRelay },
		"datapoints":    func(a *alarms.Alarm) { a.DatapointsToAlarm = 0 },
		"dimensionless": func(a *alarms.Alarm) { a.Metric.Subject = alarms.Subject{} },
	} {
		d := errors
		change(&d)
		subjects[alarms.Subject{Kind: alarms.Function, Name: deploy.FnRelay}] = s.id(t, "Functions/Relay/Resource")
		if renderedAs(rendered["SweeperErrors"], d, subjects) == nil {
			t.Errorf("a definition with another %s passes as the rendered alarm", name)
		}
	}
}

// The alarms the fault matrix proves read the metrics the code emits: the producers'
// constants, or the AWS metric of the right resource.
func TestEveryMatrixAlarmWatchesWhatTheCodeEmits(t *testing.T) {
	// The stage's own namespace: Seatsaga/dev for the default props.
	ns := MetricsNamespace + "/" + DefaultProps().Stage + "/"
	defs := map[string]alarms.Alarm{}
	for _, d := range alarms.Definitions(DefaultProps().monitoringSettings()) {
		defs[d.Name] = d
	}
	for name, want := range map[string]string{
		"UnresolvedPayments":        ns + MetricUnresolvedPayments,
		"ReconciliationBacklog":     ns + MetricReconciliationBacklog,
		"WebhookRejected":           ns + MetricWebhookRejected,
		"UnknownPaymentMethods":     ns + MetricUnknownPaymentMethods,
		"Throttled":                 ns + MetricThrottled,
		"StepRetries":               ns + saga.MetricStepRetryableError,
		"OldestRunningExecutionAge": ns + sweeper.MetricOldestRunningExecutionAgeSeconds,
		"SweeperErrors":             "AWS/Lambda/Errors/sweeper",
		"SweeperNotRunning":         "AWS/Lambda/Invocations/sweeper",
		"ApiThrottles":              "AWS/Lambda/Throttles/api",
		"ExecutionsFailed":          "AWS/States/ExecutionsFailed",
		"ExecutionsTimedOut":        "AWS/States/ExecutionsTimedOut",
		"RelayDLQDepth":             "AWS/SQS/ApproximateNumberOfMessagesVisible/" + deploy.RelayDLQ,
		"ConsumerDLQDepth":          "AWS/SQS/ApproximateNumberOfMessagesVisible/" + deploy.ConsumerDLQ,
	} {
		d, ok := defs[name]
		if !ok {
			t.Errorf("no alarm %s", name)
			continue
		}
		got := d.Metric.Namespace + "/" + d.Metric.Name
		if d.Metric.Subject.Name != "" {
			got += "/" + d.Metric.Subject.Name
		}
		if got != want {
			t.Errorf("%s watches %s, want %s", name, got, want)
		}
	}
}

// renderedAs compares a template alarm's properties with its definition.
func renderedAs(a map[string]any, d alarms.Alarm, subjects map[alarms.Subject]string) error {
	if a == nil {
		return fmt.Errorf("not in the template")
	}
	stat := a["Statistic"]
	if stat == nil {
		stat = a["ExtendedStatistic"]
	}
	cmp := "GreaterThanOrEqualToThreshold"
	if d.Comparison == alarms.Below {
		cmp = "LessThanThreshold"
	}
	var diffs []string
	for what, pair := range map[string][2]any{
		"namespace":          {a["Namespace"], d.Metric.Namespace},
		"metric":             {a["MetricName"], d.Metric.Name},
		"statistic":          {stat, d.Metric.Statistic},
		"period":             {a["Period"], d.Metric.Period.Seconds()},
		"threshold":          {a["Threshold"], d.Threshold},
		"evaluation periods": {a["EvaluationPeriods"], float64(d.EvaluationPeriods)},
		"datapoints":         {a["DatapointsToAlarm"], float64(d.DatapointsToAlarm)},
		"comparison":         {a["ComparisonOperator"], cmp},
		"missing data":       {a["TreatMissingData"], string(d.TreatMissing)},
	} {
		if pair[0] != pair[1] {
			diffs = append(diffs, fmt.Sprintf("%s %v, defined %v", what, pair[0], pair[1]))
		}
	}
	dims := asJSON(a["Dimensions"])
	switch {
	case d.Metric.Subject.Kind == alarms.NoSubject:
		if a["Dimensions"] != nil {
			diffs = append(diffs, "dimensions "+dims+" on a custom metric; alarms read the dimensionless series")
		}
	case d.Metric.Subject.Kind == alarms.RestAPI:
		if !strings.Contains(dims, `"Name":"ApiName"`) {
			diffs = append(diffs, "dimensions "+dims+", want the API's name")
		}
	default:
		id, ok := subjects[d.Metric.Subject]
		if !ok || !strings.Contains(dims, `"Name":"`+d.Metric.Subject.Dimension()+`"`) || !strings.Contains(dims, `"`+id+`"`) {
			diffs = append(diffs, fmt.Sprintf("dimensions %s, want %s of %v", dims, d.Metric.Subject.Dimension(), d.Metric.Subject))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		return fmt.Errorf("%s", strings.Join(diffs, "; "))
	}
	return nil
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

// The runbook in infra/README.md has a line for every alarm the stack defines, and names no
// alarm that does not exist.
func TestTheRunbookHasALineForEveryAlarm(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(raw)
	if i := strings.Index(section, "\n## Alarms"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section[1:], "\n## "); i >= 0 {
		section = section[:i+1]
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, name := range regexp.MustCompile("`([A-Za-z0-9]+)`").FindAllStringSubmatch(cells[1], -1) {
			documented[name[1]] = true
		}
	}
	defined := map[string]bool{}
	for _, d := range alarms.Definitions(DefaultProps().monitoringSettings()) {
		defined[d.Name] = true
		if !documented[d.Name] {
			t.Errorf("%s has no runbook line in infra/README.md", d.Name)
		}
	}
	for name := range documented {
		if !defined[name] {
			t.Errorf("the runbook documents %s, which is not an alarm", name)
		}
	}
}
