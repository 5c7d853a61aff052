package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/statemachine"
)

// A retried attempt of the authorize state that finds the payment already authorized (the
// webhook answered the previous attempt's token, which died with it) must not answer its own
// token: only the api and webhook roles may call SendTask*. It returns *PaymentAlreadyAuthorized,
// which the ASL catches into "Confirm seats".

func TestAuthorizeRetryAfterAuthorization(t *testing.T) {
	cases := []struct {
		name  string
		token string
		check func(t *testing.T, h *harness, before reservation.Reservation, err error)
	}{
		{
			name:  "redelivery of the same attempt waits for the webhook's report",
			token: "tok1",
			check: func(t *testing.T, h *harness, before reservation.Reservation, err error) {
				if err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:  "new attempt ends its wait with PaymentAlreadyAuthorized",
			token: "tok2",
			check: func(t *testing.T, h *harness, before reservation.Reservation, err error) {
				already := wantErr[*PaymentAlreadyAuthorized](t, err)
				if already.ReservationID != "r1" || already.PaymentIntentID != before.PaymentIntentID || already.Version != before.Version {
					t.Fatalf("%+v, reservation %+v", already, before)
				}
				if n := h.mem.Get(MetricStepOutcome, metrics.Dim{Name: "step", Value: "authorize"}, metrics.Dim{Name: "outcome", Value: "already_authorized"}); n != 1 {
					t.Fatalf("StepOutcome already_authorized counted %v times", n)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := authorized(t, h, "pm_card_visa") // the webhook answered tok1
			before := h.store.get("r1")
			events := len(h.store.events)
			tc.check(t, h, before, h.authorize(in, tc.token))
			// Nothing is written: the dead token is not recorded, the intent is reused.
			if after := h.store.get("r1"); after.Version != before.Version || after.TaskToken != "tok1" || len(h.store.events) != events {
				t.Fatalf("reservation changed: %+v -> %+v", before, after)
			}
			if h.pay.creates != 1 || h.pay.status("r1") != "requires_capture" {
				t.Fatalf("creates %d status %s", h.pay.creates, h.pay.status("r1"))
			}
		})
	}
}

// TestPaymentAlreadyAuthorizedIsRouted: the handler returns the error unwrapped under the name
// the ASL catches, and Confirm works from what the Catch leaves at $.payment.
func TestPaymentAlreadyAuthorizedIsRouted(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := authorized(t, h, "pm_card_visa")
	_, err := handler(h.steps.Authorize)(ctx, AuthorizeEvent{Input: State{Input: in}, TaskToken: "tok2"})
	if name := asl.ErrorTypeName(err); name != ErrPaymentAlreadyAuthorized {
		t.Fatalf("the Lambda runtime would name %v %q", err, name)
	}
	if wrapped := fmt.Errorf("authorize: %w", err); Routable(wrapped) != err {
		t.Fatal("Routable does not unwrap PaymentAlreadyAuthorized")
	}
	// The Catch's output, {"Error","Cause"}, at $.payment.
	caught, _ := json.Marshal(map[string]any{"Error": ErrPaymentAlreadyAuthorized, "Cause": err.Error()})
	raw, _ := json.Marshal(map[string]any{"reservationId": in.ReservationID, "eventId": in.EventID, "seatIds": in.SeatIDs,
		"payment": json.RawMessage(caught)})
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		if _, err := handler(h.steps.Confirm)(ctx, st); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		h.expectState("r1", reservation.Confirmed, reservation.Authorized)
	}
}

// TestASLResumedAuthorizeAfterTheWebhookAnswered runs the real definition: the authorize step
// crashes after creating the PaymentIntent and recording its token; the wait has no Retry, so
// reconcile runs, finds the buyer still paying and resumes the wait; just then the buyer
// authorizes and the webhook answers the dead token. The resumed attempt's
// PaymentAlreadyAuthorized is caught into "Confirm seats": one authorization, one capture.
func TestASLResumedAuthorizeAfterTheWebhookAnswered(t *testing.T) {
	r := newASLRun(t, reservation.LateSuccessReacquire)
	r.crash["authorize"] = 1
	var (
		first        reservation.Reservation
		firstStatus  string
		deadAccepted bool
	)
	r.after["reconcile"] = func(call int) {
		if call != 1 {
			return
		}
		// Reconcile has answered resume. The buyer finishes 3-D Secure; the webhook records
		// it and reports to the token of the crashed attempt.
		r.mu.Lock()
		defer r.mu.Unlock()
		first, firstStatus = r.store.get("r1"), r.pay.status("r1")
		r.pay.force("r1", "requires_capture")
		if _, err := r.store.UpdatePayment(context.Background(), PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(first),
			Event: reservation.AuthorizationOK, From: reservation.Authorizing, CaptureBefore: r.now.Add(7 * 24 * time.Hour)}); err != nil {
			t.Errorf("webhook transition: %v", err)
		}
		out, _ := json.Marshal(PaymentOutcome{PaymentIntentID: first.PaymentIntentID, State: "AUTHORIZED"})
		deadAccepted = r.engine.SendTaskSuccess(first.TaskToken, out) == nil
	}
	x := r.start(input("r1", "pm_3ds", "A1"))
	r.finish(x)
	r.expectEnding(x, EndConfirmed)
	r.mu.Lock()
	defer r.mu.Unlock()
	if first.Payment != reservation.Authorizing || first.TaskToken == "" || firstStatus != "requires_action" {
		t.Fatalf("when reconcile resumed: %s %q %s", first.Payment, first.TaskToken, firstStatus)
	}
	if deadAccepted {
		t.Fatal("the crashed attempt's token was accepted")
	}
	r.expectPath(x, "Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?",
		"Resume waiting for payment", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	var failures []string
	for _, ev := range x.History() {
		if ev.Type == "TaskFailed" {
			failures = append(failures, fmt.Sprint(ev.Details["error"]))
		}
	}
	if len(failures) != 2 || failures[0] != "Lambda.ServiceException" || failures[1] != ErrPaymentAlreadyAuthorized {
		t.Fatalf("task failures %v", failures)
	}
	r.expectState("r1", reservation.Confirmed, reservation.Paid)
	if r.pay.creates != 1 || r.pay.captures != 1 || r.started["authorize"] != 2 {
		t.Fatalf("creates %d captures %d authorize runs %d", r.pay.creates, r.pay.captures, r.started["authorize"])
	}
}

// TestDefinitionRoutesAlreadyAuthorized: the wait state catches PaymentAlreadyAuthorized into
// "Confirm seats" ahead of any broader catcher, and no state retries it.
func TestDefinitionRoutesAlreadyAuthorized(t *testing.T) {
	raw := statemachine.Definition()
	var def struct {
		States map[string]struct {
			Retry []struct{ ErrorEquals []string }
			Catch []struct {
				ErrorEquals []string
				ResultPath  string
				Next        string
			}
		}
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	for name, st := range def.States {
		for _, r := range st.Retry {
			for _, e := range r.ErrorEquals {
				if e == ErrPaymentAlreadyAuthorized {
					t.Errorf("%s retries %s", name, e)
				}
			}
		}
	}
	wait := def.States["Wait for payment authorization"]
	for _, c := range wait.Catch {
		for _, e := range c.ErrorEquals {
			switch e {
			case ErrPaymentAlreadyAuthorized:
				if c.Next != "Confirm seats" || c.ResultPath != "$.payment" {
					t.Fatalf("caught into %q at %q", c.Next, c.ResultPath)
				}
				return
			case "States.ALL", "States.TaskFailed":
				t.Fatalf("%s is caught by %s first", ErrPaymentAlreadyAuthorized, e)
			}
		}
	}
	t.Fatal(errors.New("nothing catches PaymentAlreadyAuthorized on the wait state"))
}
