package stripeadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/secrets"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

const endpointSecret = "whsec_test_seatsaga"

var verifyAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return verifyAt }

func signed(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

// TestVerifyWebhookFixtures verifies real-shaped Stripe events from testdata/stripe, signed
// by stripe-go's test helper.
func TestVerifyWebhookFixtures(t *testing.T) {
	v := stripeadapter.NewWebhookVerifier(endpointSecret, stripeadapter.WebhookOptions{Now: fixedNow})
	const pi, res = "pi_3QfT7hLkdIwHu7ix0R4mZbXy", "res-2026-11-30-0001"
	tests := []struct {
		file       string
		wantType   string
		wantStatus string
		wantState  payment.State
	}{
		{"payment_intent.created.json", "payment_intent.created", "requires_payment_method", payment.StateAuthorizing},
		{"payment_intent.requires_action.json", "payment_intent.requires_action", "requires_action", payment.StateAuthorizing},
		{"payment_intent.amount_capturable_updated.json", "payment_intent.amount_capturable_updated", "requires_capture", payment.StateAuthorized},
		{"payment_intent.payment_failed.json", "payment_intent.payment_failed", "requires_payment_method", payment.StateFailed},
		{"payment_intent.succeeded.json", "payment_intent.succeeded", "succeeded", payment.StatePaid},
		{"payment_intent.canceled.json", "payment_intent.canceled", "canceled", payment.StateCanceled},
		{"charge.refunded.json", "charge.refunded", "succeeded", payment.StateRefunded},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			payload, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "stripe", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := v.VerifyWebhook(context.Background(), payload, signed(payload, endpointSecret, verifyAt.Add(-time.Minute)))
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if ev.Type != tc.wantType || ev.PaymentIntentID != pi || ev.ReservationID != res ||
				ev.ProviderStatus != tc.wantStatus || ev.State != tc.wantState || ev.ID == "" || ev.Created.IsZero() {
				t.Fatalf("event = %+v", ev)
			}
			if ev.APIVersion != "2023-10-16" || ev.APIVersionMismatch {
				t.Fatalf("API version %q, mismatch %v; want the pinned version, no mismatch", ev.APIVersion, ev.APIVersionMismatch)
			}
		})
	}
}

