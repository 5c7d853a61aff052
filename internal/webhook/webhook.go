// Package webhook is the Stripe webhook Lambda's logic (API Gateway proxy events). A
// webhook is only a hint: the handler verifies its signature, retrieves the PaymentIntent as
// the truth, finds the reservation through the PaymentIntent's metadata, and carries out what
// the settlement decision (reservation.Decide) lets a webhook do: record the provider's truth
// with a guarded payment transition (expected prior state, owner and version) and complete
// the saga's waiting task with SendTaskSuccess or SendTaskFailure — once per task token,
// however many times and in whatever order events arrive. Voids, refunds and releases are the
// saga's; an event for a reservation that no longer waits changes nothing. Events of any API
// version are accepted. Events that cannot be a reason to act cost no read at all: the
// creation of a PaymentIntent (the authorize step's own act), and any event whose
// PaymentIntent is captured.
//
// Crash safety: every effect is guarded, so the provider's redelivery after a crash anywhere
// redoes what is missing and finds the rest done: the transition by its expected state and
// version, and the callback by its claim, a lease in ProcessedEvents (a redo after a crash
// takes over the expired lease; two live deliveries never both send). Where the store and the
// claims share DynamoDB, the claim is taken in the transaction that records the transition it
// reports. A delivery writes no record of its own: what it did is in those two.
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// SignatureHeader is the header Stripe signs webhooks in.
const SignatureHeader = "Stripe-Signature"

// MaxPayloadBytes bounds a webhook body; Stripe's events are a few kilobytes.
const MaxPayloadBytes = 256 << 10

// DefaultCallbackLease is how long one delivery may take to send a callback before another
// delivery may take over.
const DefaultCallbackLease = 30 * time.Second

// Store is the part of the inventory the handler uses (a subset of saga.Store).
type Store interface {
	Get(ctx context.Context, reservationID string) (reservation.Reservation, error)
	UpdatePayment(ctx context.Context, u reservation.PaymentUpdate) (reservation.Reservation, error)
}

// Payments retrieves the provider's truth about a PaymentIntent.
type Payments interface {
	Retrieve(ctx context.Context, paymentIntentID string) (payment.Authorization, error)
}

// StepFunctions is the part of the Step Functions API the handler uses; *sfn.Client satisfies it.
type StepFunctions interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
}

// Deps is what the handler needs; every field but Now, Logger, Metrics and CallbackLease is
// required.
type Deps struct {
	Verifier      payment.WebhookVerifier
	Payments      Payments
	Store         Store
	Dedupe        DedupeStore
	SFN           StepFunctions
	Now           func() time.Time
	Logger        *slog.Logger
	Metrics       metrics.Recorder
	CallbackLease time.Duration
}

// Handler processes Stripe webhooks.
type Handler struct {
	d Deps
}

// New checks deps and returns the handler.
func New(d Deps) (*Handler, error) {
	switch {
	case d.Verifier == nil:
		return nil, errors.New("webhook: Verifier is required")
	case d.Payments == nil:
		return nil, errors.New("webhook: Payments is required")
	case d.Store == nil:
		return nil, errors.New("webhook: Store is required")
	case d.Dedupe == nil:
		return nil, errors.New("webhook: Dedupe is required")
	case d.SFN == nil:
		return nil, errors.New("webhook: SFN is required")
	}
	d.Now, d.Logger, d.Metrics = obs.Defaults(d.Now, d.Logger, d.Metrics)
	if d.CallbackLease <= 0 {
		d.CallbackLease = DefaultCallbackLease
	}
	return &Handler{d: d}, nil
}

// Action says what processing an event did.
type Action string

