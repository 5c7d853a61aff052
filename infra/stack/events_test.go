package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/starter"
)

// mappingsOf are the event source mappings that invoke the function of that construct id.
func mappingsOf(s *synth, functionID string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, m := range s.ofType("AWS::Lambda::EventSourceMapping") {
		if asJSON(props(m)["FunctionName"]) == `{"Ref":"`+functionID+`"}` {
			out[id] = m
		}
	}
	return out
}

func TestRelayReadsTheOutboxStreamWithBoundedRetriesAndADLQ(t *testing.T) {
	s := synthesized(t)
	if n := len(s.ofType("AWS::Lambda::EventSourceMapping")); n != 2 {
		t.Fatalf("%d event source mappings, want the relay's and the starter's", n)
	}
	relayID, _ := s.byPath(t, "Functions/Relay/Resource")
	mappings := mappingsOf(s, relayID)
	if len(mappings) != 1 {
		t.Fatalf("%d event source mappings of the relay, want 1", len(mappings))
	}
	outboxID, _ := s.byPath(t, "Data/Outbox/Resource")
	dlqID, _ := s.byPath(t, "Events/RelayDLQ/Resource")
	for _, m := range mappings {
		p := props(m)
		checks := []struct {
			what string
			got  any
			want string
		}{
			{"function", p["FunctionName"], `{"Ref":"` + relayID + `"}`},
			{"source", p["EventSourceArn"], `{"Fn::GetAtt":["` + outboxID + `","StreamArn"]}`},
			{"bisect", p["BisectBatchOnFunctionError"], `true`},
			{"retries", p["MaximumRetryAttempts"], fmt.Sprint(deploy.DefaultDelivery().RelayRetryAttempts)},
			{"item failures", p["FunctionResponseTypes"], `["ReportBatchItemFailures"]`},
			{"on failure", p["DestinationConfig"], `{"OnFailure":{"Destination":{"Fn::GetAtt":["` + dlqID + `","Arn"]}}}`},
			{"order", p["ParallelizationFactor"], `1`},
		}
		for _, c := range checks {
			if asJSON(c.got) != c.want {
				t.Errorf("%s = %s, want %s", c.what, asJSON(c.got), c.want)
			}
		}
	}
	_, relay := s.byPath(t, "Functions/Relay/Resource")
	busID, _ := s.byPath(t, "Events/Bus/Resource")
	env := asJSON(props(relay)["Environment"])
	if !strings.Contains(env, EnvEventBusName) || !strings.Contains(env, busID) {
		t.Errorf("relay environment %s lacks the bus name", env)
	}
	relayRole := s.functionRoleID(t, "relay")
	puts := false
	for _, st := range s.roleStatements(relayRole) {
		for _, a := range st.actions {
			if a == "events:PutEvents" && strings.Contains(strings.Join(st.resources, ","), busID) {
				puts = true
			}
		}
	}
	if !puts {
		t.Error("relay may not put events on the bus")
	}
}

// The template carries the spec's delivery settings (internal/deploy), the values the twin plays
// its event source mapping and asynchronous queue with, and none of its own.
func TestDeliverySettingsAreTheSpecs(t *testing.T) {
	s := synthesized(t)
	d := deploy.DefaultDelivery()
	secs := func(v interface{ Seconds() float64 }) string { return fmt.Sprint(v.Seconds()) }
	var esm map[string]any
	relayID, _ := s.byPath(t, "Functions/Relay/Resource")
	for _, m := range mappingsOf(s, relayID) {
		esm = props(m)
	}
	_, invokeConfig := s.byPath(t, "Events/ConsumerInvokeConfig/Resource")
	_, rule := s.byPath(t, "Events/ConsumerRule/Resource")
	targets, _ := props(rule)["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("consumer rule targets %s, want one", asJSON(props(rule)["Targets"]))
	}
	target, _ := targets[0].(map[string]any)
	for _, c := range []struct {
		what string
		got  any
		want string
	}{
		{"relay batch size", esm["BatchSize"], fmt.Sprint(d.RelayBatchSize)},
		{"relay retries", esm["MaximumRetryAttempts"], fmt.Sprint(d.RelayRetryAttempts)},
		{"relay record age", esm["MaximumRecordAgeInSeconds"], secs(d.RelayMaxRecordAge)},
		{"relay bisection", esm["BisectBatchOnFunctionError"], fmt.Sprint(d.RelayBisectBatchOnError)},
		{"consumer async retries", props(invokeConfig)["MaximumRetryAttempts"], fmt.Sprint(d.ConsumerRetryAttempts)},
		{"consumer async event age", props(invokeConfig)["MaximumEventAgeInSeconds"], secs(d.ConsumerMaxEventAge)},
		{"consumer rule retries", asJSON(target["RetryPolicy"]), fmt.Sprintf(`{"MaximumEventAgeInSeconds":%s,"MaximumRetryAttempts":%d}`,
			secs(d.ConsumerRuleMaxEventAge), d.ConsumerRuleRetryAttempts)},
	} {
		if got := fmt.Sprint(c.got); got != c.want {
			t.Errorf("%s = %s, want %s", c.what, got, c.want)
		}
	}
	for id, q := range s.ofType("AWS::SQS::Queue") {
		if got := fmt.Sprint(props(q)["MessageRetentionPeriod"]); got != secs(d.DLQRetention) {
			t.Errorf("queue %s keeps messages %s s, want the spec's %s", id, got, secs(d.DLQRetention))
		}
	}
}

