package stack

import (
	"strings"
	"testing"
)

func TestRelayReadsTheOutboxStreamWithBoundedRetriesAndADLQ(t *testing.T) {
	s := synthesized(t)
	mappings := s.ofType("AWS::Lambda::EventSourceMapping")
	if len(mappings) != 1 {
		t.Fatalf("%d event source mappings, want 1", len(mappings))
	}
	relayID, _ := s.byPath(t, "Functions/Relay/Resource")
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
			{"retries", p["MaximumRetryAttempts"], `5`},
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
	if got := len(s.ofType("AWS::SQS::QueuePolicy")); got != 2 {
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