const (
	// ActionDuplicate: a redelivery of the event whose delivery completed the saga's wait;
	// nothing was done.
	ActionDuplicate Action = "duplicate"
	// ActionIgnored: the event concerns nothing seatsaga tracks, or nothing changed.
	ActionIgnored Action = "ignored"
	// ActionStale: the reservation no longer waits for this payment; nothing changed.
	ActionStale Action = "stale"
	// ActionAuthorized / ActionDeclined / ActionCustomerCanceled: the saga was told
	// (SendTaskSuccess, SendTaskFailure with PaymentDeclined or with CustomerCanceled).
	ActionAuthorized       Action = "authorized"
	ActionDeclined         Action = "declined"
	ActionCustomerCanceled Action = "customer_canceled"
	// ActionAlreadyReported: an earlier delivery already completed the callback.
	ActionAlreadyReported Action = "already_reported"
	// ActionTaskClosed: the callback found the saga no longer waiting (timed out, canceled).
	ActionTaskClosed Action = "task_closed"
)

// Result is the outcome of one delivery.
type Result struct {
	EventID       string `json:"eventId"`
	EventType     string `json:"eventType"`
	ReservationID string `json:"reservationId,omitempty"`
	Action        Action `json:"action"`
}

// errRetryLater means the delivery should be repeated later (another delivery is sending the
// callback, or the reservation has not recorded its PaymentIntent yet); nothing is recorded.
var errRetryLater = errors.New("webhook: retry later")

// Handle serves API Gateway proxy events: 200 when processed (or a duplicate), 400 when the
// signature does not verify (nothing recorded), 409 when the event is ahead of the
// reservation (its PaymentIntent not recorded yet, or another delivery reporting it), and
// 503/500 when the system itself failed: 503 when the signature cannot be checked now because
// its secret is unreadable. Stripe redelivers any answer but a 2xx. An event that arrives early
// is normal in every sale, so it is answered 4xx: a 5xx would count in the API's 5XXError
// metric, whose alarm must mean that something is broken.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	payload := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return respond(http.StatusBadRequest, map[string]string{"code": "invalid_body", "message": "the body is not valid base64"}), nil
		}
		payload = b
	}
	if len(payload) > MaxPayloadBytes {
		return respond(http.StatusRequestEntityTooLarge, map[string]string{"code": "body_too_large", "message": "the body is too large"}), nil
	}
	sig := ""
	for k, v := range req.Headers {
		if strings.EqualFold(k, SignatureHeader) {
			sig = v
		}
	}
	res, err := h.Process(ctx, payload, sig)
	var (
		unverifiable *payment.WebhookUnverifiable
		rejected     *payment.WebhookRejected
	)
	switch {
	case errors.As(err, &unverifiable):
		// Stripe retries any answer but a 2xx, for days: the event comes back once the
		// secret can be read again.
		resp := respond(http.StatusServiceUnavailable, map[string]string{"code": "secret_unavailable", "message": "the webhook signature cannot be checked now; redeliver later"})
		resp.Headers["Retry-After"] = "30"
		return resp, nil
	case errors.As(err, &rejected):
		return respond(http.StatusBadRequest, map[string]string{"code": "invalid_signature", "message": "the webhook signature does not verify: " + string(rejected.Reason)}), nil
	case errors.Is(err, errRetryLater):
		resp := respond(http.StatusConflict, map[string]string{"code": "retry_later", "message": "the event is being processed; redeliver later"})
		resp.Headers["Retry-After"] = "5"
		return resp, nil
	case err != nil:
		return respond(http.StatusInternalServerError, map[string]string{"code": "internal", "message": "the event could not be processed; redeliver later"}), nil
	}
	return respond(http.StatusOK, res), nil
}

func respond(status int, body any) events.APIGatewayProxyResponse {
	b, _ := json.Marshal(body)
	return events.APIGatewayProxyResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}

// Metrics the alarms read.
const (
	// MetricWebhookRejected counts deliveries whose signature or body did not verify: a
	// forgery, or a signing secret that differs from Stripe's.
	MetricWebhookRejected = "WebhookRejected"
	// MetricWebhookUnverifiable counts deliveries that could not be checked because the
	// signing secret could not be read.
	MetricWebhookUnverifiable = "WebhookUnverifiable"
)

