package stripesim

// Payment methods the simulator understands. The pm_card_* names are Stripe's own test
// payment methods and behave as they do in Stripe's test mode (pm_card_refundFail is named
// after Stripe's test card 4000000000005126, which has no pm_card_* token); the pm_sim_*
// names cover behaviours Stripe's test mode has no fixed card for.
const (
	// PaymentMethodVisa always authorizes.
	PaymentMethodVisa       = "pm_card_visa"
	PaymentMethodMastercard = "pm_card_mastercard"
	// PaymentMethodDeclined is declined with decline_code generic_decline.
	PaymentMethodDeclined = "pm_card_chargeDeclined"
	// PaymentMethodInsufficientFunds is declined with decline_code insufficient_funds.
	PaymentMethodInsufficientFunds = "pm_card_chargeDeclinedInsufficientFunds"
	// PaymentMethodExpiredCard is declined with code expired_card.
	PaymentMethodExpiredCard = "pm_card_chargeDeclinedExpiredCard"
	// PaymentMethodThreeDSecure needs 3-D Secure; the simulated buyer completes it after
	// Options.ThreeDSDelay and the authorization succeeds.
	PaymentMethodThreeDSecure = "pm_card_threeDSecure2Required"
	// PaymentMethodThreeDSecureAbandoned needs 3-D Secure that the buyer never completes:
	// the PaymentIntent stays requires_action until canceled.
	PaymentMethodThreeDSecureAbandoned = "pm_sim_threeDSecureAbandoned"
	// PaymentMethodThreeDSecureFails needs 3-D Secure that the buyer fails after
	// Options.ThreeDSDelay: the PaymentIntent returns to requires_payment_method with
	// payment_intent_authentication_failure.
	PaymentMethodThreeDSecureFails = "pm_sim_threeDSecureFails"
	// PaymentMethodAuthorizeLate stays processing for Options.LateAuthorizationDelay, then
	// authorizes: the late success the saga must reconcile.
	PaymentMethodAuthorizeLate = "pm_sim_authorizeLate"
	// PaymentMethodRefundFail authorizes and captures like PaymentMethodVisa, but every
	// refund of it fails asynchronously, as with Stripe's test card 4000000000005126: the
	// refund is accepted pending, then after Options.RefundDelay turns failed with
	// failure_reason expired_or_canceled_card and the charge's amount_refunded goes back
	// down, so the merchant keeps the money.
	PaymentMethodRefundFail = "pm_card_refundFail"
)

// refundFailureReason is the failure_reason of a PaymentMethodRefundFail refund.
const refundFailureReason = "expired_or_canceled_card"

type behaviour int

const (
	authorizes behaviour = iota
	declines
	threeDSCompletes
	threeDSNever
	threeDSFails
	authorizesLate
)

type cardInfo struct{ brand, last4 string }

type methodSpec struct {
	behaviour   behaviour
	card        cardInfo
	refundFails bool
	code        string
	declineCode string
	message     string
}

var methods = map[string]methodSpec{
	PaymentMethodVisa:       {behaviour: authorizes, card: cardInfo{"visa", "4242"}},
	PaymentMethodMastercard: {behaviour: authorizes, card: cardInfo{"mastercard", "4444"}},
	PaymentMethodDeclined: {behaviour: declines, card: cardInfo{"visa", "0002"},
		code: "card_declined", declineCode: "generic_decline", message: "Your card was declined."},
	PaymentMethodInsufficientFunds: {behaviour: declines, card: cardInfo{"visa", "9995"},
		code: "card_declined", declineCode: "insufficient_funds", message: "Your card has insufficient funds."},
	PaymentMethodExpiredCard: {behaviour: declines, card: cardInfo{"visa", "0069"},
		code: "expired_card", declineCode: "expired_card", message: "Your card has expired."},
	PaymentMethodThreeDSecure:          {behaviour: threeDSCompletes, card: cardInfo{"visa", "3155"}},
	PaymentMethodThreeDSecureAbandoned: {behaviour: threeDSNever, card: cardInfo{"visa", "3220"}},
	PaymentMethodThreeDSecureFails:     {behaviour: threeDSFails, card: cardInfo{"visa", "3063"}},
	PaymentMethodAuthorizeLate:         {behaviour: authorizesLate, card: cardInfo{"visa", "1234"}},
	PaymentMethodRefundFail:            {behaviour: authorizes, card: cardInfo{"visa", "5126"}, refundFails: true},
}
