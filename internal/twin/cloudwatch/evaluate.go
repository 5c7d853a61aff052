package cloudwatch

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
)

// State is an alarm's state, with CloudWatch's names.
type State string

// The three states of a CloudWatch alarm. Every alarm starts INSUFFICIENT_DATA.
const (
	StateOK               State = "OK"
	StateAlarm            State = "ALARM"
	StateInsufficientData State = "INSUFFICIENT_DATA"
)

// Missing-data treatments CloudWatch knows besides the two internal/alarms uses. An alarm
// whose TreatMissing is empty treats missing data as MissingMissing, CloudWatch's default.
const (
	MissingMissing alarms.Missing = "missing"
	MissingIgnore  alarms.Missing = "ignore"
)

// Statistics CloudWatch computes besides the ones internal/alarms names (Sum, Maximum and
// percentiles "pNN" or "pNN.N").
const (
	Minimum     = "Minimum"
	Average     = "Average"
	SampleCount = "SampleCount"
)

// Aggregate computes a statistic over the values of one period (at least one value).
//
// Percentiles use the nearest-rank definition: pNN is the smallest value such that at least
// NN% of the values are less than or equal to it, i.e. the value of rank ceil(NN/100 × n) in
// ascending order, one of the values themselves and never an interpolation between two, which
// is what CloudWatch reports for a period whose values it holds exactly. So p99 of fewer than
// a hundred values is their maximum, and p50 of [1, 2, 3, 4] is 2.
func Aggregate(statistic string, values []float64) (float64, error) {
	if len(values) == 0 {
		return 0, fmt.Errorf("cloudwatch: %s of no values", statistic)
	}
	switch statistic {
	case alarms.Sum, Average:
		var sum float64
		for _, v := range values {
			sum += v
		}
		if statistic == Average {
			return sum / float64(len(values)), nil
		}
		return sum, nil
	case alarms.Maximum:
		m := values[0]
		for _, v := range values[1:] {
			m = math.Max(m, v)
		}
		return m, nil
	case Minimum:
		m := values[0]
		for _, v := range values[1:] {
			m = math.Min(m, v)
		}
		return m, nil
	case SampleCount:
		return float64(len(values)), nil
	}
	p, ok := percentile(statistic)
	if !ok {
		return 0, fmt.Errorf("cloudwatch: unknown statistic %q", statistic)
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1], nil
}

// percentile parses "p99" or "p99.9" into 99 or 99.9.
func percentile(statistic string) (float64, bool) {
	digits, ok := strings.CutPrefix(statistic, "p")
	if !ok || digits == "" {
		return 0, false
	}
	p, err := strconv.ParseFloat(digits, 64)
	if err != nil || p < 0 || p > 100 {
		return 0, false
	}
	return p, true
}

// Period is one period an evaluation looked at.
type Period struct {
	// Start is the period's start, aligned to a multiple of its length since the Unix epoch.
	Start time.Time
	// Samples is how many data points fell in it; zero means its data is missing.
	Samples int
	// Value is the statistic over its samples (meaningless without samples).
	Value float64
	// Unknown means the period ended before the series was being collected: not missing data
	// but no knowledge either way.
	Unknown bool
	// Counted reports whether the period took part in the decision (a missing period treated
	// as "missing" or "ignore" does not), and Breaching whether it breached.
	Counted   bool
	Breaching bool
}

// Evaluation is an alarm's state at one time, and why.
type Evaluation struct {
	State State
	// Reason is the state reason in CloudWatch's words, e.g. "Threshold Crossed: 1 datapoint
	// [3.0 (02/12/26 02:10:00)] was greater than or equal to the threshold (1.0)."
	Reason string
	// Periods are the evaluated periods, newest first.
	Periods []Period
}

// reasonTime is how CloudWatch writes a datapoint's time in a state reason (dd/MM/yy, UTC).
const reasonTime = "02/01/06 15:04:05"