// Process handles one delivery. The error is a *payment.WebhookRejected for a bad signature,
// a *payment.WebhookUnverifiable when the signature could not be checked, errRetryLater, or
// another failure worth a redelivery.
func (h *Handler) Process(ctx context.Context, payload []byte, signatureHeader string) (Result, error) {
	ev, err := h.d.Verifier.VerifyWebhook(ctx, payload, signatureHeader)
	var unverifiable *payment.WebhookUnverifiable
	if errors.As(err, &unverifiable) {
		// Not a forgery: the secret could not be read, so nothing is known about the sender.
		h.d.Metrics.Count(MetricWebhookUnverifiable, 1)
		h.d.Logger.ErrorContext(ctx, "webhook: signing secret unavailable; asking for a redelivery", "error", err.Error())
		return Result{}, err
	}
	if err != nil {
		h.d.Metrics.Count(MetricWebhookRejected, 1)
		h.d.Logger.WarnContext(ctx, "webhook: rejected", "error", err.Error())
		var rejected *payment.WebhookRejected
		if !errors.As(err, &rejected) {
			err = &payment.WebhookRejected{Reason: payment.WebhookMalformedBody, Err: err}
		}
		return Result{}, err
	}
	log := h.d.Logger.With("stripeEventId", ev.ID, "eventType", ev.Type, "paymentIntentId", ev.PaymentIntentID)
	if ev.APIVersionMismatch {
		// Accepted all the same: the handler reads only fields every API version shares, and
		// the PaymentIntent it retrieves is the truth. The endpoint's version wants aligning.
		h.d.Metrics.Count("WebhookAPIVersionMismatch", 1)
		log.InfoContext(ctx, "webhook: event rendered for another API version", "apiVersion", ev.APIVersion)
	}
	res, err := h.apply(ctx, ev, Result{EventID: ev.ID, EventType: ev.Type})
	log = log.With("reservationId", res.ReservationID)
	if err != nil {
		if errors.Is(err, errRetryLater) {
			log.InfoContext(ctx, "webhook: deferred", "reason", err.Error())
		} else {
			log.ErrorContext(ctx, "webhook: processing failed", "error", err.Error())
		}
		return res, err
	}
	h.count(res.Action)
	log.InfoContext(ctx, "webhook: processed", "action", string(res.Action))
	return res, nil
}

func (h *Handler) count(a Action) {
	h.d.Metrics.Count("WebhookEvents", 1, metrics.Dim{Name: "action", Value: string(a)})
}

// maxRounds bounds the read-decide-write loop against concurrent writers.
const maxRounds = 5

// eventCreated is the event of a new PaymentIntent: the authorize step's own act, after which
// every state the intent reaches comes with an event of its own. It is never a reason to act,
// and the deployed endpoint is not subscribed to it (infra/README.md); the provider may still
// send it, as the local simulator does.
const eventCreated = "payment_intent.created"

