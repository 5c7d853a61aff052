package stack

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
	"github.com/seatsaga/seatsaga/internal/webhook"
)

// alarmEpoch is a period boundary: the sale's metrics fall in the five minutes from 02:00,
// which the evaluation at 02:05 judges.
var alarmEpoch = time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)

// fakeStack is a stack on a fake clock, stepped as the e2e tests step theirs.
type fakeStack struct {
	t   *testing.T
	st  *Stack
	clk *clock.Fake
	ctx context.Context
}

func startFake(t *testing.T) *fakeStack {
	t.Helper()
	clk := clock.NewFake(alarmEpoch)
	st := start(t, Config{Clock: clk, Hold: 10 * time.Minute, SweepInterval: time.Minute, PaymentsTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &fakeStack{t: t, st: st, clk: clk, ctx: ctx}
}

// idle waits (real time) until no invocation has run for a moment and no sweep is in flight, so
// that what the stack does at one fake instant is stamped with that instant.
func (f *fakeStack) idle() {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last, since := int64(-1), time.Now()
	for time.Since(since) < 80*time.Millisecond || (f.st.sweeper != nil && f.st.sweeper.running.Load()) {
		if time.Now().After(deadline) {
			f.t.Fatalf("the stack never went idle (fake time %s)", f.clk.Now().Format(time.RFC3339))
		}
		if n := f.st.Lambdas.TotalInvocations(); n != last {
			last, since = n, time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// until steps the fake clock a second at a time while the stack is idle until cond holds.
func (f *fakeStack) until(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s (fake time %s)", what, f.clk.Now().Format(time.RFC3339))
		}
		f.idle()
		if !cond() {
			f.clk.Advance(time.Second)
		}
	}
}

// advanceTo steps the fake clock to t ten seconds at a time, letting the stack go idle after
// each step: every sweep and evaluation on the way runs at its own instant.
func (f *fakeStack) advanceTo(t time.Time) {
	f.t.Helper()
	for f.clk.Now().Before(t) {
		f.idle()
		f.clk.Set(minTime(f.clk.Now().Add(10*time.Second), t))
	}
	f.idle()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// tinySale sells one seat to alice through the API and waits until her execution has ended
// and the outbox has reached the bus.
func (f *fakeStack) tinySale() string {
	f.t.Helper()
	if _, err := f.st.SeedEvent(f.ctx, "tiny", 1); err != nil {
		f.t.Fatal(err)
	}
	id := postReservation(f.ctx, f.t, f.st, "tiny", "alice", "S1")
	f.until("alice's execution to end", func() bool {
		out, err := f.st.SFN.DescribeExecution(f.ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(f.st.ExecutionARN(id))})
		return err == nil && out.Status != sfntypes.ExecutionStatusRunning
	})
	f.until("the outbox to be published", func() bool { return len(f.st.Bus.Entries()) > 0 })
	if got := describe(f.ctx, f.t, f.st, id); got != string(sfntypes.ExecutionStatusSucceeded) {
		f.t.Fatalf("alice's execution %s", got)
	}
	return id
}

// forgeWebhook posts a delivery signed with a secret that is not the endpoint's, as a forger
// (or a Stripe endpoint whose secret was rolled without telling the stack) would.
func (f *fakeStack) forgeWebhook() {
	f.t.Helper()
	payload := []byte(`{"id":"evt_forged","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_forged","object":"payment_intent"}}}`)
	req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.st.Endpoints.API+"/webhooks/stripe", bytes.NewReader(payload))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", stripesim.SignPayload(payload, "whsec_forged", f.clk.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		f.t.Fatalf("the forged delivery was answered %d, want 400", resp.StatusCode)
	}
}

// sum adds up a series' values from the stack's start to now.
func (f *fakeStack) sum(namespace, name string, dims map[string]string) float64 {
	var total float64
	for _, d := range f.st.CloudWatch.Points(cloudwatch.SeriesOf(namespace, name, dims), alarmEpoch, f.clk.Now().Add(time.Second)) {
		total += d.Value
	}
	return total
}

// A tiny sale on a fake clock publishes what CloudWatch would hold: the functions' EMF metrics
// with the dimensions their recorders give them (and without, for the alarms), and the AWS
// metrics of the state machine, the functions and the API under their deployed dimensions.
func TestTinySalePublishesTheMetricsCloudWatchWouldHold(t *testing.T) {
	f := startFake(t)
	f.tinySale()
	ns := f.st.AppConfig.MetricsNamespace

	// The saga's steps count outcomes by step and outcome, and the api its admissions with no
	// dimension; the relay's recorder adds Service=relay.
	var claimOutcomes, relayPublished int
	for _, s := range f.st.CloudWatch.SeriesList() {
		if s.Namespace == ns && s.Name == saga.MetricStepOutcome && strings.Contains(s.Dimensions, "step=claim") {
			claimOutcomes++
		}
		if s.Namespace == ns && s.Name == relay.MetricPublished && strings.HasPrefix(s.Dimensions, "Service=relay,type=") {
			relayPublished++
		}
	}
	if claimOutcomes == 0 || relayPublished == 0 {
		t.Errorf("series of the claim's outcomes: %d, of the relay's publications with Service=relay: %d; series: %v",
			claimOutcomes, relayPublished, f.st.CloudWatch.SeriesList())
	}
	for _, name := range []string{saga.MetricStepOutcome, relay.MetricPublished, "ReservationsStarted"} {
		if f.sum(ns, name, nil) == 0 {
			t.Errorf("%s/%s has no data without dimensions, which the alarms read", ns, name)
		}
	}
	// The summaries still count into Metrics.
	if f.st.Metrics.Total(saga.MetricStepOutcome) == 0 {
		t.Error("the stack's own counts saw no step outcome")
	}

	sm := map[string]string{"StateMachineArn": f.st.StateMachineARN}
	for name, want := range map[string]float64{"ExecutionsStarted": 1, "ExecutionsSucceeded": 1, "ExecutionsFailed": 0} {
		if got := f.sum(alarms.States, name, sm); got != want {
			t.Errorf("AWS/States %s = %v, want %v", name, got, want)
		}
	}
	if pts := f.st.CloudWatch.Points(cloudwatch.SeriesOf(alarms.States, "ExecutionTime", sm), alarmEpoch, f.clk.Now().Add(time.Second)); len(pts) != 1 || pts[0].Unit != "Milliseconds" {
		t.Errorf("ExecutionTime points %+v", pts)
	}
	for _, fn := range append([]string{FnAPI, FnWebhook, FnRelay}, SagaFunctions[:4]...) {
		if got := f.sum(alarms.Lambda, "Invocations", map[string]string{"FunctionName": fn}); got == 0 {
			t.Errorf("AWS/Lambda Invocations of %s = 0", fn)
		}
		if got := f.sum(alarms.Lambda, "Errors", map[string]string{"FunctionName": fn}); got != 0 {
			t.Errorf("AWS/Lambda Errors of %s = %v", fn, got)
		}
	}
	// API Gateway publishes 4XXError and 5XXError as 1 or 0 for every request it counts. (The
	// webhook may answer a 503 here: a delivery that outran the authorize step is deferred.)
	api := map[string]string{"ApiName": APIName}
	requests := f.sum(alarms.APIGateway, "Count", api)
	if requests == 0 {
		t.Error("AWS/ApiGateway Count = 0")
	}
	for _, name := range []string{"4XXError", "5XXError", "Latency"} {
		pts := f.st.CloudWatch.Points(cloudwatch.SeriesOf(alarms.APIGateway, name, api), alarmEpoch, f.clk.Now().Add(time.Second))
		if float64(len(pts)) != requests {
			t.Errorf("AWS/ApiGateway %s has %d data points for %v requests", name, len(pts), requests)
		}
	}
}

// The same tiny sale, once with a forged webhook delivery and once without: the forgery makes
// WebhookRejected fire at the end of its period with AWS's reason, and it is the only alarm that
// fires; without it nothing fires and WebhookRejected is OK.
func TestWebhookRejectedFiresOnAForgedDeliveryAndOnlyThen(t *testing.T) {
	for _, forged := range []bool{true, false} {
		name := "without a forgery"
		if forged {
			name = "with a forged delivery"
		}
		t.Run(name, func(t *testing.T) {
			f := startFake(t)
			if s, _ := f.st.Alarms.State("WebhookRejected"); s != cloudwatch.StateInsufficientData {
				t.Fatalf("WebhookRejected starts %s", s)
			}
			f.tinySale()
			if forged {
				f.forgeWebhook()
				if got := f.sum(f.st.AppConfig.MetricsNamespace, webhook.MetricWebhookRejected, nil); got != 1 {
					t.Fatalf("WebhookRejected published %v", got)
				}
			}
			f.advanceTo(alarmEpoch.Add(5*time.Minute + time.Second))

			state, _ := f.st.Alarms.State("WebhookRejected")
			fired := f.st.Alarms.Fired()
			for _, s := range f.st.Alarms.Statuses() {
				t.Logf("%s %s: %s", s.Alarm.Name, s.State, s.Reason)
			}
			if !forged {
				if state != cloudwatch.StateOK || len(fired) != 0 {
					t.Fatalf("without a fault WebhookRejected is %s and %d alarms fired: %+v", state, len(fired), fired)
				}
				return
			}
			want := cloudwatch.Transition{Alarm: "WebhookRejected", From: cloudwatch.StateInsufficientData, To: cloudwatch.StateAlarm,
				Time:   alarmEpoch.Add(5 * time.Minute),
				Reason: "Threshold Crossed: 1 datapoint [1.0 (02/12/26 02:00:00)] was greater than or equal to the threshold (1.0)."}
			if state != cloudwatch.StateAlarm || len(fired) != 1 || fired[0] != want {
				t.Fatalf("WebhookRejected is %s; fired %+v\nwant only %+v", state, fired, want)
			}
		})
	}
}
