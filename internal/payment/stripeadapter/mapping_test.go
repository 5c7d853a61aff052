package stripeadapter_test

import (
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
)

func TestMapStatus(t *testing.T) {
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	charge := func(captured, refunded int64, captureBefore int64) *stripe.Charge {
		return &stripe.Charge{ID: "ch_1", Amount: 1000, AmountCaptured: captured, AmountRefunded: refunded,
			Captured: captured > 0, Refunded: refunded >= 1000, Created: created.Add(time.Minute).Unix(),
			PaymentMethodDetails: &stripe.ChargePaymentMethodDetails{Card: &stripe.ChargePaymentMethodDetailsCard{CaptureBefore: captureBefore}}}
	}
	deadline := created.Add(6 * 24 * time.Hour)
	tests := []struct {
		name              string
		pi                stripe.PaymentIntent
		want              payment.State
		wantCaptureBefore time.Time
		wantRefunded      int64
	}{
		{"new", stripe.PaymentIntent{Status: "requires_payment_method"}, payment.StateAuthorizing, time.Time{}, 0},
		{"after a decline", stripe.PaymentIntent{Status: "requires_payment_method", LastPaymentError: &stripe.Error{Code: "card_declined"}}, payment.StateFailed, time.Time{}, 0},
		{"requires confirmation", stripe.PaymentIntent{Status: "requires_confirmation"}, payment.StateAuthorizing, time.Time{}, 0},
		{"3-D Secure pending", stripe.PaymentIntent{Status: "requires_action"}, payment.StateAuthorizing, time.Time{}, 0},
		{"processing", stripe.PaymentIntent{Status: "processing"}, payment.StateAuthorizing, time.Time{}, 0},
		{"authorized with capture_before", stripe.PaymentIntent{Status: "requires_capture", AmountCapturable: 1000, LatestCharge: charge(0, 0, deadline.Unix())}, payment.StateAuthorized, deadline, 0},
		{"authorized, charge without capture_before", stripe.PaymentIntent{Status: "requires_capture", AmountCapturable: 1000, LatestCharge: charge(0, 0, 0)}, payment.StateAuthorized, created.Add(time.Minute + 7*24*time.Hour), 0},
		{"authorized, charge not expanded", stripe.PaymentIntent{Status: "requires_capture", AmountCapturable: 1000, Created: created.Unix()}, payment.StateAuthorized, created.Add(7 * 24 * time.Hour), 0},
		{"captured", stripe.PaymentIntent{Status: "succeeded", AmountReceived: 1000, LatestCharge: charge(1000, 0, 0)}, payment.StatePaid, time.Time{}, 0},
		{"partially refunded", stripe.PaymentIntent{Status: "succeeded", AmountReceived: 1000, LatestCharge: charge(1000, 300, 0)}, payment.StatePaid, time.Time{}, 300},
		{"partially captured, rest released", stripe.PaymentIntent{Status: "succeeded", AmountReceived: 400, LatestCharge: charge(400, 600, 0)}, payment.StatePaid, time.Time{}, 0},
		{"fully refunded", stripe.PaymentIntent{Status: "succeeded", AmountReceived: 1000, LatestCharge: charge(1000, 1000, 0)}, payment.StateRefunded, time.Time{}, 1000},
		{"canceled", stripe.PaymentIntent{Status: "canceled"}, payment.StateCanceled, time.Time{}, 0},
		{"a status we do not know", stripe.PaymentIntent{Status: "requires_source"}, payment.StateUnknownNeedsReconciliation, time.Time{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			auth := stripeadapter.ToAuthorization(&tc.pi)
			if auth.State != tc.want || !auth.CaptureBefore.Equal(tc.wantCaptureBefore) || auth.AmountRefunded != tc.wantRefunded {
				t.Fatalf("state %s, capture before %v, refunded %d; want %s, %v, %d",
					auth.State, auth.CaptureBefore, auth.AmountRefunded, tc.want, tc.wantCaptureBefore, tc.wantRefunded)
			}
		})
	}
}

func TestRefundStatusesAreStripes(t *testing.T) {
	for ours, theirs := range map[payment.RefundStatus]stripe.RefundStatus{
		payment.RefundPending:        stripe.RefundStatusPending,
		payment.RefundSucceeded:      stripe.RefundStatusSucceeded,
		payment.RefundFailed:         stripe.RefundStatusFailed,
		payment.RefundCanceled:       stripe.RefundStatusCanceled,
		payment.RefundRequiresAction: stripe.RefundStatusRequiresAction,
	} {
		if ours != string(theirs) {
			t.Errorf("payment status %q, Stripe's %q", ours, theirs)
		}
	}
}

func TestToRefund(t *testing.T) {
	got := stripeadapter.ToRefund(&stripe.Refund{
		ID: "re_1", Amount: 700, Currency: "eur", Status: stripe.RefundStatusFailed,
		FailureReason: stripe.RefundFailureReasonLostOrStolenCard, PaymentIntent: &stripe.PaymentIntent{ID: "pi_1"},
		Metadata: map[string]string{stripeadapter.MetadataReservationID: "res-1"},
	})
	want := payment.Refund{RefundID: "re_1", PaymentIntentID: "pi_1", ReservationID: "res-1", Amount: 700, Currency: "eur",
		Status: payment.RefundFailed, FailureReason: "lost_or_stolen_card"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if bare := stripeadapter.ToRefund(&stripe.Refund{ID: "re_2", Status: stripe.RefundStatusPending}); bare.PaymentIntentID != "" || bare.Status != payment.RefundPending {
		t.Fatalf("refund without a PaymentIntent: %+v", bare)
	}
}
