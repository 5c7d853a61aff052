package saga

import (
	"context"
	"encoding/json"
	"flag"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/statemachine"
)

// These tests run the saga's definition (package statemachine) on the local engine
// (internal/twin/asl) with the real step handlers over the in-memory fakes and a fake clock:
// every path the ASL can take, its state names and its transition count.

func loadMachine(t testing.TB) *asl.StateMachine {
	t.Helper()
	arns := map[string]string{}
	for _, s := range statemachine.Steps {
		arns[s.Name] = "arn:aws:lambda:us-east-1:000000000000:function:" + s.Name
	}
	def, err := statemachine.Substitute(arns)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		t.Fatalf("the definition does not parse: %v", err)
	}
	return sm
}

// funcOf adapts a typed handler to an in-process Lambda function.
func funcOf(handler any) asl.Func {
	hv := reflect.ValueOf(handler)
	inType := hv.Type().In(1)
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		in := reflect.New(inType)
		if err := json.Unmarshal(payload, in.Interface()); err != nil {
			return nil, err
		}
		out := hv.Call([]reflect.Value{reflect.ValueOf(ctx), in.Elem()})
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, err
		}
		return json.Marshal(out[0].Interface())
	}
}

type aslRun struct {
	*harness
	t      testing.TB
	clk    *clock.Fake
	engine *asl.Engine
	sm     *asl.StateMachine
	funcs  *asl.FuncInvoker
	mu     sync.Mutex
	crash  map[string]int // function -> invocations to fail after running
	// after runs once a function's handler has returned, before the engine sees its answer,
	// with the invocation's number (1 for the first): the place to interleave an outside actor.
	after map[string]func(call int)
	execs []*asl.Execution
	// started and finished count invocations per function, so a test acts only once the
	// authorize step has returned (as the provider's webhook would, after the payment moved).
	started, finished map[string]int
}

func newASLRun(t testing.TB, policy reservation.LateSuccessPolicy) *aslRun {
	h := newHarness(t, policy)
	clk := clock.NewFake(h.now)
	h.steps.Now = clk.Now
	h.store.now = clk.Now
	r := &aslRun{harness: h, t: t, clk: clk, sm: loadMachine(t), crash: map[string]int{}, after: map[string]func(int){},
		started: map[string]int{}, finished: map[string]int{}}
	r.funcs = asl.NewFuncInvoker(nil)
	for name, handler := range h.steps.Handlers() {
		f := funcOf(handler)
		r.funcs.Register(name, func(ctx context.Context, payload []byte) ([]byte, error) {
			r.mu.Lock()
			r.started[name]++
			call, hook := r.started[name], r.after[name]
			r.mu.Unlock()
			out, err := f(ctx, payload)
			if hook != nil {
				hook(call)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.finished[name]++
			if r.crash[name] > 0 {
				// The handler's effects happened; its answer is lost.
				r.crash[name]--
				return nil, &asl.FunctionError{Type: "Lambda.ServiceException", Message: "crashed after writing"}
			}
			return out, err
		})
	}
	r.engine = asl.NewEngine(asl.Options{Clock: clk, Invoker: r.funcs, Jitter: func() float64 { return 0.5 }})
	t.Cleanup(r.recordEntered)
	return r
}

// entered counts, by name, every state entered by any execution an aslRun started in this
// package, for TestASLEntersEveryState.
var entered = struct {
	sync.Mutex
	states map[string]int
}{states: map[string]int{}}

// recordEntered adds the states this run's executions entered to entered.
func (r *aslRun) recordEntered() {
	r.mu.Lock()
	execs := slices.Clone(r.execs)
	r.mu.Unlock()
	for _, x := range execs {
		names := path(x)
		entered.Lock()
		for _, name := range names {
			entered.states[name]++
		}
		entered.Unlock()
	}
}

func (r *aslRun) start(in Input) *asl.Execution {
	r.t.Helper()
	payload, _ := json.Marshal(in)
	x, err := r.engine.Start(r.sm, asl.ExecutionSpec{ARN: "arn:exec:" + in.ReservationID, Name: in.ReservationID, Input: payload})
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.execs = append(r.execs, x)
	r.mu.Unlock()
	return x
}

// waitFor polls (real time) until cond holds. While nothing happens for a while (the
// engine is idle on a timer: a retry's backoff, a Wait state), it moves the fake clock to the
// next timer; it never moves it while the engine is busy.
func (r *aslRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	r.progress(what, cond)
}

func (r *aslRun) progress(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	lastEvents, idleSince := -1, time.Now()
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s", what)
		}
		events := r.events()
		if events != lastEvents {
			lastEvents, idleSince = events, time.Now()
		} else if time.Since(idleSince) > 20*time.Millisecond && r.clk.Waiters() > 0 {
			r.clk.AdvanceToNext()
			idleSince = time.Now()
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// events counts history events over every execution this run started.
func (r *aslRun) events() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.execs {
		n += len(x.History())
	}
	return n
}

func (r *aslRun) waitingWith(id string, payment reservation.PaymentState) string {
	r.t.Helper()
	var token string
	r.waitFor("the authorize step to wait", func() bool {
		res := r.store.get(id)
		token = res.TaskToken
		return token != "" && res.Payment == payment && r.engine.WaitingTasks() > 0 && r.authorizeIdle()
	})
	return token
}

// authorizeIdle reports whether every authorize invocation has returned.
func (r *aslRun) authorizeIdle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started["authorize"] > 0 && r.started["authorize"] == r.finished["authorize"]
}

