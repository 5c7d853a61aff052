package stripesim

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

var cancelableStatuses = []string{StatusRequiresPaymentMethod, StatusRequiresCapture, StatusRequiresConfirmation,
	StatusRequiresAction, StatusProcessing}

func (s *Sim) noSuchIntent(id string) response {
	resp := invalidRequest("resource_missing", "intent", "No such payment_intent: '"+id+"'")
	resp.status = http.StatusNotFound
	return resp
}

// unexpectedState refuses an operation on a PaymentIntent in the wrong status. The endpoint
// did start executing, so, as at Stripe, the answer is saved under the idempotency key.
func unexpectedState(message string, pi map[string]any) response {
	return saved(apiError(http.StatusBadRequest, "invalid_request_error", "payment_intent_unexpected_state", "",
		message, map[string]any{"payment_intent": pi}))
}

// saved marks an error answer as stored under the idempotency key.
func saved(r response) response {
	r.save = true
	return r
}

// createIntent serves POST /v1/payment_intents.
func (s *Sim) createIntent(params url.Values, req requestInfo) response {
	if bad := checkParams(params, "amount", "currency", "capture_method", "customer", "description",
		"payment_method", "payment_method_types[", "confirm", "return_url", "metadata[", "expand[",
		"receipt_email", "statement_descriptor", "statement_descriptor_suffix"); bad != nil {
		return *bad
	}
	amount, bad := parseAmount(params, "amount", true)
	if bad != nil {
		return *bad
	}
	currency := params.Get("currency")
	if currency == "" {
		return invalidRequest("parameter_missing", "currency", "Missing required param: currency.")
	}
	if !currencyPattern.MatchString(currency) {
		return invalidRequest("parameter_invalid_string", "currency", "Invalid currency: "+currency)
	}
	captureMethod := params.Get("capture_method")
	switch captureMethod {
	case "":
		captureMethod = "automatic"
	case "automatic", "automatic_async", "manual":
	default:
		return invalidRequest("", "capture_method", "Invalid capture_method: must be one of automatic, automatic_async, or manual")
	}
	types := list(params, "payment_method_types")
	if len(types) == 0 {
		types = []string{"card"}
	}
	pi := &intent{
		id:                 s.newID("pi"),
		amount:             amount,
		currency:           currency,
		captureMethod:      captureMethod,
		customer:           params.Get("customer"),
		description:        params.Get("description"),
		metadata:           dict(params, "metadata"),
		paymentMethodTypes: types,
		status:             StatusRequiresPaymentMethod,
		created:            s.now(),
	}
	pi.clientSecret = pi.id + "_secret_" + s.newID("cs")[3:]
	s.intents[pi.id] = pi
	s.order = append(s.order, pi.id)
	s.emit("payment_intent.created", s.renderIntent(pi, false), req)

	if pm := params.Get("payment_method"); pm != "" {
		pi.paymentMethod = pm
		pi.status = StatusRequiresConfirmation
		if params.Get("confirm") == "true" {
			return s.confirm(pi, pm, expands(params, "latest_charge"), req)
		}
	}
	return ok(s.renderIntent(pi, expands(params, "latest_charge")))
}

// retrieveIntent serves GET /v1/payment_intents/{id}.
func (s *Sim) retrieveIntent(id string, params url.Values) response {
	if bad := checkParams(params, "expand[", "client_secret"); bad != nil {
		return *bad
	}
	pi := s.intents[id]
	if pi == nil {
		return s.noSuchIntent(id)
	}
	s.expireIfLapsed(pi)
	return ok(s.renderIntent(pi, expands(params, "latest_charge")))
}