func (h *Handler) apply(ctx context.Context, ev payment.Event, res Result) (Result, error) {
	res.Action = ActionIgnored
	if ev.PaymentIntentID == "" || ev.Type == eventCreated {
		return res, nil
	}
	auth, err := h.d.Payments.Retrieve(ctx, ev.PaymentIntentID)
	var failed *payment.Failed
	if errors.As(err, &failed) && failed.NotFound() {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("retrieve %s: %w", ev.PaymentIntentID, err)
	}
	// The PaymentIntent's metadata is the truth; the event's copy is a fallback.
	res.ReservationID = auth.ReservationID
	if res.ReservationID == "" {
		res.ReservationID = ev.ReservationID
	}
	if res.ReservationID == "" {
		return res, nil
	}
	if auth.State == payment.StatePaid {
		// Captured money is never the webhook's to report: the saga captures after its wait
		// ended, so no saga waits on it. Only money captured outside the system while a saga
		// waits could be: reservation.Decide then records the capture and leaves the seats to
		// the saga's own reacquire, reporting nothing, and the saga's reconciliation records
		// it when the wait ends (a customer's cancel the api has already reported itself).
		res.Action = ActionStale
		return res, nil
	}
	var (
		// written is the reservation as this delivery's transition left it: the next round
		// decides on it rather than reading it back, since the transition's own input
		// determined it; the callback it may lead to is claimed, not assumed.
		written *reservation.Reservation
		// claimed is the callback this delivery claimed with its transition, if any.
		claimed string
	)
	for round := 0; round < maxRounds; round++ {
		var r reservation.Reservation
		if written != nil {
			r, written = *written, nil
		} else {
			r, err = h.d.Store.Get(ctx, res.ReservationID)
			var nf *reservation.NotFound
			if errors.As(err, &nf) {
				return res, nil
			}
			if err != nil {
				return res, fmt.Errorf("read reservation: %w", err)
			}
		}
		if r.PaymentIntentID == "" && (r.Payment == reservation.NotStarted) && r.HoldActive() {
			// The authorize step created the PaymentIntent but has not recorded it (and the
			// task token) yet: this event must come back once it has.
			return res, fmt.Errorf("%w: reservation %s has not recorded its PaymentIntent yet", errRetryLater, r.ID)
		}
		if r.PaymentIntentID != auth.PaymentIntentID {
			res.Action = ActionStale
			return res, nil
		}
		now := h.d.Now()
		truth := saga.TruthOf(r, auth, nil)
		d := decide(r, truth, now)
		h.d.Logger.DebugContext(ctx, "webhook: decided", "reservationId", r.ID, "inventory", string(r.Inventory),
			"payment", string(r.Payment), "truth", string(truth), "settlement", string(d.settlement.Action), "kind", d.kind.String())
		switch d.kind {
		case decideNothing:
			return res, nil
		case decideStale:
			res.Action = ActionStale
			return res, nil
		case decideRecord:
			u := reservation.PaymentUpdate{
				ReservationID: r.ID, Guard: reservation.GuardOf(r),
				Event: d.event, From: r.Payment,
				CaptureBefore: auth.CaptureBefore, Reason: "webhook: " + string(d.event),
				NotifyCustomer: d.event.NotifiesCustomer(),
			}
			next, key, err := h.record(ctx, ev, u, truth, now)
			if isRace(err) {
				continue // Another writer moved it: read again and decide anew.
			}
			if err != nil {
				return res, fmt.Errorf("record %s: %w", d.event, err)
			}
			h.d.Metrics.Count("WebhookTransitions", 1, metrics.Dim{Name: "event", Value: string(d.event)})
			written, claimed = &next, key
			continue // The next round decides on the new version.
		case decideCallback:
			return h.callback(ctx, ev, r, auth, d, res, claimed)
		}
	}
	return res, fmt.Errorf("reservation %s kept changing under the webhook", res.ReservationID)
}

// recordingStore is a Store that can make a conditional write on another table in the
// transaction of a payment update, decided on the reservation the update writes
// (*inventory.Store).
type recordingStore interface {
	UpdatePaymentWith(ctx context.Context, u reservation.PaymentUpdate,
		with func(next reservation.Reservation) (types.TransactWriteItem, bool)) (reservation.Reservation, error)
}

// claimWriter is a DedupeStore whose callback claim can be such a write (*DynamoDedupe).
type claimWriter interface {
	CallbackClaimItem(key, eventID string, lease time.Duration) types.TransactWriteItem
}

// refusedAlongside is how the store reports that the write made alongside a payment update
// refused its condition, nothing written (*inventory.CompanionRefused).
type refusedAlongside interface {
	error
	RefusedItem() map[string]types.AttributeValue
}

