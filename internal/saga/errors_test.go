package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/seatsaga/seatsaga/statemachine"
	"reflect"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// TestStepErrorNames: every routed entry's name is what the Lambda runtime reports for its
// type, and the ASL's routed names and stepErrors' are the same set.
func TestStepErrorNames(t *testing.T) {
	named := map[string]bool{}
	types := map[reflect.Type]bool{}
	for _, k := range stepErrors {
		if types[k.typ] {
			t.Errorf("%v listed twice", k.typ)
		}
		types[k.typ] = true
		if k.outcome == "" {
			t.Errorf("%v has no StepOutcome", k.typ)
		}
		if k.name == "" {
			continue
		}
		if named[k.name] {
			t.Errorf("name %s listed twice", k.name)
		}
		named[k.name] = true
		zero := reflect.New(k.typ.Elem()).Interface().(error)
		if got := asl.ErrorTypeName(zero); got != k.name {
			t.Errorf("%v reaches Step Functions as %q, listed as %q", k.typ, got, k.name)
		}
	}

	raw := statemachine.Definition()
	var def struct {
		States map[string]struct {
			Retry, Catch []struct{ ErrorEquals []string }
		}
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	matched := map[string]bool{}
	for state, st := range def.States {
		for _, r := range append(st.Retry, st.Catch...) {
			for _, e := range r.ErrorEquals {
				if strings.HasPrefix(e, "States.") || strings.HasPrefix(e, "Lambda.") || strings.HasPrefix(e, "Sandbox.") {
					// The platform's own errors, not a step's.
					continue
				}
				matched[e] = true
				if !named[e] {
					t.Errorf("%s matches %s, which no step error is named", state, e)
				}
			}
		}
	}
	for name := range named {
		if !matched[name] {
			t.Errorf("the ASL never matches %s", name)
		}
	}
}

func TestStepErrorMapping(t *testing.T) {
	seat := &reservation.SeatUnavailable{EventID: "ev1", SeatIDs: []string{"A1"}}
	cases := []struct {
		name        string
		err         error
		provider    bool
		wantType    string
		wantOutcome string
	}{
		{"domain error passes through", fmt.Errorf("claim: %w", seat), false, ErrSeatUnavailable, "seat_unavailable"},
		{"hold expired", &reservation.HoldExpired{ReservationID: "r1"}, false, ErrHoldExpired, "hold_expired"},
		{"validation", &reservation.ValidationError{}, false, ErrInvalidRequest, "invalid"},
		{"idempotency", &reservation.IdempotencyConflict{}, false, ErrInvalidRequest, "invalid"},
		{"stale", fmt.Errorf("write: %w", &reservation.StaleVersion{}), false, ErrTransactionConflict, "error"},
		{"unexpected state", &reservation.UnexpectedState{}, false, ErrTransactionConflict, "error"},
		{"cancelled transaction", fmt.Errorf("x: %w", txConflict{}), false, ErrTransactionConflict, "error"},
		{"not found", &reservation.NotFound{}, false, "ConflictError", "error"},
		{"store failure", errBoom, false, ErrTransientError, "error"},
		{"declined", &payment.Declined{Code: "card_declined"}, true, ErrPaymentDeclined, "declined"},
		{"refused", &payment.Failed{Category: payment.FailureAuthentication}, true, "ProviderRefused", "provider_refused"},
		{"uncertain", &payment.Uncertain{Reason: "timeout"}, true, ErrPaymentUncertain, "uncertain"},
		{"provider failure", errBoom, true, ErrPaymentUncertain, "uncertain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := storeError("r1", c.err)
			if c.provider {
				got = paymentError("r1", c.err)
			}
			if name := asl.ErrorTypeName(got); name != c.wantType {
				t.Fatalf("%v mapped to %s, want %s", c.err, name, c.wantType)
			}
			if Routable(fmt.Errorf("step: %w", got)) != got {
				t.Fatal("not unwrapped")
			}
			if o := outcomeOf(got); o != c.wantOutcome {
				t.Fatalf("outcome %s, want %s", o, c.wantOutcome)
			}
		})
	}
	if storeError("r1", nil) != nil || paymentError("r1", nil) != nil {
		t.Fatal("nil maps to an error")
	}
	if got := storeError("r1", fmt.Errorf("claim: %w", seat)); got != error(seat) {
		t.Fatalf("the domain's SeatUnavailable is the routed one, got %T", got)
	}
}

type txConflict struct{}

func (txConflict) Error() string             { return "transaction cancelled" }
func (txConflict) TransactionConflict() bool { return true }

func TestHandlerUnwraps(t *testing.T) {
	inner := &CaptureFailed{ReservationID: "r1"}
	h := handler(func(context.Context, State) (CaptureResult, error) {
		return CaptureResult{}, fmt.Errorf("capture: %w", inner)
	})
	if _, err := h(context.Background(), State{}); err != error(inner) {
		t.Fatalf("got %T", err)
	}
	steps := &Steps{}
	if len(steps.Handlers()) != 6 {
		t.Fatal("a step has no handler")
	}
}

func TestNew(t *testing.T) {
	h := newHarness(t, "")
	if _, err := New(Deps{Payments: h.pay}); err == nil || !strings.Contains(err.Error(), "Store") {
		t.Fatalf("missing store: %v", err)
	}
	if _, err := New(Deps{Store: h.store}); err == nil || !strings.Contains(err.Error(), "Payments") {
		t.Fatalf("missing payments: %v", err)
	}
	if _, err := New(Deps{Store: h.store, Payments: h.pay, Policy: "maybe"}); err == nil {
		t.Fatal("unknown policy accepted")
	}
	if _, err := New(Deps{Store: h.store, Payments: h.pay, ReconcileAttempts: -1}); err == nil {
		t.Fatal("negative attempts accepted")
	}
	s, err := New(Deps{Store: h.store, Payments: h.pay, Policy: "VOID"})
	if err != nil || s.Policy != reservation.LateSuccessVoid || s.Store == nil {
		t.Fatalf("%+v %v", s, err)
	}
}