// finish advances the fake clock through retries and waits until the execution ends.
func (r *aslRun) finish(x *asl.Execution) asl.Snapshot {
	r.t.Helper()
	r.progress("the execution to finish", func() bool {
		select {
		case <-x.Done():
			return true
		default:
			return false
		}
	})
	return x.Snapshot()
}

func path(x *asl.Execution) []string {
	var names []string
	for _, ev := range x.History() {
		if strings.HasSuffix(ev.Type, "StateEntered") {
			names = append(names, ev.Details["name"].(string))
		}
	}
	return names
}

func (r *aslRun) expectPath(x *asl.Execution, want ...string) {
	r.t.Helper()
	if got := path(x); !slices.Equal(got, want) {
		r.t.Fatalf("path %q\nwant %q", got, want)
	}
	if n := x.StateTransitions(); n != int64(len(want)) {
		r.t.Fatalf("%d transitions for a path of %d states", n, len(want))
	}
}

// endingOf classifies a finished execution as every reader of executions does.
func endingOf(x *asl.Execution) Ending {
	snap := x.Snapshot()
	return EndingOf(snap.Status, string(snap.Output), snap.Error)
}

// expectEnding fails the test unless the execution ended with outcome. The execution
// succeeded unless outcome needs a person, and a business ending's output is its verdict: a
// known Error, a Cause and, after a compensation, what the compensation did, nothing else.
func (r *aslRun) expectEnding(x *asl.Execution, outcome string) Ending {
	r.t.Helper()
	snap := x.Snapshot()
	e := endingOf(x)
	if e.Outcome != outcome {
		r.t.Fatalf("ended %s (%s %s %s), want %s; path %q", e.Outcome, snap.Status, snap.Error, snap.Cause, outcome, path(x))
	}
	if e.NeedsPerson != (snap.Status != asl.StatusSucceeded) {
		r.t.Fatalf("%s: status %s, needs a person %v", outcome, snap.Status, e.NeedsPerson)
	}
	if _, business := VerdictOf(outcome); business {
		var out map[string]json.RawMessage
		if err := json.Unmarshal(snap.Output, &out); err != nil {
			r.t.Fatalf("%s: output %s: %v", outcome, snap.Output, err)
		}
		for k := range out {
			if k != "Error" && k != "Cause" && k != "compensation" {
				r.t.Errorf("%s: the output carries %q besides the verdict: %s", outcome, k, snap.Output)
			}
		}
		if e.NeedsPerson || e.Cause == "" {
			r.t.Fatalf("%s: needs a person %v, cause %q", outcome, e.NeedsPerson, e.Cause)
		}
	}
	return e
}

