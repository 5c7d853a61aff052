package alarms

import (
	"strings"
	"testing"
	"time"
)

func deployed() Settings {
	return Deployed("", Thresholds{}, time.Minute)
}

func TestEveryAlarmIsNamedOnceAndComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Definitions(deployed()) {
		if seen[a.Name] {
			t.Errorf("%s defined twice", a.Name)
		}
		seen[a.Name] = true
		if a.Threshold <= 0 && a.Comparison == AtLeast {
			t.Errorf("%s: threshold %v would always be breached", a.Name, a.Threshold)
		}
		if a.EvaluationPeriods < 1 || a.DatapointsToAlarm != a.EvaluationPeriods {
			t.Errorf("%s: %d of %d periods", a.Name, a.DatapointsToAlarm, a.EvaluationPeriods)
		}
		if a.Metric.Period <= 0 || a.Metric.Period%time.Minute != 0 {
			t.Errorf("%s: period %s is not whole minutes", a.Name, a.Metric.Period)
		}
		if (!strings.HasPrefix(a.Metric.Namespace, "AWS/")) != (a.Metric.Subject.Kind == NoSubject) {
			t.Errorf("%s: custom metrics, and only they, are read without a subject", a.Name)
		}
	}
	for _, name := range []string{"SweeperErrors", "ApiErrors", "ApiThrottles", "ConsumerThrottles", "RelayDLQDepth", "ConsumerDLQOldestAge", "Api5xx"} {
		if !seen[name] {
			t.Errorf("no %s", name)
		}
	}
	if seen["SweeperThrottles"] {
		t.Error("SweeperThrottles defined: the sweeper's one reserved slot throttles overlapping ticks by design")
	}
}

func TestADeploymentWithoutTheAPIHasNoAPIAlarms(t *testing.T) {
	s := deployed()
	s.API, s.Unrouted, s.DLQs = false, nil, nil
	for _, a := range Definitions(s) {
		if a.Metric.Namespace == APIGateway || a.Metric.Namespace == SQS {
			t.Errorf("%s defined for a deployment without it", a.Name)
		}
	}
}

func TestUnsetThresholdsTakeTheirDefaults(t *testing.T) {
	got := Thresholds{TransactionConflict: 7}.WithDefaults()
	if got.TransactionConflict != 7 {
		t.Errorf("TransactionConflict %v, want the override 7", got.TransactionConflict)
	}
	d := DefaultThresholds()
	for name, p := range got.ByName() {
		if name != "TransactionConflict" && *p != *d.ByName()[name] {
			t.Errorf("%s %v, want the default %v", name, *p, *d.ByName()[name])
		}
		if *d.ByName()[name] <= 0 {
			t.Errorf("%s has no default", name)
		}
	}
}

func TestThresholdsReachTheirAlarms(t *testing.T) {
	s := deployed()
	s.Thresholds = Thresholds{StepRetries: 3, ApiLatencyP99Seconds: 2, DLQDepth: 4}
	want := map[string]float64{"StepRetries": 3, "ApiLatencyP99": 2000, "RelayDLQDepth": 4, "ConsumerDLQDepth": 4}
	for _, a := range Definitions(s) {
		if w, ok := want[a.Name]; ok && a.Threshold != w {
			t.Errorf("%s threshold %v, want %v", a.Name, a.Threshold, w)
		}
	}
}

func TestBreachesComparesAsCloudWatchDoes(t *testing.T) {
	for _, tc := range []struct {
		cmp  Comparison
		v    float64
		want bool
	}{{AtLeast, 1, true}, {AtLeast, 0.99, false}, {Below, 1, false}, {Below, 0, true}} {
		if got := (Alarm{Threshold: 1, Comparison: tc.cmp}).Breaches(tc.v); got != tc.want {
			t.Errorf("%s 1 with %v: %v, want %v", tc.cmp, tc.v, got, tc.want)
		}
	}
}

func TestPascal(t *testing.T) {
	for in, want := range map[string]string{"relay": "Relay", "relay-dlq": "RelayDlq", "Relay": "Relay", "a_b": "AB"} {
		if got := Pascal(in); got != want {
			t.Errorf("Pascal(%q) = %q, want %q", in, got, want)
		}
	}
}

// Each stage's alarms read its own custom metrics, never another stage's.
func TestAStagesAlarmsReadItsOwnNamespace(t *testing.T) {
	for _, a := range Definitions(Deployed(StageNamespace("prod"), Thresholds{}, time.Minute)) {
		if a.Metric.Subject.Kind == NoSubject && a.Metric.Namespace != "Seatsaga/prod" {
			t.Errorf("%s reads %s", a.Name, a.Metric.Namespace)
		}
	}
}
