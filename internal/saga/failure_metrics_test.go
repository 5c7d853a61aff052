package saga

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/statemachine"
)

var (
	storeDown     = errors.New("ProvisionedThroughputExceededException")
	retrieveDown  = &payment.Uncertain{Op: payment.OpRetrieve, Reason: "timeout"}
	captureLost   = &payment.Uncertain{Op: payment.OpCapture, Reason: "timeout"}
	refundLost    = &payment.Uncertain{Op: payment.OpRefund, Reason: "timeout"}
	canceledState = func(in Input) State { return State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}} }
)

func stepDim(step string) metrics.Dim { return metrics.Dim{Name: "step", Value: step} }

// TestStepRetryableErrorCountsWhatTheStateMachineRetries: an attempt is counted under its step
// exactly when the definition's Retry for that step retries the error it returns, whatever
// else the step does with it.
func TestStepRetryableErrorCountsWhatTheStateMachineRetries(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		step string
		// run brings r1 where the case needs it and runs the step once.
		run  func(t *testing.T, h *harness) error
		want int64
	}{
		{name: "claim, store down: TransientError is retried", step: "claim", want: 1,
			run: func(t *testing.T, h *harness) error {
				h.store.fail[sagatest.OpClaim] = storeDown
				_, err := h.steps.Claim(ctx, State{Input: input("r1", "", "A1")})
				return err
			}},
		{name: "claim, seat taken: a business outcome is never retried", step: "claim", want: 0,
			run: func(t *testing.T, h *harness) error {
				h.claim(input("winner", "", "A1"))
				_, err := h.steps.Claim(ctx, State{Input: input("r1", "", "A1")})
				return err
			}},
		{name: "authorize, store down: the payment wait retries nothing", step: "authorize", want: 0,
			run: func(t *testing.T, h *harness) error {
				in := input("r1", "pm_card_visa", "A1")
				h.claim(in)
				h.store.fail[sagatest.OpGet] = storeDown
				return h.authorize(in, "tok1")
			}},
		{name: "confirm, store down: TransientError is retried", step: "confirm", want: 1,
			run: func(t *testing.T, h *harness) error {
				in := authorized(t, h, "pm_card_visa")
				h.store.fail[sagatest.OpGet] = storeDown
				_, err := h.steps.Confirm(ctx, State{Input: in})
				return err
			}},
		{name: "confirm, provider unanswered: confirm does not retry PaymentUncertain", step: "confirm", want: 0,
			run: func(t *testing.T, h *harness) error {
				in := input("r1", "pm_card_visa", "A1")
				h.claim(in)
				if err := h.authorize(in, "tok1"); err != nil {
					t.Fatal(err)
				}
				h.pay.fail["retrieve"] = []error{retrieveDown}
				_, err := h.steps.Confirm(ctx, State{Input: in})
				return err
			}},
		{name: "capture, answer lost: capture retries PaymentUncertain", step: "capture", want: 1,
			run: func(t *testing.T, h *harness) error {
				in := authorized(t, h, "pm_card_visa")
				if _, err := h.steps.Confirm(ctx, State{Input: in}); err != nil {
					t.Fatal(err)
				}
				h.pay.fail["capture"] = []error{captureLost}
				_, err := h.steps.Capture(ctx, State{Input: in})
				return err
			}},
		{name: "compensate, void unanswered: retried", step: "compensate", want: 1,
			run: func(t *testing.T, h *harness) error {
				in := authorized(t, h, "pm_card_visa")
				h.pay.fail["cancel"] = []error{cancelTimeout}
				_, err := h.steps.Compensate(ctx, canceledState(in))
				return err
			}},
		{name: "compensate, sold seats handed to reconciliation: not retried", step: "compensate", want: 0,
			run: func(t *testing.T, h *harness) error {
				in := authorized(t, h, "pm_card_visa")
				h.steps.Confirm(ctx, State{Input: in})
				if _, err := h.steps.Capture(ctx, State{Input: in}); err != nil {
					t.Fatal(err)
				}
				_, err := h.steps.Compensate(ctx, canceledState(in))
				return err
			}},
		{name: "reconcile, store down: TransientError is retried", step: "reconcile", want: 1,
			run: func(t *testing.T, h *harness) error {
				in := authorized(t, h, "pm_card_visa")
				h.store.fail[sagatest.OpGet] = storeDown
				_, err := h.steps.Reconcile(ctx, State{Input: in})
				return err
			}},
		{name: "reconcile, provider down: its own loop waits, no error", step: "reconcile", want: 0,
			run: func(t *testing.T, h *harness) error {
				in := authorized(t, h, "pm_card_visa")
				h.pay.fail["retrieve"] = []error{retrieveDown}
				_, err := h.steps.Reconcile(ctx, State{Input: in})
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			err := tc.run(t, h)
			if tc.want > 0 && err == nil {
				t.Fatal("the step did not fail")
			}
			if got := h.mem.Get(MetricStepRetryableError, stepDim(tc.step)); got != tc.want {
				t.Fatalf("%s counted %d under step %s after %v, want %d", MetricStepRetryableError, got, tc.step, err, tc.want)
			}
			if got := h.mem.Total(MetricStepRetryableError); got != tc.want {
				t.Fatalf("%s counted %d in all, want %d under step %s only", MetricStepRetryableError, got, tc.want, tc.step)
			}
		})
	}
}

