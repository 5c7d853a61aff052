package stack

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// postWebhooks posts n empty webhooks to the stage and returns how many were answered 429.
func postWebhooks(t *testing.T, st *Stack, n int) int {
	t.Helper()
	throttled := 0
	for range n {
		resp, err := http.Post(st.Endpoints.API+"/webhooks/stripe", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			throttled++
		}
	}
	return throttled
}

// The stack applies AWS's quotas unless told not to: the engine's default buckets, every
// spec's reserved concurrency carved out of the account's 1,000, and the stage's throttle;
// Unthrottled turns them all off.
func TestAWSQuotasAreOnByDefaultAndUnthrottledTurnsThemOff(t *testing.T) {
	reserved := 0
	for _, fn := range deploy.Functions() {
		reserved += fn.ReservedConcurrency
	}
	if reserved == 0 {
		t.Fatal("no spec reserves concurrency: the check below would prove nothing")
	}
	fake := func() clock.Clock { return clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) }

	st := start(t, Config{Clock: fake(), SweepInterval: -1, APIBurstLimit: 2, APIRateLimit: 1})
	if got, want := st.sfnServer.Quotas(), stepfunctions.DefaultQuotas(); got.StateTransition != want.StateTransition || len(got.API) != len(want.API) || got.API["StartExecution"] != want.API["StartExecution"] {
		t.Fatalf("engine quotas %+v, want stepfunctions.DefaultQuotas", got)
	}
	if got := st.Lambdas.UnreservedConcurrency(); got != 1000-reserved {
		t.Fatalf("unreserved Lambda concurrency %d, want 1000 - %d reserved", got, reserved)
	}
	if got := postWebhooks(t, st, 3); got != 1 {
		t.Fatalf("%d of 3 requests throttled by a stage of burst 2, want 1", got)
	}

	st = start(t, Config{Clock: fake(), SweepInterval: -1, APIBurstLimit: 2, APIRateLimit: 1, Unthrottled: true})
	if got := st.sfnServer.Quotas(); len(got.API) != 0 || got.StateTransition.Size != 0 {
		t.Fatalf("an unthrottled engine has quotas %+v", got)
	}
	if got := st.Lambdas.UnreservedConcurrency(); got >= 0 {
		t.Fatalf("an unthrottled Lambda host has an account limit of %d", got)
	}
	if got := postWebhooks(t, st, 3); got != 0 {
		t.Fatalf("%d requests throttled by an unthrottled stage", got)
	}
}
