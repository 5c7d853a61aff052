package stripeadapter

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// WebhookOptions tunes a WebhookVerifier.
type WebhookOptions struct {
	// Tolerance is how old a signature's timestamp may be; 0 means Stripe's 5 minutes.
	Tolerance time.Duration
	// Now is the verifier's clock; nil means time.Now. Tests and the local stack pass the
	// same clock the simulator signs with.
	Now func() time.Time
	// IgnoreAPIVersionMismatch accepts events rendered for another Stripe API version than
	// stripe-go's (an endpoint pinned to an older version). The fields read here exist in
	// every recent version.
	IgnoreAPIVersionMismatch bool
}

// WebhookVerifier verifies Stripe-Signature headers with one endpoint secret.
type WebhookVerifier struct {
	secret string
	opts   WebhookOptions
}

var _ payment.WebhookVerifier = (*WebhookVerifier)(nil)

// NewWebhookVerifier returns a verifier for the endpoint secret (whsec_…).
func NewWebhookVerifier(secret string, opts WebhookOptions) *WebhookVerifier {
	if opts.Tolerance <= 0 {
		opts.Tolerance = webhook.DefaultTolerance
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &WebhookVerifier{secret: secret, opts: opts}
}

// VerifyWebhook checks the signature over the exact payload bytes and the timestamp against
// the tolerance, then decodes the event. Any failure is a *payment.WebhookRejected.
//
// stripe-go checks the timestamp against the wall clock; the verifier asks it to skip that
// check and applies the same rule with its own clock, so a simulated clock works end to end.
func (v *WebhookVerifier) VerifyWebhook(payload []byte, signatureHeader string) (payment.Event, error) {
	if v.secret == "" {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookBadSignature, Err: errors.New("no endpoint secret configured")}
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signatureHeader, v.secret, webhook.ConstructEventOptions{
		IgnoreTolerance:          true,
		IgnoreAPIVersionMismatch: true,
	})
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookNotSigned, Err: err}
	case errors.Is(err, webhook.ErrInvalidHeader):
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookInvalidHeader, Err: err}
	case errors.Is(err, webhook.ErrNoValidSignature):
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookBadSignature, Err: err}
	case err != nil:
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookMalformedBody, Err: err}
	}
	signedAt, err := signatureTimestamp(signatureHeader)
	if err != nil {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookInvalidHeader, Err: err}
	}
	if age := v.opts.Now().Sub(signedAt); age > v.opts.Tolerance {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookStaleTimestamp,
			Err: errors.New("signed " + age.Truncate(time.Second).String() + " ago, tolerance " + v.opts.Tolerance.String())}
	}
	if !v.opts.IgnoreAPIVersionMismatch && ev.APIVersion != stripe.APIVersion {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookAPIVersionMismatch,
			Err: errors.New("event API version " + ev.APIVersion + ", expected " + stripe.APIVersion)}
	}
	return toEvent(ev)
}

// signatureTimestamp reads t= from a header stripe-go already accepted.
func signatureTimestamp(header string) (time.Time, error) {
	for _, part := range strings.Split(header, ",") {
		if rest, ok := strings.CutPrefix(part, "t="); ok {
			sec, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				return time.Time{}, err
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("no timestamp in Stripe-Signature header")
}

// toEvent extracts what the saga needs from an event. The object's own fields are only a
// hint; handlers retrieve the PaymentIntent.
func toEvent(ev stripe.Event) (payment.Event, error) {
	if ev.ID == "" || ev.Type == "" || ev.Data == nil {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookMalformedBody,
			Err: errors.New("event lacks id, type or data")}
	}
	out := payment.Event{
		ID:         ev.ID,
		Type:       string(ev.Type),
		Created:    time.Unix(ev.Created, 0).UTC(),
		LiveMode:   ev.Livemode,
		APIVersion: ev.APIVersion,
	}
	var head struct {
		Object string `json:"object"`
	}
	if err := json.Unmarshal(ev.Data.Raw, &head); err != nil {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookMalformedBody, Err: err}
	}
	var err error
	switch head.Object {
	case "payment_intent":
		var pi stripe.PaymentIntent
		if err = json.Unmarshal(ev.Data.Raw, &pi); err == nil {
			out.PaymentIntentID = pi.ID
			out.ReservationID = pi.Metadata[MetadataReservationID]
			out.ProviderStatus = string(pi.Status)
			out.State = MapStatus(&pi)
		}
	case "charge":
		var ch stripe.Charge
		if err = json.Unmarshal(ev.Data.Raw, &ch); err == nil {
			if ch.PaymentIntent != nil {
				out.PaymentIntentID = ch.PaymentIntent.ID
			}
			out.ReservationID = ch.Metadata[MetadataReservationID]
			out.ProviderStatus = string(ch.Status)
			if ch.Refunded {
				out.State = payment.StateRefunded
			}
		}
	case "refund":
		var r stripe.Refund
		if err = json.Unmarshal(ev.Data.Raw, &r); err == nil {
			if r.PaymentIntent != nil {
				out.PaymentIntentID = r.PaymentIntent.ID
			}
			out.ReservationID = r.Metadata[MetadataReservationID]
			out.ProviderStatus = string(r.Status)
		}
	}
	if err != nil {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookMalformedBody, Err: err}
	}
	return out, nil
}