// TestCompensationFailedCountsOnlyCompensationsThatDidNotHappen: a void, refund or release that
// went through is volume (CompensationOutcome), not a failure, and neither is an attempt that
// failed (the state machine retries it; StepRetryableError counts that). A compensation has
// failed when the state machine gives up on it after its retries and hands it to
// reconciliation (its Catch writes $.compensationFailure): reconciliation counts it once.
func TestCompensationFailedCountsOnlyCompensationsThatDidNotHappen(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// state brings r1 where the case needs it and returns the compensate step's input.
		state      func(t *testing.T, h *harness) State
		wantFailed int64
		// handoff: the step returns the hand-off to reconciliation, which is no failure.
		handoff bool
	}{
		{name: "voided and released", wantFailed: 0,
			state: func(t *testing.T, h *harness) State { return canceledState(authorized(t, h, "pm_card_visa")) }},
		{name: "refunded and released", wantFailed: 0,
			state: func(t *testing.T, h *harness) State { return cancelAfterCapture(t, h, "") }},
		{name: "the claim never landed: nothing to give back", wantFailed: 0,
			state: func(t *testing.T, h *harness) State {
				return State{Input: input("r1", "", "A1"), Failure: &Failure{Error: ErrHoldExpired}}
			}},
		{name: "sold seats: handed to reconciliation, which sells", wantFailed: 0, handoff: true,
			state: func(t *testing.T, h *harness) State {
				in := authorized(t, h, "pm_card_visa")
				h.steps.Confirm(ctx, State{Input: in})
				if _, err := h.steps.Capture(ctx, State{Input: in}); err != nil {
					t.Fatal(err)
				}
				return canceledState(in)
			}},
		{name: "void unanswered", wantFailed: 1,
			state: func(t *testing.T, h *harness) State {
				in := authorized(t, h, "pm_card_visa")
				h.pay.fail["cancel"] = []error{cancelTimeout}
				return canceledState(in)
			}},
		{name: "refund unanswered", wantFailed: 1,
			state: func(t *testing.T, h *harness) State {
				st := cancelAfterCapture(t, h, "")
				h.pay.fail["refund"] = []error{refundLost}
				return st
			}},
		{name: "the store cannot be read", wantFailed: 1,
			state: func(t *testing.T, h *harness) State {
				in := authorized(t, h, "pm_card_visa")
				h.store.fail[sagatest.OpGet] = storeDown
				return canceledState(in)
			}},
		{name: "the release cannot be written", wantFailed: 1,
			state: func(t *testing.T, h *harness) State {
				in := input("r1", "", "A1")
				h.claim(in)
				h.advance(11 * time.Minute)
				h.store.fail[sagatest.OpRelease] = storeDown
				return State{Input: in, Failure: &Failure{Error: ErrHoldExpired}}
			}},
		{name: "the payment is processing: the void must wait", wantFailed: 1,
			state: func(t *testing.T, h *harness) State {
				in := input("r1", "pm_slow", "A1")
				h.claim(in)
				if err := h.authorize(in, "tok1"); err != nil {
					t.Fatal(err)
				}
				return canceledState(in)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			st := tc.state(t, h)
			_, err := h.steps.Compensate(ctx, st)
			if (err != nil) != (tc.wantFailed > 0 || tc.handoff) {
				t.Fatalf("compensate returned %v", err)
			}
			if got := h.mem.Total(MetricCompensationFailed); got != 0 {
				t.Fatalf("%s = %d after one attempt, which the state machine retries", MetricCompensationFailed, got)
			}
			if tc.wantFailed == 0 {
				return
			}
			// The retries are spent: the Catch hands the error to reconciliation.
			h.store.fail = map[string]error{}
			h.pay.fail = map[string][]error{}
			st.CompensationFailure = &Failure{Error: reportedName(err), Cause: err.Error()}
			first, err := h.steps.Reconcile(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.mem.Get(MetricCompensationFailed, stepDim(stepCompensate)); got != tc.wantFailed {
				t.Fatalf("%s = %d after reconciliation took it up, want %d", MetricCompensationFailed, got, tc.wantFailed)
			}
			st.Reconcile = &first
			if _, err := h.steps.Reconcile(ctx, st); err != nil {
				t.Fatal(err)
			}
			if got := h.mem.Total(MetricCompensationFailed); got != tc.wantFailed {
				t.Fatalf("%s = %d after a second reconcile attempt, want it counted once", MetricCompensationFailed, got)
			}
		})
	}
}

