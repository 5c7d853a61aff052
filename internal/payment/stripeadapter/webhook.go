package stripeadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/secrets"
)

// WebhookOptions tunes a WebhookVerifier.
type WebhookOptions struct {
	// Tolerance is how old a signature's timestamp may be; 0 means Stripe's 5 minutes.
	Tolerance time.Duration
	// Now is the verifier's clock; nil means time.Now. Tests and the local stack pass the
	// same clock the simulator signs with.
	Now func() time.Time
}

// WebhookVerifier verifies Stripe-Signature headers with the endpoint secret its source
// yields.
type WebhookVerifier struct {
	secret secrets.Source
	opts   WebhookOptions
}

var _ payment.WebhookVerifier = (*WebhookVerifier)(nil)

// NewWebhookVerifier returns a verifier for the fixed endpoint secret (whsec_…).
func NewWebhookVerifier(secret string, opts WebhookOptions) *WebhookVerifier {
	return NewWebhookVerifierFromSource(secrets.Static(secret), opts)
}

// NewWebhookVerifierFromSource returns a verifier that reads the endpoint secret from src on
// every event (a secrets.Cache makes that cheap), so a rolled secret is picked up on the
// first event signed with it rather than at the next cold start. A nil src rejects every
// event, like an empty secret.
func NewWebhookVerifierFromSource(src secrets.Source, opts WebhookOptions) *WebhookVerifier {
	if src == nil {
		src = secrets.Static("")
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = webhook.DefaultTolerance
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &WebhookVerifier{secret: src, opts: opts}
}

// VerifyWebhook checks the signature over the exact payload bytes and the timestamp against
// the tolerance, then decodes the event. A webhook that fails is a *payment.WebhookRejected;
// when the secret cannot be read, the signature is not checked and the error is a
// *payment.WebhookUnverifiable, so that the handler asks for a redelivery instead of calling
// a genuine event forged. ctx bounds reading the secret.
//
// A signature that does not verify with the current secret may be signed with a newer one:
// the verifier invalidates its source and, if that yields another secret, checks once more.
// The source rate-limits the refetch, so a flood of forged signatures cannot turn into a
// flood of Secrets Manager calls. If the refetch fails, the verifier cannot tell a forged
// signature from one made with a rolled secret, and the webhook is unverifiable.
//
// stripe-go checks the timestamp against the wall clock; the verifier asks it for the
// signature only and applies the same timestamp rule with its own clock, so a simulated clock
// works end to end.
//
// Events of every API version are accepted once the signature verifies: an endpoint's
// version can differ from the one stripe-go pins (an older endpoint, or one upgraded before
// the SDK), and refusing those events would stall every payment. The verifier therefore
// does not decode the event into stripe-go's structs, whose shapes belong to the pinned
// version, but reads only the fields every version shares (id, type, created, livemode,
// api_version, and the object's id, object, status, metadata, payment_intent,
// last_payment_error and refunded) and reports the mismatch in Event.APIVersionMismatch.
func (v *WebhookVerifier) VerifyWebhook(ctx context.Context, payload []byte, signatureHeader string) (payment.Event, error) {
	secret, err := v.secret.Get(ctx)
	switch {
	case err != nil:
		return payment.Event{}, &payment.WebhookUnverifiable{Err: fmt.Errorf("read the endpoint secret: %w", err)}
	case secret == "":
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookBadSignature, Err: errors.New("no endpoint secret configured")}
	}
	err = webhook.ValidatePayloadIgnoringTolerance(payload, signatureHeader, secret)
	if errors.Is(err, webhook.ErrNoValidSignature) {
		v.secret.Invalidate()
		fresh, ferr := v.secret.Get(ctx)
		switch {
		case ferr != nil:
			return payment.Event{}, &payment.WebhookUnverifiable{Err: fmt.Errorf("reread the endpoint secret after a signature failed: %w", ferr)}
		case fresh != "" && fresh != secret:
			err = webhook.ValidatePayloadIgnoringTolerance(payload, signatureHeader, fresh)
		}
	}
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookNotSigned, Err: err}
	case errors.Is(err, webhook.ErrInvalidHeader):
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookInvalidHeader, Err: err}
	case errors.Is(err, webhook.ErrNoValidSignature):
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookBadSignature, Err: err}
	case err != nil:
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookBadSignature, Err: err}
	}
	signedAt, err := signatureTimestamp(signatureHeader)
	if err != nil {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookInvalidHeader, Err: err}
	}
	if age := v.opts.Now().Sub(signedAt); age > v.opts.Tolerance {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookStaleTimestamp,
			Err: errors.New("signed " + age.Truncate(time.Second).String() + " ago, tolerance " + v.opts.Tolerance.String())}
	}
	return decodeEvent(payload)
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

// wireEvent is the part of an event envelope that every API version shares.
type wireEvent struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Created    int64  `json:"created"`
	Livemode   bool   `json:"livemode"`
	APIVersion string `json:"api_version"`
	Data       *struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// wireObject is the part of a PaymentIntent, charge or refund that the saga reads.
type wireObject struct {
	ID       string            `json:"id"`
	Object   string            `json:"object"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
	// PaymentIntent (charge, refund) is an id, an expanded object or null.
	PaymentIntent json.RawMessage `json:"payment_intent"`
	// LastPaymentError (PaymentIntent) and Refunded (charge) feed the state mapping.
	LastPaymentError json.RawMessage `json:"last_payment_error"`
	Refunded         bool            `json:"refunded"`
}

// decodeEvent extracts what the saga needs from a verified event. The object's own fields
// are only a hint; handlers retrieve the PaymentIntent (or the refund).
func decodeEvent(payload []byte) (payment.Event, error) {
	malformed := func(err error) (payment.Event, error) {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookMalformedBody, Err: err}
	}
	var ev wireEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return malformed(err)
	}
	if ev.ID == "" || ev.Type == "" || ev.Data == nil || isNull(ev.Data.Object) {
		return malformed(errors.New("event lacks id, type or data.object"))
	}
	var obj wireObject
	if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
		return malformed(err)
	}
	out := payment.Event{
		ID:       ev.ID,
		Type:     ev.Type,
		Created:  time.Unix(ev.Created, 0).UTC(),
		LiveMode: ev.Livemode,
		// An event without a version is treated as a mismatch: nothing says it was
		// rendered for the pinned version.
		APIVersion:         ev.APIVersion,
		APIVersionMismatch: ev.APIVersion != stripe.APIVersion,
		ReservationID:      obj.Metadata[MetadataReservationID],
		ProviderStatus:     obj.Status,
	}
	switch obj.Object {
	case "payment_intent":
		out.PaymentIntentID = obj.ID
		pi := stripe.PaymentIntent{Status: stripe.PaymentIntentStatus(obj.Status)}
		if !isNull(obj.LastPaymentError) {
			pi.LastPaymentError = &stripe.Error{}
		}
		out.State = MapStatus(&pi)
	case "charge", "refund":
		id, err := referencedID(obj.PaymentIntent)
		if err != nil {
			return malformed(err)
		}
		out.PaymentIntentID = id
		if obj.Object == "refund" {
			out.RefundID = obj.ID
		} else if obj.Refunded {
			out.State = payment.StateRefunded
		}
	}
	return out, nil
}

// referencedID reads a reference that Stripe renders as an id, an expanded object or null.
func referencedID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var id string
		err := json.Unmarshal(raw, &id)
		return id, err
	}
	var expanded struct {
		ID string `json:"id"`
	}
	err := json.Unmarshal(raw, &expanded)
	return expanded.ID, err
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}
