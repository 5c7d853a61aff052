package saga

import (
	"context"
	"slices"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Regression tests for refunds: the truth "refunded" is believed only from the refund itself,
// a refund whose id was lost is found again under its attempt's key, and every failed or
// refused refund is counted, so at most reservation.MaxRefundAttempts are sent before the
// decision escalates.

// capturedCancel leaves r1 PAYMENT_PENDING/UNKNOWN with the customer's cancel recorded
// and the intent captured at the provider: the settlement must refund it.
func capturedCancel(t *testing.T, h *harness) Input {
	t.Helper()
	ctx := context.Background()
	in := input("r1", "pm_3ds", "A1")
	h.claim(in)
	if err := h.authorize(in, "tok1"); err != nil {
		t.Fatal(err)
	}
	h.pay.fail["cancel"] = []error{cancelTimeout}
	if _, err := h.steps.Compensate(ctx, State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}}); err == nil {
		t.Fatal("want the void unanswered")
	}
	h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	h.pay.force("r1", "succeeded")
	return in
}

// refundIDLost fails every write that would record refund re_1's id (its answer's record, or
// the id found again): a race or a store blip each time.
type refundIDLost struct{ *fakeStore }

func (s refundIDLost) UpdatePayment(ctx context.Context, u PaymentUpdate) (reservation.Reservation, error) {
	if u.RefundID == "re_1" && (u.Event == "" || u.Event == reservation.RequestRefund) {
		return reservation.Reservation{}, errBoom
	}
	return s.fakeStore.UpdatePayment(ctx, u)
}

// resolve is one sweeper pass over the reservation.
func resolve(h *harness, in Input) (string, error) { return h.steps.Resolve(context.Background(), in) }

// A refund the provider accepted (pending) whose id never got recorded: the PaymentIntent
// already counts it as refunded, but only the refund says it succeeded, so the reservation is
// REFUND_PENDING with the seats protected, and the executor finds the refund again under the
// same attempt's key. When it fails, the failure is counted and a new attempt returns the money.
func TestAPendingRefundWhoseIDWasLostIsNotTakenAsRefunded(t *testing.T) {
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := capturedCancel(t, h)
	h.pay.refundStatus = payment.RefundPending
	h.steps.Store = refundIDLost{h.store}
	// The refund's record is lost: the run stops on the store error with the money PAID.
	if _, err := resolve(h, in); err == nil {
		t.Fatal("want the refund's record to fail")
	}
	h.expectState("r1", reservation.PaymentPending, reservation.Paid)
	for run := 1; run <= 3; run++ {
		if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
			t.Fatalf("run %d: %s %v", run, outcome, err)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
		h.expectSeatOwner("A1", "r1")
		if r := h.store.get("r1"); r.RefundID != "" || r.RefundAttempts != 0 {
			t.Fatalf("run %d: refund id %q, %d failed", run, r.RefundID, r.RefundAttempts)
		}
	}
	// Finding it again repeats attempt 1 (the same refund); no second refund is made.
	if h.pay.refunds != 1 || len(h.pay.refundsByID) != 1 || slices.ContainsFunc(h.pay.refundAttempts, func(n int) bool { return n != 1 }) {
		t.Fatalf("refunds %d (%d made), attempts sent %v", h.pay.refunds, len(h.pay.refundsByID), h.pay.refundAttempts)
	}

	// re_1 fails: the money is captured again; the failure is counted and attempt 2 is sent,
	// whose id is recorded with its answer.
	h.pay.settleRefund("re_1", payment.RefundFailed)
	if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
		t.Fatalf("after re_1 failed: %s %v", outcome, err)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
	h.expectSeatOwner("A1", "r1")
	if r := h.store.get("r1"); r.RefundID != "re_2" || r.RefundAttempts != 1 || h.pay.refundAttempts[len(h.pay.refundAttempts)-1] != 2 {
		t.Fatalf("refund id %q, %d failed, attempts sent %v", r.RefundID, r.RefundAttempts, h.pay.refundAttempts)
	}
	h.pay.settleRefund("re_2", payment.RefundSucceeded)
	if outcome, err := resolve(h, in); err != nil || outcome != OutcomeCanceled {
		t.Fatalf("after re_2 succeeded: %s %v", outcome, err)
	}
	h.expectState("r1", reservation.Released, reservation.Refunded)
	h.expectSeatOwner("A1", "")
	if a := h.pay.pis[h.pay.byRes["r1"]]; a.State != payment.StateRefunded || a.AmountRefunded != a.Amount {
		t.Fatalf("money not returned: %s, refunded %d of %d", a.State, a.AmountRefunded, a.Amount)
	}
}

