package stripeadapter

import (
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// MapStatus maps a PaymentIntent to our payment state. A status this code does not know is
// UNKNOWN_NEEDS_RECONCILIATION, never a guess.
//
// REFUNDED here means the provider accepted refunds covering the charge, not that they
// succeeded: Stripe's charge amount_refunded (and refunded flag) already count a pending
// refund, which may still fail and leave the money with the merchant, after which the
// PaymentIntent maps to PAID again. Only RetrieveRefund tells whether a refund succeeded.
//
//	requires_payment_method  AUTHORIZING, or FAILED when the last attempt failed
//	requires_confirmation    AUTHORIZING
//	requires_action          AUTHORIZING (the buyer must authenticate)
//	processing               AUTHORIZING
//	requires_capture         AUTHORIZED
//	succeeded                PAID, or REFUNDED once the charge is fully refunded
//	canceled                 CANCELED
func MapStatus(pi *stripe.PaymentIntent) payment.State {
	switch pi.Status {
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		if pi.LastPaymentError != nil {
			return payment.StateFailed
		}
		return payment.StateAuthorizing
	case stripe.PaymentIntentStatusRequiresConfirmation,
		stripe.PaymentIntentStatusRequiresAction,
		stripe.PaymentIntentStatusProcessing:
		return payment.StateAuthorizing
	case stripe.PaymentIntentStatusRequiresCapture:
		return payment.StateAuthorized
	case stripe.PaymentIntentStatusSucceeded:
		// Refunded counts pending refunds too; see above.
		if ch := pi.LatestCharge; ch != nil && ch.Refunded {
			return payment.StateRefunded
		}
		return payment.StatePaid
	case stripe.PaymentIntentStatusCanceled:
		return payment.StateCanceled
	}
	return payment.StateUnknownNeedsReconciliation
}

// ToAuthorization converts a PaymentIntent (ideally with latest_charge expanded) to the
// port's Authorization.
func ToAuthorization(pi *stripe.PaymentIntent) payment.Authorization {
	auth := payment.Authorization{
		PaymentIntentID:  pi.ID,
		ReservationID:    pi.Metadata[MetadataReservationID],
		State:            MapStatus(pi),
		ProviderStatus:   string(pi.Status),
		Amount:           pi.Amount,
		Currency:         string(pi.Currency),
		AmountCapturable: pi.AmountCapturable,
		AmountReceived:   pi.AmountReceived,
		ClientSecret:     pi.ClientSecret,
		CaptureBefore:    captureBefore(pi),
	}
	if pi.Created != 0 {
		auth.Created = time.Unix(pi.Created, 0).UTC()
	}
	if pi.PaymentMethod != nil {
		auth.PaymentMethod = pi.PaymentMethod.ID
	}
	if pi.NextAction != nil {
		auth.NextAction = string(pi.NextAction.Type)
	}
	if ch := pi.LatestCharge; ch != nil && ch.Captured {
		// Stripe counts the released rest of a partial capture as refunded; only what was
		// returned after capture is a refund to us. Pending refunds are included.
		auth.AmountRefunded = ch.AmountRefunded - (ch.Amount - ch.AmountCaptured)
	}
	if e := pi.LastPaymentError; e != nil {
		auth.LastDecline = &payment.Declined{
			Op:              payment.OpConfirmPaymentMethod,
			PaymentIntentID: pi.ID,
			Code:            string(e.Code),
			DeclineCode:     string(e.DeclineCode),
			Message:         e.Msg,
			ProviderStatus:  string(pi.Status),
		}
	}
	return auth
}

// captureBefore is when the authorization lapses: the card's capture_before when Stripe
// reports it, else the charge's (or, unexpanded, the PaymentIntent's) creation plus the
// default validity. It is zero while nothing is authorized.
func captureBefore(pi *stripe.PaymentIntent) time.Time {
	if pi.Status != stripe.PaymentIntentStatusRequiresCapture && pi.AmountCapturable == 0 {
		return time.Time{}
	}
	if ch := pi.LatestCharge; ch != nil {
		if d := ch.PaymentMethodDetails; d != nil && d.Card != nil && d.Card.CaptureBefore != 0 {
			return time.Unix(d.Card.CaptureBefore, 0).UTC()
		}
		if ch.Created != 0 {
			return time.Unix(ch.Created, 0).UTC().Add(payment.DefaultAuthorizationValidity)
		}
	}
	if pi.Created == 0 {
		return time.Time{}
	}
	return time.Unix(pi.Created, 0).UTC().Add(payment.DefaultAuthorizationValidity)
}

// ToRefund converts a Stripe refund to the port's Refund. The reservation comes from the
// refund's metadata, which the adapter sets on every refund it creates.
func ToRefund(r *stripe.Refund) payment.Refund {
	out := payment.Refund{
		RefundID:      r.ID,
		ReservationID: r.Metadata[MetadataReservationID],
		Amount:        r.Amount,
		Currency:      string(r.Currency),
		Status:        payment.RefundStatus(r.Status),
		FailureReason: string(r.FailureReason),
	}
	if r.PaymentIntent != nil {
		out.PaymentIntentID = r.PaymentIntent.ID
	}
	return out
}