func (r *aslRun) reportAuthorized(id, token string) {
	r.t.Helper()
	r.webhookAuthorized(id)
	out, _ := json.Marshal(PaymentOutcome{PaymentIntentID: r.store.get(id).PaymentIntentID, State: "AUTHORIZED"})
	if err := r.engine.SendTaskSuccess(token, out); err != nil {
		r.t.Fatal(err)
	}
}

func TestASLPaths(t *testing.T) {
	t.Run("happy path: 5 transitions", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.reportAuthorized("r1", r.waitingWith("r1", reservation.Authorizing))
		r.finish(x)
		r.expectEnding(x, EndConfirmed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
		r.expectState("r1", reservation.Confirmed, reservation.Paid)
		if r.pay.creates != 1 || r.pay.captures != 1 {
			t.Fatalf("creates %d captures %d", r.pay.creates, r.pay.captures)
		}
	})
	t.Run("race loser: 2 transitions", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		r.claim(input("winner", "", "A1"))
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.finish(x)
		// A lost race is a business ending: the execution succeeds and says so.
		if e := r.expectEnding(x, EndSeatUnavailable); !strings.Contains(e.Cause, "A1") {
			t.Fatalf("the cause %q does not name the taken seat", e.Cause)
		}
		r.expectPath(x, "Claim seats", "Rejected: seats taken")
		if r.pay.creates != 0 {
			t.Fatal("payment object created")
		}
	})
	t.Run("declined card", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_card_declined", "A1"))
		r.finish(x)
		r.expectEnding(x, EndPaymentDeclined)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after decline", "Payment failed")
		// The decline is recorded (FAILED) before the void, and stays the record after it.
		r.expectState("r1", reservation.Released, reservation.Failed)
		if r.pay.status("r1") != "canceled" {
			t.Fatal(r.pay.status("r1"))
		}
	})
	t.Run("decline reported by the webhook", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_3ds", "A1"))
		token := r.waitingWith("r1", reservation.Authorizing)
		// The webhook reports only a decline the provider shows.
		r.pay.force("r1", "declined")
		if err := r.engine.SendTaskFailure(token, ErrPaymentDeclined, "authentication failed"); err != nil {
			t.Fatal(err)
		}
		r.finish(x)
		r.expectEnding(x, EndPaymentDeclined)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after decline", "Payment failed")
		r.expectState("r1", reservation.Released, reservation.Failed)
		r.expectSeatOwner("A1", "")
		if r.pay.status("r1") != "canceled" {
			t.Fatal(r.pay.status("r1"))
		}
	})
	t.Run("customer cancels while paying", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_3ds", "A1"))
		token := r.waitingWith("r1", reservation.Authorizing)
		if err := r.engine.SendTaskFailure(token, ErrCustomerCanceled, "DELETE /reservations/r1"); err != nil {
			t.Fatal(err)
		}
		r.finish(x)
		r.expectEnding(x, EndCustomerCanceled)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer")
		r.expectState("r1", reservation.Released, reservation.Canceled)
	})
	t.Run("customer cancels, the void goes unanswered and the buyer authorizes meanwhile: voided, never captured", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_3ds", "A1"))
		token := r.waitingWith("r1", reservation.Authorizing)
		r.pay.force("r1", "requires_capture") // 3-D Secure completed just as the customer canceled
		cancelTimeout := &payment.Uncertain{Op: payment.OpCancel, Reason: "timeout"}
		// One answer lost per compensate attempt (the first and its three retries).
		r.pay.fail["cancel"] = []error{cancelTimeout, cancelTimeout, cancelTimeout, cancelTimeout}
		if err := r.engine.SendTaskFailure(token, ErrCustomerCanceled, "DELETE /reservations/r1"); err != nil {
			t.Fatal(err)
		}
		r.finish(x)
		r.expectEnding(x, EndCustomerCanceled)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after customer cancel",
			"Reconcile payment", "What did reconciliation find?", "Reconciled: canceled by customer")
		r.expectState("r1", reservation.Released, reservation.Canceled)
		r.expectSeatOwner("A1", "")
		if r.pay.captures != 0 || r.pay.status("r1") != "canceled" {
			t.Fatalf("captures %d, intent %s: the canceled reservation was sold", r.pay.captures, r.pay.status("r1"))
		}
	})
	t.Run("3-D Secure never completed: hold expires", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_3ds", "A1"))
		r.waitingWith("r1", reservation.Authorizing)
		r.clk.Advance(10 * time.Minute)
		r.finish(x)
		r.expectEnding(x, EndHoldExpired)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?", "Reconciled: hold expired")
		r.expectState("r1", reservation.Released, reservation.Canceled)
		r.claim(input("r2", "", "A1"))
	})
	late := func(t *testing.T, policy reservation.LateSuccessPolicy, takeSeat bool) (*aslRun, *asl.Execution) {
		r := newASLRun(t, policy)
		x := r.start(input("r1", "pm_slow", "A1"))
		r.waitingWith("r1", reservation.Authorizing)
		r.clk.Advance(10 * time.Minute)
		r.waitFor("the hold to be released", func() bool { return r.store.get("r1").Inventory == reservation.Released })
		if takeSeat {
			r.claim(input("r2", "", "A1"))
		}
		r.pay.force("r1", "requires_capture")
		r.finish(x)
		return r, x
	}
	t.Run("late success, seat free: reacquired and captured", func(t *testing.T) {
		r, x := late(t, reservation.LateSuccessReacquire, false)
		r.expectEnding(x, EndConfirmed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
			"Wait before reconciling again", "Reconcile payment", "What did reconciliation find?", "Capture payment", "Confirmed")
		r.expectState("r1", reservation.Confirmed, reservation.Paid)
	})
	t.Run("late success, seat taken: voided", func(t *testing.T) {
		r, x := late(t, reservation.LateSuccessReacquire, true)
		r.expectEnding(x, EndVoidedAfterLatePayment)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
			"Wait before reconciling again", "Reconcile payment", "What did reconciliation find?", "Voided after late payment")
		if r.pay.captures != 0 || r.pay.status("r1") != "canceled" {
			t.Fatal("late payment not voided")
		}
	})
	t.Run("late success, policy void", func(t *testing.T) {
		r, x := late(t, reservation.LateSuccessVoid, false)
		r.expectEnding(x, EndVoidedAfterLatePayment)
		if p := path(x); p[len(p)-1] != "Voided after late payment" {
			t.Fatalf("path %v", p)
		}
		r.expectState("r1", reservation.Released, reservation.Canceled)
	})
	t.Run("capture response lost: retried with the same key, one capture", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		r.pay.fail["capture"] = []error{&payment.Uncertain{Op: payment.OpCapture, Reason: "timeout"}}
		r.pay.actAndFail["capture"] = true
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.reportAuthorized("r1", r.waitingWith("r1", reservation.Authorizing))
		r.finish(x)
		r.expectEnding(x, EndConfirmed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
		if r.pay.captures != 1 {
			t.Fatalf("captures %d", r.pay.captures)
		}
	})
	t.Run("capture refused: policy, seats released", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_card_visa", "A1"))
		token := r.waitingWith("r1", reservation.Authorizing)
		r.pay.force("r1", "canceled") // authorization lapsed before capture
		r.webhookAuthorized("r1")
		out, _ := json.Marshal(PaymentOutcome{State: "AUTHORIZED"})
		r.engine.SendTaskSuccess(token, out)
		r.finish(x)
		r.expectEnding(x, EndCaptureFailed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Capture failed")
		r.expectState("r1", reservation.Released, reservation.Failed)
	})
	t.Run("capture refused and every answer lost: reconciliation finds the refusal", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		// The first attempt and the four retries of Lambda.ServiceException: the refusal
		// is recorded each time, its answer never arrives.
		r.crash["capture"] = 5
		x := r.start(input("r1", "pm_card_visa", "A1"))
		token := r.waitingWith("r1", reservation.Authorizing)
		r.pay.force("r1", "canceled") // authorization lapsed before capture
		r.webhookAuthorized("r1")
		out, _ := json.Marshal(PaymentOutcome{State: "AUTHORIZED"})
		r.engine.SendTaskSuccess(token, out)
		r.finish(x)
		r.expectEnding(x, EndCaptureFailed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment",
			"Reconcile payment", "What did reconciliation find?", "Reconciled: capture failed")
		r.expectState("r1", reservation.Released, reservation.Failed)
		r.expectSeatOwner("A1", "")
	})
	t.Run("card declined and the authorize answer lost: reconciliation finds the decline", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		r.crash["authorize"] = 1
		x := r.start(input("r1", "pm_card_declined", "A1"))
		r.finish(x)
		r.expectEnding(x, EndPaymentDeclined)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
			"Reconciled: payment failed")
		r.expectState("r1", reservation.Released, reservation.Failed)
		r.expectSeatOwner("A1", "")
	})
	t.Run("provider down during reconcile: needs reconciliation, seat protected", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_3ds", "A1"))
		r.waitingWith("r1", reservation.Authorizing)
		down := &payment.Uncertain{Op: payment.OpRetrieve, Reason: "connection"}
		r.pay.mu.Lock()
		r.pay.fail["retrieve"] = []error{down, down, down}
		r.pay.mu.Unlock()
		r.clk.Advance(10 * time.Minute)
		r.finish(x)
		// The one business-as-usual path that needs a person: it fails.
		r.expectEnding(x, EndNeedsReconciliation)
		p := path(x)
		if p[len(p)-1] != "Needs reconciliation" || x.StateTransitions() != 11 {
			t.Fatalf("path %v (%d)", p, x.StateTransitions())
		}
		r.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		if _, err := r.steps.Claim(context.Background(), State{Input: input("r2", "", "A1")}); err == nil {
			t.Fatal("protected seat claimed")
		}
	})
	t.Run("steps crash after writing: retried, no double effect", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		for _, fn := range []string{"claim", "confirm", "capture"} {
			r.crash[fn] = 1
		}
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.reportAuthorized("r1", r.waitingWith("r1", reservation.Authorizing))
		r.finish(x)
		r.expectEnding(x, EndConfirmed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
		if r.pay.captures != 1 || r.pay.creates != 1 {
			t.Fatalf("captures %d creates %d", r.pay.captures, r.pay.creates)
		}
	})
	t.Run("authorize crashes after writing: reconcile resumes the wait, whose new token is the one reported", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		r.crash["authorize"] = 1
		var first string
		r.after["authorize"] = func(call int) {
			if call == 1 {
				r.mu.Lock()
				first = r.store.get("r1").TaskToken
				r.mu.Unlock()
			}
		}
		x := r.start(input("r1", "pm_3ds", "A1"))
		// The wait has no Retry: the crash goes to reconcile, which finds the buyer still
		// paying and resumes the wait; its new attempt records its own token.
		r.waitFor("the resumed attempt to record its token", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.finished["authorize"] == 2 && r.engine.WaitingTasks() > 0 && first != "" && r.store.get("r1").TaskToken != first
		})
		out, _ := json.Marshal(PaymentOutcome{State: "AUTHORIZED"})
		if err := r.engine.SendTaskSuccess(first, out); err == nil {
			t.Fatal("the crashed attempt's token was accepted")
		}
		r.pay.force("r1", "requires_capture") // the buyer completes 3-D Secure
		r.reportAuthorized("r1", r.store.get("r1").TaskToken)
		r.finish(x)
		r.expectEnding(x, EndConfirmed)
		if r.pay.creates != 1 || r.pay.captures != 1 {
			t.Fatalf("creates %d captures %d", r.pay.creates, r.pay.captures)
		}
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
			"Resume waiting for payment", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	})
	t.Run("authorize crashes after the card was confirmed: reconcile finds the authorization and sells", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		r.crash["authorize"] = 1
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.finish(x)
		r.expectEnding(x, EndConfirmed)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
			"Capture payment", "Confirmed")
		r.expectState("r1", reservation.Confirmed, reservation.Paid)
		if r.pay.creates != 1 || r.pay.captures != 1 || r.started["authorize"] != 1 {
			t.Fatalf("creates %d captures %d authorize runs %d", r.pay.creates, r.pay.captures, r.started["authorize"])
		}
	})
}