// A refund the provider made while its answer was lost (UNKNOWN, no id) is found again under
// the same attempt's key and read back: REFUND_PENDING until it succeeds, then REFUNDED.
func TestAnUnansweredRefundIsFoundAgainByItsKey(t *testing.T) {
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := capturedCancel(t, h)
	h.pay.refundStatus = payment.RefundPending
	// The refund acts, the answer is lost.
	h.steps.Payments = &actThenLose{fakePayments: h.pay}
	if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
		t.Fatalf("%s %v", outcome, err)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
	h.steps.Payments = h.pay
	// The intent shows refunded, no refund of ours is recorded: a refund pending.
	if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
		t.Fatalf("%s %v", outcome, err)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
	// The id is missing: attempt 1 is repeated, which finds re_1 again, still pending.
	if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
		t.Fatalf("%s %v", outcome, err)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
	h.expectSeatOwner("A1", "r1")
	if r := h.store.get("r1"); r.RefundID != "re_1" || !slices.Equal(h.pay.refundAttempts, []int{1, 1}) || len(h.pay.refundsByID) != 1 {
		t.Fatalf("refund id %q, attempts sent %v, %d refunds made", r.RefundID, h.pay.refundAttempts, len(h.pay.refundsByID))
	}
	h.pay.settleRefund("re_1", payment.RefundSucceeded)
	if outcome, err := resolve(h, in); err != nil || outcome != OutcomeCanceled {
		t.Fatalf("%s %v", outcome, err)
	}
	h.expectState("r1", reservation.Released, reservation.Refunded)
	h.expectSeatOwner("A1", "")
	if h.pay.refunds != 1 || len(h.pay.refundAttempts) != 2 {
		t.Fatalf("refunds %d, attempts sent %v", h.pay.refunds, h.pay.refundAttempts)
	}
}

type actThenLose struct {
	*fakePayments
	done bool
}

func (p *actThenLose) Refund(ctx context.Context, req payment.RefundRequest) (payment.Refund, error) {
	if p.done {
		return p.fakePayments.Refund(ctx, req)
	}
	p.done = true
	_, _ = p.fakePayments.Refund(ctx, req)
	return payment.Refund{}, &payment.Uncertain{Op: payment.OpRefund, Reason: "timeout"}
}

// A refund that fails while the stored payment is PAID (before RequestRefund was recorded) or
// UNKNOWN (the provider blipped while it was pending) is counted there too (RefundFailed), so
// the next refund is a new attempt with its own key and repeated failures escalate.
func TestARefundFailedOutsideRefundPendingIsCounted(t *testing.T) {
	t.Run("failed before RequestRefund was recorded: counted each time, escalated at the bound", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := capturedCancel(t, h)
		h.pay.refundStatus = payment.RefundFailed
		outcome, err := resolve(h, in)
		if err != nil || outcome != OutcomeUnresolved {
			t.Fatalf("%s %v", outcome, err)
		}
		r := h.store.get("r1")
		if r.RefundAttempts != reservation.MaxRefundAttempts || r.RefundID != "" ||
			!slices.Equal(h.pay.refundAttempts, []int{1, 2, 3}) || h.mem.Total(MetricSettlementEscalated) != 1 {
			t.Fatalf("RefundAttempts %d, refund id %q, attempts sent %v, escalations %v",
				r.RefundAttempts, r.RefundID, h.pay.refundAttempts, h.mem.Total(MetricSettlementEscalated))
		}
		// The money is still captured: the seats stay protected for the person who looks.
		h.expectState("r1", reservation.PaymentPending, reservation.Paid)
		h.expectSeatOwner("A1", "r1")
		// The next pass sends nothing more and escalates again.
		if outcome, err := resolve(h, in); err != nil || outcome != OutcomeUnresolved || len(h.pay.refundAttempts) != 3 {
			t.Fatalf("next pass: %s %v, attempts sent %v", outcome, err, h.pay.refundAttempts)
		}
	})
	t.Run("failed while the record was UNKNOWN: counted, the next attempt has its own key", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := capturedCancel(t, h)
		h.pay.refundStatus = payment.RefundPending
		if _, err := resolve(h, in); err != nil {
			t.Fatal(err)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
		// The provider blips: UNKNOWN is recorded; meanwhile the refund fails.
		h.pay.fail["retrieve"] = []error{&payment.Uncertain{Op: payment.OpRetrieve, Reason: "timeout"}}
		if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
			t.Fatalf("%s %v", outcome, err)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		h.pay.settleRefund("re_1", payment.RefundFailed)
		if outcome, err := resolve(h, in); err != nil || outcome != OutcomeRetry {
			t.Fatalf("%s %v", outcome, err)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
		h.expectSeatOwner("A1", "r1")
		if r := h.store.get("r1"); r.RefundAttempts != 1 || r.RefundID != "re_2" || !slices.Equal(h.pay.refundAttempts, []int{1, 2}) {
			t.Fatalf("RefundAttempts %d, refund id %q, attempts sent %v", r.RefundAttempts, r.RefundID, h.pay.refundAttempts)
		}
	})
}

