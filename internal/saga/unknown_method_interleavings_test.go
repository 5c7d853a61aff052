package saga

import (
	"context"
	"errors"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// refusingThen is the provider refusing the input's payment method as unknown, with race run
// between the refusal and the step's record of it: what happens elsewhere meanwhile.
type refusingThen struct {
	*fakePayments
	race func()
}

func (p *refusingThen) ConfirmPaymentMethod(ctx context.Context, req payment.ConfirmPaymentMethodRequest) (payment.Authorization, error) {
	if race := p.race; race != nil {
		p.race = nil
		defer race()
	}
	return payment.Authorization{}, &payment.Declined{Op: payment.OpConfirmPaymentMethod, PaymentIntentID: req.PaymentIntentID,
		Code: payment.CodeUnknownPaymentMethod, Message: "No such PaymentMethod"}
}

// unknownMethodAuthorize runs the authorize step with an unknown payment method, race running
// between the provider's refusal and the step's record of it.
func unknownMethodAuthorize(t *testing.T, race func(h *harness, in Input)) (*harness, Input, error) {
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := input("r1", "pm_nope", "A1")
	h.claim(in)
	p := &refusingThen{fakePayments: h.pay}
	p.race = func() { race(h, in) }
	h.steps.Payments = p
	return h, in, h.authorize(in, "tok1")
}

// compensateAndExpectNothingHeld runs the compensation the step's error routes to and requires
// the seats back and the PaymentIntent voided, nothing captured.
func compensateAndExpectNothingHeld(t *testing.T, h *harness, in Input, reason string) {
	t.Helper()
	if _, err := h.steps.Compensate(context.Background(), State{Input: in, Failure: &Failure{Error: reason}}); err != nil {
		t.Fatalf("compensate: %v", err)
	}
	r := h.store.get(in.ReservationID)
	if r.Inventory != reservation.Released || h.pay.status(in.ReservationID) != "canceled" || h.pay.captures != 0 {
		t.Fatalf("after the compensation: %s/%s, PaymentIntent %s, %d captures; want released, voided, none",
			r.Inventory, r.Payment, h.pay.status(in.ReservationID), h.pay.captures)
	}
	h.expectSeatOwner("A1", "")
}

// The customer's cancel lands between the refusal and the record: the step ends on the
// cancel, not on a decline written over it, and the compensation voids and releases.
func TestACancelBetweenTheRefusalAndItsRecordEndsCanceled(t *testing.T) {
	h, in, err := unknownMethodAuthorize(t, func(h *harness, in Input) {
		r := h.store.get(in.ReservationID)
		if _, err := h.store.Cancel(context.Background(), in.ReservationID, reservation.GuardOf(r)); err != nil {
			t.Fatal(err)
		}
	})
	wantErr[*CustomerCanceled](t, err)
	if r := h.store.get(in.ReservationID); !r.CustomerCanceled || r.Payment != reservation.Authorizing {
		t.Fatalf("reservation %s canceled=%v; want the cancel recorded and no decline over it", r.Payment, r.CustomerCanceled)
	}
	compensateAndExpectNothingHeld(t, h, in, ErrCustomerCanceled)
}

// The buyer's browser authorizes another card on the same PaymentIntent, and the webhook
// records it, between the refusal and the record: the step must not record a decline over the
// authorization; the wait goes on to Confirm.
func TestAnAuthorizationRecordedBetweenTheRefusalAndItsRecordIsNotDeclined(t *testing.T) {
	h, in, err := unknownMethodAuthorize(t, func(h *harness, in Input) {
		h.pay.force(in.ReservationID, "requires_capture")
		h.webhookAuthorized(in.ReservationID)
	})
	if err != nil {
		t.Fatalf("authorize: %v, want the recorded authorization", err)
	}
	h.expectState(in.ReservationID, reservation.PaymentPending, reservation.Authorized)
}

// The browser authorizes another card after the decline was recorded, before the
// compensation runs: the seats go back only with that authorization voided, never captured.
func TestAnAuthorizationAfterTheRecordedDeclineIsVoidedNotCharged(t *testing.T) {
	h, in, err := unknownMethodAuthorize(t, func(*harness, Input) {})
	wantErr[*PaymentDeclined](t, err)
	h.expectState(in.ReservationID, reservation.PaymentPending, reservation.Failed)
	h.pay.force(in.ReservationID, "requires_capture")
	compensateAndExpectNothingHeld(t, h, in, ErrPaymentDeclined)
}

// The record's write fails: the step fails with the store's error (the ASL sends it to
// reconciliation, which resumes the wait with a new attempt); nothing is recorded, and the
// next attempt records the decline.
func TestAFailedRecordOfTheDeclineIsRecordedByTheNextAttempt(t *testing.T) {
	storeDown := errors.New("dynamodb: service unavailable")
	h, in, err := unknownMethodAuthorize(t, func(h *harness, _ Input) {
		h.store.fail["updatePayment"] = storeDown
	})
	if err == nil || errors.As(err, new(*PaymentDeclined)) {
		t.Fatalf("authorize: %v, want the store's failure", err)
	}
	h.expectState(in.ReservationID, reservation.PaymentPending, reservation.Authorizing)
	h.steps.Payments = &refusingThen{fakePayments: h.pay}
	wantErr[*PaymentDeclined](t, h.authorize(in, "tok2"))
	h.expectState(in.ReservationID, reservation.PaymentPending, reservation.Failed)
	// A redelivery of either attempt after the record changes nothing.
	for _, tok := range []string{"tok1", "tok2"} {
		wantErr[*PaymentDeclined](t, h.authorize(in, tok))
	}
	compensateAndExpectNothingHeld(t, h, in, ErrPaymentDeclined)
}
