package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/secrets"
)

// ctxVerifier records the context it was asked to verify under.
type ctxVerifier struct {
	fakeVerifier
	got context.Context
}

func (v *ctxVerifier) VerifyWebhook(ctx context.Context, payload []byte, sig string) (payment.Event, error) {
	v.got = ctx
	return v.fakeVerifier.VerifyWebhook(ctx, payload, sig)
}

type ctxKey struct{}

// TestVerifierGetsTheRequestContext: a verifier that reads its secret while verifying does so
// under the delivery's context (its deadline), not a background one.
func TestVerifierGetsTheRequestContext(t *testing.T) {
	r := newRig(t)
	v := &ctxVerifier{}
	r.h.d.Verifier = v
	ctx := context.WithValue(context.Background(), ctxKey{}, "delivery")
	_, err := r.h.Process(ctx, []byte(`{}`), "forged")
	var rejected *payment.WebhookRejected
	if !errors.As(err, &rejected) {
		t.Fatalf("err = %v, want a rejection", err)
	}
	if v.got == nil || v.got.Value(ctxKey{}) != "delivery" {
		t.Fatal("the verifier did not get the delivery's context")
	}
}

// TestAnUnreadableSigningSecretAsksForARedeliveryNotAForgery: with the Stripe adapter's
// verifier over a secret store that fails, a genuine event cannot be checked. The handler
// answers 503, so that Stripe delivers it again, and counts and logs it apart from forged
// ones, so that an outage does not page as an attack; the control, a forged event, is still a
// 400 rejection.
func TestAnUnreadableSigningSecretAsksForARedeliveryNotAForgery(t *testing.T) {
	const endpointSecret = "whsec_test_seatsaga"
	payload, _ := json.Marshal(map[string]any{"id": "evt_1", "type": "payment_intent.amount_capturable_updated",
		"data": map[string]any{"object": map[string]any{"id": "pi_1", "object": "payment_intent", "status": "requires_capture"}}})
	deliver := func(r *rig, secret string) events.APIGatewayProxyResponse {
		t.Helper()
		resp, err := r.h.Handle(context.Background(), events.APIGatewayProxyRequest{
			HTTPMethod: "POST", Path: "/webhooks/stripe", Body: string(payload),
			Headers: map[string]string{SignatureHeader: stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{
				Payload: payload, Secret: secret, Timestamp: r.clock.Now()}).Header},
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	withVerifier := func(src secrets.Source) (*rig, *bytes.Buffer) {
		r := newRig(t)
		var log bytes.Buffer
		r.h.d.Logger = slog.New(slog.NewJSONHandler(&log, nil))
		r.h.d.Verifier = stripeadapter.NewWebhookVerifierFromSource(src, stripeadapter.WebhookOptions{Now: r.clock.Now})
		return r, &log
	}

	unavailable := secrets.New(func(context.Context) (string, error) { return "", errors.New("secrets manager: throttled") },
		secrets.Options{Name: "webhook secret", Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
	r, log := withVerifier(unavailable)
	resp := deliver(r, endpointSecret)
	var body struct{ Code string }
	_ = json.Unmarshal([]byte(resp.Body), &body)
	if resp.StatusCode != http.StatusServiceUnavailable || body.Code != "secret_unavailable" {
		t.Fatalf("unreadable secret: %d %s, want 503 secret_unavailable", resp.StatusCode, resp.Body)
	}
	if got, rejected := r.metrics.Total("WebhookUnverifiable"), r.metrics.Total("WebhookRejected"); got != 1 || rejected != 0 {
		t.Fatalf("WebhookUnverifiable = %d, WebhookRejected = %d; want 1 and 0", got, rejected)
	}
	if line := log.String(); !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "signing secret unavailable") ||
		strings.Contains(line, "webhook: rejected") {
		t.Fatalf("log %s, want an error naming the unavailable secret and no rejection", line)
	}
	if len(r.dedupe.callbacks) != 0 || len(r.updates()) != 0 || len(r.sfn.Successes())+len(r.sfn.Failures()) != 0 {
		t.Fatal("an event whose signature was not checked changed something")
	}

	r, _ = withVerifier(secrets.Static(endpointSecret))
	if resp := deliver(r, "whsec_forged"); resp.StatusCode != http.StatusBadRequest || r.metrics.Total("WebhookRejected") != 1 ||
		r.metrics.Total("WebhookUnverifiable") != 0 {
		t.Fatalf("forged: %d %s, metrics %v; want a 400 rejection", resp.StatusCode, resp.Body, r.metrics.Snapshot())
	}
}
