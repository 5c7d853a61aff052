package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// matrixScale compresses the matrix's stack time: a five-minute alarm period passes in five
// seconds of wall time.
const matrixScale = 60

// faultCase is one row of the fault-to-alarm matrix: a small sale with one fault class on, and
// exactly the alarms it must fire.
type faultCase struct {
	name string
	// configure changes the stack's configuration before it starts.
	configure func(*Config)
	// inject arms the fault on the running stack before the buyers arrive; it returns what
	// stops it, called when the buyers are done (nil: the fault lasts).
	inject func(t *testing.T, st *Stack) (stop func())
	// after is how much longer, in stack time, the stack runs once the sale settled, for
	// alarms that need several periods.
	after time.Duration
	want  []string
}

// The fault-to-alarm matrix: each small sale runs with one fault class on, on a stack whose
// clock runs 60 times faster, and the deployment's alarms (internal/alarms, the definitions
// the CDK stack renders) are evaluated on that clock over the metrics the functions and the
// twin's services published. Exactly the alarms of each row fire, and a clean sale fires none:
// that is how each alarm is known to bite, and to stay quiet when nothing is wrong.
func TestEachFaultClassFiresExactlyItsAlarms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sale per fault class")
	}
	for _, tc := range faultMatrix() {
		t.Run(tc.name, func(t *testing.T) {
			fired, res := runMatrixSale(t, tc)
			if !slices.Equal(fired, tc.want) {
				var lines []string
				for _, tr := range res.Alarms {
					lines = append(lines, fmt.Sprintf("  +%s %s %s→%s %s", tr.Time.Sub(res.Start).Round(time.Second), tr.Alarm, tr.From, tr.To, tr.Reason))
				}
				t.Fatalf("fired %q, want %q\n%s", fired, tc.want, strings.Join(lines, "\n"))
			}
			t.Logf("%s: fired %q", tc.name, fired)
		})
	}
}