// record performs u. When the store and the claims allow it, and the decision on the
// reservation the update writes reports to the saga, the callback is claimed in the same
// transaction, whose key it returns: one conditional write then decides both that the
// payment moved and who reports it. A claim refused (another delivery reports to this token,
// or has) leaves the update to be made alone, and the callback to be claimed as any other. A
// claim whose callback the next round does not make after all (the hold lapsed in between)
// keeps nobody out for longer than its lease, and no delivery reports to a lapsed hold.
func (h *Handler) record(ctx context.Context, ev payment.Event, u reservation.PaymentUpdate, truth reservation.Truth,
	now time.Time) (reservation.Reservation, string, error) {
	rs, ok := h.d.Store.(recordingStore)
	cw, ok2 := h.d.Dedupe.(claimWriter)
	if ok && ok2 {
		var key string
		written, err := rs.UpdatePaymentWith(ctx, u, func(next reservation.Reservation) (types.TransactWriteItem, bool) {
			key = ""
			if decide(next, truth, now).kind != decideCallback {
				return types.TransactWriteItem{}, false
			}
			key = callbackKey(next)
			return cw.CallbackClaimItem(key, ev.ID, h.d.CallbackLease), true
		})
		var refused refusedAlongside
		if !errors.As(err, &refused) {
			return written, key, err
		}
	}
	written, err := h.d.Store.UpdatePayment(ctx, u)
	return written, "", err
}

// callbackKey names the callback to r's task token.
func callbackKey(r reservation.Reservation) string { return r.ID + "#" + tokenHash(r.TaskToken) }

type decisionKind int

const (
	// decideNothing: nothing to do now (the buyer or the provider is still at work, or the
	// next step is the saga's own).
	decideNothing decisionKind = iota
	// decideStale: the saga does not wait; its reconcile step and the sweeper own the
	// reservation.
	decideStale
	// decideRecord: record payment event event, seats left alone, then decide again.
	decideRecord
	// decideCallback: complete the wait (success, or failure errorName).
	decideCallback
)

func (k decisionKind) String() string {
	switch k {
	case decideStale:
		return "stale"
	case decideRecord:
		return "record"
	case decideCallback:
		return "callback"
	}
	return "nothing"
}

type decision struct {
	kind  decisionKind
	event reservation.PaymentEvent
	// success: SendTaskSuccess; otherwise SendTaskFailure with errorName.
	success   bool
	errorName string
	// settlement is the domain's decision this one maps.
	settlement reservation.Decision
}

// decide maps the settlement decision about r, given the provider's truth at now, onto what a
// webhook may do. It is pure. A webhook acts only while the saga waits for the payment
// (PAYMENT_PENDING, a task token recorded, the hold live: the wait's timeout is the hold's
// time left), and then only by recording the provider's truth and completing the wait:
//
//	settlement decision                 webhook
//	record Authorized                   record it, decide again
//	confirm                             SendTaskSuccess
//	record another event (Void, …)      record it without the seats' release, decide again
//	void, release, refund (unwind)      SendTaskFailure: CustomerCanceled when the customer
//	                                    cancelled, else PaymentDeclined
//	wait                                nothing
//	reacquire, capture, escalate, done  nothing: the saga's own steps own them
//
// and when the saga does not wait, stale: nothing changes. The void, refund and release an
// unwind calls for are compensation's, which the failure starts; the release is left out of a
// record for the same reason, and because released seats would end the wait before the
// failure closes it. A cancelled reservation is never reported authorized: when the provider
// authorized it, the authorization is recorded (the record tells the truth; the cancel keeps
// Confirm and capture away) and the wait fails with CustomerCanceled.
func decide(r reservation.Reservation, truth reservation.Truth, now time.Time) decision {
	if r.Inventory != reservation.PaymentPending || r.TaskToken == "" || !r.HoldLive(now) {
		return decision{kind: decideStale}
	}
	if truth == reservation.TruthNotAsked || truth == reservation.TruthUnavailable {
		// The provider's answer did not say: only the saga's reconciliation records unknowns.
		return decision{kind: decideNothing}
	}
	// The late-success policy only matters once the hold lapsed, which is not the case here.
	s := reservation.Decide(reservation.FactsOf(r, truth, reservation.LateSuccessReacquire, now))
	d := decision{kind: decideNothing, settlement: s}
	switch s.Action {
	case reservation.ActRecord:
		d.kind, d.event = decideRecord, s.Event
	case reservation.ActConfirm:
		d.kind, d.success = decideCallback, true
	case reservation.ActVoid, reservation.ActRelease, reservation.ActRefund:
		if _, ok := reservation.NextPayment(r.Payment, reservation.AuthorizationOK); ok && r.CustomerCanceled && truth == reservation.TruthAuthorized {
			d.kind, d.event = decideRecord, reservation.AuthorizationOK
			break
		}
		d.kind, d.errorName = decideCallback, saga.ErrPaymentDeclined
		if r.CustomerCanceled {
			d.errorName = saga.ErrCustomerCanceled
		}
	}
	return d
}