// Evaluate computes an alarm's state at time at as CloudWatch does, from the data points of
// its metric's series (points outside the evaluated periods are ignored, in any order):
//
//   - the data points are aggregated with the metric's statistic per period;
//   - the periods evaluated are the last EvaluationPeriods ones of a sliding window (the
//     default EvaluationWindow of an alarm): the newest ends at the evaluation minute at or
//     before at (at a multiple of the period when it is shorter than a minute);
//   - a period without data is missing and counts as TreatMissing says: breaching,
//     notBreaching, or not at all ("missing", the default, and "ignore"); a period without
//     data that began before since, when the series was not yet collected, is unknown;
//   - the alarm is ALARM when at least DatapointsToAlarm (0: EvaluationPeriods) of the
//     periods breach; INSUFFICIENT_DATA when unknown periods could still make it so, or when
//     no period has data and missing data is "missing"; the previous state when no period
//     has data and missing data is "ignored"; OK otherwise.
func Evaluate(a alarms.Alarm, points []Datum, at, since time.Time, previous State) Evaluation {
	m := max(a.EvaluationPeriods, 1)
	n := a.DatapointsToAlarm
	if n <= 0 || n > m {
		n = m
	}
	treat := a.TreatMissing
	if treat == "" {
		treat = MissingMissing
	}
	p := a.Metric.Period
	if p <= 0 {
		return Evaluation{State: StateInsufficientData, Reason: fmt.Sprintf("Unchecked: the period %s is not positive", p)}
	}
	// A sliding window, CloudWatch's default evaluation window: the periods end at the
	// evaluation (each minute), not at multiples of the period, so a burst that straddles a
	// period boundary is judged whole.
	end := alignDown(at, min(p, time.Minute))
	periods := make([]Period, m)
	buckets := make([][]float64, m)
	for i := range periods {
		periods[i].Start = end.Add(-time.Duration(i+1) * p)
	}
	for _, d := range points {
		if !d.Time.Before(end) {
			continue
		}
		i := int(end.Sub(d.Time) / p)
		if end.Sub(d.Time)%p == 0 {
			// A point on a boundary belongs to the period it starts.
			i--
		}
		if i < 0 || i >= m {
			continue
		}
		buckets[i] = append(buckets[i], d.Value)
	}
	var breaching, notBreaching, unknown, present int
	for i := range periods {
		per := &periods[i]
		per.Samples = len(buckets[i])
		switch {
		case per.Samples > 0:
			v, err := Aggregate(a.Metric.Statistic, buckets[i])
			if err != nil {
				return Evaluation{State: StateInsufficientData, Reason: "Unchecked: " + err.Error(), Periods: periods}
			}
			per.Value, per.Counted, per.Breaching = v, true, a.Breaches(v)
			present++
		case !since.IsZero() && per.Start.Before(since):
			// Nothing collected the series for the whole period (the stack started in it):
			// its silence says nothing.
			per.Unknown = true
			unknown++
			continue
		case treat == alarms.MissingBreaching:
			per.Counted, per.Breaching = true, true
		case treat == alarms.MissingNotBreaching:
			per.Counted = true
		}
		if per.Counted {
			if per.Breaching {
				breaching++
			} else {
				notBreaching++
			}
		}
	}
	ev := Evaluation{Periods: periods}
	switch {
	case breaching >= n:
		ev.State = StateAlarm
		ev.Reason = crossedReason(a, periods, true, breaching, m, n)
	case breaching+unknown >= n:
		ev.State = StateInsufficientData
		ev.Reason = fmt.Sprintf("Insufficient Data: %s %s unknown.", count(unknown, "datapoint"), wasWere(unknown))
	case present == 0 && treat == MissingMissing:
		ev.State = StateInsufficientData
		ev.Reason = fmt.Sprintf("Insufficient Data: %s %s unknown.", count(m, "datapoint"), wasWere(m))
	case present == 0 && treat == MissingIgnore:
		ev.State = previous
		ev.Reason = fmt.Sprintf("Threshold Crossed: no datapoints were received for %s; missing data is ignored, so the state stays %s.",
			count(m, "period"), previous)
	case notBreaching == 0:
		// Only with missing data left out: too few periods breach, but none was below the
		// threshold either.
		ev.State = StateOK
		ev.Reason = fmt.Sprintf("Threshold Crossed: %d out of the last %d datapoints [%s] %s %s the threshold (%s), fewer than the minimum %s for OK -> ALARM transition.",
			breaching, m, listed(periods, true), wasWere(breaching), comparisonText(a.Comparison), javaDouble(a.Threshold), count(n, "datapoint"))
	default:
		ev.State = StateOK
		ev.Reason = crossedReason(a, periods, false, notBreaching, m, n)
	}
	return ev
}

// crossedReason is CloudWatch's "Threshold Crossed" reason for an ALARM (breach) or OK state
// decided by k of the m periods. It lists the periods with data that decided it, newest first;
// missing periods that counted are in k but not listed, and when none of the deciding periods
// had data the reason says how the missing ones were treated.
func crossedReason(a alarms.Alarm, periods []Period, breach bool, k, m, n int) string {
	list := listed(periods, breach)
	if list == "" {
		treated := "NonBreaching"
		if breach {
			treated = "Breaching"
		}
		return fmt.Sprintf("Threshold Crossed: no datapoints were received for %s and %s %s treated as [%s].",
			count(k, "period"), count(k, "missing datapoint"), wasWere(k), treated)
	}
	cmp := comparisonText(a.Comparison)
	transition, minimum := "OK -> ALARM", n
	if !breach {
		cmp = "not " + cmp
		transition, minimum = "ALARM -> OK", m-n+1
	}
	if m == 1 {
		return fmt.Sprintf("Threshold Crossed: 1 datapoint [%s] was %s the threshold (%s).", list, cmp, javaDouble(a.Threshold))
	}
	return fmt.Sprintf("Threshold Crossed: %d out of the last %d datapoints [%s] %s %s the threshold (%s) (minimum %s for %s transition).",
		k, m, list, wasWere(k), cmp, javaDouble(a.Threshold), count(minimum, "datapoint"), transition)
}

// listed renders the periods with data whose breaching is breach: "3.0 (02/12/26 02:10:00), ...".
func listed(periods []Period, breach bool) string {
	var parts []string
	for _, p := range periods {
		if p.Samples > 0 && p.Breaching == breach {
			parts = append(parts, javaDouble(p.Value)+" ("+p.Start.UTC().Format(reasonTime)+")")
		}
	}
	return strings.Join(parts, ", ")
}

func comparisonText(c alarms.Comparison) string {
	if c == alarms.Below {
		return "less than"
	}
	return "greater than or equal to"
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// javaDouble formats v as Java's Double.toString does, which is how CloudWatch's reasons write
// values and thresholds: "3.0", "0.25", "1800000.0", "1.0E7".
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	if abs := math.Abs(v); v == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // e.g. 1E+07, 1.5E-04
	mantissa, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mantissa, ".") {
		mantissa += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mantissa + "E" + strconv.Itoa(e)
}

// alignDown returns the latest multiple of p since the Unix epoch at or before t.
func alignDown(t time.Time, p time.Duration) time.Time {
	ns := t.UnixNano()
	rem := ns % int64(p)
	if rem < 0 {
		rem += int64(p)
	}
	return time.Unix(0, ns-rem).UTC()
}
