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
