package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/statemachine"
)

// timeoutMargin is what the definition's TimeoutSeconds keeps above the longest legitimate
// execution: Step Functions' own scheduling, cold starts, a clock that is not exact.
const timeoutMargin = time.Hour

// executionBudget is how long an execution can legitimately run, part by part.
type executionBudget struct {
	// hold is the longest hold a claim is granted. Every entry of the payment wait ends at the
	// hold's deadline (its timeout is the time left), so all the waiting for the buyer fits in
	// it.
	hold time.Duration
	// reconcileWaits is the reconcile loop's backoff: at most one "Wait before reconciling
	// again" per attempt (one more than the loop can take), each at most MaxReconcileBackoff.
	reconcileWaits time.Duration
	// tasks is, per step function, the most entries of its states times the longest one entry
	// can take: every retrier of the state's Retry spent (each delay at most IntervalSeconds ×
	// BackoffRate^n, capped by MaxDelaySeconds; full jitter only shortens it) and every
	// attempt running to the function's timeout.
	tasks map[string]time.Duration
}

func (b executionBudget) total() time.Duration {
	t := b.hold + b.reconcileWaits
	for _, d := range b.tasks {
		t += d
	}
	return t
}

func (b executionBudget) String() string {
	names := make([]string, 0, len(b.tasks))
	for n := range b.tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := []string{"hold " + b.hold.String(), "reconcile waits " + b.reconcileWaits.String()}
	for _, n := range names {
		parts = append(parts, n+" "+b.tasks[n].String())
	}
	return b.total().String() + " (" + strings.Join(parts, ", ") + ")"
}

// retrySpec is one retrier of a Retry block as the ASL spells it.
type retrySpec struct {
	ErrorEquals     []string
	IntervalSeconds *float64
	MaxAttempts     *int
	BackoffRate     *float64
	MaxDelaySeconds *float64
}

// worstDelay is the longest a retrier waits over all its retries, with the ASL's defaults
// (IntervalSeconds 1, MaxAttempts 3, BackoffRate 2.0), and its retries.
func (r retrySpec) worstDelay() (time.Duration, int) {
	interval, attempts, rate := 1.0, 3, 2.0
	if r.IntervalSeconds != nil {
		interval = *r.IntervalSeconds
	}
	if r.MaxAttempts != nil {
		attempts = *r.MaxAttempts
	}
	if r.BackoffRate != nil {
		rate = *r.BackoffRate
	}
	var total float64
	for n := 0; n < attempts; n++ {
		d := interval * math.Pow(rate, float64(n))
		if r.MaxDelaySeconds != nil {
			d = math.Min(d, *r.MaxDelaySeconds)
		}
		total += d
	}
	return time.Duration(total * float64(time.Second)), attempts
}

// stepEntries is, per step function, how often its states can be entered in one execution,
// from the saga's own bounds: a wait is resumed at most maxResumes times, reconcile hands an
// execution back to "Capture payment" at most captureHandOffs times and retries at most
// attempts-1 times. Every entry of the payment wait can lead to one Confirm and one
// compensation (the compensation states together); Capture is entered from each Confirm and
// each hand-off; each reconcile run ends the execution or retries, resumes or hands off. The
// payment wait's time is the hold's.
func stepEntries(s *Steps) map[string]int {
	waits := 1 + maxResumes
	return map[string]int{
		"claim":      1,
		"confirm":    waits,
		"capture":    waits + s.captureHandOffs(),
		"compensate": waits,
		"reconcile":  s.attempts() + maxResumes + s.captureHandOffs(),
	}
}