// TestASLResumedWaitEndsWithTheHold: a wait that fails after part of the hold has passed is
// resumed with only the time left, so the seats go back at the hold's deadline, not a whole
// hold later.
func TestASLResumedWaitEndsWithTheHold(t *testing.T) {
	r := newASLRun(t, reservation.LateSuccessReacquire)
	r.crash["authorize"] = 1
	r.after["authorize"] = func(call int) {
		if call == 1 {
			// A slow invocation: four minutes of the hold pass before it fails.
			r.clk.Advance(4 * time.Minute)
		}
	}
	x := r.start(input("r1", "pm_3ds", "A1"))
	deadline := r.now.Add(r.steps.Hold)
	r.finish(x)
	r.expectEnding(x, EndHoldExpired)
	r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
		"Resume waiting for payment", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?", "Reconciled: hold expired")
	var timeouts []int64
	for _, ev := range x.History() {
		if ev.Type != "TaskScheduled" || ev.Details["resource"] != "invoke.waitForTaskToken" {
			continue
		}
		secs, _ := ev.Details["timeoutInSeconds"].(int64)
		timeouts = append(timeouts, secs)
		if end := ev.Timestamp.Add(time.Duration(secs) * time.Second); !end.Equal(deadline) {
			t.Errorf("a wait scheduled at %s for %ds ends at %s, the hold at %s", ev.Timestamp, secs, end, deadline)
		}
	}
	if !slices.Equal(timeouts, []int64{600, 360}) {
		t.Fatalf("wait timeouts %v, want [600 360]", timeouts)
	}
	if now := r.clk.Now(); !now.Equal(deadline) {
		t.Fatalf("the execution ended at %s, the hold's deadline is %s", now, deadline)
	}
	r.expectState("r1", reservation.Released, reservation.Canceled)
	r.expectSeatOwner("A1", "")
}

