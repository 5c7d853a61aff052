package cloudwatch

import (
	"math"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
)

// t0 is a period boundary: 2 December 2026, 02:00 UTC.
var t0 = time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)

func at(d time.Duration, v float64) Datum { return Datum{Value: v, Time: t0.Add(d)} }

func TestAggregateComputesCloudWatchStatistics(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted on purpose
	}
	cases := []struct {
		statistic string
		values    []float64
		want      float64
	}{
		{alarms.Sum, []float64{1, 2, 3.5}, 6.5},
		{alarms.Maximum, []float64{3, 9, -1}, 9},
		{Minimum, []float64{3, 9, -1}, -1},
		{Average, []float64{1, 2, 3, 6}, 3},
		{SampleCount, []float64{0, 0, 0}, 3},
		// Nearest rank: rank ceil(0.99 × 100) = 99 of 1 … 100.
		{alarms.P99, hundred, 99},
		// Fewer than a hundred values: p99 is the largest.
		{alarms.P99, []float64{10, 5000, 20}, 5000},
		{"p50", []float64{4, 1, 3, 2}, 2},
		{"p99.9", hundred, 100},
		{"p100", []float64{1, 7, 3}, 7},
		{"p0", []float64{5, 1, 3}, 1},
	}
	for _, c := range cases {
		got, err := Aggregate(c.statistic, c.values)
		if err != nil || got != c.want {
			t.Errorf("%s of %v = %v, %v; want %v", c.statistic, c.values, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "Median", "p", "p101", "px"} {
		if _, err := Aggregate(bad, []float64{1}); err == nil {
			t.Errorf("statistic %q accepted", bad)
		}
	}
	if _, err := Aggregate(alarms.Sum, nil); err == nil {
		t.Error("a statistic of no values accepted")
	}
}

func TestJavaDoubleWritesValuesAsCloudWatchReasonsDo(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0.0", 1: "1.0", 3: "3.0", 0.25: "0.25", -2: "-2.0", 1800000: "1800000.0", 1e7: "1.0E7",
		1.5e-4: "1.5E-4", 12345678.9: "1.23456789E7", math.Inf(1): "Infinity",
	} {
		if got := javaDouble(v); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestEvaluateDecidesTheStateAsCloudWatchDoes(t *testing.T) {
	five := 5 * time.Minute
	sum1 := alarms.Alarm{Name: "WebhookRejected", Metric: alarms.Metric{Statistic: alarms.Sum, Period: five},
		Threshold: 1, Comparison: alarms.AtLeast, EvaluationPeriods: 1, DatapointsToAlarm: 1, TreatMissing: alarms.MissingNotBreaching}
	max3 := alarms.Alarm{Name: "UnresolvedPayments", Metric: alarms.Metric{Statistic: alarms.Maximum, Period: five},
		Threshold: 10, Comparison: alarms.AtLeast, EvaluationPeriods: 3, DatapointsToAlarm: 3, TreatMissing: alarms.MissingBreaching}
	heartbeat := alarms.Alarm{Name: "SweeperNotRunning", Metric: alarms.Metric{Statistic: alarms.Sum, Period: time.Minute},
		Threshold: 1, Comparison: alarms.Below, EvaluationPeriods: 3, DatapointsToAlarm: 3, TreatMissing: alarms.MissingBreaching}
	p99 := alarms.Alarm{Name: "ApiLatencyP99", Metric: alarms.Metric{Statistic: alarms.P99, Period: five},
		Threshold: 5000, Comparison: alarms.AtLeast, EvaluationPeriods: 2, DatapointsToAlarm: 2, TreatMissing: alarms.MissingNotBreaching}
	twoOfThree := max3
	twoOfThree.DatapointsToAlarm, twoOfThree.TreatMissing = 2, alarms.MissingNotBreaching
	missing := sum1
	missing.TreatMissing = ""
	ignore := sum1
	ignore.TreatMissing = MissingIgnore

	latencies := func(start time.Duration, slow float64) []Datum {
		var out []Datum
		for i := 0; i < 99; i++ {
			out = append(out, at(start+time.Duration(i)*time.Second, 40))
		}
		return append(out, at(start+100*time.Second, slow))
	}

	cases := []struct {
		name   string
		alarm  alarms.Alarm
		points []Datum
		at     time.Duration
		// since is when the series began to be collected, from t0; noSince: always.
		since    time.Duration
		noSince  bool
		previous State
		want     State
		reason   string
	}{
		{
			name: "Sum over one period: a breach alarms", alarm: sum1,
			points: []Datum{at(11*time.Minute, 2), at(12*time.Minute, 1), at(16*time.Minute, 50)}, at: 15*time.Minute + 30*time.Second,
			want: StateAlarm, reason: "Threshold Crossed: 1 datapoint [3.0 (02/12/26 02:10:00)] was greater than or equal to the threshold (1.0).",
		},
		{
			name: "Sum over a sliding window: the last five minutes are judged at each minute, not at the period's boundary", alarm: sum1,
			points: []Datum{at(16*time.Minute, 50)}, at: 19 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 1 datapoint [50.0 (02/12/26 02:14:00)] was greater than or equal to the threshold (1.0).",
		},
		{
			name: "Sum over a sliding window: a point just before a period boundary is still judged after it", alarm: sum1,
			points: []Datum{at(14*time.Minute+30*time.Second, 1)}, at: 16 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 1 datapoint [1.0 (02/12/26 02:11:00)] was greater than or equal to the threshold (1.0).",
		},
		{
			name: "Sum over one period: a point on the boundary belongs to the period it starts", alarm: sum1,
			points: []Datum{at(15*time.Minute, 4)}, at: 20 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 1 datapoint [4.0 (02/12/26 02:15:00)] was greater than or equal to the threshold (1.0).",
		},
		{
			name: "Sum over one period: below the threshold is OK", alarm: sum1,
			points: []Datum{at(11*time.Minute, 0), at(12*time.Minute, 0)}, at: 15 * time.Minute,
			want: StateOK, reason: "Threshold Crossed: 1 datapoint [0.0 (02/12/26 02:10:00)] was not greater than or equal to the threshold (1.0).",
		},
		{
			name: "Maximum over three periods: missing periods breach, so one high period alarms", alarm: max3,
			points: []Datum{at(11*time.Minute, 4), at(12*time.Minute, 12)}, at: 15 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 3 out of the last 3 datapoints [12.0 (02/12/26 02:10:00)] were greater than or equal to the threshold (10.0) (minimum 3 datapoints for OK -> ALARM transition).",
		},
		{
			name: "Maximum over three periods: one period below the threshold keeps it OK", alarm: max3,
			points: []Datum{at(11*time.Minute, 12), at(6*time.Minute, 3)}, at: 15 * time.Minute,
			want: StateOK, reason: "Threshold Crossed: 1 out of the last 3 datapoints [3.0 (02/12/26 02:05:00)] was not greater than or equal to the threshold (10.0) (minimum 1 datapoint for ALARM -> OK transition).",
		},
		{
			name: "Maximum over three periods: three high periods alarm", alarm: max3,
			points: []Datum{at(1*time.Minute, 11), at(6*time.Minute, 15), at(11*time.Minute, 12)}, at: 15 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 3 out of the last 3 datapoints [12.0 (02/12/26 02:10:00), 15.0 (02/12/26 02:05:00), 11.0 (02/12/26 02:00:00)] were greater than or equal to the threshold (10.0) (minimum 3 datapoints for OK -> ALARM transition).",
		},
		{
			name: "Maximum over three periods: nothing received at all alarms", alarm: max3,
			at:   15 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: no datapoints were received for 3 periods and 3 missing datapoints were treated as [Breaching].",
		},
		{
			name: "two of three: two breaching periods alarm", alarm: twoOfThree,
			points: []Datum{at(1*time.Minute, 11), at(6*time.Minute, 2), at(11*time.Minute, 12)}, at: 15 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 2 out of the last 3 datapoints [12.0 (02/12/26 02:10:00), 11.0 (02/12/26 02:00:00)] were greater than or equal to the threshold (10.0) (minimum 2 datapoints for OK -> ALARM transition).",
		},
		{
			name: "heartbeat: an invocation every period is OK", alarm: heartbeat,
			points: []Datum{at(12*time.Minute, 1), at(13*time.Minute, 1), at(14*time.Minute, 1)}, at: 15 * time.Minute,
			want: StateOK, reason: "Threshold Crossed: 3 out of the last 3 datapoints [1.0 (02/12/26 02:14:00), 1.0 (02/12/26 02:13:00), 1.0 (02/12/26 02:12:00)] were not less than the threshold (1.0) (minimum 1 datapoint for ALARM -> OK transition).",
		},
		{
			name: "heartbeat: one invocation in the oldest period still proves it ran", alarm: heartbeat,
			points: []Datum{at(12*time.Minute, 1)}, at: 15 * time.Minute,
			want: StateOK, reason: "Threshold Crossed: 1 out of the last 3 datapoints [1.0 (02/12/26 02:12:00)] was not less than the threshold (1.0) (minimum 1 datapoint for ALARM -> OK transition).",
		},
		{
			name: "heartbeat: silence for three periods alarms", alarm: heartbeat,
			points: []Datum{at(11*time.Minute, 1)}, at: 15 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: no datapoints were received for 3 periods and 3 missing datapoints were treated as [Breaching].",
		},
		{
			name: "p99 over two periods: one slow request in a hundred is the 100th percentile, not the 99th", alarm: p99,
			points: append(latencies(5*time.Minute, 9000), latencies(10*time.Minute, 9000)...), at: 15 * time.Minute,
			want: StateOK, reason: "Threshold Crossed: 2 out of the last 2 datapoints [40.0 (02/12/26 02:10:00), 40.0 (02/12/26 02:05:00)] were not greater than or equal to the threshold (5000.0) (minimum 1 datapoint for ALARM -> OK transition).",
		},
		{
			name: "p99 over two periods: slow in both periods alarms", alarm: p99,
			points: append(append(latencies(5*time.Minute, 9000), at(6*time.Minute, 7000)), append(latencies(10*time.Minute, 9000), at(11*time.Minute, 6000))...), at: 15 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 2 out of the last 2 datapoints [6000.0 (02/12/26 02:10:00), 7000.0 (02/12/26 02:05:00)] were greater than or equal to the threshold (5000.0) (minimum 2 datapoints for OK -> ALARM transition).",
		},
		{
			name: "insufficient data at start: no period has ended since collection began", alarm: sum1,
			at: 3 * time.Minute, since: time.Minute,
			want: StateInsufficientData, reason: "Insufficient Data: 1 datapoint was unknown.",
		},
		{
			name: "insufficient data at start: the heartbeat's unknown periods could still breach", alarm: heartbeat,
			at:   time.Minute + 10*time.Second,
			want: StateInsufficientData, reason: "Insufficient Data: 2 datapoints were unknown.",
		},
		{
			name: "at start: one invocation already rules out the heartbeat alarm", alarm: heartbeat,
			points: []Datum{at(30*time.Second, 1)}, at: time.Minute + 5*time.Second,
			want: StateOK, reason: "Threshold Crossed: 1 out of the last 3 datapoints [1.0 (02/12/26 02:00:00)] was not less than the threshold (1.0) (minimum 1 datapoint for ALARM -> OK transition).",
		},
		{
			name: "at start: data in a period that began before collection counts", alarm: sum1,
			points: []Datum{at(4*time.Minute, 2)}, at: 5 * time.Minute, since: 3 * time.Minute,
			want: StateAlarm, reason: "Threshold Crossed: 1 datapoint [2.0 (02/12/26 02:00:00)] was greater than or equal to the threshold (1.0).",
		},
		{
			name: "missing data treated as missing: no data is insufficient", alarm: missing,
			at: 15 * time.Minute, noSince: true,
			want: StateInsufficientData, reason: "Insufficient Data: 1 datapoint was unknown.",
		},
		{
			name: "missing data ignored: no data keeps the state", alarm: ignore,
			at: 15 * time.Minute, noSince: true, previous: StateAlarm,
			want: StateAlarm, reason: "Threshold Crossed: no datapoints were received for 1 period; missing data is ignored, so the state stays ALARM.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			since := t0.Add(c.since)
			if c.noSince {
				since = time.Time{}
			}
			previous := c.previous
			if previous == "" {
				previous = StateInsufficientData
			}
			got := Evaluate(c.alarm, c.points, t0.Add(c.at), since, previous)
			if got.State != c.want || got.Reason != c.reason {
				t.Fatalf("got  %s %q\nwant %s %q", got.State, got.Reason, c.want, c.reason)
			}
			if len(got.Periods) != max(c.alarm.EvaluationPeriods, 1) {
				t.Errorf("evaluated %d periods, want %d", len(got.Periods), c.alarm.EvaluationPeriods)
			}
		})
	}
}
