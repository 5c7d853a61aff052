package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
)

const fuzzSecret = "whsec_fuzz"

// sign renders a Stripe-Signature header for payload signed at t with secret, computed here
// rather than by the library under test.
func sign(payload []byte, t time.Time, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(t.Unix(), 10) + "." + string(payload)))
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// signedBy reports whether header carries, for its t=, a v1 signature of payload with secret:
// the one thing that may make the verifier accept it.
func signedBy(header string, payload []byte, secret string) (time.Time, bool) {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(payload)))
	want := hex.EncodeToString(mac.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return time.Unix(sec, 0), true
		}
	}
	return time.Time{}, false
}

// FuzzVerifyWebhook drives the Stripe signature verifier with arbitrary payloads and headers,
// signed here or not, fresh or stale. Whatever the input: it never panics, refuses only with a
// *payment.WebhookRejected, accepts only a payload whose header carries a valid v1 signature of
// it within the tolerance, and never refuses a freshly and correctly signed payload for its
// signature; an accepted event has an id and a type, and the verdict is the same twice.
func FuzzVerifyWebhook(f *testing.F) {
	pi := []byte(`{"id":"evt_1","type":"payment_intent.amount_capturable_updated","created":1,"api_version":"2023-10-16",` +
		`"data":{"object":{"id":"pi_1","object":"payment_intent","status":"requires_capture","metadata":{"reservationId":"r1"}}}}`)
	f.Add(pi, "", true, int32(0))
	f.Add(pi, "", true, int32(301))
	f.Add(pi, "t=1,v1=00", false, int32(0))
	f.Add([]byte(`{"id":"evt_2","type":"charge.refunded","data":{"object":{"id":"ch_1","object":"charge","refunded":true,"payment_intent":{"id":"pi_1"}}}}`), ",v1=x", true, int32(-30))
	f.Add([]byte(`{"id":"","type":"x","data":{"object":null}}`), "", true, int32(10))
	f.Add([]byte(`not json`), "", true, int32(0))
	f.Add([]byte{}, "t=,v1=", false, int32(0))

	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tolerance := 5 * time.Minute
	v := stripeadapter.NewWebhookVerifier(fuzzSecret, stripeadapter.WebhookOptions{Now: func() time.Time { return now }, Tolerance: tolerance})
	f.Fuzz(func(t *testing.T, payload []byte, header string, signHere bool, ageSeconds int32) {
		signedAt := now.Add(-time.Duration(ageSeconds) * time.Second)
		if signHere {
			// The fuzzed header rides along as extra key=value parts, but it may not restate
			// t=: the signature is of this timestamp. (A part that is not key=value makes
			// the whole header invalid, which the unsigned inputs explore.)
			extra := []string{sign(payload, signedAt, fuzzSecret)}
			for _, part := range strings.Split(header, ",") {
				if strings.Count(part, "=") == 1 && !strings.HasPrefix(part, "t=") {
					extra = append(extra, part)
				}
			}
			header = strings.Join(extra, ",")
		}
		ev, err := v.VerifyWebhook(context.Background(), payload, header)
		again, err2 := v.VerifyWebhook(context.Background(), payload, header)
		if (err == nil) != (err2 == nil) || ev != again {
			t.Fatalf("two verdicts: %v / %v", err, err2)
		}
		if err != nil {
			var rejected *payment.WebhookRejected
			if !errors.As(err, &rejected) || rejected.Reason == "" {
				t.Fatalf("refused with %T %v, want a *payment.WebhookRejected with a reason", err, err)
			}
			if signHere && ageSeconds >= 0 && time.Duration(ageSeconds)*time.Second <= tolerance && rejected.Reason != payment.WebhookMalformedBody {
				t.Fatalf("a fresh, correctly signed payload refused for %s: %v", rejected.Reason, err)
			}
			if signHere && time.Duration(ageSeconds)*time.Second > tolerance && rejected.Reason != payment.WebhookStaleTimestamp {
				t.Fatalf("a stale signature refused for %s, want %s", rejected.Reason, payment.WebhookStaleTimestamp)
			}
			return
		}
		at, ok := signedBy(header, payload, fuzzSecret)
		if !ok {
			t.Fatalf("accepted header %q without a valid signature of the payload", header)
		}
		if now.Sub(at) > tolerance {
			t.Fatalf("accepted a signature %s old", now.Sub(at))
		}
		if ev.ID == "" || ev.Type == "" || !json.Valid(payload) {
			t.Fatalf("accepted event %+v from %q", ev, payload)
		}
	})
}

