package saga

import (
	"context"
	"testing"
	"time"
)

// A payment wait that ends by the hold's timeout although the provider had already decided is
// a webhook that never arrived; every other way into reconciliation is not.
func TestAWaitThatTimedOutOnADecidedPaymentCountsAWebhookThatNeverArrived(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider string // the PaymentIntent's status when reconciliation asks; "" leaves it
		failure  string
		attempt  int
		want     int64
	}{
		{name: "authorized, wait timed out", provider: "requires_capture", failure: ErrStatesTimeout, want: 1},
		{name: "captured, wait timed out", provider: "succeeded", failure: ErrStatesTimeout, want: 1},
		{name: "declined, wait timed out", provider: "declined", failure: ErrStatesTimeout, want: 1},
		{name: "still processing at the deadline: a late authorization, not a lost webhook", provider: "processing", failure: ErrStatesTimeout},
		{name: "buyer never paid", failure: ErrStatesTimeout},
		{name: "authorized, but the wait failed otherwise", provider: "requires_capture", failure: "States.TaskFailed"},
		{name: "authorized, a later reconcile attempt", provider: "requires_capture", failure: ErrStatesTimeout, attempt: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, in := authorizingR1(t, "pm_slow")
			if tc.provider != "" {
				h.pay.force("r1", tc.provider)
			}
			h.advance(10 * time.Minute)
			st := State{Input: in, Failure: &Failure{Error: tc.failure}}
			if tc.attempt > 0 {
				st.Reconcile = &ReconcileResult{Attempt: tc.attempt, Outcome: OutcomeRetry}
			}
			if _, err := h.steps.Reconcile(context.Background(), st); err != nil {
				t.Fatal(err)
			}
			if got := h.mem.Total(MetricWebhookNeverArrived); got != tc.want {
				t.Errorf("%s = %d, want %d", MetricWebhookNeverArrived, got, tc.want)
			}
		})
	}
}

// Reconciliation counts a failed compensation once per execution, when a Catch brings it: not
// for a compensation that handed the settlement on by design, not again on the reconcile
// loop's own attempts, and not again when a later Catch brings the execution back.
func TestReconciliationCountsAFailedCompensationOnce(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		failure string
		prior   *ReconcileResult
		want    int64
	}{
		{name: "a void that failed", failure: ErrPaymentUncertain, want: 1},
		{name: "the hand-off by design", failure: ErrSettlementContinues},
		{name: "the loop's own next attempt", failure: ErrPaymentUncertain, prior: &ReconcileResult{Attempt: 1, Outcome: OutcomeRetry}},
		{name: "back from a capture, already counted", failure: ErrPaymentUncertain,
			prior: &ReconcileResult{Attempt: 1, Outcome: OutcomeCapture, CompensationFailureCounted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, in := authorizingR1(t, "pm_slow")
			st := State{Input: in, Failure: &Failure{Error: ErrPaymentDeclined}, CompensationFailure: &Failure{Error: tc.failure}, Reconcile: tc.prior}
			res, err := h.steps.Reconcile(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.mem.Total(MetricCompensationFailed); got != tc.want {
				t.Fatalf("%s = %d, want %d", MetricCompensationFailed, got, tc.want)
			}
			if tc.want > 0 && !res.CompensationFailureCounted {
				t.Fatal("the count is not carried to the next attempt")
			}
		})
	}
}