// TestDefinitionPolicy reads the ASL as data and checks the rules the saga depends on: every
// Lambda task but the payment wait retries Lambda service errors and the transient names with
// backoff and full jitter; the payment wait retries nothing (a retried attempt would wait a
// whole timeout again and hold the seats past the hold's deadline), is the one
// waitForTaskToken state, is bounded by the hold and sends every other failure to
// reconciliation; no Retry ever lists a definitive business outcome; every error the steps
// route on is caught.
func TestDefinitionPolicy(t *testing.T) {
	raw := statemachine.Definition()
	var def struct {
		States map[string]struct {
			Type               string
			Resource           string
			Parameters         map[string]any
			TimeoutSecondsPath string
			Retry              []struct {
				ErrorEquals     []string
				IntervalSeconds int
				MaxAttempts     int
				BackoffRate     float64
				JitterStrategy  string
			}
			Catch []struct {
				ErrorEquals []string
				Next        string
			}
		}
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	lambdaErrors := []string{"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"}
	neverRetried := []string{ErrSeatUnavailable, ErrPaymentDeclined, ErrPaymentAlreadyAuthorized, ErrCustomerCanceled, ErrCaptureFailed, ErrInvalidRequest, ErrHoldExpired, "States.ALL"}
	caught := map[string]bool{}
	waitReconciles := map[string]bool{}
	waits := 0
	for name, st := range def.States {
		if st.Type != "Task" {
			continue
		}
		wait := st.Resource == "${LambdaInvokeWaitForTaskTokenArn}"
		if wait && len(st.Retry) > 0 {
			t.Errorf("%s has a Retry: a retried attempt would wait a whole timeout again", name)
		}
		retried := map[string]bool{}
		for _, r := range st.Retry {
			if r.JitterStrategy != "FULL" || r.BackoffRate < 2 || r.MaxAttempts < 1 || r.IntervalSeconds < 1 {
				t.Errorf("%s: retrier %v lacks backoff with full jitter", name, r.ErrorEquals)
			}
			for _, e := range r.ErrorEquals {
				retried[e] = true
				if slices.Contains(neverRetried, e) {
					t.Errorf("%s retries %s", name, e)
				}
			}
		}
		for _, e := range append(lambdaErrors, ErrTransientError, ErrTransactionConflict) {
			if !wait && !retried[e] {
				t.Errorf("%s does not retry %s", name, e)
			}
		}
		for _, c := range st.Catch {
			if _, ok := def.States[c.Next]; !ok {
				t.Errorf("%s catches into unknown state %q", name, c.Next)
			}
			for _, e := range c.ErrorEquals {
				caught[e] = true
				if wait && (e == "States.ALL" || e == "States.Timeout") {
					waitReconciles[e] = c.Next == "Reconcile payment"
				}
			}
		}
		if wait {
			waits++
			payload, _ := st.Parameters["Payload"].(map[string]any)
			if payload["taskToken.$"] != "$$.Task.Token" || st.Parameters["FunctionName"] != "${AuthorizeFunctionArn}" {
				t.Errorf("%s: payload %v", name, st.Parameters)
			}
			if st.TimeoutSecondsPath != "$.hold.secondsLeft" {
				t.Errorf("%s: the wait is not bounded by the hold", name)
			}
		} else if !strings.HasPrefix(st.Resource, "${") || !strings.HasSuffix(st.Resource, "FunctionArn}") {
			t.Errorf("%s: resource %q is not a function ARN substitution", name, st.Resource)
		}
	}
	if waits != 1 {
		t.Errorf("%d waitForTaskToken states, want 1", waits)
	}
	if !waitReconciles["States.ALL"] || !waitReconciles["States.Timeout"] {
		t.Errorf("the wait's timeout and other failures go to reconciliation: %v", waitReconciles)
	}
	for _, e := range []string{ErrSeatUnavailable, ErrPaymentDeclined, ErrPaymentAlreadyAuthorized, ErrCustomerCanceled, ErrHoldExpired, ErrCaptureFailed, ErrInvalidRequest, "States.Timeout"} {
		if !caught[e] {
			t.Errorf("nothing catches %s", e)
		}
	}
}

// TestDefinitionResumesTheWaitWithTheTimeLeft: reconcile's outcome resume goes back to the
// payment wait through a Pass state that makes reconcile's hold (the time left now) the wait's
// $.hold, so the resumed wait is bounded by what is left of the hold.
func TestDefinitionResumesTheWaitWithTheTimeLeft(t *testing.T) {
	raw := statemachine.Definition()
	var def struct {
		States map[string]struct {
			Type, InputPath, ResultPath, Next string
			Choices                           []struct{ Variable, StringEquals, Next string }
		}
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	var resume string
	for _, c := range def.States["What did reconciliation find?"].Choices {
		if c.Variable == "$.reconcile.outcome" && c.StringEquals == OutcomeResume {
			resume = c.Next
		}
	}
	pass, ok := def.States[resume]
	if !ok {
		t.Fatalf("outcome %s routes to %q", OutcomeResume, resume)
	}
	if pass.Type != "Pass" || pass.InputPath != "$.reconcile.hold" || pass.ResultPath != "$.hold" || pass.Next != "Wait for payment authorization" {
		t.Fatalf("%s: %+v", resume, pass)
	}
}

// BenchmarkHappyPath runs whole happy-path executions of the real definition on the local
// engine with the real step handlers over the in-memory fakes: the saga's own overhead per
// booking, without DynamoDB or the payment provider. It reports state transitions per booking.
func BenchmarkHappyPath(b *testing.B) {
	r := newASLRun(b, reservation.LateSuccessReacquire)
	var transitions int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := "r" + strconv.Itoa(i)
		in := input(id, "pm_card_visa", "S"+strconv.Itoa(i))
		x := r.start(in)
		var token string
		for token == "" || r.engine.WaitingTasks() == 0 || !r.authorizeIdle() {
			token = r.store.get(id).TaskToken
			runtime.Gosched()
		}
		r.webhookAuthorized(id)
		if err := r.engine.SendTaskSuccess(token, []byte(`{"state":"AUTHORIZED"}`)); err != nil {
			b.Fatal(err)
		}
		<-x.Done()
		if e := endingOf(x); e.Outcome != EndConfirmed {
			b.Fatalf("ended %+v", e)
		}
		transitions += x.StateTransitions()
	}
	b.ReportMetric(float64(transitions)/float64(b.N), "transitions/booking")
}

// TestASLEntersEveryState requires the package's ASL runs, together, to enter every state of
// the definition: a state no test enters is a path nobody has seen work. It is parallel so that
// it runs after every sequential test of the package has finished (no ASL test is parallel);
// a filtered run cannot cover everything, so it skips.
func TestASLEntersEveryState(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			t.Skipf("-%s is set: state coverage needs every ASL test of the package", name)
		}
	}
	entered.Lock()
	defer entered.Unlock()
	var missing []string
	for _, name := range statemachine.StateNames() {
		if entered.states[name] == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("states of the definition no ASL test entered: %q", missing)
	}
}

