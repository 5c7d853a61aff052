package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/sale/load"
)

// matrixScale compresses the matrix's stack time: a five-minute alarm period passes in ten
// seconds of wall time, while a second of scheduling delay on a loaded machine stays half a
// minute of stack time, well inside every threshold's margin.
const matrixScale = 30

// The fault-to-alarm matrix: each small sale runs with one incident class on (Incidents), on a
// stack whose clock runs 30 times faster, and the deployment's alarms (internal/alarms, the
// definitions the CDK stack renders) are evaluated on that clock over the metrics the
// functions and the twin's services published. Exactly the incident's alarms fire, and a
// clean sale fires none: that is how each alarm is known to bite, and to stay quiet when
// nothing is wrong.
func TestEachFaultClassFiresExactlyItsAlarms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sale per fault class")
	}
	rows := append([]Incident{{Name: "clean"}}, Incidents()...)
	for _, in := range rows {
		t.Run(in.Name, func(t *testing.T) {
			res := runMatrixSale(t, in)
			fired := res.FiredAlarms()
			if !slices.Equal(fired, in.Alarms) {
				var lines []string
				for _, tr := range res.Alarms {
					lines = append(lines, fmt.Sprintf("  +%s %s %s→%s %s", tr.Time.Sub(res.Start).Round(time.Second), tr.Alarm, tr.From, tr.To, tr.Reason))
				}
				t.Fatalf("fired %q, want %q\n%s", fired, in.Alarms, strings.Join(lines, "\n"))
			}
			t.Logf("%s: fired %q", in.Name, fired)
		})
	}
}

// runMatrixSale runs a small sale of 16 buyers for 12 seats with in staged: enough paying
// winners that each count clears its threshold with a margin.
func runMatrixSale(t *testing.T, in Incident) *SaleResult {
	t.Helper()
	cfg := Compressed(matrixScale, 3*time.Minute)
	cfg.Payments.Seed = 7
	// The matrix stages faults, not quotas, whose own tests prove them: on a clock 30 times
	// faster a sweep that takes seconds of a loaded machine's wall time holds the sweeper's
	// one reserved slot across several ticks, so its gauges would go silent for a reason no
	// deployment has.
	cfg.Unthrottled = true
	if in.Configure != nil {
		in.Configure(&cfg)
	}
	st := start(t, cfg)
	if in.Arm != nil {
		stop, err := in.Arm(st)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := st.RunSale(ctx, SaleOptions{
		EventID: "matrix", Seats: 12, Buyers: 16, SeatsPerBuyer: 1, Seed: 7,
		Mix:         load.Mix{load.Pays: 0.7, load.Declines: 0.15, load.ThreeDSNo: 0.15},
		Concurrency: 16, PollInterval: 50 * time.Millisecond, BuyerTimeout: time.Minute, SettleTimeout: 45 * time.Second,
		ClockScale: matrixScale, AwaitAlarms: true, ObserveAfter: in.Observe,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The matrix's alarms are the deployment's, and its rows together prove the incident alarms
// the monitoring promises.
func TestTheMatrixNamesOnlyDeployedAlarms(t *testing.T) {
	defined := map[string]bool{}
	for _, a := range alarms.Definitions(alarms.Deployed("", alarms.Thresholds{}, time.Minute)) {
		defined[a.Name] = true
	}
	proved := map[string]bool{}
	for _, in := range Incidents() {
		if !slices.IsSorted(in.Alarms) {
			t.Errorf("%s lists its alarms unsorted", in.Name)
		}
		for _, name := range in.Alarms {
			if !defined[name] {
				t.Errorf("%s expects %s, which the deployment does not define", in.Name, name)
			}
			proved[name] = true
		}
	}
	for _, name := range []string{"ProviderUnavailable", "WebhookRejected", "WebhooksNotArriving", "SweeperErrors", "Throttled",
		"ClaimThrottles", "OldestRunningExecutionAge", "ConsumerDLQDepth", "UnknownPaymentMethods"} {
		if !proved[name] {
			t.Errorf("no row of the matrix proves %s", name)
		}
	}
}