// longestExecution computes the budget of def: the hold, the reconcile loop, and for every
// Task state but the payment wait its Retry and its function's timeout, times the entries
// stepEntries allows (the states of one function share its entries, priced at the dearest).
func longestExecution(def []byte, maxHold time.Duration, s *Steps, timeouts map[string]time.Duration) (executionBudget, error) {
	var d struct {
		States map[string]struct {
			Type     string
			Resource string
			Retry    []retrySpec
		}
	}
	if err := json.Unmarshal(def, &d); err != nil {
		return executionBudget{}, err
	}
	entries := stepEntries(s)
	dearest := map[string]time.Duration{}
	for name, st := range d.States {
		if st.Type != "Task" {
			continue
		}
		if st.Resource == "${LambdaInvokeWaitForTaskTokenArn}" {
			if len(st.Retry) > 0 {
				return executionBudget{}, fmt.Errorf("%s retries: its attempts no longer fit in the hold", name)
			}
			continue
		}
		step, ok := statemachine.StepFor(strings.TrimSuffix(strings.TrimPrefix(st.Resource, "${"), "}"))
		if !ok || entries[step.Name] == 0 || timeouts[step.Name] == 0 {
			return executionBudget{}, fmt.Errorf("%s invokes %s, which the budget does not know: bound its entries in stepEntries", name, st.Resource)
		}
		var waited time.Duration
		attempts := 1
		for _, r := range st.Retry {
			d, n := r.worstDelay()
			waited += d
			attempts += n
		}
		dearest[step.Name] = max(dearest[step.Name], waited+time.Duration(attempts)*timeouts[step.Name])
	}
	b := executionBudget{hold: maxHold, reconcileWaits: time.Duration(s.attempts()) * MaxReconcileBackoff, tasks: map[string]time.Duration{}}
	for step, one := range dearest {
		b.tasks[step] = time.Duration(entries[step]) * one
	}
	return b, nil
}

// checkExecutionTimeout fails unless def's top-level TimeoutSeconds is at least the budget
// plus timeoutMargin.
func checkExecutionTimeout(def []byte, maxHold time.Duration, s *Steps, timeouts map[string]time.Duration) error {
	b, err := longestExecution(def, maxHold, s, timeouts)
	if err != nil {
		return err
	}
	var top struct{ TimeoutSeconds int }
	if err := json.Unmarshal(def, &top); err != nil {
		return err
	}
	if limit := time.Duration(top.TimeoutSeconds) * time.Second; limit < b.total()+timeoutMargin {
		return fmt.Errorf("TimeoutSeconds %d (%s) is below the longest legitimate execution %s plus %s", top.TimeoutSeconds, limit, b, timeoutMargin)
	}
	return nil
}

// stepTimeouts are the deployed timeouts of the saga's step functions (internal/deploy).
func stepTimeouts() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, f := range deploy.Functions() {
		out[f.Name] = f.Timeout
	}
	return out
}

// longestHold is the longest hold a claim is granted. SEATSAGA_HOLD_SECONDS (internal/config)
// accepts any positive number, but the claim validates its hold against the claim limits,
// whose MaxHold the app never raises: a longer hold is an InvalidRequest, and no execution
// waits for it.
func longestHold(t *testing.T) time.Duration {
	t.Helper()
	longest := reservation.DefaultLimits().MaxHold
	h := newHarness(t, reservation.LateSuccessReacquire)
	h.steps.Hold = longest + time.Second
	_, err := h.steps.Claim(context.Background(), State{Input: input("r1", "", "A1")})
	wantErr[*InvalidRequest](t, err)
	h.steps.Hold = longest
	h.claim(input("r2", "", "A2"))
	return longest
}

// TestExecutionTimeoutIsBeyondEveryLegitimatePath: the definition's TimeoutSeconds is above
// what the longest legitimate execution can take (the longest hold, the reconcile loop at
// the deployed attempts and its longest backoff, every Task state's Retry spent to its last
// attempt at its function's timeout, as often as the saga's bounds let the state be entered),
// so only an execution that is stuck times out.
func TestExecutionTimeoutIsBeyondEveryLegitimatePath(t *testing.T) {
	// The deployed steps: their ReconcileAttempts is the default.
	deployed := &Steps{}
	def := statemachine.Definition()
	b, err := longestExecution(def, longestHold(t), deployed, stepTimeouts())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("longest legitimate execution: %s", b)
	if err := checkExecutionTimeout(def, longestHold(t), deployed, stepTimeouts()); err != nil {
		t.Fatal(err)
	}
}