// The new counts reach CloudWatch with the empty dimension set the alarms read, besides the
// per-step series, in Unit Count.
func TestFailureCountsReachEMFWithTheEmptyDimensionSet(t *testing.T) {
	var out bytes.Buffer
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := authorized(t, h, "pm_card_visa")
	h.steps.Metrics = emf.New(&out, "Seatsaga")
	h.pay.fail["cancel"] = []error{cancelTimeout}
	st := canceledState(in)
	_, err := h.steps.Compensate(context.Background(), st)
	if err == nil {
		t.Fatal("the void was answered")
	}
	st.CompensationFailure = &Failure{Error: reportedName(err)}
	if _, err := h.steps.Reconcile(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
			Step string `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		d := l.AWS.CloudWatchMetrics[0]
		for _, m := range d.Metrics {
			if m.Name != MetricCompensationFailed && m.Name != MetricStepRetryableError {
				continue
			}
			found[m.Name] = true
			if m.Unit != "Count" || l.Step != stepCompensate || !reflect.DeepEqual(d.Dimensions, [][]string{{"step"}, {}}) {
				t.Errorf("%s: unit %s, step %q, dimensions %v", m.Name, m.Unit, l.Step, d.Dimensions)
			}
		}
	}
	if !found[MetricCompensationFailed] || !found[MetricStepRetryableError] {
		t.Fatalf("lines for %v only:\n%s", found, out.String())
	}
}

// The definition's Retry is read for every step, so a step whose states the parse missed
// cannot silently never count, and the states that invoke one step retry the same errors, so
// a step's count does not depend on which of them invoked it.
func TestEveryStepsRetryIsReadFromTheDefinition(t *testing.T) {
	for _, s := range statemachine.Steps {
		states := stepRetries[s.Name]
		if len(states) == 0 {
			t.Errorf("no state of the definition invokes %s", s.Name)
			continue
		}
		for _, name := range []string{ErrTransientError, ErrTransactionConflict, ErrPaymentUncertain, ErrHoldExpired, "ConflictError"} {
			first := retries(states[0], name)
			for _, retriers := range states[1:] {
				if retries(retriers, name) != first {
					t.Errorf("the states invoking %s disagree on retrying %s", s.Name, name)
				}
			}
		}
	}
	// The payment wait is the one state that retries nothing; every other step retries the
	// transient names (TestDefinitionPolicy holds the definition to that).
	if retriedIn(stepRetries["authorize"], ErrTransientError) || !retriedIn(stepRetries["claim"], ErrTransientError) {
		t.Fatalf("authorize %v, claim %v", stepRetries["authorize"], stepRetries["claim"])
	}
}

func TestRetryIsAppliedAsStepFunctionsDoes(t *testing.T) {
	def := []byte(`{"States":{
		"A":{"Type":"Task","Resource":"${ClaimFunctionArn}","Retry":[
			{"ErrorEquals":["TransientError"],"MaxAttempts":0},
			{"ErrorEquals":["TransientError","TransactionConflict"]}]},
		"B":{"Type":"Task","Resource":"${LambdaInvokeWaitForTaskTokenArn}",
			"Parameters":{"FunctionName":"${AuthorizeFunctionArn}"},"Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":2}]},
		"C":{"Type":"Task","Resource":"${CompensateFunctionArn}","Retry":[{"ErrorEquals":["PaymentUncertain"]}]},
		"D":{"Type":"Task","Resource":"${CompensateFunctionArn}","Retry":[{"ErrorEquals":["TransientError"]}]},
		"E":{"Type":"Task","Resource":"${ConfirmFunctionArn}","Retry":[{"ErrorEquals":["States.TaskFailed"]}]},
		"W":{"Type":"Wait","Seconds":1,"Next":"A"}}}`)
	got := retriesOf(def)
	cases := []struct {
		step, err string
		want      bool
	}{
		// The first retrier that matches decides, and MaxAttempts 0 retries nothing.
		{"claim", "TransientError", false},
		{"claim", "TransactionConflict", true},
		{"claim", "PaymentUncertain", false},
		// A service integration invokes the function its Parameters name.
		{"authorize", "ConflictError", true},
		// A step invoked by states that disagree does not count as retried.
		{"compensate", "PaymentUncertain", false},
		{"compensate", "TransientError", false},
		{"confirm", "ConflictError", true},
		// A step no state invokes is never retried.
		{"capture", "TransientError", false},
	}
	for _, tc := range cases {
		if r := retriedIn(got[tc.step], tc.err); r != tc.want {
			t.Errorf("%s after %s: retried %v, want %v", tc.step, tc.err, r, tc.want)
		}
	}
}

// The name the retry is decided on is the one the Lambda runtime reports: the routed error's
// type, unwrapped, for a pointer its element.
func TestTheReportedNameIsTheRoutedErrorsType(t *testing.T) {
	wrapped := errors.Join(errors.New("context"), &TransientError{Detail: "x"})
	for err, want := range map[error]string{
		&PaymentUncertain{}: ErrPaymentUncertain,
		wrapped:             ErrTransientError,
		&ConflictError{}:    "ConflictError",
		storeDown:           "errorString",
	} {
		if got := reportedName(err); got != want {
			t.Errorf("%T: %q, want %q", err, got, want)
		}
	}
}
