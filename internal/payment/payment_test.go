package payment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

func TestRequestValidation(t *testing.T) {
	good := payment.AuthorizationRequest{ReservationID: "r1", Amount: 100, Currency: "eur"}
	goodConfirm := payment.ConfirmPaymentMethodRequest{ReservationID: "r1", PaymentIntentID: "pi_1", PaymentMethod: "pm_card_visa", Attempt: 1}
	tests := []struct {
		name      string
		err       error
		wantField string
	}{
		{"valid authorization", good.Validate(), ""},
		{"no reservation", payment.AuthorizationRequest{Amount: 1, Currency: "eur"}.Validate(), "ReservationID"},
		{"zero amount", payment.AuthorizationRequest{ReservationID: "r", Currency: "eur"}.Validate(), "Amount"},
		{"negative amount", payment.AuthorizationRequest{ReservationID: "r", Amount: -5, Currency: "eur"}.Validate(), "Amount"},
		{"bad currency", payment.AuthorizationRequest{ReservationID: "r", Amount: 1, Currency: "euro"}.Validate(), "Currency"},
		{"valid confirm", goodConfirm.Validate(), ""},
		{"confirm without intent", payment.ConfirmPaymentMethodRequest{ReservationID: "r", PaymentMethod: "pm", Attempt: 1}.Validate(), "PaymentIntentID"},
		{"confirm without method", payment.ConfirmPaymentMethodRequest{ReservationID: "r", PaymentIntentID: "pi", Attempt: 1}.Validate(), "PaymentMethod"},
		{"confirm attempt 0", payment.ConfirmPaymentMethodRequest{ReservationID: "r", PaymentIntentID: "pi", PaymentMethod: "pm"}.Validate(), "Attempt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v *payment.ValidationError
			switch {
			case tc.wantField == "" && tc.err != nil:
				t.Fatalf("unexpected error %v", tc.err)
			case tc.wantField != "" && (!errors.As(tc.err, &v) || v.Field != tc.wantField):
				t.Fatalf("err = %v, want ValidationError on %s", tc.err, tc.wantField)
			}
		})
	}
}

func TestOutcomesMatchThroughWrapping(t *testing.T) {
	cause := errors.New("read tcp: connection reset by peer")
	tests := []struct {
		name          string
		err           error
		uncertain     bool
		declined      bool
		wantInMessage string
	}{
		{"uncertain", &payment.Uncertain{Op: payment.OpCapture, PaymentIntentID: "pi_1", Reason: "connection", Err: cause}, true, false, "capture outcome unknown (connection) for pi_1"},
		{"declined", &payment.Declined{Op: payment.OpConfirmPaymentMethod, Code: "card_declined", DeclineCode: "insufficient_funds"}, false, true, "declined: card_declined (insufficient_funds)"},
		{"failed", &payment.Failed{Op: payment.OpCancel, Category: payment.FailureObjectState, Type: "invalid_request_error", Code: "payment_intent_unexpected_state", HTTPStatus: 400},
			false, false, "cancel failed (object_state): invalid_request_error/payment_intent_unexpected_state (HTTP 400)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("saga step: %w", tc.err)
			if payment.IsUncertain(wrapped) != tc.uncertain || payment.IsDeclined(wrapped) != tc.declined {
				t.Fatalf("classification lost through wrapping: %v", wrapped)
			}
			if !strings.Contains(tc.err.Error(), tc.wantInMessage) {
				t.Fatalf("message %q lacks %q", tc.err.Error(), tc.wantInMessage)
			}
		})
	}
	if u := (&payment.Uncertain{Err: cause}); !errors.Is(u, cause) {
		t.Fatal("Uncertain does not unwrap to its cause")
	}
}

func TestStatesAreTheReservationStates(t *testing.T) {
	ours := []payment.State{payment.StateNotStarted, payment.StateAuthorizing, payment.StateAuthorized,
		payment.StateCapturePending, payment.StatePaid, payment.StateFailed, payment.StateCanceled,
		payment.StateRefunded, payment.StateRefundPending, payment.StateUnknownNeedsReconciliation}
	theirs := reservation.PaymentStates()
	if len(ours) != len(theirs) {
		t.Fatalf("%d states here, %d in reservation", len(ours), len(theirs))
	}
	for i := range ours {
		if ours[i] != theirs[i] || !ours[i].Valid() {
			t.Fatalf("state %d: %s vs %s", i, ours[i], theirs[i])
		}
	}
}

func TestRefundAttemptBelowOneCountsAsTheFirst(t *testing.T) {
	for attempt, want := range map[int]int{-3: 1, 0: 1, 1: 1, 2: 2, 17: 17} {
		if got := (payment.RefundRequest{Attempt: attempt}).EffectiveAttempt(); got != want {
			t.Errorf("Attempt %d: EffectiveAttempt() = %d, want %d", attempt, got, want)
		}
	}
}

func TestFailedNotFoundByCategoryCodeOrStatus(t *testing.T) {
	tests := []struct {
		name string
		err  payment.Failed
		want bool
	}{
		{"category", payment.Failed{Category: payment.FailureNotFound}, true},
		{"code", payment.Failed{Code: "resource_missing"}, true},
		{"status", payment.Failed{HTTPStatus: 404}, true},
		{"object state", payment.Failed{Category: payment.FailureObjectState, Code: "charge_already_refunded", HTTPStatus: 400}, false},
	}
	for _, tc := range tests {
		if got := tc.err.NotFound(); got != tc.want {
			t.Errorf("%s: NotFound() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A function given no payment access refuses every payment call as a system failure, never a
// decline, so a miswired function is visible and no buyer is told "declined".
func TestUnavailableRefusesEveryCallAsASystemFailure(t *testing.T) {
	u := payment.Unavailable{Why: "no payment access"}
	ctx := context.Background()
	_, e1 := u.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{})
	_, e2 := u.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{})
	_, e3 := u.Retrieve(ctx, "pi")
	_, e4 := u.Capture(ctx, payment.CaptureRequest{})
	_, e5 := u.Cancel(ctx, payment.CancelRequest{})
	_, e6 := u.Refund(ctx, payment.RefundRequest{})
	_, e7 := u.RetrieveRefund(ctx, "re")
	for i, err := range []error{e1, e2, e3, e4, e5, e6, e7} {
		var failed *payment.Failed
		var declined *payment.Declined
		if !errors.As(err, &failed) || errors.As(err, &declined) || !strings.Contains(err.Error(), "no payment access") ||
			failed.Category != payment.FailureOther || failed.NotFound() {
			t.Errorf("call %d: %v; want a *payment.Failed naming why", i+1, err)
		}
	}
}