// Context overrides the relay's batch size and retries for one stage; the rest of the delivery
// stays the spec's.
func TestContextOverridesTheRelaysDelivery(t *testing.T) {
	p, err := PropsFromContext(func(k string) any {
		return map[string]any{CtxRelayBatchSize: "50", CtxRelayRetryAttempts: "3"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	relayID, _ := s.byPath(t, "Functions/Relay/Resource")
	for _, m := range mappingsOf(s, relayID) {
		esm := props(m)
		if esm["BatchSize"] != float64(50) || esm["MaximumRetryAttempts"] != float64(3) {
			t.Errorf("mapping %s, want batch size 50 and 3 retries from context", asJSON(esm))
		}
		if esm["MaximumRecordAgeInSeconds"] != deploy.DefaultDelivery().RelayMaxRecordAge.Seconds() {
			t.Errorf("mapping record age %v, want the spec's", esm["MaximumRecordAgeInSeconds"])
		}
	}
}

func TestConsumerRuleHasADLQAndQueuesAreEncryptedAndTLSOnly(t *testing.T) {
	s := synthesized(t)
	_, rule := s.byPath(t, "Events/ConsumerRule/Resource")
	p := props(rule)
	busID, _ := s.byPath(t, "Events/Bus/Resource")
	consumerID, _ := s.byPath(t, "Functions/Consumer/Resource")
	dlqID, _ := s.byPath(t, "Events/ConsumerDLQ/Resource")
	if !strings.Contains(asJSON(p["EventBusName"]), busID) {
		t.Errorf("rule on bus %s, want %s", asJSON(p["EventBusName"]), busID)
	}
	if asJSON(p["EventPattern"]) != `{"source":["`+EventSource+`"]}` {
		t.Errorf("pattern %s", asJSON(p["EventPattern"]))
	}
	targets := asJSON(p["Targets"])
	if !strings.Contains(targets, consumerID) || !strings.Contains(targets, `"DeadLetterConfig":{"Arn":{"Fn::GetAtt":["`+dlqID+`","Arn"]}}`) {
		t.Errorf("targets %s, want the consumer with its DLQ", targets)
	}
	for id, q := range s.ofType("AWS::SQS::Queue") {
		qp := props(q)
		if qp["SqsManagedSseEnabled"] != true || qp["MessageRetentionPeriod"] != float64(14*24*3600) {
			t.Errorf("queue %s: %s; want SSE and 14 days", id, asJSON(qp))
		}
	}
	if got := len(s.ofType("AWS::SQS::QueuePolicy")); got != 3 {
		t.Errorf("%d queue policies, want one TLS-only policy per DLQ", got)
	}
	for _, qp := range s.ofType("AWS::SQS::QueuePolicy") {
		if !strings.Contains(asJSON(props(qp)), `"aws:SecureTransport":"false"`) {
			t.Errorf("queue policy does not deny plain HTTP: %s", asJSON(props(qp)))
		}
	}
}

func TestSweeperRunsOnARateSchedule(t *testing.T) {
	s := synthesized(t)
	_, rule := s.byPath(t, "Schedules/SweeperRule/Resource")
	p := props(rule)
	sweeperID, _ := s.byPath(t, "Functions/Sweeper/Resource")
	if p["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("schedule %v", p["ScheduleExpression"])
	}
	if !strings.Contains(asJSON(p["Targets"]), sweeperID) {
		t.Errorf("targets %s, want the sweeper", asJSON(p["Targets"]))
	}
}

// A tick the sweeper cannot take (its one reserved slot is busy) or a failed sweep is dropped,
// not queued by Lambda for hours behind the next tick that does the same work.
func TestAThrottledOrFailedSweepIsNotRetriedByLambda(t *testing.T) {
	s := synthesized(t)
	_, cfg := s.byPath(t, "Schedules/SweeperInvokeConfig/Resource")
	p := props(cfg)
	if p["MaximumRetryAttempts"] != float64(0) || p["MaximumEventAgeInSeconds"] != float64(60) {
		t.Errorf("the sweeper's invoke config %s, want no retries and events at most 60 s old", asJSON(p))
	}
}

// An account whose concurrency quota cannot spare the reservations deploys without them.
func TestReservedConcurrencyCanBeLeftOut(t *testing.T) {
	p := DefaultProps()
	p.WithoutReservedConcurrency = true
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	for id, r := range s.ofType("AWS::Lambda::Function") {
		if v, ok := props(r)["ReservedConcurrentExecutions"]; ok {
			t.Errorf("%s reserves %v", id, v)
		}
	}
	// The control: the default stack reserves the webhook's and the sweeper's.
	reserved := 0
	for _, r := range synthesized(t).ofType("AWS::Lambda::Function") {
		if _, ok := props(r)["ReservedConcurrentExecutions"]; ok {
			reserved++
		}
	}
	if reserved != 2 {
		t.Errorf("the default stack reserves concurrency for %d functions, want 2", reserved)
	}
}

func TestSecretsHoldNoValueInTheTemplate(t *testing.T) {
	s := synthesized(t)
	secrets := s.ofType("AWS::SecretsManager::Secret")
	if len(secrets) != 2 {
		t.Fatalf("%d secrets, want 2", len(secrets))
	}
	for id, r := range secrets {
		if _, ok := props(r)["SecretString"]; ok {
			t.Errorf("secret %s carries a value in the template", id)
		}
		if _, ok := props(r)["GenerateSecretString"]; !ok {
			t.Errorf("secret %s has no generated placeholder value", id)
		}
	}
}

// The starter reads the Admissions stream with the spec's delivery, is invoked only for queued
// starts (the filter is internal/starter's, which the twin applies too), reports item failures
// and parks what it could not start in its DLQ.
func TestTheStarterReadsTheAdmissionsStreamForQueuedStartsOnly(t *testing.T) {
	s := synthesized(t)
	starterID, _ := s.byPath(t, "Functions/Starter/Resource")
	admissionsID, _ := s.byPath(t, "Data/Admissions/Resource")
	dlqID, _ := s.byPath(t, "Events/StarterDLQ/Resource")
	mappings := mappingsOf(s, starterID)
	if len(mappings) != 1 {
		t.Fatalf("%d event source mappings of the starter, want 1", len(mappings))
	}
	d := deploy.DefaultDelivery()
	for _, m := range mappings {
		p := props(m)
		for _, c := range []struct {
			what string
			got  any
			want string
		}{
			{"source", p["EventSourceArn"], `{"Fn::GetAtt":["` + admissionsID + `","StreamArn"]}`},
			{"batch", p["BatchSize"], fmt.Sprint(d.StarterBatchSize)},
			{"retries", p["MaximumRetryAttempts"], fmt.Sprint(d.StarterRetryAttempts)},
			{"record age", p["MaximumRecordAgeInSeconds"], fmt.Sprint(d.StarterMaxRecordAge.Seconds())},
			{"item failures", p["FunctionResponseTypes"], `["ReportBatchItemFailures"]`},
			{"on failure", p["DestinationConfig"], `{"OnFailure":{"Destination":{"Fn::GetAtt":["` + dlqID + `","Arn"]}}}`},
		} {
			if asJSON(c.got) != c.want {
				t.Errorf("%s = %s, want %s", c.what, asJSON(c.got), c.want)
			}
		}
		var filters struct{ Filters []struct{ Pattern string } }
		if err := json.Unmarshal([]byte(asJSON(p["FilterCriteria"])), &filters); err != nil || len(filters.Filters) != 1 {
			t.Fatalf("filter criteria %s: %v", asJSON(p["FilterCriteria"]), err)
		}
		var got, want any
		_ = json.Unmarshal([]byte(filters.Filters[0].Pattern), &got)
		_ = json.Unmarshal([]byte(starter.FilterPattern), &want)
		if asJSON(got) != asJSON(want) {
			t.Errorf("filter %s, want starter.FilterPattern %s", filters.Filters[0].Pattern, starter.FilterPattern)
		}
	}
}
