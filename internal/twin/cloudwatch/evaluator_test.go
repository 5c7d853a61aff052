package cloudwatch

import (
	"reflect"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/clock"
)

func evaluatorAlarms() []alarms.Alarm {
	return []alarms.Alarm{
		{Name: "WebhookRejected", Metric: alarms.Metric{Namespace: alarms.Custom, Name: "WebhookRejected", Statistic: alarms.Sum, Period: 5 * time.Minute},
			Threshold: 1, Comparison: alarms.AtLeast, EvaluationPeriods: 1, DatapointsToAlarm: 1, TreatMissing: alarms.MissingNotBreaching},
		{Name: "ApiErrors", Metric: alarms.Metric{Namespace: alarms.Lambda, Name: "Errors", Subject: alarms.Subject{Kind: alarms.Function, Name: "api"}, Statistic: alarms.Sum, Period: 5 * time.Minute},
			Threshold: 1, Comparison: alarms.AtLeast, EvaluationPeriods: 1, DatapointsToAlarm: 1, TreatMissing: alarms.MissingNotBreaching},
	}
}

// On a fake clock the evaluator starts every alarm INSUFFICIENT_DATA, evaluates each minute,
// fires an alarm whose metric breaches in its sliding window, reads a subject's metric under
// its dimension only, and returns to OK once the window has slid past the breach.
func TestEvaluatorRecordsEveryTransitionOnTheClock(t *testing.T) {
	clk := clock.NewFake(t0.Add(30 * time.Second))
	store := NewStore()
	var told []Transition
	ev := NewEvaluator(EvaluatorOptions{
		Store: store, Clock: clk, Alarms: evaluatorAlarms(),
		Dimension: func(s alarms.Subject) string {
			if s.Kind != alarms.Function {
				t.Errorf("asked for the dimension of %v", s)
			}
			return "local-" + s.Name
		},
		OnTransition: func(tr Transition) { told = append(told, tr) },
	})
	ev.Start()
	t.Cleanup(ev.Stop)
	if s, _ := ev.State("WebhookRejected"); s != StateInsufficientData {
		t.Fatalf("initial state %s", s)
	}
	if st, _ := ev.Status("ApiErrors"); st.Series != SeriesOf(alarms.Lambda, "Errors", map[string]string{"FunctionName": "local-api"}) {
		t.Fatalf("ApiErrors reads %+v", st.Series)
	}
	if _, ok := ev.State("NoSuchAlarm"); ok {
		t.Fatal("an unknown alarm has a state")
	}

	// The first period (02:00–02:05) started before the evaluator did, but it ended after.
	clk.Advance(time.Minute) // 02:01:30: no period has ended since the start
	if s, _ := ev.State("WebhookRejected"); s != StateInsufficientData {
		t.Fatalf("at 02:01:30: %s", s)
	}
	store.Put(Datum{Namespace: alarms.Custom, Name: "WebhookRejected", Value: 1, Time: clk.Now()})
	// The function's errors under another function's name are another series.
	store.Put(Datum{Namespace: alarms.Lambda, Name: "Errors", Dimensions: map[string]string{"FunctionName": "local-webhook"}, Value: 1, Time: clk.Now()})
	clk.Advance(4 * time.Minute) // 02:05:30, evaluated at 02:05
	if s, _ := ev.State("WebhookRejected"); s != StateAlarm {
		t.Fatalf("at 02:05:30 WebhookRejected is %s", s)
	}
	// No data in a period the stack started in says nothing: the collection began in it.
	if s, _ := ev.State("ApiErrors"); s != StateInsufficientData {
		t.Fatalf("at 02:05:30 ApiErrors is %s", s)
	}
	clk.Advance(5 * time.Minute) // 02:10:30: a quiet period
	if s, _ := ev.State("WebhookRejected"); s != StateOK {
		t.Fatalf("at 02:10:30 WebhookRejected is %s", s)
	}

	want := []Transition{
		{Alarm: "WebhookRejected", From: StateInsufficientData, To: StateAlarm, Time: t0.Add(5 * time.Minute),
			Reason: "Threshold Crossed: 1 datapoint [1.0 (02/12/26 02:00:00)] was greater than or equal to the threshold (1.0)."},
		{Alarm: "ApiErrors", From: StateInsufficientData, To: StateOK, Time: t0.Add(6 * time.Minute),
			Reason: "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [NonBreaching]."},
		{Alarm: "WebhookRejected", From: StateAlarm, To: StateOK, Time: t0.Add(7 * time.Minute),
			Reason: "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [NonBreaching]."},
	}
	if got := ev.History(); !reflect.DeepEqual(got, want) {
		t.Fatalf("history\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(told, want) {
		t.Fatalf("told %+v", told)
	}
	if fired := ev.Fired(); len(fired) != 1 || fired[0] != want[0] {
		t.Fatalf("fired %+v", fired)
	}

	// An explicit evaluation needs no tick, and one that changes nothing records nothing.
	store.Put(Datum{Namespace: alarms.Lambda, Name: "Errors", Dimensions: map[string]string{"FunctionName": "local-api"}, Value: 1, Time: clk.Now()})
	if got := ev.EvaluateAt(t0.Add(15 * time.Minute)); len(got) != 1 || got[0].Alarm != "ApiErrors" || got[0].To != StateAlarm {
		t.Fatalf("explicit evaluation: %+v", got)
	}
	if got := ev.EvaluateAt(t0.Add(15 * time.Minute)); len(got) != 0 {
		t.Fatalf("the same evaluation again: %+v", got)
	}

	// Stopped, it no longer evaluates on the clock.
	ev.Stop()
	n := len(ev.History())
	clk.Advance(time.Hour)
	if len(ev.History()) != n {
		t.Fatal("evaluated after Stop")
	}
	if clk.Waiters() != 0 {
		t.Fatalf("%d timers left after Stop", clk.Waiters())
	}
}
