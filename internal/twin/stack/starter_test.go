package stack

import (
	"context"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/starter"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// payingSale runs a small sale of buyers who pay, one seat each, on a stack whose Step Functions
// quotas are q; o names the event, its size, its seed and its concurrency.
func payingSale(t *testing.T, q stepfunctions.Quotas, o SaleOptions) (*Stack, *SaleResult) {
	t.Helper()
	cfg := Compressed(1, 3*time.Minute)
	cfg.StepFunctionsQuotas = &q
	st := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o.SeatsPerBuyer, o.Mix, o.PollInterval = 1, load.Mix{load.Pays: 1}, 50*time.Millisecond
	o.BuyerTimeout, o.SettleTimeout = 2*time.Minute, 2*time.Minute
	res, err := st.RunSale(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

// A burst of winners past the StartExecution quota: each buyer the gate let through is
// answered 202 whether or not Step Functions started their saga at once; the throttled ones
// are queued on their admissions and the starter starts them from the Admissions stream as the
// bucket refills, so every seat is held by exactly one saga, nobody was answered 5xx, and
// nothing waits in StarterDLQ.
func TestWinnersPastTheStartQuotaAreQueuedAndStartedInTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sale")
	}
	q := stepfunctions.DefaultQuotas()
	q.API["StartExecution"] = throttle.Limit{Size: 3, RefillPerSecond: 2}
	st, res := payingSale(t, q, SaleOptions{EventID: "queued", Seats: 12, Buyers: 12, Seed: 3, Concurrency: 12})
	queued := st.Metrics.Total("ReservationsQueued")
	started := st.Metrics.Total(starter.MetricStarted)
	t.Logf("outcomes %v (refused: %v), %d queued, %d started by the starter, throttles %v", res.Summary.ByOutcome, res.Summary.AdmissionCodes, queued, started, st.StepFunctionsThrottles())
	if queued == 0 || started == 0 {
		t.Fatalf("%d starts queued and %d started by the starter: the quota never bit", queued, started)
	}
	if !res.Verdict.OK() {
		t.Fatalf("invariants: %s", res.Verdict)
	}
	// Buyers picking the same seat lose it at the gate; every other buyer holds and pays.
	f := res.Figures()
	winners := res.Summary.Buyers - res.Summary.ByOutcome[load.AdmissionRejected]
	if f.SeatsSold != winners || f.Executions != winners || res.Summary.ByOutcome[load.Confirmed] != winners {
		t.Fatalf("%d seats sold by %d executions for %d buyers let through; outcomes %v", f.SeatsSold, f.Executions, winners, res.Summary.ByOutcome)
	}
	if n := res.Summary.AdmissionCodes["seats_unavailable"]; n != res.Summary.ByOutcome[load.AdmissionRejected] {
		t.Fatalf("buyers refused for other reasons than a taken seat: %v", res.Summary.AdmissionCodes)
	}
	for _, r := range res.Run.Results {
		if r.PostStatus >= 500 || r.PostStatus == 0 {
			t.Errorf("buyer %s was answered %d", r.Buyer.Customer, r.PostStatus)
		}
	}
	// How long the queued winners waited reaches CloudWatch as the starter's IteratorAge,
	// which QueuedStartAge watches.
	ages := st.CloudWatch.Points(cloudwatch.SeriesOf("AWS/Lambda", "IteratorAge", map[string]string{"FunctionName": FnStarter}), res.Start, st.Clock.Now().Add(time.Second))
	waited := false
	for _, p := range ages {
		waited = waited || p.Value > 0
	}
	if !waited {
		t.Errorf("the starter's IteratorAge %+v shows no wait", ages)
	}
	if n := st.Queue(deploy.StarterDLQ).Depth(st.Clock.Now()); n != 0 {
		t.Errorf("%d queued starts parked in StarterDLQ", n)
	}
}

// Winners who arrive while queued starts wait join the queue without a StartExecution call of
// their own, on the deployed grants: the api's throttled call and the starter's batches mark
// the start backlog, which the api reads with each POST's admission. So every winner costs one
// api call at most, and those who came while starts waited none.
func TestWinnersArrivingWhileStartsWaitJoinTheQueueWithoutACall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sale")
	}
	q := stepfunctions.DefaultQuotas()
	q.API["StartExecution"] = throttle.Limit{Size: 2, RefillPerSecond: 1}
	st, res := payingSale(t, q, SaleOptions{EventID: "backlog", Seats: 16, Buyers: 16, Seed: 5, Concurrency: 2})
	if !res.Settled || !res.Verdict.OK() {
		t.Fatalf("settled %v, invariants: %s", res.Settled, res.Verdict)
	}
	f := res.Figures()
	winners := int64(res.Summary.Buyers - res.Summary.ByOutcome[load.AdmissionRejected])
	backlog := st.Metrics.Get("ReservationsQueued", metrics.Dim{Name: "reason", Value: "backlog"})
	apiStarts := f.APICalls[RoleName(FnAPI)]["StartExecution"]
	t.Logf("%d winners; %d StartExecution calls in all, %d by the api; %d winners queued behind the backlog; outcomes %v",
		winners, f.StartExecutions, apiStarts, backlog, res.Summary.ByOutcome)
	if backlog == 0 || apiStarts+backlog != winners || int64(f.SeatsSold) != winners {
		t.Fatalf("%d queued behind the backlog, %d api calls, %d seats sold, for %d winners: want some queued without a call, every other winner one call, every winner sold",
			backlog, apiStarts, f.SeatsSold, winners)
	}
}

// Winners past the open-executions quota are queued as throttled ones are, not answered 5xx,
// and the starter starts them as the running sagas close and make room: every winner's seat is
// sold by one saga and nothing is given up in StarterDLQ.
func TestWinnersPastTheOpenExecutionsQuotaAreQueuedAndStartedAsRoomComesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sale")
	}
	q := stepfunctions.DefaultQuotas()
	q.OpenExecutions = 3
	st, res := payingSale(t, q, SaleOptions{EventID: "full", Seats: 10, Buyers: 10, Seed: 4, Concurrency: 10})
	queued, started := st.Metrics.Total("ReservationsQueued"), st.Metrics.Total(starter.MetricStarted)
	t.Logf("outcomes %v, %d queued, %d started by the starter", res.Summary.ByOutcome, queued, started)
	if queued == 0 || started != queued {
		t.Fatalf("%d starts queued and %d started by the starter: want some queued, all started", queued, started)
	}
	if !res.Settled || !res.Verdict.OK() {
		t.Fatalf("settled %v, invariants: %s", res.Settled, res.Verdict)
	}
	winners := res.Summary.Buyers - res.Summary.ByOutcome[load.AdmissionRejected]
	if f := res.Figures(); f.SeatsSold != winners || res.Summary.ByOutcome[load.Confirmed] != winners {
		t.Fatalf("%d seats sold for %d buyers let through; outcomes %v", f.SeatsSold, winners, res.Summary.ByOutcome)
	}
	for _, r := range res.Run.Results {
		if r.PostStatus >= 500 || r.PostStatus == 0 {
			t.Errorf("buyer %s was answered %d", r.Buyer.Customer, r.PostStatus)
		}
	}
	if n := st.Queue(deploy.StarterDLQ).Depth(st.Clock.Now()); n != 0 {
		t.Errorf("%d queued starts parked in StarterDLQ", n)
	}
}