// confirmIntent serves POST /v1/payment_intents/{id}/confirm.
func (s *Sim) confirmIntent(id string, params url.Values, req requestInfo) response {
	if bad := checkParams(params, "payment_method", "return_url", "expand[", "capture_method",
		"receipt_email", "setup_future_usage", "use_stripe_sdk", "off_session", "error_on_requires_action"); bad != nil {
		return *bad
	}
	pi := s.intents[id]
	if pi == nil {
		return s.noSuchIntent(id)
	}
	s.expireIfLapsed(pi)
	switch pi.status {
	case StatusRequiresPaymentMethod, StatusRequiresConfirmation, StatusRequiresAction:
	default:
		return unexpectedState(fmt.Sprintf("You cannot confirm this PaymentIntent because it has a status of %s. "+
			"Only a PaymentIntent with one of the following statuses may be confirmed: requires_confirmation, requires_action, requires_payment_method.",
			pi.status), s.renderIntent(pi, false))
	}
	pm := params.Get("payment_method")
	if pm == "" {
		pm = pi.paymentMethod
	}
	if pm == "" {
		return invalidRequest("payment_intent_unexpected_state", "payment_method",
			"You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent with "+pi.id+", specify a payment method attached to this customer along with the customer ID.")
	}
	if _, known := methods[pm]; !known || s.methodsUnknown {
		return invalidRequest("resource_missing", "payment_method", "No such PaymentMethod: '"+pm+"'")
	}
	return s.confirm(pi, pm, expands(params, "latest_charge"), req)
}

// confirm runs one authorization attempt with pm; must hold s.mu.
func (s *Sim) confirm(pi *intent, pm string, expand bool, req requestInfo) response {
	spec := methods[pm]
	pi.attempt++
	attempt := pi.attempt
	pi.paymentMethod = pm
	pi.lastPaymentError = nil
	pi.nextAction = nil

	switch spec.behaviour {
	case authorizes:
		s.authorize(pi, spec, req)
	case declines:
		errBody := s.decline(pi, spec, spec.code, spec.declineCode, spec.message, req)
		return saved(apiError(http.StatusPaymentRequired, "card_error", spec.code, "", spec.message, errBody))
	case threeDSCompletes, threeDSNever, threeDSFails:
		pi.status = StatusRequiresAction
		pi.nextAction = map[string]any{
			"type": "use_stripe_sdk",
			"use_stripe_sdk": map[string]any{
				"type":                    "three_d_secure_redirect",
				"three_d_secure_2_source": s.newID("src"),
			},
		}
		s.emit("payment_intent.requires_action", s.renderIntent(pi, false), req)
		switch spec.behaviour {
		case threeDSCompletes:
			s.after(s.opts.ThreeDSDelay, func() { s.later(pi.id, attempt, StatusRequiresAction, spec, true) })
		case threeDSFails:
			s.after(s.opts.ThreeDSDelay, func() { s.later(pi.id, attempt, StatusRequiresAction, spec, false) })
		}
	case authorizesLate:
		pi.status = StatusProcessing
		s.emit("payment_intent.processing", s.renderIntent(pi, false), req)
		s.after(s.opts.LateAuthorizationDelay, func() { s.later(pi.id, attempt, StatusProcessing, spec, true) })
	}
	return ok(s.renderIntent(pi, expand))
}

// later completes an asynchronous attempt (3-D Secure done or failed, late authorization)
// unless the PaymentIntent moved on in the meantime.
func (s *Sim) later(id string, attempt int, wantStatus string, spec methodSpec, succeed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi := s.intents[id]
	if pi == nil || pi.attempt != attempt || pi.status != wantStatus {
		return
	}
	pi.nextAction = nil
	if succeed {
		s.authorize(pi, spec, requestInfo{})
	} else {
		s.decline(pi, spec, "payment_intent_authentication_failure", "",
			"The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.", requestInfo{})
	}
	s.scheduleDeliveries()
}

// authorize records a successful authorization; must hold s.mu.
func (s *Sim) authorize(pi *intent, spec methodSpec, req requestInfo) {
	now := s.now()
	ch := &charge{
		id: s.newID("ch"), intent: pi.id, amount: pi.amount, currency: pi.currency, status: "succeeded",
		paymentMethod: pi.paymentMethod, card: spec.card, metadata: copyMap(pi.metadata), created: now,
	}
	if pi.captureMethod == "manual" {
		ch.captureBefore = now.Add(s.opts.AuthorizationValidity)
		pi.status = StatusRequiresCapture
		pi.amountCapturable = pi.amount
	} else {
		ch.captured, ch.amountCaptured = true, pi.amount
		pi.status = StatusSucceeded
		pi.amountReceived = pi.amount
	}
	s.charges[ch.id] = ch
	pi.latestCharge = ch.id
	s.record(MovementAuthorized, pi, ch.id, "", pi.amount)
	if ch.captured {
		s.record(MovementCaptured, pi, ch.id, "", pi.amount)
		s.emit("payment_intent.succeeded", s.renderIntent(pi, false), req)
		return
	}
	s.emit("payment_intent.amount_capturable_updated", s.renderIntent(pi, false), req)
}