// TestVerifyWebhookRejects covers every way a webhook can be bad.
func TestVerifyWebhookRejects(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "stripe", "payment_intent.succeeded.json"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(string(payload[:len(payload)-3]) + " }\n")
	valid := signed(payload, endpointSecret, verifyAt)
	tests := []struct {
		name    string
		payload []byte
		header  string
		opts    stripeadapter.WebhookOptions
		want    payment.WebhookReason
	}{
		{"no signature header", payload, "", stripeadapter.WebhookOptions{}, payment.WebhookNotSigned},
		{"garbage header", payload, "garbage", stripeadapter.WebhookOptions{}, payment.WebhookInvalidHeader},
		{"header without v1", payload, "t=1796040000", stripeadapter.WebhookOptions{}, payment.WebhookBadSignature},
		{"tampered body", tampered, valid, stripeadapter.WebhookOptions{}, payment.WebhookBadSignature},
		{"wrong secret", payload, signed(payload, "whsec_someone_else", verifyAt), stripeadapter.WebhookOptions{}, payment.WebhookBadSignature},
		{"stale timestamp", payload, signed(payload, endpointSecret, verifyAt.Add(-6*time.Minute)), stripeadapter.WebhookOptions{}, payment.WebhookStaleTimestamp},
		{"stale under a tighter tolerance", payload, signed(payload, endpointSecret, verifyAt.Add(-2*time.Minute)),
			stripeadapter.WebhookOptions{Tolerance: time.Minute}, payment.WebhookStaleTimestamp},
		{"malformed body", []byte("{not json"), signed([]byte("{not json"), endpointSecret, verifyAt), stripeadapter.WebhookOptions{}, payment.WebhookMalformedBody},
		{"event without id", []byte(`{"object":"event","api_version":"2023-10-16","type":"x"}`),
			signed([]byte(`{"object":"event","api_version":"2023-10-16","type":"x"}`), endpointSecret, verifyAt), stripeadapter.WebhookOptions{}, payment.WebhookMalformedBody},
		{"event without data.object", []byte(`{"id":"evt_1","object":"event","type":"x","data":{}}`),
			signed([]byte(`{"id":"evt_1","object":"event","type":"x","data":{}}`), endpointSecret, verifyAt), stripeadapter.WebhookOptions{}, payment.WebhookMalformedBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Now = fixedNow
			ev, err := stripeadapter.NewWebhookVerifier(endpointSecret, tc.opts).VerifyWebhook(context.Background(), tc.payload, tc.header)
			var rejected *payment.WebhookRejected
			if !errors.As(err, &rejected) || rejected.Reason != tc.want {
				t.Fatalf("err = %v, want WebhookRejected(%s)", err, tc.want)
			}
			if ev != (payment.Event{}) {
				t.Fatalf("rejected webhook still produced an event: %+v", ev)
			}
		})
	}
	t.Run("empty secret rejects everything", func(t *testing.T) {
		_, err := stripeadapter.NewWebhookVerifier("", stripeadapter.WebhookOptions{Now: fixedNow}).VerifyWebhook(context.Background(), payload, signed(payload, "", verifyAt))
		var rejected *payment.WebhookRejected
		if !errors.As(err, &rejected) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestVerifyWebhookAcceptsEveryAPIVersion proves that a correctly signed event is accepted
// whatever API version it was rendered for, reports the version and whether it differs from
// the pinned one, and still meets the signature and timestamp checks.
func TestVerifyWebhookAcceptsEveryAPIVersion(t *testing.T) {
	// A refund.failed event as a 2025 API version renders it, with fields the pinned version
	// does not know (pending_reason, destination_details) and the reservation in metadata.
	clover := []byte(`{"id":"evt_clover","object":"event","api_version":"2025-09-30.clover","created":1796040000,` +
		`"context":null,"livemode":true,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"refund.failed",` +
		`"data":{"object":{"id":"re_1","object":"refund","amount":4999,"charge":"ch_1","currency":"eur",` +
		`"destination_details":{"card":{"reference_status":"unavailable","type":"refund"},"type":"card"},` +
		`"failure_reason":"expired_or_canceled_card","metadata":{"reservation_id":"r1"},"payment_intent":"pi_1",` +
		`"pending_reason":null,"status":"failed"}}}`)
	unversioned := []byte(`{"id":"evt_nover","object":"event","created":1796040000,"type":"payment_intent.succeeded",` +
		`"data":{"object":{"id":"pi_2","object":"payment_intent","status":"succeeded","last_payment_error":null,"metadata":{"reservation_id":"r2"}}}}`)
	expandedPI := []byte(`{"id":"evt_exp","object":"event","api_version":"2024-06-20","created":1796040000,"type":"charge.refunded",` +
		`"data":{"object":{"id":"ch_3","object":"charge","refunded":true,"status":"succeeded","metadata":{"reservation_id":"r3"},"payment_intent":{"id":"pi_3","object":"payment_intent"}}}}`)
	v := stripeadapter.NewWebhookVerifier(endpointSecret, stripeadapter.WebhookOptions{Now: fixedNow})

	tests := []struct {
		name    string
		payload []byte
		want    payment.Event
	}{
		{"2025-09-30.clover refund event", clover, payment.Event{ID: "evt_clover", Type: "refund.failed",
			Created: time.Unix(1796040000, 0).UTC(), PaymentIntentID: "pi_1", ReservationID: "r1", RefundID: "re_1",
			ProviderStatus: "failed", LiveMode: true, APIVersion: "2025-09-30.clover", APIVersionMismatch: true}},
		{"no api_version", unversioned, payment.Event{ID: "evt_nover", Type: "payment_intent.succeeded",
			Created: time.Unix(1796040000, 0).UTC(), PaymentIntentID: "pi_2", ReservationID: "r2",
			ProviderStatus: "succeeded", State: payment.StatePaid, APIVersionMismatch: true}},
		{"charge with an expanded payment_intent", expandedPI, payment.Event{ID: "evt_exp", Type: "charge.refunded",
			Created: time.Unix(1796040000, 0).UTC(), PaymentIntentID: "pi_3", ReservationID: "r3",
			ProviderStatus: "succeeded", State: payment.StateRefunded, APIVersion: "2024-06-20", APIVersionMismatch: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := v.VerifyWebhook(context.Background(), tc.payload, signed(tc.payload, endpointSecret, verifyAt.Add(-time.Minute)))
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if ev != tc.want {
				t.Fatalf("event\n got %+v\nwant %+v", ev, tc.want)
			}
		})
	}

	rejections := []struct {
		name   string
		header string
		want   payment.WebhookReason
	}{
		{"bad signature", signed(clover, "whsec_someone_else", verifyAt), payment.WebhookBadSignature},
		{"stale timestamp", signed(clover, endpointSecret, verifyAt.Add(-6*time.Minute)), payment.WebhookStaleTimestamp},
		{"not signed", "", payment.WebhookNotSigned},
	}
	for _, tc := range rejections {
		t.Run("2025-09-30.clover event with "+tc.name, func(t *testing.T) {
			ev, err := v.VerifyWebhook(context.Background(), clover, tc.header)
			var rejected *payment.WebhookRejected
			if !errors.As(err, &rejected) || rejected.Reason != tc.want || ev != (payment.Event{}) {
				t.Fatalf("event %+v, err = %v; want WebhookRejected(%s)", ev, err, tc.want)
			}
		})
	}
}

// receiver is a webhook endpoint that verifies, dedupes by event id and records; a rejected
// webhook writes nothing and answers 400, so the sender retries.
type receiver struct {
	verifier *stripeadapter.WebhookVerifier
	mu       sync.Mutex
	events   []payment.Event // first delivery of each event, in arrival order
	seen     map[string]int  // deliveries per event id
	rejected int
	failNext int // answer 500 to this many verified deliveries before accepting
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ev, err := rc.verifier.VerifyWebhook(r.Context(), body, r.Header.Get("Stripe-Signature"))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err != nil {
		rc.rejected++
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.failNext > 0 {
		rc.failNext--
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	}
	if rc.seen[ev.ID] == 0 {
		rc.events = append(rc.events, ev)
	}
	rc.seen[ev.ID]++
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) snapshot() ([]payment.Event, map[string]int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]int{}
	for k, v := range rc.seen {
		seen[k] = v
	}
	return append([]payment.Event(nil), rc.events...), seen, rc.rejected
}

// webhookRig is a simulator on a fake clock delivering to a verifying receiver.
func webhookRig(t *testing.T, simSecret string, cfg stripesim.WebhookConfig) (*stripesim.Sim, *clock.Fake, *receiver, payment.Provider) {
	t.Helper()
	fake := clock.NewFake(verifyAt)
	rc := &receiver{
		verifier: stripeadapter.NewWebhookVerifier(endpointSecret, stripeadapter.WebhookOptions{Now: fake.Now}),
		seen:     map[string]int{},
	}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	cfg.URL, cfg.Secret = hook.URL, simSecret
	if cfg.Delay == 0 {
		// The fake clock runs zero-delay calls at once in a goroutine of their own; a small
		// delay keeps every delivery on the fake clock's schedule, so Advance is the barrier.
		cfg.Delay = time.Millisecond
	}
	sim := stripesim.New(stripesim.Options{Clock: fake, Webhook: cfg, Seed: 7})
	if err := sim.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	api := stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{Key: "sk_test_hooks", BaseURL: sim.URL(),
		HTTPClient: &http.Client{Timeout: 2 * time.Second}, Logger: quietLogger()})
	return sim, fake, rc, stripeadapter.New(api, quietLogger())
}

// payAndCapture runs authorize → confirm → capture for res.
func payAndCapture(t *testing.T, p payment.Provider, res string) string {
	t.Helper()
	ctx := context.Background()
	auth, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: res, Amount: 1500, Currency: "eur"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID, PaymentMethod: stripesim.PaymentMethodVisa, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID}); err != nil {
		t.Fatal(err)
	}
	return auth.PaymentIntentID
}