// FuzzHandleWebhook sends the handler deliveries built from arbitrary fields, signed with the
// endpoint secret or not, in plain text or base64, through the real verifier. Whatever the
// fields: every answer is JSON with a known status, every refusal has a code and a message, an
// unsigned delivery changes nothing, a signed one is never refused for its signature, and
// delivering the same event again sends no second callback and writes nothing new.
func FuzzHandleWebhook(f *testing.F) {
	f.Add("evt_1", "payment_intent.amount_capturable_updated", "payment_intent", "requires_capture", "pi_1", "r1", true, false)
	f.Add("evt_2", "payment_intent.payment_failed", "payment_intent", "requires_payment_method", "pi_1", "r1", true, true)
	f.Add("evt_3", "charge.refunded", "charge", "succeeded", "pi_1", "r1", true, false)
	f.Add("evt_4", "payment_intent.succeeded", "payment_intent", "succeeded", "pi_unknown", "", true, false)
	f.Add("evt_5", "payment_intent.canceled", "payment_intent", "canceled", "pi_1", "r1", false, false)
	f.Add("", "", "", "", "", "", true, false)

	f.Fuzz(func(t *testing.T, id, typ, object, status, pi, res string, signed, asBase64 bool) {
		r := newRig(t)
		r.h.d.Verifier = stripeadapter.NewWebhookVerifier(fuzzSecret, stripeadapter.WebhookOptions{Now: r.clock.Now})
		payload, _ := json.Marshal(map[string]any{"id": id, "type": typ, "created": r.clock.Now().Unix(),
			"data": map[string]any{"object": map[string]any{"id": pi, "object": object, "status": status,
				"payment_intent": pi, "metadata": map[string]string{"reservationId": res}}}})
		header := "t=1,v1=" + strings.Repeat("0", 64)
		if signed {
			header = sign(payload, r.clock.Now(), fuzzSecret)
		}
		req := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/webhooks/stripe", Body: string(payload),
			Headers: map[string]string{SignatureHeader: header}}
		if asBase64 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(payload), true
		}
		deliver := func() (events.APIGatewayProxyResponse, struct{ Code, Message string }) {
			resp, err := r.h.Handle(context.Background(), req)
			if err != nil {
				t.Fatalf("Handle returned an error: %v", err)
			}
			var body struct{ Code, Message string }
			if resp.Headers["Content-Type"] != "application/json" || json.Unmarshal([]byte(resp.Body), &body) != nil {
				t.Fatalf("answer %d %q is not JSON", resp.StatusCode, resp.Body)
			}
			switch resp.StatusCode {
			case 200:
			case 400, 409, 500:
				if body.Code == "" || body.Message == "" {
					t.Fatalf("refusal %d %q without a code and a message", resp.StatusCode, resp.Body)
				}
			default:
				t.Fatalf("status %d %q", resp.StatusCode, resp.Body)
			}
			return resp, body
		}
		resp, body := deliver()
		callbacks := len(r.sfn.Successes()) + len(r.sfn.Failures())
		writes := len(r.updates())
		if !signed {
			if resp.StatusCode != 400 || body.Code != "invalid_signature" {
				t.Fatalf("unsigned delivery answered %d %s", resp.StatusCode, resp.Body)
			}
			if callbacks != 0 || writes != 0 || len(r.dedupe.callbacks) != 0 {
				t.Fatal("an unsigned delivery changed something")
			}
			return
		}
		if body.Code == "invalid_signature" && !strings.Contains(body.Message, string(payment.WebhookMalformedBody)) {
			t.Fatalf("a signed delivery refused for its signature: %s", resp.Body)
		}
		if resp.StatusCode != 200 {
			return
		}
		resp2, _ := deliver()
		if resp2.StatusCode != 200 {
			t.Fatalf("the same event again answered %d %s", resp2.StatusCode, resp2.Body)
		}
		if n := len(r.sfn.Successes()) + len(r.sfn.Failures()); n != callbacks {
			t.Fatalf("the same event again sent %d callbacks, want none more than %d", n, callbacks)
		}
		if n := len(r.updates()); n != writes {
			t.Fatalf("the same event again wrote %d changes, want none more than %d", n, writes)
		}
	})
}