// decline records a refused attempt and returns the extra fields of Stripe's card_error
// body; must hold s.mu.
func (s *Sim) decline(pi *intent, spec methodSpec, code, declineCode, message string, req requestInfo) map[string]any {
	ch := &charge{
		id: s.newID("ch"), intent: pi.id, amount: pi.amount, currency: pi.currency, status: "failed",
		paymentMethod: pi.paymentMethod, card: spec.card, metadata: copyMap(pi.metadata), created: s.now(),
		failureCode: code, failureMessage: message, declineCode: declineCode,
	}
	s.charges[ch.id] = ch
	paymentMethod := map[string]any{
		"id": pi.paymentMethod, "object": "payment_method", "type": "card",
		"card": map[string]any{"brand": spec.card.brand, "last4": spec.card.last4, "exp_month": 12, "exp_year": 2034},
	}
	lastErr := map[string]any{
		"type": "card_error", "code": code, "message": message, "charge": ch.id,
		"payment_method": paymentMethod,
		"doc_url":        "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-"),
	}
	if declineCode != "" {
		lastErr["decline_code"] = declineCode
	}
	pi.status = StatusRequiresPaymentMethod
	pi.paymentMethod = ""
	pi.latestCharge = ch.id
	pi.lastPaymentError = lastErr
	s.record(MovementDeclined, pi, ch.id, "", 0)
	rendered := s.renderIntent(pi, false)
	s.emit("payment_intent.payment_failed", rendered, req)
	extra := map[string]any{"charge": ch.id, "payment_intent": rendered, "payment_method": paymentMethod}
	if declineCode != "" {
		extra["decline_code"] = declineCode
	}
	return extra
}

// captureIntent serves POST /v1/payment_intents/{id}/capture.
func (s *Sim) captureIntent(id string, params url.Values, req requestInfo) response {
	if bad := checkParams(params, "amount_to_capture", "expand[", "metadata[", "final_capture",
		"statement_descriptor", "statement_descriptor_suffix"); bad != nil {
		return *bad
	}
	pi := s.intents[id]
	if pi == nil {
		return s.noSuchIntent(id)
	}
	amount, bad := parseAmount(params, "amount_to_capture", false)
	if bad != nil {
		return *bad
	}
	if s.expireIfLapsed(pi) {
		return saved(apiError(http.StatusBadRequest, "invalid_request_error", "charge_expired_for_capture", "",
			"This PaymentIntent could not be captured because its authorization expired.", map[string]any{"payment_intent": s.renderIntent(pi, false)}))
	}
	if pi.status != StatusRequiresCapture {
		return unexpectedState(fmt.Sprintf("This PaymentIntent could not be captured because it has a status of %s. "+
			"Only a PaymentIntent with one of the following statuses may be captured: requires_capture.", pi.status), s.renderIntent(pi, false))
	}
	if amount == 0 {
		amount = pi.amountCapturable
	}
	if amount > pi.amountCapturable {
		return invalidRequest("amount_too_large", "amount_to_capture",
			fmt.Sprintf("The amount to capture (%d) is greater than the amount capturable (%d).", amount, pi.amountCapturable))
	}
	ch := s.charges[pi.latestCharge]
	released := pi.amountCapturable - amount
	pi.status = StatusSucceeded
	pi.amountReceived = amount
	pi.amountCapturable = 0
	ch.captured = true
	ch.amountCaptured = amount
	if released > 0 {
		// Stripe refunds the uncaptured rest of a partial capture.
		ch.amountRefunded = released
	}
	s.record(MovementCaptured, pi, ch.id, "", amount)
	if released > 0 {
		s.record(MovementVoided, pi, ch.id, "", released)
	}
	s.emit("payment_intent.succeeded", s.renderIntent(pi, false), req)
	return ok(s.renderIntent(pi, expands(params, "latest_charge")))
}

