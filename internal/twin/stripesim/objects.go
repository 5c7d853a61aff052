package stripesim

import "time"

// PaymentIntent statuses, as Stripe names them.
const (
	StatusRequiresPaymentMethod = "requires_payment_method"
	StatusRequiresConfirmation  = "requires_confirmation"
	StatusRequiresAction        = "requires_action"
	StatusProcessing            = "processing"
	StatusRequiresCapture       = "requires_capture"
	StatusSucceeded             = "succeeded"
	StatusCanceled              = "canceled"
)

type intent struct {
	id                 string
	clientSecret       string
	amount             int64
	currency           string
	captureMethod      string
	customer           string
	description        string
	metadata           map[string]string
	paymentMethodTypes []string
	status             string
	paymentMethod      string
	amountCapturable   int64
	amountReceived     int64
	latestCharge       string
	lastPaymentError   map[string]any
	nextAction         map[string]any
	created            time.Time
	canceledAt         time.Time
	cancellationReason string
	// attempt grows with every confirm, so a timer armed for an earlier attempt (3-D Secure,
	// late authorization) can tell it is stale.
	attempt int
}

type charge struct {
	id             string
	intent         string
	amount         int64
	amountCaptured int64
	amountRefunded int64
	currency       string
	captured       bool
	status         string // succeeded or failed
	paymentMethod  string
	card           cardInfo
	captureBefore  time.Time
	failureCode    string
	failureMessage string
	declineCode    string
	metadata       map[string]string
	created        time.Time
	refundIDs      []string
}

type refund struct {
	id            string
	charge        string
	intent        string
	amount        int64
	currency      string
	reason        string
	status        string // pending, succeeded or failed
	failureReason string
	metadata      map[string]string
	created       time.Time
}

// Refund statuses, as Stripe names them; the simulator uses these three.
const (
	RefundStatusPending   = "pending"
	RefundStatusSucceeded = "succeeded"
	RefundStatusFailed    = "failed"
)

func (s *Sim) renderIntent(pi *intent, expandCharge bool) map[string]any {
	var latest any
	if pi.latestCharge != "" {
		latest = pi.latestCharge
		if ch := s.charges[pi.latestCharge]; expandCharge && ch != nil {
			latest = s.renderCharge(ch)
		}
	}
	m := map[string]any{
		"id":                        pi.id,
		"object":                    "payment_intent",
		"amount":                    pi.amount,
		"amount_capturable":         pi.amountCapturable,
		"amount_received":           pi.amountReceived,
		"capture_method":            pi.captureMethod,
		"client_secret":             pi.clientSecret,
		"confirmation_method":       "automatic",
		"created":                   pi.created.Unix(),
		"currency":                  pi.currency,
		"customer":                  nullable(pi.customer),
		"description":               nullable(pi.description),
		"last_payment_error":        nil,
		"latest_charge":             latest,
		"livemode":                  false,
		"metadata":                  copyMap(pi.metadata),
		"next_action":               nil,
		"payment_method":            nullable(pi.paymentMethod),
		"payment_method_types":      pi.paymentMethodTypes,
		"status":                    pi.status,
		"canceled_at":               nil,
		"cancellation_reason":       nullable(pi.cancellationReason),
		"setup_future_usage":        nil,
		"statement_descriptor":      nil,
		"amount_details":            map[string]any{"tip": map[string]any{}},
		"automatic_payment_methods": nil,
	}
	if pi.lastPaymentError != nil {
		m["last_payment_error"] = pi.lastPaymentError
	}
	if pi.nextAction != nil {
		m["next_action"] = pi.nextAction
	}
	if !pi.canceledAt.IsZero() {
		m["canceled_at"] = pi.canceledAt.Unix()
	}
	return m
}

func (s *Sim) renderCharge(ch *charge) map[string]any {
	refunds := make([]any, 0, len(ch.refundIDs))
	for _, id := range ch.refundIDs {
		refunds = append(refunds, s.renderRefund(s.refunds[id]))
	}
	card := map[string]any{
		"brand":     ch.card.brand,
		"last4":     ch.card.last4,
		"exp_month": 12,
		"exp_year":  2034,
		"funding":   "credit",
		"country":   "US",
		"network":   ch.card.brand,
	}
	if !ch.captureBefore.IsZero() {
		card["capture_before"] = ch.captureBefore.Unix()
	}
	outcome := map[string]any{"network_status": "approved_by_network", "type": "authorized", "seller_message": "Payment complete.", "risk_level": "normal"}
	if ch.status == "failed" {
		outcome = map[string]any{"network_status": "declined_by_network", "type": "issuer_declined",
			"reason": nullable(ch.declineCode), "seller_message": "The bank did not return any further details with this decline.", "risk_level": "normal"}
	}
	return map[string]any{
		"id":                     ch.id,
		"object":                 "charge",
		"amount":                 ch.amount,
		"amount_captured":        ch.amountCaptured,
		"amount_refunded":        ch.amountRefunded,
		"captured":               ch.captured,
		"created":                ch.created.Unix(),
		"currency":               ch.currency,
		"failure_code":           nullable(ch.failureCode),
		"failure_message":        nullable(ch.failureMessage),
		"livemode":               false,
		"metadata":               copyMap(ch.metadata),
		"outcome":                outcome,
		"paid":                   ch.status == "succeeded",
		"payment_intent":         ch.intent,
		"payment_method":         ch.paymentMethod,
		"payment_method_details": map[string]any{"type": "card", "card": card},
		"refunded":               ch.amountRefunded > 0 && ch.amountRefunded >= ch.amount,
		"refunds":                map[string]any{"object": "list", "data": refunds, "has_more": false, "total_count": len(refunds), "url": "/v1/charges/" + ch.id + "/refunds"},
		"status":                 ch.status,
	}
}

func (s *Sim) renderRefund(r *refund) map[string]any {
	m := map[string]any{
		"id":             r.id,
		"object":         "refund",
		"amount":         r.amount,
		"charge":         r.charge,
		"created":        r.created.Unix(),
		"currency":       r.currency,
		"metadata":       copyMap(r.metadata),
		"payment_intent": r.intent,
		"reason":         nullable(r.reason),
		"status":         r.status,
	}
	// Stripe renders failure_reason only on a failed refund.
	if r.status == RefundStatusFailed {
		m["failure_reason"] = r.failureReason
	}
	return m
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
