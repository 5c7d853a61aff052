// Package stripeadapter implements the payment port on Stripe PaymentIntents with manual
// capture, through an injected stripe-go *client.API. Every mutating call carries a
// deterministic idempotency key derived from the reservation, so a retried Lambda replays
// Stripe's first answer instead of acting twice.
package stripeadapter

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// MetadataReservationID is the PaymentIntent metadata key that ties a payment to its
// reservation; the simulator's ledger and the reconciler read it.
const MetadataReservationID = "reservation_id"

// MetadataCorrelationID carries the saga's correlation id.
const MetadataCorrelationID = "correlation_id"

// Idempotency keys, one per reservation and operation (and per attempt for confirming a
// payment method, cancel and refund). The confirm key keeps its spelling across the rename of
// the operation, so a retry after a deploy reuses the key of the call before it. Stripe prunes keys after 24 hours; the saga finishes long before that.
func authorizeKey(reservationID string) string { return reservationID + ":authorize" }
func confirmKey(reservationID string, attempt int) string {
	return reservationID + ":confirm:" + strconv.Itoa(attempt)
}
func captureKey(reservationID string) string { return reservationID + ":capture" }
func cancelKey(reservationID string, attempt int) string {
	return reservationID + ":cancel:" + strconv.Itoa(attempt)
}
func refundKey(reservationID string, attempt int) string {
	return reservationID + ":refund:" + strconv.Itoa(attempt)
}

// Adapter is the Stripe implementation of payment.Provider.
type Adapter struct {
	api *client.API
	log *slog.Logger
}

var _ payment.Provider = (*Adapter)(nil)

// New returns an adapter over api (see NewClientAPI). log may be nil (slog.Default()).
func New(api *client.API, log *slog.Logger) *Adapter {
	if log == nil {
		log = slog.Default()
	}
	return &Adapter{api: api, log: log.With("component", "payment.stripe")}
}

// CreateOrReuseAuthorization implements payment.Provider. With a PaymentIntentID it reads
// that PaymentIntent back; otherwise it creates one under the key {reservationId}:authorize,
// without a payment method, so that no decline can ever be stored under this key.
func (a *Adapter) CreateOrReuseAuthorization(ctx context.Context, req payment.AuthorizationRequest) (payment.Authorization, error) {
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	if req.PaymentIntentID != "" {
		auth, err := a.Retrieve(ctx, req.PaymentIntentID)
		if err != nil {
			return auth, err
		}
		if auth.ReservationID != "" && auth.ReservationID != req.ReservationID {
			return payment.Authorization{}, &payment.ValidationError{
				Field:   "PaymentIntentID",
				Problem: "belongs to reservation " + auth.ReservationID + ", not " + req.ReservationID,
			}
		}
		return auth, nil
	}
	params := &stripe.PaymentIntentParams{
		Amount:             stripe.Int64(req.Amount),
		Currency:           stripe.String(req.Currency),
		CaptureMethod:      stripe.String(string(stripe.PaymentIntentCaptureMethodManual)),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
		Description:        stripe.String("seatsaga reservation " + req.ReservationID),
	}
	if req.Customer != "" {
		params.Customer = stripe.String(req.Customer)
	}
	params.Context = ctx
	params.AddMetadata(MetadataReservationID, req.ReservationID)
	if req.CorrelationID != "" {
		params.AddMetadata(MetadataCorrelationID, req.CorrelationID)
	}
	key := authorizeKey(req.ReservationID)
	params.SetIdempotencyKey(key)

	start := time.Now()
	pi, err := a.api.PaymentIntents.New(params)
	return a.finish(ctx, payment.OpAuthorize, req.ReservationID, "", key, start, pi, err)
}

// ConfirmPaymentMethod implements payment.Provider under the key
// {reservationId}:confirm:{attempt}.
func (a *Adapter) ConfirmPaymentMethod(ctx context.Context, req payment.ConfirmPaymentMethodRequest) (payment.Authorization, error) {
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	params := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String(req.PaymentMethod)}
	if req.ReturnURL != "" {
		params.ReturnURL = stripe.String(req.ReturnURL)
	}
	params.Context = ctx
	params.AddExpand("latest_charge")
	key := confirmKey(req.ReservationID, req.Attempt)
	params.SetIdempotencyKey(key)

	start := time.Now()
	pi, err := a.api.PaymentIntents.Confirm(req.PaymentIntentID, params)
	return a.finish(ctx, payment.OpConfirmPaymentMethod, req.ReservationID, req.PaymentIntentID, key, start, pi, err)
}