// TestASLClaimAndHoldFailurePaths: the ends a buyer rarely reaches — a hold that lapsed before
// the payment started, an invalid request, a claim the store never completes.
func TestASLClaimAndHoldFailurePaths(t *testing.T) {
	t.Run("hold lapses before the payment starts: released, no payment object", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		r.after["claim"] = func(int) {
			// A slow hand-over from the claim to the wait: the whole hold passes in between.
			r.clk.Advance(r.steps.Hold + time.Second)
		}
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.finish(x)
		r.expectEnding(x, EndHoldExpired)
		r.expectPath(x, "Claim seats", "Wait for payment authorization", "Release expired hold", "Hold expired")
		if got := r.store.get("r1").Inventory; got != reservation.Released {
			t.Fatalf("inventory %s, want %s", got, reservation.Released)
		}
		r.expectSeatOwner("A1", "")
		if r.pay.creates != 0 {
			t.Fatalf("%d payment objects created for a lapsed hold", r.pay.creates)
		}
	})
	t.Run("invalid request: rejected once, nothing written", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		x := r.start(input("r1", "pm_card_visa")) // no seats
		r.finish(x)
		r.expectEnding(x, EndInvalidRequest)
		r.expectPath(x, "Claim seats", "Rejected: invalid request")
		if got := r.store.get("r1"); got.ID != "" {
			t.Fatalf("reservation written: %+v", got)
		}
		if r.started["claim"] != 1 || r.pay.creates != 0 {
			t.Fatalf("claim ran %d times (want once: never retried), %d payment objects", r.started["claim"], r.pay.creates)
		}
	})
	t.Run("the store keeps failing: claim failed after its retries, nothing held", func(t *testing.T) {
		r := newASLRun(t, reservation.LateSuccessReacquire)
		// MemStore's Fail answers one call; re-armed after each attempt, every attempt fails.
		fail := func() {
			r.store.mu.Lock()
			r.store.fail[sagatest.OpClaim] = errBoom
			r.store.mu.Unlock()
		}
		fail()
		r.after["claim"] = func(int) { fail() }
		x := r.start(input("r1", "pm_card_visa", "A1"))
		r.finish(x)
		// An incident, not a business ending: the execution fails for a person to look at.
		r.expectEnding(x, EndClaimFailed)
		r.expectPath(x, "Claim seats", "Claim failed")
		// The first attempt and the three retries of a transient failure.
		if r.started["claim"] != 4 {
			t.Fatalf("claim ran %d times, want 4", r.started["claim"])
		}
		if got := r.store.get("r1"); got.ID != "" {
			t.Fatalf("reservation written: %+v", got)
		}
		r.expectSeatOwner("A1", "")
		if r.pay.creates != 0 {
			t.Fatalf("%d payment objects created", r.pay.creates)
		}
	})
}
