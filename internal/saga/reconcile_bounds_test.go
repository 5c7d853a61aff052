package saga

import (
	"context"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// These tests pin down why executions of the one-minute demo ended in "Needs reconciliation"
// with nothing unresolved: each case reached the Fail state through a bound or an error name
// that did not fit what had happened.

// authorizingR1 claims seat A1 for r1 under LateSuccessReacquire and runs the authorize step
// with payment method pm and task token tok1, which must succeed.
func authorizingR1(t *testing.T, pm string) (*harness, Input) {
	t.Helper()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := input("r1", pm, "A1")
	h.claim(in)
	if err := h.authorize(in, "tok1"); err != nil {
		t.Fatal(err)
	}
	return h, in
}

// TestReconcileLateAuthorizationOnTheLastAttempt: a late authorization (pm_sim_authorizeLate)
// that lands after the loop has spent its attempts waiting for it is reacquired and must then
// be captured. The capture bound used to count reconcile attempts, so the reacquired seats were
// recorded UNKNOWN_NEEDS_RECONCILIATION ("capture kept failing") although no capture had been
// tried; every late-auth buyer of the demo went that way.
func TestReconcileLateAuthorizationOnTheLastAttempt(t *testing.T) {
	ctx := context.Background()
	h, in := authorizingR1(t, "pm_slow")
	h.advance(10 * time.Minute)
	first, err := h.steps.Reconcile(ctx, State{Input: in})
	if err != nil || first.Outcome != OutcomeRetry {
		t.Fatalf("first attempt: %+v %v", first, err)
	}
	h.expectState("r1", reservation.Released, reservation.Authorizing)

	h.pay.force("r1", "requires_capture")
	last := h.steps.attempts() - 1
	res, err := h.steps.Reconcile(ctx, State{Input: in, Reconcile: &ReconcileResult{Attempt: last, Outcome: OutcomeRetry}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeCapture || res.Captures != 1 {
		t.Fatalf("last attempt: %+v, want outcome capture after 1 capture hand-off", res)
	}
	h.expectState("r1", reservation.Confirmed, reservation.CapturePending)
}

// TestReconcileCaptureBound: the capture/reconcile loop is still bounded, by the captures
// this execution was sent to. Spent captures wait for the next attempt, and with the attempts
// spent too the step hands over without forcing UNKNOWN: confirmed seats without captured
// money are on the sweeper's index already.
func TestReconcileCaptureBound(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name        string
		attempt     int
		captures    int
		wantOutcome string
	}{
		{name: "first hand-off on a late attempt", attempt: 2, captures: 0, wantOutcome: OutcomeCapture},
		{name: "one capture failed, one more allowed", attempt: 1, captures: 1, wantOutcome: OutcomeCapture},
		{name: "captures spent, attempts left: retry", attempt: 1, captures: 2, wantOutcome: OutcomeRetry},
		{name: "captures and attempts spent: unresolved, left to the sweeper", attempt: 2, captures: 2, wantOutcome: OutcomeUnresolved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := authorized(t, h, "pm_card_visa")
			if _, err := h.steps.Confirm(ctx, State{Input: in}); err != nil {
				t.Fatal(err)
			}
			// ReconcileAttempts is 3 in the harness: two capture hand-offs per execution.
			h.steps.ReconcileAttempts = 3
			res, err := h.steps.Reconcile(ctx, State{Input: in, Reconcile: &ReconcileResult{Attempt: tc.attempt, Captures: tc.captures}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.wantOutcome || (tc.wantOutcome == OutcomeRetry) != (res.RetryAfterSeconds > 0) {
				t.Fatalf("%+v, want %s", res, tc.wantOutcome)
			}
			h.expectState("r1", reservation.Confirmed, reservation.CapturePending)
			if r := h.store.get("r1"); !r.Unsettled() {
				t.Fatal("confirmed seats without captured money are not on the sweeper's index")
			}
			if h.pay.captures != 0 {
				t.Fatalf("reconcile captured %d times; the ASL's capture state does", h.pay.captures)
			}
		})
	}
}

// lapsingStore lets the hold run out while the reconcile step writes its confirm: the step
// read a live hold, the store's conditional write finds it expired.
type lapsingStore struct {
	*fakeStore
	lapse func()
}

func (s lapsingStore) Confirm(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	if s.lapse != nil {
		s.lapse()
	}
	return s.fakeStore.Confirm(ctx, id, g)
}

// TestReconcileHoldLapsesWhileConfirming: the confirm refused with HoldExpired used to leave
// the step as the error HoldExpired, which the reconcile state does not route on, so the
// execution ended in "Needs reconciliation". It is a reason to read again: the late-success
// policy then applies.
func TestReconcileHoldLapsesWhileConfirming(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := authorized(t, h, "pm_card_visa")
	h.advance(10*time.Minute - time.Second)
	lapsed := false
	h.steps.Store = lapsingStore{fakeStore: h.store, lapse: func() {
		if !lapsed {
			lapsed = true
			h.advance(2 * time.Second)
		}
	}}
	res, err := h.steps.Reconcile(ctx, State{Input: in})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !lapsed {
		t.Fatal("the confirm was not attempted while the hold was live")
	}
	if res.Outcome != OutcomeCapture {
		t.Fatalf("%+v, want capture (reacquired)", res)
	}
	r := h.store.get("r1")
	if r.Inventory != reservation.Confirmed || r.Outcome != reservation.OutcomeConfirmedLate {
		t.Fatalf("reservation %s/%s outcome %s, want reacquired", r.Inventory, r.Payment, r.Outcome)
	}
}

// TestReconcileLateVoidUnanswered: the void of a late authorization whose seats are gone is
// not answered; the step records the unknown and waits, instead of failing with
// PaymentUncertain (which the reconcile state does not retry). The next attempt voids it.
func TestReconcileLateVoidUnanswered(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessVoid)
	in := authorized(t, h, "pm_card_visa")
	h.advance(10 * time.Minute)
	down := &payment.Uncertain{Op: payment.OpCancel, Reason: "timeout"}
	h.pay.fail["cancel"] = []error{down}
	res, err := h.steps.Reconcile(ctx, State{Input: in})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if res.Outcome != OutcomeRetry || res.RetryAfterSeconds <= 0 {
		t.Fatalf("%+v, want retry", res)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	res, err = h.steps.Reconcile(ctx, State{Input: in, Reconcile: &res})
	if err != nil || res.Outcome != OutcomeVoided {
		t.Fatalf("second attempt: %+v %v", res, err)
	}
	h.expectState("r1", reservation.Released, reservation.Canceled)
	if h.pay.status("r1") != "canceled" {
		t.Fatalf("intent %s", h.pay.status("r1"))
	}
}

// TestASLLateAuthorizationOnTheLastAttempt runs the definition: a late authorization found by
// the last reconcile attempt ends Confirmed, not "Needs reconciliation".
func TestASLLateAuthorizationOnTheLastAttempt(t *testing.T) {
	r := newASLRun(t, reservation.LateSuccessReacquire)
	x := r.start(input("r1", "pm_slow", "A1"))
	r.waitingWith("r1", reservation.Authorizing)
	r.clk.Advance(10 * time.Minute)
	last := r.steps.attempts()
	r.waitFor("all but the last reconcile attempt", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.finished["reconcile"] == last-1
	})
	r.expectState("r1", reservation.Released, reservation.Authorizing)
	r.pay.force("r1", "requires_capture")
	r.finish(x)
	r.expectEnding(x, EndConfirmed)
	want := []string{"Claim seats", "Wait for payment authorization"}
	for i := 0; i < last-1; i++ {
		want = append(want, "Reconcile payment", "What did reconciliation find?", "Wait before reconciling again")
	}
	want = append(want, "Reconcile payment", "What did reconciliation find?", "Capture payment", "Confirmed")
	r.expectPath(x, want...)
	r.expectState("r1", reservation.Confirmed, reservation.Paid)
	if r.pay.captures != 1 {
		t.Fatalf("captures %d", r.pay.captures)
	}
}

// TestReconcileNeverWaitsPastALiveHold: after the payment wait failed, reconcile resumes the
// wait with the time left on the hold (rounded up to the second the deadline falls in, never
// a second more), and once the resumes are spent, or the provider does not answer, its retry
// wakes no later than the hold's deadline, however long the backoff.
func TestReconcileNeverWaitsPastALiveHold(t *testing.T) {
	ctx := context.Background()
	// waiting claims r1 with a payment waiting for 3-D Secure and moves the clock by elapsed.
	waiting := func(t *testing.T, elapsed time.Duration) (*harness, State, time.Time) {
		t.Helper()
		h, in := authorizingR1(t, "pm_3ds")
		h.advance(elapsed)
		return h, State{Input: in, Failure: &Failure{Error: "Lambda.ServiceException"}}, h.store.get("r1").HoldExpiresAt
	}
	for _, tc := range []struct {
		name     string
		elapsed  time.Duration
		wantLeft int64
	}{
		{name: "whole seconds left", elapsed: 7*time.Minute + 30*time.Second, wantLeft: 150},
		{name: "part of a second left over", elapsed: 7*time.Minute + 30*time.Second + 400*time.Millisecond, wantLeft: 150},
		{name: "less than a second left", elapsed: 10*time.Minute - 300*time.Millisecond, wantLeft: 1},
	} {
		t.Run("resume: "+tc.name, func(t *testing.T) {
			h, st, deadline := waiting(t, tc.elapsed)
			res, err := h.steps.Reconcile(ctx, st)
			if err != nil || res.Outcome != OutcomeResume || res.Hold == nil {
				t.Fatalf("%+v %v", res, err)
			}
			left := deadline.Sub(h.now)
			if res.Hold.SecondsLeft != tc.wantLeft || time.Duration(res.Hold.SecondsLeft-1)*time.Second >= left {
				t.Fatalf("secondsLeft %d with %s left, want %d", res.Hold.SecondsLeft, left, tc.wantLeft)
			}
			if !res.Hold.HoldExpiresAt.Equal(deadline) || res.Resumes != 1 {
				t.Fatalf("%+v hold %+v", res, res.Hold)
			}
			h.expectState("r1", reservation.PaymentPending, reservation.Authorizing)
		})
	}
	t.Run("resumes spent: the retry wakes at the deadline, not after the backoff", func(t *testing.T) {
		h, st, _ := waiting(t, 7*time.Minute+30*time.Second)
		h.steps.ReconcileBackoff = 5 * time.Minute
		st.Reconcile = &ReconcileResult{Attempt: 1, Outcome: OutcomeResume, Resumes: maxResumes}
		res, err := h.steps.Reconcile(ctx, st)
		if err != nil || res.Outcome != OutcomeRetry || res.RetryAfterSeconds != 150 || res.Resumes != maxResumes {
			t.Fatalf("%+v %v, want retry after 150s", res, err)
		}
	})
	t.Run("resumes spent, the deadline further than the backoff: the backoff", func(t *testing.T) {
		h, st, _ := waiting(t, time.Minute)
		st.Reconcile = &ReconcileResult{Attempt: 1, Outcome: OutcomeResume, Resumes: maxResumes}
		res, err := h.steps.Reconcile(ctx, st)
		// The harness's first backoff is 10s, doubled for the second attempt.
		if err != nil || res.Outcome != OutcomeRetry || res.RetryAfterSeconds != 20 {
			t.Fatalf("%+v %v, want retry after 20s", res, err)
		}
	})
	t.Run("provider down during a live hold: the retry wakes at the deadline", func(t *testing.T) {
		h, st, _ := waiting(t, 9*time.Minute+15*time.Second)
		h.steps.ReconcileBackoff = 5 * time.Minute
		h.pay.fail["retrieve"] = []error{&payment.Uncertain{Op: payment.OpRetrieve, Reason: "connection"}}
		res, err := h.steps.Reconcile(ctx, st)
		if err != nil || res.Outcome != OutcomeRetry || res.RetryAfterSeconds != 45 {
			t.Fatalf("%+v %v, want retry after 45s", res, err)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	})
}