// Retrieve implements payment.Provider. Reads carry no idempotency key.
func (a *Adapter) Retrieve(ctx context.Context, paymentIntentID string) (payment.Authorization, error) {
	if paymentIntentID == "" {
		return payment.Authorization{}, &payment.ValidationError{Field: "PaymentIntentID", Problem: "is empty"}
	}
	params := &stripe.PaymentIntentParams{}
	params.Context = ctx
	params.AddExpand("latest_charge")
	start := time.Now()
	pi, err := a.api.PaymentIntents.Get(paymentIntentID, params)
	return a.finish(ctx, payment.OpRetrieve, "", paymentIntentID, "", start, pi, err)
}

// Capture implements payment.Provider under the key {reservationId}:capture.
func (a *Adapter) Capture(ctx context.Context, req payment.CaptureRequest) (payment.Authorization, error) {
	if err := validateTarget(req.ReservationID, req.PaymentIntentID); err != nil {
		return payment.Authorization{}, err
	}
	if req.Amount < 0 {
		return payment.Authorization{}, &payment.ValidationError{Field: "Amount", Problem: "is negative"}
	}
	params := &stripe.PaymentIntentCaptureParams{}
	if req.Amount > 0 {
		params.AmountToCapture = stripe.Int64(req.Amount)
	}
	params.Context = ctx
	params.AddExpand("latest_charge")
	key := captureKey(req.ReservationID)
	params.SetIdempotencyKey(key)

	start := time.Now()
	pi, err := a.api.PaymentIntents.Capture(req.PaymentIntentID, params)
	return a.finish(ctx, payment.OpCapture, req.ReservationID, req.PaymentIntentID, key, start, pi, err)
}

// Cancel implements payment.Provider under the key {reservationId}:cancel:{attempt}. It voids
// the authorization; Stripe refuses it once the PaymentIntent is captured (use Refund), and
// while it is processing (then a later attempt, with its own key, can void it).
func (a *Adapter) Cancel(ctx context.Context, req payment.CancelRequest) (payment.Authorization, error) {
	if err := req.Validate(); err != nil {
		return payment.Authorization{}, err
	}
	params := &stripe.PaymentIntentCancelParams{}
	if req.Reason != "" {
		params.CancellationReason = stripe.String(req.Reason)
	}
	params.Context = ctx
	params.AddExpand("latest_charge")
	key := cancelKey(req.ReservationID, req.Attempt)
	params.SetIdempotencyKey(key)

	start := time.Now()
	pi, err := a.api.PaymentIntents.Cancel(req.PaymentIntentID, params)
	return a.finish(ctx, payment.OpCancel, req.ReservationID, req.PaymentIntentID, key, start, pi, err)
}

// Refund implements payment.Provider under the key {reservationId}:refund:{attempt}, then
// reads the PaymentIntent back so the caller sees the resulting state. A failure of that read
// does not undo the refund: the Refund is returned with a nil Authorization. The refund may
// still be pending; RetrieveRefund tells how it ended.
func (a *Adapter) Refund(ctx context.Context, req payment.RefundRequest) (payment.Refund, error) {
	if err := validateTarget(req.ReservationID, req.PaymentIntentID); err != nil {
		return payment.Refund{}, err
	}
	if req.Amount < 0 {
		return payment.Refund{}, &payment.ValidationError{Field: "Amount", Problem: "is negative"}
	}
	params := &stripe.RefundParams{PaymentIntent: stripe.String(req.PaymentIntentID)}
	if req.Amount > 0 {
		params.Amount = stripe.Int64(req.Amount)
	}
	if req.Reason != "" {
		params.Reason = stripe.String(req.Reason)
	}
	params.Context = ctx
	params.AddMetadata(MetadataReservationID, req.ReservationID)
	key := refundKey(req.ReservationID, req.EffectiveAttempt())
	params.SetIdempotencyKey(key)

	start := time.Now()
	r, err := a.api.Refunds.New(params)
	log := a.log.With("op", payment.OpRefund, "reservation_id", req.ReservationID,
		"payment_intent", req.PaymentIntentID, "idempotency_key", key,
		"duration_ms", time.Since(start).Milliseconds())
	if err != nil {
		classified := Classify(payment.OpRefund, req.PaymentIntentID, err)
		logOutcome(ctx, log, classified)
		return payment.Refund{}, classified
	}
	out := ToRefund(r)
	if out.PaymentIntentID == "" {
		out.PaymentIntentID = req.PaymentIntentID
	}
	if out.ReservationID == "" {
		out.ReservationID = req.ReservationID
	}
	log.InfoContext(ctx, "payment call succeeded", "refund", r.ID, "amount", r.Amount, "status", r.Status)
	if auth, err := a.Retrieve(ctx, req.PaymentIntentID); err == nil {
		out.Authorization = &auth
	}
	return out, nil
}