// A refund the provider refuses (a Failed: e.g. object_state for a disputed charge) is a
// failed attempt: counted, the next uses a new key, and after reservation.MaxRefundAttempts
// refusals the decision escalates. One run sends at most that many; later runs send none.
func TestARefusedRefundCountsAsAFailedAttemptAndEscalates(t *testing.T) {
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := capturedCancel(t, h)
	refused := &payment.Failed{Op: payment.OpRefund, Category: payment.FailureObjectState, Code: "charge_disputed", HTTPStatus: 400}
	for range 50 {
		h.pay.fail["refund"] = append(h.pay.fail["refund"], refused)
	}
	outcome, err := resolve(h, in)
	if err != nil || outcome != OutcomeUnresolved {
		t.Fatalf("outcome %q, err %v", outcome, err)
	}
	want := []int{1, 2, 3}
	if len(want) != reservation.MaxRefundAttempts || !slices.Equal(h.pay.refundAttempts, want) {
		t.Fatalf("refund attempts sent %v, want %v", h.pay.refundAttempts, want)
	}
	r := h.store.get("r1")
	if r.RefundAttempts != reservation.MaxRefundAttempts || r.RefundID != "" || h.pay.refunds != 0 {
		t.Fatalf("RefundAttempts %d, refund id %q, refunds %d", r.RefundAttempts, r.RefundID, h.pay.refunds)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.Paid)
	h.expectSeatOwner("A1", "r1")
	// Reconcile answers unresolved too, without sending another refund.
	res := reconcile(t, h, &State{Input: in})
	if res.Outcome != OutcomeUnresolved || len(h.pay.refundAttempts) != reservation.MaxRefundAttempts {
		t.Fatalf("reconcile %+v, attempts sent %v", res, h.pay.refundAttempts)
	}
	if n := h.mem.Total(MetricSettlementEscalated); n != 2 {
		t.Fatalf("escalations %v, want 2 (sweeper, reconcile)", n)
	}
}

// A PaymentIntent refunded in full by a refund that is not ours under any attempt key (made in
// the dashboard, or ours once the provider stopped replaying its key after 24 hours) once
// flipped REFUND_PENDING <-> UNKNOWN forever. It is taken as a refund pending; repeating the
// attempt to find its id is refused (charge_already_refunded), and that refusal is an answer:
// each counts as a failed attempt, so a person is asked after the bound.
func TestARefundNotFoundAgainUnderItsKeyEscalates(t *testing.T) {
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := capturedCancel(t, h)
	h.pay.force("r1", "refunded")
	var outcomes []string
	for pass := 1; pass <= 6; pass++ {
		outcome, err := resolve(h, in)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		outcomes = append(outcomes, outcome)
		if r := h.store.get("r1"); r.Payment == reservation.Refunded || r.Inventory == reservation.Released {
			t.Fatalf("pass %d: %s/%s without the refund's own answer", pass, r.Inventory, r.Payment)
		}
		if outcome == OutcomeUnresolved {
			break
		}
	}
	var flips int
	for _, c := range h.store.Changes() {
		if c.PaymentEvent == reservation.OutcomeUnknown || c.PaymentEvent == reservation.RequestRefund {
			flips++
		}
	}
	if got := h.store.get("r1").RefundAttempts; got != reservation.MaxRefundAttempts {
		t.Fatalf("%d failed attempts counted before escalating, want %d", got, reservation.MaxRefundAttempts)
	}
	if outcomes[len(outcomes)-1] != OutcomeUnresolved || h.mem.Total(MetricSettlementEscalated) == 0 {
		t.Fatalf("sweeper passes answered %v, never escalated; %d UNKNOWN/REFUND_PENDING records; refund attempts sent %v",
			outcomes, flips, h.pay.refundAttempts)
	}
}