// The control: the same check refuses a definition without TimeoutSeconds, one whose
// TimeoutSeconds the budget exceeds, and the real one once a Retry, the hold or the reconcile
// attempts grow past what it allows, so it reads what it claims to read.
func TestExecutionTimeoutCheckBites(t *testing.T) {
	hold := reservation.DefaultLimits().MaxHold
	deployed := &Steps{}
	withTop := func(timeout any) []byte {
		var def map[string]any
		if err := json.Unmarshal(statemachine.Definition(), &def); err != nil {
			t.Fatal(err)
		}
		if timeout == nil {
			delete(def, "TimeoutSeconds")
		} else {
			def["TimeoutSeconds"] = timeout
		}
		raw, _ := json.Marshal(def)
		return raw
	}
	b, err := longestExecution(statemachine.Definition(), hold, deployed, stepTimeouts())
	if err != nil {
		t.Fatal(err)
	}
	// Capture's retrier of PaymentUncertain retried 99 times instead of 3.
	var def map[string]any
	if err := json.Unmarshal(statemachine.Definition(), &def); err != nil {
		t.Fatal(err)
	}
	for _, r := range def["States"].(map[string]any)["Capture payment"].(map[string]any)["Retry"].([]any) {
		r := r.(map[string]any)
		for _, e := range r["ErrorEquals"].([]any) {
			if e == ErrPaymentUncertain {
				r["MaxAttempts"] = 99
			}
		}
	}
	longerRetry, _ := json.Marshal(def)
	for _, tc := range []struct {
		name  string
		def   []byte
		hold  time.Duration
		steps *Steps
		want  string
	}{
		{"no TimeoutSeconds", withTop(nil), hold, deployed, "TimeoutSeconds 0"},
		{"TimeoutSeconds just under the budget and its margin", withTop(int((b.total() + timeoutMargin).Seconds()) - 1), hold, deployed, "is below"},
		{"TimeoutSeconds of the hold alone", withTop(int(hold.Seconds())), hold, deployed, "is below"},
		{"capture retries an uncertain capture 99 times", longerRetry, hold, deployed, "is below"},
		{"a hold of twelve hours", statemachine.Definition(), 12 * time.Hour, deployed, "is below"},
		{"twenty reconcile attempts", statemachine.Definition(), hold, &Steps{ReconcileAttempts: 20}, "is below"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExecutionTimeout(tc.def, tc.hold, tc.steps, stepTimeouts())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if _, err := longestExecution(statemachine.Definition(), hold, deployed, map[string]time.Duration{"claim": time.Second}); err == nil {
		t.Fatal("a step without a timeout was priced")
	}
}

// TestASLExecutionTimeoutEndsTimedOut: the local engine honours the definition's top-level
// TimeoutSeconds. With it shortened to a minute, a buyer who never completes 3-D Secure keeps
// the execution waiting past it: the execution times out, which needs a person.
func TestASLExecutionTimeoutEndsTimedOut(t *testing.T) {
	r := newASLRun(t, reservation.LateSuccessReacquire)
	var def map[string]any
	if err := json.Unmarshal(statemachine.Definition(), &def); err != nil {
		t.Fatal(err)
	}
	def["TimeoutSeconds"] = 60
	raw, _ := json.Marshal(def)
	arns := map[string]string{}
	for _, s := range statemachine.Steps {
		arns[s.Name] = "arn:aws:lambda:us-east-1:000000000000:function:" + s.Name
	}
	sub, err := statemachine.SubstituteIn(raw, arns)
	if err != nil {
		t.Fatal(err)
	}
	if r.sm, err = asl.Parse(sub); err != nil {
		t.Fatal(err)
	}
	start := r.clk.Now()
	x := r.start(input("r1", "pm_3ds", "A1"))
	r.waitingWith("r1", reservation.Authorizing)
	r.finish(x)
	r.expectEnding(x, EndTimedOut)
	if s := x.Snapshot(); s.Status != asl.StatusTimedOut || !s.Stop.Equal(start.Add(time.Minute)) {
		t.Fatalf("%s at %s, want TIMED_OUT a minute after %s", s.Status, s.Stop, start)
	}
}