// cancelIntent serves POST /v1/payment_intents/{id}/cancel.
func (s *Sim) cancelIntent(id string, params url.Values, req requestInfo) response {
	if bad := checkParams(params, "cancellation_reason", "expand["); bad != nil {
		return *bad
	}
	pi := s.intents[id]
	if pi == nil {
		return s.noSuchIntent(id)
	}
	reason := params.Get("cancellation_reason")
	switch reason {
	case "", "abandoned", "duplicate", "fraudulent", "requested_by_customer":
	default:
		return invalidRequest("", "cancellation_reason",
			"Invalid cancellation_reason: must be one of abandoned, duplicate, fraudulent, or requested_by_customer")
	}
	s.expireIfLapsed(pi)
	cancelable := false
	for _, st := range cancelableStatuses {
		cancelable = cancelable || pi.status == st
	}
	if pi.status == StatusProcessing && s.opts.RefuseCancelWhileProcessing {
		return unexpectedState("You cannot cancel this PaymentIntent because it has a status of processing (simulated: "+
			"processing payments are not cancelable).", s.renderIntent(pi, false))
	}
	if !cancelable {
		return unexpectedState(fmt.Sprintf("You cannot cancel this PaymentIntent because it has a status of %s. "+
			"Only a PaymentIntent with one of the following statuses may be canceled: %s.", pi.status, strings.Join(cancelableStatuses, ", ")),
			s.renderIntent(pi, false))
	}
	s.cancel(pi, reason, req)
	return ok(s.renderIntent(pi, expands(params, "latest_charge")))
}

// cancel voids pi; must hold s.mu.
func (s *Sim) cancel(pi *intent, reason string, req requestInfo) {
	if pi.status == StatusRequiresCapture {
		ch := s.charges[pi.latestCharge]
		// An uncaptured charge that is canceled shows as refunded at Stripe.
		ch.amountRefunded = ch.amount
		s.record(MovementVoided, pi, ch.id, "", pi.amountCapturable)
	}
	pi.status = StatusCanceled
	pi.amountCapturable = 0
	pi.nextAction = nil
	pi.canceledAt = s.now()
	pi.cancellationReason = reason
	s.emit("payment_intent.canceled", s.renderIntent(pi, false), req)
}

// expireIfLapsed cancels an authorization whose capture window closed, as Stripe does; it
// reports whether it did. Must hold s.mu.
func (s *Sim) expireIfLapsed(pi *intent) bool {
	if pi.status != StatusRequiresCapture {
		return false
	}
	ch := s.charges[pi.latestCharge]
	if ch == nil || ch.captureBefore.IsZero() || s.now().Before(ch.captureBefore) {
		return false
	}
	s.cancel(pi, "automatic", requestInfo{})
	s.scheduleDeliveries()
	return true
}

// createRefund serves POST /v1/refunds.
func (s *Sim) createRefund(params url.Values, req requestInfo) response {
	if bad := checkParams(params, "payment_intent", "charge", "amount", "reason", "metadata[", "expand[",
		"refund_application_fee", "reverse_transfer"); bad != nil {
		return *bad
	}
	amount, bad := parseAmount(params, "amount", false)
	if bad != nil {
		return *bad
	}
	var pi *intent
	switch {
	case params.Get("payment_intent") != "":
		pi = s.intents[params.Get("payment_intent")]
		if pi == nil {
			return invalidRequest("resource_missing", "payment_intent", "No such payment_intent: '"+params.Get("payment_intent")+"'")
		}
	case params.Get("charge") != "":
		ch := s.charges[params.Get("charge")]
		if ch == nil {
			return invalidRequest("resource_missing", "charge", "No such charge: '"+params.Get("charge")+"'")
		}
		pi = s.intents[ch.intent]
	default:
		return invalidRequest("parameter_missing", "", "One of the following params should be provided for this request: payment_intent or charge.")
	}
	switch reason := params.Get("reason"); reason {
	case "", "duplicate", "fraudulent", "requested_by_customer":
	default:
		return invalidRequest("", "reason", "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer")
	}
	s.expireIfLapsed(pi)
	if pi.status != StatusSucceeded {
		return saved(apiError(http.StatusBadRequest, "invalid_request_error", "charge_not_refundable", "",
			fmt.Sprintf("This PaymentIntent (%s) does not have a successful charge to refund (status %s).", pi.id, pi.status), nil))
	}
	ch := s.charges[pi.latestCharge]
	remaining := ch.amount - ch.amountRefunded
	if remaining <= 0 {
		return saved(apiError(http.StatusBadRequest, "invalid_request_error", "charge_already_refunded", "",
			"Charge "+ch.id+" has already been refunded.", nil))
	}
	if amount == 0 {
		amount = remaining
	}
	if amount > remaining {
		return invalidRequest("amount_too_large", "amount",
			fmt.Sprintf("Refund amount (%d) is greater than unrefunded amount on charge (%d)", amount, remaining))
	}
	r := &refund{
		id: s.newID("re"), charge: ch.id, intent: pi.id, amount: amount, currency: pi.currency,
		reason: params.Get("reason"), status: RefundStatusSucceeded, metadata: dict(params, "metadata"), created: s.now(),
	}
	fails := methods[ch.paymentMethod].refundFails
	if fails || s.opts.RefundDelay > 0 {
		r.status = RefundStatusPending
	}
	s.refunds[r.id] = r
	// Stripe counts a pending refund in amount_refunded at once, and takes it back out if
	// the refund fails.
	ch.amountRefunded += amount
	ch.refundIDs = append(ch.refundIDs, r.id)
	if r.status == RefundStatusSucceeded {
		s.record(MovementRefunded, pi, ch.id, r.id, amount)
	} else {
		s.record(MovementRefundPending, pi, ch.id, r.id, amount)
	}
	s.emit("charge.refunded", s.renderCharge(ch), req)
	switch {
	case r.status == RefundStatusSucceeded:
	case s.opts.RefundDelay > 0:
		id := r.id
		s.after(s.opts.RefundDelay, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.settleRefund(id, requestInfo{})
			s.scheduleDeliveries()
		})
	default:
		// Without a delay the failing refund settles inside this call, after being pending
		// for no time, so the answer already shows it failed.
		s.settleRefund(r.id, req)
	}
	return ok(s.renderRefund(r))
}