// RetrieveRefund implements payment.Provider with GET /v1/refunds/{id}. It does not read the
// PaymentIntent back (the Refund's Authorization is nil): the refund's own status is the
// answer the caller wants.
func (a *Adapter) RetrieveRefund(ctx context.Context, refundID string) (payment.Refund, error) {
	if refundID == "" {
		return payment.Refund{}, &payment.ValidationError{Field: "RefundID", Problem: "is empty"}
	}
	params := &stripe.RefundParams{}
	params.Context = ctx
	start := time.Now()
	r, err := a.api.Refunds.Get(refundID, params)
	log := a.log.With("op", payment.OpRetrieveRefund, "refund", refundID,
		"duration_ms", time.Since(start).Milliseconds())
	if err != nil {
		classified := Classify(payment.OpRetrieveRefund, "", err)
		logOutcome(ctx, log, classified)
		return payment.Refund{}, classified
	}
	out := ToRefund(r)
	log.InfoContext(ctx, "payment call succeeded", "payment_intent", out.PaymentIntentID,
		"status", out.Status, "failure_reason", out.FailureReason)
	return out, nil
}

func validateTarget(reservationID, paymentIntentID string) error {
	if reservationID == "" {
		return &payment.ValidationError{Field: "ReservationID", Problem: "is empty"}
	}
	if paymentIntentID == "" {
		return &payment.ValidationError{Field: "PaymentIntentID", Problem: "is empty"}
	}
	return nil
}

// finish classifies the outcome of one PaymentIntent call and logs it once.
func (a *Adapter) finish(ctx context.Context, op payment.Op, reservationID, paymentIntentID, key string,
	start time.Time, pi *stripe.PaymentIntent, err error) (payment.Authorization, error) {
	log := a.log.With("op", op, "duration_ms", time.Since(start).Milliseconds())
	if reservationID != "" {
		log = log.With("reservation_id", reservationID)
	}
	if key != "" {
		log = log.With("idempotency_key", key)
	}
	if err != nil {
		classified := Classify(op, paymentIntentID, err)
		logOutcome(ctx, log.With("payment_intent", paymentIntentID), classified)
		return payment.Authorization{}, classified
	}
	auth := ToAuthorization(pi)
	log.InfoContext(ctx, "payment call succeeded", "payment_intent", auth.PaymentIntentID,
		"provider_status", auth.ProviderStatus, "state", auth.State)
	return auth, nil
}

func logOutcome(ctx context.Context, log *slog.Logger, err error) {
	var (
		declined  *payment.Declined
		uncertain *payment.Uncertain
		failed    *payment.Failed
	)
	switch {
	case errors.As(err, &declined):
		log.InfoContext(ctx, "payment declined", "code", declined.Code, "decline_code", declined.DeclineCode)
	case errors.As(err, &uncertain):
		log.WarnContext(ctx, "payment outcome unknown", "reason", uncertain.Reason,
			"http_status", uncertain.HTTPStatus, "error", uncertain.Err)
	case errors.As(err, &failed):
		log.ErrorContext(ctx, "payment call failed", "category", failed.Category, "type", failed.Type,
			"code", failed.Code, "http_status", failed.HTTPStatus, "request_id", failed.RequestID, "message", failed.Message)
	default:
		log.ErrorContext(ctx, "payment call failed", "error", err)
	}
}
