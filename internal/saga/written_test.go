package saga

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// interleaved is the store with another writer's change landing right after one of the
// step's own writes: between that write and the step's next round, which decides on what its
// write returned instead of reading it back.
type interleaved struct {
	Store
	after func(op string, written reservation.Reservation)
}

func (s *interleaved) StartPayment(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	r, err := s.Store.StartPayment(ctx, id, g)
	if err == nil && s.after != nil {
		s.after("startPayment", r)
	}
	return r, err
}

func (s *interleaved) UpdatePayment(ctx context.Context, u PaymentUpdate) (reservation.Reservation, error) {
	r, err := s.Store.UpdatePayment(ctx, u)
	if err == nil && s.after != nil {
		s.after(string(u.Event), r)
	}
	return r, err
}

// capturing lets a test act between the provider's answer to a capture and the step's next
// round.
type capturing struct {
	Payments
	after func()
}

func (p *capturing) Capture(ctx context.Context, req payment.CaptureRequest) (payment.Authorization, error) {
	a, err := p.Payments.Capture(ctx, req)
	if err == nil && p.after != nil {
		p.after()
	}
	return a, err
}

// The authorize step no longer reads the reservation back after its own writes, and a cancel
// that lands right after one is still honoured: the step's next write is fenced by the
// version its own write returned, so it is refused, the step reads, finds the cancel and ends
// CustomerCanceled. The card is never confirmed and no PaymentIntent is recorded.
func TestACancelRightAfterAuthorizesWriteIsHonoured(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := input("r1", "pm_card_visa", "A1")
	h.claim(in)
	h.steps.Store = &interleaved{Store: h.store, after: func(op string, written reservation.Reservation) {
		if op != "startPayment" {
			return
		}
		if _, err := h.store.Cancel(ctx, "r1", reservation.GuardOf(written)); err != nil {
			t.Fatal(err)
		}
	}}
	wantErr[*CustomerCanceled](t, h.authorize(in, "tok1"))
	r := h.store.get("r1")
	if r.Inventory != reservation.PaymentPending || r.Payment != reservation.NotStarted || !r.CustomerCanceled ||
		r.PaymentIntentID != "" || r.TaskToken != "" {
		t.Fatalf("after the interleaved cancel: %s/%s cancelled %v, intent %q, token %q", r.Inventory, r.Payment,
			r.CustomerCanceled, r.PaymentIntentID, r.TaskToken)
	}
	if status := h.pay.status("r1"); status == "requires_capture" {
		t.Fatalf("the card was confirmed for a cancelled reservation (intent %s)", status)
	}
}

// The capture step decides on what it wrote, and on the reservation as it read it across the
// provider's capture, and the guard still holds: when another writer records the capture
// first (a reconciliation, the sweeper), the step's own record of it is refused by the
// version, the step reads, finds the money recorded and reports it paid, recorded once.
func TestACaptureRecordedMeanwhileIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := authorized(t, h, "pm_card_visa")
	if _, err := h.steps.Confirm(ctx, State{Input: in}); err != nil {
		t.Fatal(err)
	}
	h.steps.Payments = &capturing{Payments: h.pay, after: func() {
		r := h.store.get("r1")
		if _, err := h.store.UpdatePayment(ctx, PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r),
			Event: reservation.CaptureOK, From: r.Payment, Reason: "another writer"}); err != nil {
			t.Fatal(err)
		}
	}}
	events := len(h.store.events)
	res, err := h.steps.Capture(ctx, State{Input: in})
	if err != nil || res.AmountCaptured != 4200 {
		t.Fatalf("capture: %+v %v", res, err)
	}
	h.expectState("r1", reservation.Confirmed, reservation.Paid)
	captured := 0
	for _, e := range h.store.events[events:] {
		if strings.HasPrefix(e, "Payment"+string(reservation.CaptureOK)+":") {
			captured++
		}
	}
	if captured != 1 || h.pay.captures != 1 {
		t.Fatalf("%d capture records (events %v), %d captures; want one of each", captured, h.store.events[events:], h.pay.captures)
	}
}

// A cancel recorded right after authorize records the PaymentIntent (StartAuthorization) is
// seen before the card is confirmed: the round that calls the provider reads afresh, so no hold
// is placed on the card of a reservation the customer cancelled.
func TestACancelRightAfterTheIntentIsRecordedStopsTheCardConfirm(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := input("r1", "pm_card_visa", "A1")
	h.claim(in)
	h.steps.Store = &interleaved{Store: h.store, after: func(op string, written reservation.Reservation) {
		if op != string(reservation.StartAuthorization) {
			return
		}
		if _, err := h.store.Cancel(ctx, "r1", reservation.GuardOf(written)); err != nil {
			t.Fatal(err)
		}
	}}
	err := h.authorize(in, "tok1")
	var cc *CustomerCanceled
	if !errors.As(err, &cc) {
		t.Fatalf("authorize after the cancel: %v, want CustomerCanceled", err)
	}
	if status := h.pay.status("r1"); status == "requires_capture" {
		t.Fatalf("the card was confirmed for a cancelled reservation (intent %s)", status)
	}
}