// callback completes the saga's waiting task once per task token. claimed is the callback this
// delivery already claimed (with its transition), if any.
func (h *Handler) callback(ctx context.Context, ev payment.Event, r reservation.Reservation, auth payment.Authorization, d decision, res Result, claimed string) (Result, error) {
	key := callbackKey(r)
	if key != claimed {
		claim, err := h.d.Dedupe.ClaimCallback(ctx, key, ev.ID, h.d.CallbackLease)
		if err != nil {
			return res, err
		}
		switch claim {
		case SentByThisEvent:
			res.Action = ActionDuplicate
			return res, nil
		case AlreadySent:
			res.Action = ActionAlreadyReported
			return res, nil
		case InProgress:
			return res, fmt.Errorf("%w: another delivery is reporting reservation %s", errRetryLater, r.ID)
		}
	}
	var err error
	sent := ActionDeclined
	if d.errorName == saga.ErrCustomerCanceled {
		sent = ActionCustomerCanceled
	}
	if d.success {
		out, _ := json.Marshal(saga.PaymentOutcome{PaymentIntentID: auth.PaymentIntentID, State: string(r.Payment), Version: r.Version})
		_, err = h.d.SFN.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(r.TaskToken), Output: aws.String(string(out))})
		sent = ActionAuthorized
	} else {
		cause := fmt.Sprintf("payment %s of reservation %s: %s", auth.PaymentIntentID, r.ID, auth.ProviderStatus)
		if auth.LastDecline != nil && auth.LastDecline.Code != "" {
			cause += " (" + auth.LastDecline.Code + ")"
		}
		_, err = h.d.SFN.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(r.TaskToken),
			Error: aws.String(d.errorName), Cause: aws.String(cause)})
	}
	switch {
	case err == nil:
		res.Action = sent
	case taskGone(err):
		// The saga stopped waiting (timeout, cancel, an earlier callback): nothing to tell.
		h.d.Logger.InfoContext(ctx, "webhook: the saga no longer waits", "reservationId", r.ID, "error", err.Error())
		res.Action = ActionTaskClosed
	default:
		// The lease runs out and a redelivery sends it.
		return res, fmt.Errorf("report to the saga: %w", err)
	}
	h.d.Metrics.Count("WebhookCallbacks", 1, metrics.Dim{Name: "outcome", Value: string(res.Action)})
	if err := h.d.Dedupe.CompleteCallback(ctx, key, string(res.Action)); err != nil {
		return res, err
	}
	return res, nil
}

// tokenHash names a task token in the dedupe key without storing the token itself.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:12])
}

func taskGone(err error) bool {
	var (
		timedOut *sfntypes.TaskTimedOut
		missing  *sfntypes.TaskDoesNotExist
		invalid  *sfntypes.InvalidToken
	)
	return errors.As(err, &timedOut) || errors.As(err, &missing) || errors.As(err, &invalid)
}

func isRace(err error) bool {
	var (
		stale *reservation.StaleVersion
		state *reservation.UnexpectedState
	)
	return errors.As(err, &stale) || errors.As(err, &state)
}
