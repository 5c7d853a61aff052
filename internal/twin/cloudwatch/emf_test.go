package cloudwatch

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
)

var emfTime = time.Date(2026, 12, 2, 2, 11, 0, 0, time.UTC)

// ms is emfTime as EMF stamps it.
var ms = emfTime.UnixMilli()

func TestParseEMFExtractsAsCloudWatchLogsDoes(t *testing.T) {
	type point struct {
		Namespace, Name, Dims, Unit string
		Value                       float64
	}
	cases := []struct {
		name string
		line string
		want []point
		// notEMF lines are plain logs; rejected ones looked like EMF but break the spec.
		notEMF, rejected bool
	}{
		{
			name: "two dimension sets give one datum each",
			line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"Seatsaga","Dimensions":[["Service"],[]],"Metrics":[{"Name":"RelayPublished","Unit":"Count"}]}]},"Service":"relay","RelayPublished":2}`, ms),
			want: []point{{"Seatsaga", "RelayPublished", "", "Count", 2}, {"Seatsaga", "RelayPublished", "Service=relay", "Count", 2}},
		},
		{
			name: "a value array gives one datum per value",
			line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"Latency","Unit":"Milliseconds"}]}]},"Latency":[1,2.5,3]}`, ms),
			want: []point{{"N", "Latency", "", "Milliseconds", 1}, {"N", "Latency", "", "Milliseconds", 2.5}, {"N", "Latency", "", "Milliseconds", 3}},
		},
		{
			name: "a metric without a unit has unit None",
			line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["step","outcome"]],"Metrics":[{"Name":"StepOutcome"}]}]},"step":"claim","outcome":"ok","StepOutcome":1}`, ms),
			want: []point{{"N", "StepOutcome", "outcome=ok,step=claim", "None", 1}},
		},
		{
			name: "a directive listing no dimension set publishes without dimensions",
			line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[],"Metrics":[{"Name":"A","Unit":"Count"}]}]},"A":1}`, ms),
			want: []point{{"N", "A", "", "Count", 1}},
		},
		{
			name: "every directive and metric of a line",
			line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N1","Dimensions":[[]],"Metrics":[{"Name":"A","Unit":"Count"},{"Name":"B","Unit":"Seconds"}]},{"Namespace":"N2","Dimensions":[["fn"]],"Metrics":[{"Name":"A","Unit":"Count"}]}]},"fn":"api","A":1,"B":42}`, ms),
			want: []point{{"N1", "A", "", "Count", 1}, {"N1", "B", "", "Seconds", 42}, {"N2", "A", "fn=api", "Count", 1}},
		},
		{name: "a plain JSON log line", line: `{"level":"INFO","msg":"claimed","reservationId":"r1"}`, notEMF: true},
		{name: "a text line", line: `START RequestId: 8f5 Version: $LATEST`, notEMF: true},
		{name: "an empty line", line: ``, notEMF: true},
		{name: "malformed JSON with an _aws member", line: `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N"`, rejected: true},
		{name: "no timestamp", line: `{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A"}]}]},"A":1}`, rejected: true},
		{name: "no namespace", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Dimensions":[[]],"Metrics":[{"Name":"A"}]}]},"A":1}`, ms), rejected: true},
		{name: "a dimension naming no member", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["Service"]],"Metrics":[{"Name":"A"}]}]},"A":1}`, ms), rejected: true},
		{name: "a dimension that is not a string", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["Service"]],"Metrics":[{"Name":"A"}]}]},"Service":3,"A":1}`, ms), rejected: true},
		{name: "a metric without its value", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A"}]}]}}`, ms), rejected: true},
		{name: "a value that is a string", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A"}]}]},"A":"1"}`, ms), rejected: true},
		{name: "a null value", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A"}]}]},"A":null}`, ms), rejected: true},
		{name: "an empty value array", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A"}]}]},"A":[]}`, ms), rejected: true},
		{name: "a value array holding a null", line: fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A"}]}]},"A":[1,null]}`, ms), rejected: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := ParseEMF([]byte(c.line))
			switch {
			case c.notEMF:
				if err != ErrNotEMF {
					t.Fatalf("got %v, %v; want ErrNotEMF", data, err)
				}
				return
			case c.rejected:
				if err == nil || err == ErrNotEMF {
					t.Fatalf("got %v, %v; want a rejection", data, err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			var got []point
			for _, d := range data {
				if !d.Time.Equal(emfTime) {
					t.Errorf("datum %s stamped %s, want %s", d.Name, d.Time, emfTime)
				}
				got = append(got, point{d.Namespace, d.Name, SeriesOf(d.Namespace, d.Name, d.Dimensions).Dimensions, d.Unit, d.Value})
			}
			sort.Slice(got, func(i, j int) bool { return fmt.Sprint(got[i]) < fmt.Sprint(got[j]) })
			sort.Slice(c.want, func(i, j int) bool { return fmt.Sprint(c.want[i]) < fmt.Sprint(c.want[j]) })
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

// The writer reads what the functions' own EMF recorder writes, the way CloudWatch Logs reads a
// function's stdout: each Count becomes a datum in the series with the recorder's dimensions
// and in the series without any.
func TestEMFWriterReadsTheFunctionsRecorder(t *testing.T) {
	store := NewStore()
	var rejected []string
	w := NewEMFWriter(store, func(line []byte, err error) { rejected = append(rejected, err.Error()) })
	rec := emf.New(w, "Seatsaga", emf.WithClock(func() time.Time { return emfTime }),
		emf.WithDimensions(metrics.Dim{Name: "Service", Value: "consumer"}))
	rec.Count("NotificationSent", 1)
	rec.Count("NotificationSent", 2, metrics.Dim{Name: "kind", Value: "confirmed"})
	if len(rejected) > 0 {
		t.Fatalf("rejected the recorder's own lines: %v", rejected)
	}
	from, to := emfTime.Add(-time.Minute), emfTime.Add(time.Minute)
	sum := func(dims map[string]string) (total float64) {
		for _, d := range store.Points(SeriesOf("Seatsaga", "NotificationSent", dims), from, to) {
			total += d.Value
		}
		return total
	}
	if got := sum(nil); got != 3 {
		t.Errorf("without dimensions: %v, want 3", got)
	}
	if got := sum(map[string]string{"Service": "consumer"}); got != 1 {
		t.Errorf("Service=consumer: %v, want 1", got)
	}
	if got := sum(map[string]string{"Service": "consumer", "kind": "confirmed"}); got != 2 {
		t.Errorf("Service=consumer,kind=confirmed: %v, want 2", got)
	}
}

// Lines arrive in pieces, several at once, and from many goroutines; each complete line is read
// once, a line longer than CloudWatch Logs accepts is dropped without disturbing the next, and
// Flush reads a last line that has no newline.
func TestEMFWriterIsLineBufferedAndSafeForConcurrentUse(t *testing.T) {
	line := func(v int) string {
		return fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"A","Unit":"Count"}]}]},"A":%d}`, ms, v)
	}
	store := NewStore()
	w := NewEMFWriter(store, nil)
	series := SeriesOf("N", "A", nil)
	total := func() (sum float64) {
		for _, d := range store.Points(series, emfTime, emfTime.Add(time.Second)) {
			sum += d.Value
		}
		return sum
	}

	whole := line(1) + "\n"
	_, _ = w.Write([]byte(whole[:10]))
	_, _ = w.Write([]byte(whole[10:40]))
	if total() != 0 {
		t.Fatal("a line was read before its newline")
	}
	_, _ = w.Write([]byte(whole[40:] + line(2) + "\n" + "not a metric\n" + line(4)))
	if got := total(); got != 3 {
		t.Fatalf("after the pieces: %v, want 3", got)
	}
	w.Flush()
	if got := total(); got != 7 {
		t.Fatalf("after Flush: %v, want 7", got)
	}

	huge := `{"_aws":` + strings.Repeat(" ", MaxEventBytes) + "\n"
	_, _ = w.Write([]byte(huge[:MaxEventBytes/2]))
	_, _ = w.Write([]byte(huge[MaxEventBytes/2:] + line(8) + "\n"))
	if got := total(); got != 15 {
		t.Fatalf("after an oversized line: %v, want 15", got)
	}

	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for i := 0; i < 50; i++ {
				buf.WriteString(line(1) + "\n")
			}
			// Each goroutine writes whole lines, as every function's recorder does.
			for _, l := range strings.SplitAfter(buf.String(), "\n") {
				_, _ = w.Write([]byte(l))
			}
		}()
	}
	wg.Wait()
	if got := total(); got != 15+400 {
		t.Fatalf("after concurrent writers: %v, want %d", got, 15+400)
	}
}