func TestSimulatorWebhooksVerified(t *testing.T) {
	wantTypes := []string{"payment_intent.created", "payment_intent.amount_capturable_updated", "payment_intent.succeeded"}

	t.Run("delivered once each, in order, after the delay", func(t *testing.T) {
		sim, fake, rc, p := webhookRig(t, endpointSecret, stripesim.WebhookConfig{Delay: 2 * time.Second})
		pi := payAndCapture(t, p, "res-hooks")
		if events, _, _ := rc.snapshot(); len(events) != 0 {
			t.Fatalf("delivered before the delay: %+v", events)
		}
		fake.Advance(2 * time.Second)
		events, seen, rejected := rc.snapshot()
		if rejected != 0 || len(events) != len(wantTypes) {
			t.Fatalf("events %+v, rejected %d", events, rejected)
		}
		for i, ev := range events {
			if ev.Type != wantTypes[i] || ev.PaymentIntentID != pi || ev.ReservationID != "res-hooks" || seen[ev.ID] != 1 {
				t.Fatalf("event %d = %+v (seen %d)", i, ev, seen[ev.ID])
			}
		}
		if events[2].State != payment.StatePaid {
			t.Fatalf("succeeded event state = %s", events[2].State)
		}
		if sim.PendingWebhooks() != 0 {
			t.Fatalf("pending = %d", sim.PendingWebhooks())
		}
	})

	t.Run("every event duplicated", func(t *testing.T) {
		_, fake, rc, p := webhookRig(t, endpointSecret, stripesim.WebhookConfig{DuplicateRate: 1})
		payAndCapture(t, p, "res-dup")
		fake.Advance(time.Second)
		events, seen, _ := rc.snapshot()
		if len(events) != len(wantTypes) {
			t.Fatalf("events = %+v", events)
		}
		for _, ev := range events {
			if seen[ev.ID] != 2 {
				t.Fatalf("event %s delivered %d times, want 2", ev.ID, seen[ev.ID])
			}
		}
	})

	t.Run("reordered", func(t *testing.T) {
		sim, fake, rc, p := webhookRig(t, endpointSecret, stripesim.WebhookConfig{Reorder: true, ReorderWindow: time.Minute})
		for _, res := range []string{"res-r1", "res-r2", "res-r3"} {
			payAndCapture(t, p, res)
		}
		fake.Advance(time.Minute)
		events, _, _ := rc.snapshot()
		emitted := sim.Events()
		if len(events) != len(emitted) || len(events) != 9 {
			t.Fatalf("delivered %d of %d events", len(events), len(emitted))
		}
		inOrder := true
		for i := range events {
			inOrder = inOrder && events[i].ID == emitted[i].ID
		}
		if inOrder {
			t.Fatal("with reordering over a minute, nine events still arrived in emission order")
		}
	})

	t.Run("retried with backoff until acknowledged", func(t *testing.T) {
		sim, fake, rc, p := webhookRig(t, endpointSecret, stripesim.WebhookConfig{RetryBackoff: time.Second, MaxAttempts: 4})
		rc.mu.Lock()
		rc.failNext = 2
		rc.mu.Unlock()
		ctx := context.Background()
		if _, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: "res-retry", Amount: 100, Currency: "eur"}); err != nil {
			t.Fatal(err)
		}
		fake.Advance(10 * time.Second)
		d := sim.Deliveries()
		if len(d) != 3 || d[0].Status != 500 || d[1].Status != 500 || !d[2].Delivered() {
			t.Fatalf("deliveries = %+v", d)
		}
		if gap1, gap2 := d[1].At.Sub(d[0].At), d[2].At.Sub(d[1].At); gap1 != time.Second || gap2 != 2*time.Second {
			t.Fatalf("backoff gaps %v, %v; want 1s, 2s", gap1, gap2)
		}
		if events, _, _ := rc.snapshot(); len(events) != 1 {
			t.Fatalf("events = %+v", events)
		}
	})

	t.Run("signed with the wrong secret: rejected, nothing recorded, retries bounded", func(t *testing.T) {
		sim, fake, rc, p := webhookRig(t, "whsec_wrong", stripesim.WebhookConfig{RetryBackoff: time.Second, MaxAttempts: 3})
		payAndCapture(t, p, "res-wrong")
		fake.Advance(time.Hour)
		events, _, rejected := rc.snapshot()
		if len(events) != 0 || rejected != 3*3 {
			t.Fatalf("recorded %d events, rejected %d deliveries; want 0 and 9", len(events), rejected)
		}
		if sim.PendingWebhooks() != 0 {
			t.Fatalf("still pending: %d", sim.PendingWebhooks())
		}
	})

	t.Run("a failed refund's events name the refund", func(t *testing.T) {
		_, fake, rc, p := webhookRig(t, endpointSecret, stripesim.WebhookConfig{})
		ctx := context.Background()
		auth, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: "res-rf", Amount: 1500, Currency: "eur"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: "res-rf", PaymentIntentID: auth.PaymentIntentID, PaymentMethod: stripesim.PaymentMethodRefundFail, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: "res-rf", PaymentIntentID: auth.PaymentIntentID}); err != nil {
			t.Fatal(err)
		}
		refund, err := p.Refund(ctx, payment.RefundRequest{ReservationID: "res-rf", PaymentIntentID: auth.PaymentIntentID, Attempt: 1})
		if err != nil || refund.Status != payment.RefundFailed {
			t.Fatalf("refund: %+v, %v", refund, err)
		}
		fake.Advance(time.Second)
		events, _, rejected := rc.snapshot()
		var failed *payment.Event
		for i := range events {
			if events[i].Type == "refund.failed" {
				failed = &events[i]
			}
		}
		if rejected != 0 || failed == nil || failed.RefundID != refund.RefundID || failed.ProviderStatus != payment.RefundFailed ||
			failed.PaymentIntentID != auth.PaymentIntentID || failed.ReservationID != "res-rf" || failed.APIVersionMismatch {
			t.Fatalf("refund.failed event %+v among %+v (rejected %d)", failed, events, rejected)
		}
	})

	t.Run("delivered late: stale signature timestamp rejected", func(t *testing.T) {
		// The simulator signs at delivery time, so only a receiver whose clock runs ahead
		// sees a stale signature; simulate it by verifying an emitted payload later.
		sim, fake, _, p := webhookRig(t, endpointSecret, stripesim.WebhookConfig{})
		payAndCapture(t, p, "res-stale")
		ev := sim.Events()[0]
		header := stripesim.SignPayload(ev.Payload, endpointSecret, fake.Now())
		v := stripeadapter.NewWebhookVerifier(endpointSecret, stripeadapter.WebhookOptions{Now: func() time.Time { return fake.Now().Add(10 * time.Minute) }})
		_, err := v.VerifyWebhook(context.Background(), ev.Payload, header)
		var rejected *payment.WebhookRejected
		if !errors.As(err, &rejected) || rejected.Reason != payment.WebhookStaleTimestamp {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestSimulatorSignatureMatchesStripe checks the simulator's signature against stripe-go's.
func TestSimulatorSignatureMatchesStripe(t *testing.T) {
	payload := []byte(`{"id":"evt_1","object":"event"}`)
	at := time.Unix(1796040000, 0)
	want := signed(payload, endpointSecret, at)
	if got := stripesim.SignPayload(payload, endpointSecret, at); got != want {
		t.Fatalf("simulator header %q, stripe-go %q", got, want)
	}
	var decoded map[string]any
	if err := json.Unmarshal(payload, &decoded); err != nil {
		t.Fatal(err)
	}
}

// webhookSecretRig is a verifier whose secret comes from a cache over a secret store that
// started out holding whsec_before.
type webhookSecretRig struct {
	verifier *stripeadapter.WebhookVerifier
	store    *secretStore
	clock    *clock.Fake
}

func newWebhookSecretRig(t *testing.T) *webhookSecretRig {
	t.Helper()
	fake := clock.NewFake(verifyAt)
	st := &secretStore{value: "whsec_before"}
	cache := secrets.New(st.fetch, secrets.Options{Name: "webhook secret", Now: fake.Now, Logger: quietLogger()})
	if _, err := cache.Get(context.Background()); err != nil { // the cold start's read
		t.Fatal(err)
	}
	return &webhookSecretRig{
		verifier: stripeadapter.NewWebhookVerifierFromSource(cache, stripeadapter.WebhookOptions{Now: fake.Now}),
		store:    st, clock: fake,
	}
}

func (r *webhookSecretRig) verify(payload []byte, secret string) error {
	_, err := r.verifier.VerifyWebhook(context.Background(), payload, signed(payload, secret, r.clock.Now()))
	return err
}

func webhookFixture(t *testing.T) []byte {
	t.Helper()
	payload, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "stripe", "payment_intent.succeeded.json"))
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

func isBadSignature(err error) bool {
	var rejected *payment.WebhookRejected
	return errors.As(err, &rejected) && rejected.Reason == payment.WebhookBadSignature
}

// TestVerifierPicksUpRolledSecretOnFirstEvent: the first event signed with a rolled secret
// makes the verifier reread the secret and accept it, long before the TTL; later events
// verify from the cache.
func TestVerifierPicksUpRolledSecretOnFirstEvent(t *testing.T) {
	rig := newWebhookSecretRig(t)
	payload := webhookFixture(t)
	rig.store.set("whsec_after", nil)

	if err := rig.verify(payload, "whsec_after"); err != nil {
		t.Fatalf("event signed with the rolled secret: %v", err)
	}
	if err := rig.verify(payload, "whsec_after"); err != nil {
		t.Fatalf("second event signed with the rolled secret: %v", err)
	}
	if n := rig.store.reads.Load(); n != 2 {
		t.Fatalf("secret reads = %d, want 2 (cold start, one refresh)", n)
	}
	// The control: a verifier that keeps the secret it started with rejects the same event.
	static := stripeadapter.NewWebhookVerifier("whsec_before", stripeadapter.WebhookOptions{Now: rig.clock.Now})
	if _, err := static.VerifyWebhook(context.Background(), payload, signed(payload, "whsec_after", rig.clock.Now())); !isBadSignature(err) {
		t.Fatalf("fixed-secret verifier: err = %v, want bad_signature", err)
	}
}

// TestVerifierRejectsForgedFloodWithOneReadPerWindow: forged signatures are all rejected, and
// however many arrive, they cost at most one secret read per rate-limit window.
func TestVerifierRejectsForgedFloodWithOneReadPerWindow(t *testing.T) {
	rig := newWebhookSecretRig(t)
	payload := webhookFixture(t)
	rig.store.set("whsec_after", nil)
	for range 100 {
		if err := rig.verify(payload, "whsec_forged"); !isBadSignature(err) {
			t.Fatalf("forged event: err = %v, want bad_signature", err)
		}
	}
	if n := rig.store.reads.Load(); n != 2 {
		t.Fatalf("secret reads after 100 forged events = %d, want 2 (cold start, one refresh)", n)
	}
	// The flood's one refresh picked up the rolled secret, so a genuine event needs no read.
	if err := rig.verify(payload, "whsec_after"); err != nil {
		t.Fatalf("genuine event during the flood: %v", err)
	}
	rig.clock.Advance(secrets.DefaultMinRefetch)
	for range 100 {
		if err := rig.verify(payload, "whsec_forged"); !isBadSignature(err) {
			t.Fatalf("forged event: err = %v, want bad_signature", err)
		}
	}
	if n := rig.store.reads.Load(); n != 3 {
		t.Fatalf("secret reads after a second window of forged events = %d, want 3", n)
	}
}

// TestVerifierKeepsToleranceWithRolledSecret: a rolled secret does not excuse an old
// timestamp.
func TestVerifierKeepsToleranceWithRolledSecret(t *testing.T) {
	rig := newWebhookSecretRig(t)
	payload := webhookFixture(t)
	rig.store.set("whsec_after", nil)
	_, err := rig.verifier.VerifyWebhook(context.Background(), payload, signed(payload, "whsec_after", rig.clock.Now().Add(-6*time.Minute)))
	var rejected *payment.WebhookRejected
	if !errors.As(err, &rejected) || rejected.Reason != payment.WebhookStaleTimestamp {
		t.Fatalf("err = %v, want stale_timestamp", err)
	}
}

// TestVerifierWithoutSecretRejects: a verifier given no secret source rejects every event
// rather than accepting any.
func TestVerifierWithoutSecretRejects(t *testing.T) {
	payload := webhookFixture(t)
	v := stripeadapter.NewWebhookVerifierFromSource(nil, stripeadapter.WebhookOptions{Now: fixedNow})
	if _, err := v.VerifyWebhook(context.Background(), payload, signed(payload, "", verifyAt)); !isBadSignature(err) {
		t.Fatalf("err = %v, want bad_signature", err)
	}
}

func isUnverifiable(err error) bool {
	var unverifiable *payment.WebhookUnverifiable
	var rejected *payment.WebhookRejected
	return errors.As(err, &unverifiable) && !errors.As(err, &rejected)
}

// TestVerifierThatCannotReadItsSecretDoesNotCallEventsForged: when Secrets Manager fails, the
// verifier cannot check a signature, which is not the sender's fault: the error is
// unverifiable, not rejected, so that the handler asks Stripe to deliver again. That holds for
// the first read and for the reread after a signature failed, since the secret may have been
// rolled.
func TestVerifierThatCannotReadItsSecretDoesNotCallEventsForged(t *testing.T) {
	payload := webhookFixture(t)
	unavailable := errors.New("secrets manager unavailable")

	t.Run("no value read yet", func(t *testing.T) {
		failing := secrets.New(func(context.Context) (string, error) { return "", unavailable },
			secrets.Options{Logger: quietLogger()})
		v := stripeadapter.NewWebhookVerifierFromSource(failing, stripeadapter.WebhookOptions{Now: fixedNow})
		_, err := v.VerifyWebhook(context.Background(), payload, signed(payload, endpointSecret, verifyAt))
		if !isUnverifiable(err) || !errors.Is(err, unavailable) {
			t.Fatalf("err = %v, want unverifiable, wrapping the store's error", err)
		}
	})

	t.Run("the reread after a signature failed", func(t *testing.T) {
		rig := newWebhookSecretRig(t)
		rig.store.set("whsec_after", unavailable)
		// The control: an event signed with the cached secret needs no read, and verifies.
		if err := rig.verify(payload, "whsec_before"); err != nil {
			t.Fatalf("event signed with the cached secret while the store fails: %v", err)
		}
		err := rig.verify(payload, "whsec_after")
		if !isUnverifiable(err) || !errors.Is(err, unavailable) {
			t.Fatalf("event signed with a rolled secret while the store fails: err = %v, want unverifiable", err)
		}
	})
}