// settleRefund ends a pending refund: failed for a PaymentMethodRefundFail charge, else
// succeeded. It emits charge.refund.updated and refund.failed or refund.updated, as Stripe
// does when a refund changes status. Must hold s.mu.
func (s *Sim) settleRefund(id string, req requestInfo) {
	r := s.refunds[id]
	if r == nil || r.status != RefundStatusPending {
		return
	}
	ch, pi := s.charges[r.charge], s.intents[r.intent]
	if methods[ch.paymentMethod].refundFails {
		r.status, r.failureReason = RefundStatusFailed, refundFailureReason
		ch.amountRefunded -= r.amount
		s.record(MovementRefundFailed, pi, ch.id, r.id, r.amount)
		s.emit("charge.refund.updated", s.renderRefund(r), req)
		s.emit("refund.failed", s.renderRefund(r), req)
		return
	}
	r.status = RefundStatusSucceeded
	s.record(MovementRefunded, pi, ch.id, r.id, r.amount)
	s.emit("charge.refund.updated", s.renderRefund(r), req)
	s.emit("refund.updated", s.renderRefund(r), req)
}

// retrieveRefund serves GET /v1/refunds/{id}.
func (s *Sim) retrieveRefund(id string, params url.Values) response {
	if bad := checkParams(params, "expand["); bad != nil {
		return *bad
	}
	r := s.refunds[id]
	if r == nil {
		resp := invalidRequest("resource_missing", "id", "No such refund: '"+id+"'")
		resp.status = http.StatusNotFound
		return resp
	}
	return ok(s.renderRefund(r))
}

// ErrNotAwaitingAuthentication is returned by Authenticate for a PaymentIntent that is not
// waiting for the buyer.
var ErrNotAwaitingAuthentication = errors.New("stripesim: payment intent is not awaiting authentication")

// Authenticate plays the buyer finishing (succeed) or failing 3-D Secure on a PaymentIntent
// in requires_action now, instead of after Options.ThreeDSDelay: demos and end-to-end tests
// use it to complete an authentication the simulated buyer would otherwise never finish.
func (s *Sim) Authenticate(paymentIntentID string, succeed bool) error {
	s.mu.Lock()
	pi := s.intents[paymentIntentID]
	if pi == nil {
		s.mu.Unlock()
		return fmt.Errorf("stripesim: no such payment intent %q", paymentIntentID)
	}
	if pi.status != StatusRequiresAction {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s is %s", ErrNotAwaitingAuthentication, paymentIntentID, pi.status)
	}
	spec, attempt := methods[pi.paymentMethod], pi.attempt
	s.mu.Unlock()
	s.later(paymentIntentID, attempt, StatusRequiresAction, spec, succeed)
	return nil
}