func faultMatrix() []faultCase {
	allEndpoints := []stripesim.Endpoint{stripesim.EndpointCreateIntent, stripesim.EndpointRetrieveIntent, stripesim.EndpointConfirmIntent,
		stripesim.EndpointCaptureIntent, stripesim.EndpointCancelIntent, stripesim.EndpointCreateRefund, stripesim.EndpointRetrieveRefund}
	return []faultCase{
		{name: "clean", want: nil},
		{name: "provider down",
			inject: func(t *testing.T, st *Stack) func() {
				for _, ep := range allEndpoints {
					st.Payments.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
				}
				// Down for ten minutes of stack time: longer than the saga's bounded
				// reconciliation, shorter than the sweeper's patience.
				timer := st.Clock.AfterFunc(10*time.Minute, st.Payments.ClearFaults)
				t.Cleanup(func() { timer.Stop() })
				return nil
			},
			want: []string{"ProviderUnavailable"}},
		{name: "webhooks not delivered",
			inject: func(t *testing.T, st *Stack) func() {
				cfg := st.webhookConfig()
				cfg.URL = ""
				st.Payments.SetWebhook(cfg)
				return nil
			},
			want: []string{"WebhooksNotArriving"}},
		{name: "wrong webhook secret",
			inject: func(t *testing.T, st *Stack) func() {
				cfg := st.webhookConfig()
				cfg.Secret = "whsec_not_the_one_in_secrets_manager"
				st.Payments.SetWebhook(cfg)
				return nil
			},
			want: []string{"WebhookRejected", "WebhooksNotArriving"}},
		{name: "sweeper failing",
			inject: func(t *testing.T, st *Stack) func() {
				if err := st.Lambdas.FailBefore(FnSweeper, 1_000_000, lambdahost.Crash()); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			after: 3 * alarms.Period,
			want: []string{"AuthorizationsNearCaptureDeadline", "ExpiredHoldOldestAgeSeconds", "ExpiredHoldsUnreleased",
				"OldestRunningExecutionAge", "ReconciliationBacklog", "SweeperErrors", "UnresolvedPaymentOldestAgeSeconds", "UnresolvedPayments"}},
		{name: "DynamoDB throttling",
			configure: func(c *Config) {
				var n atomic.Int64
				// Every other transaction of the first sixteen, the buyers' claims: a burst the
				// table cannot take, which the SDK's and the saga's retries absorb.
				c.DynamoDBFault = func(op string, _ any) error {
					if op != "TransactWriteItems" {
						return nil
					}
					if i := n.Add(1); i <= 16 && i%2 == 0 {
						return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate of requests exceeds the allowed throughput (injected)."}
					}
					return nil
				}
			},
			want: []string{"Throttled"}},
		{name: "Lambda throttling",
			inject: func(t *testing.T, st *Stack) func() {
				if err := st.Lambdas.FailBefore(FnClaim, 6, lambdahost.TooManyRequests()); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			want: []string{"ClaimThrottles"}},
		{name: "a stuck execution",
			configure: func(c *Config) {
				c.Thresholds.OldestRunningExecutionAgeSeconds = (10 * time.Minute).Seconds()
			},
			inject: func(t *testing.T, st *Stack) func() {
				open, _, err := st.Lambdas.Gate(FnCapture)
				if err != nil {
					t.Fatal(err)
				}
				// The captures wait at the gate until the oldest execution is older than the
				// threshold and a period has been judged.
				timer := time.AfterFunc(20*time.Minute/matrixScale, open)
				t.Cleanup(func() { timer.Stop(); open() })
				return nil
			},
			// Confirmed seats whose capture waits are in the sweeper's backlog as well.
			want: []string{"OldestRunningExecutionAge", "ReconciliationBacklog"}},
		{name: "a DLQ message",
			inject: func(t *testing.T, st *Stack) func() {
				if err := st.Lambdas.FailBefore(FnConsumer, 1_000_000, lambdahost.FunctionError("Runtime.Error", "the consumer cannot process anything")); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			want: []string{"ConsumerDLQDepth", "ConsumerErrors"}},
	}
}

// runMatrixSale runs tc's sale and returns the alarms that went into ALARM, sorted.
func runMatrixSale(t *testing.T, tc faultCase) ([]string, *SaleResult) {
	t.Helper()
	cfg := Compressed(matrixScale, 3*time.Minute)
	cfg.Payments.Seed = 7
	if tc.configure != nil {
		tc.configure(&cfg)
	}
	st := start(t, cfg)
	var stop func()
	if tc.inject != nil {
		stop = tc.inject(t, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	progress := func(done, total int) {
		if done == total && stop != nil {
			stop()
		}
	}
	res, err := st.RunSale(ctx, SaleOptions{
		EventID: "matrix", Seats: 8, Buyers: 12, SeatsPerBuyer: 1, Seed: 7,
		Mix:         load.Mix{load.Pays: 0.6, load.Declines: 0.2, load.ThreeDSNo: 0.2},
		Concurrency: 12, PollInterval: 50 * time.Millisecond, BuyerTimeout: time.Minute, SettleTimeout: 45 * time.Second,
		ClockScale: matrixScale, Progress: progress, AwaitAlarms: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc.after > 0 {
		if err := clock.Sleep(ctx, st.Clock, tc.after); err != nil {
			t.Fatal(err)
		}
		st.Alarms.EvaluateNow()
		res.Alarms = st.AlarmChangesSince(res.Start)
	}
	fired := res.FiredAlarms()
	if len(fired) == 0 {
		fired = nil
	}
	return fired, res
}

// The matrix's alarms are the deployment's: every alarm a row expects exists, and the rows
// together prove the incident alarms the issue names.
func TestTheMatrixNamesOnlyDeployedAlarms(t *testing.T) {
	defined := map[string]bool{}
	for _, a := range alarms.Definitions(alarms.Deployed(alarms.Thresholds{}, time.Minute)) {
		defined[a.Name] = true
	}
	proved := map[string]bool{}
	for _, tc := range faultMatrix() {
		for _, name := range tc.want {
			if !defined[name] {
				t.Errorf("%s expects %s, which the deployment does not define", tc.name, name)
			}
			proved[name] = true
		}
	}
	for _, name := range []string{"ProviderUnavailable", "WebhookRejected", "WebhooksNotArriving", "SweeperErrors", "Throttled", "ClaimThrottles",
		"OldestRunningExecutionAge", "ConsumerDLQDepth"} {
		if !proved[name] {
			t.Errorf("no row of the matrix proves %s", name)
		}
	}
}
