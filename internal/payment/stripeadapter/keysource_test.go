package stripeadapter_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/secrets"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

const (
	oldKey = "sk_test_before_rotation"
	newKey = "sk_test_after_rotation"
)

// keyRecorder is an HTTP transport that remembers the key and the idempotency key each
// request to Stripe carried.
type keyRecorder struct {
	mu              sync.Mutex
	keys            []string
	idempotencyKeys []string
}

func (r *keyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.keys = append(r.keys, strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
	r.idempotencyKeys = append(r.idempotencyKeys, req.Header.Get("Idempotency-Key"))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *keyRecorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// sentIdempotencyKeys lists each request's Idempotency-Key header ("" when it had none).
func (r *keyRecorder) sentIdempotencyKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.idempotencyKeys...)
}

// secretStore is Secrets Manager's copy of the key, and how often it was read.
type secretStore struct {
	mu    sync.Mutex
	value string
	err   error
	reads atomic.Int64
}

func (s *secretStore) fetch(context.Context) (string, error) {
	s.reads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.err
}

func (s *secretStore) set(value string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value, s.err = value, err
}

// keyRig is an adapter whose key comes from a cache over a secret store, against a simulator
// that accepts only acceptedKey ("" accepts any).
type keyRig struct {
	adapter *stripeadapter.Adapter
	sim     *stripesim.Sim
	store   *secretStore
	clock   *clock.Fake
	wire    *keyRecorder
	cache   *secrets.Cache
}

func newKeyRig(t *testing.T, acceptedKey, storedKey string) *keyRig {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	sim := stripesim.New(stripesim.Options{Clock: fake, APIKey: acceptedKey})
	ctx, cancel := context.WithCancel(context.Background())
	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(func() { cancel(); sim.Close() })
	rig := &keyRig{sim: sim, store: &secretStore{value: storedKey}, clock: fake, wire: &keyRecorder{}}
	rig.cache = secrets.New(rig.store.fetch, secrets.Options{Name: "Stripe key", Now: fake.Now, Logger: quietLogger()})
	api := stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		KeySource: rig.cache, BaseURL: sim.URL(),
		HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: rig.wire}, Logger: quietLogger(),
	})
	rig.adapter = stripeadapter.New(api, quietLogger())
	return rig
}

// warm reads the key once, as a cold start does.
func (r *keyRig) warm(t *testing.T) {
	t.Helper()
	if _, err := r.cache.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (r *keyRig) authorize(reservationID string) (payment.Authorization, error) {
	return r.adapter.CreateOrReuseAuthorization(context.Background(),
		payment.AuthorizationRequest{ReservationID: reservationID, Amount: 4200, Currency: "eur"})
}

func isAuthFailure(err error) bool {
	var failed *payment.Failed
	return errors.As(err, &failed) && failed.Category == payment.FailureAuthentication
}

// TestRevokedKeyIsRefreshedAndTheCallResentOnce: the key was rotated in Secrets Manager and
// the old one revoked at Stripe; the first call Stripe refuses makes the adapter read the new
// key and resend, under the same idempotency key, so the payment is authorized once.
func TestRevokedKeyIsRefreshedAndTheCallResentOnce(t *testing.T) {
	rig := newKeyRig(t, newKey, oldKey)
	rig.warm(t)
	rig.store.set(newKey, nil)

	auth, err := rig.authorize("res-rotated")
	if err != nil {
		t.Fatalf("authorize after rotation: %v", err)
	}
	if got := rig.wire.sent(); len(got) != 2 || got[0] != oldKey || got[1] != newKey {
		t.Fatalf("keys sent = %v, want the old key once, then the new one", got)
	}
	// The resend is the same request to Stripe: were its idempotency key new, a refusal that
	// Stripe had acted on after all would be acted on twice.
	if got := rig.wire.sentIdempotencyKeys(); len(got) != 2 || got[0] == "" || got[1] != got[0] {
		t.Fatalf("idempotency keys sent = %q, want the refused request's key again on the resend", got)
	}
	if n := rig.store.reads.Load(); n != 2 {
		t.Fatalf("secret reads = %d, want 2 (cold start, refresh on the 401)", n)
	}
	if books := rig.sim.Ledger().ForReservation("res-rotated"); len(books) != 1 || books[0].PaymentIntentID != auth.PaymentIntentID {
		t.Fatalf("simulator books = %+v, want the one PaymentIntent %s", books, auth.PaymentIntentID)
	}
	// The refreshed key is the one used from now on.
	if _, err := rig.adapter.Retrieve(context.Background(), auth.PaymentIntentID); err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	if got := rig.wire.sent(); len(got) != 3 || got[2] != newKey {
		t.Fatalf("keys sent = %v, want the retrieve to carry the new key at once", got)
	}
}

// TestRefusedKeyWithNothingNewerFailsAsBefore is the control: when the refreshed key is the
// one Stripe refused, nothing is resent and the refusal surfaces as an authentication failure.
func TestRefusedKeyWithNothingNewerFailsAsBefore(t *testing.T) {
	rig := newKeyRig(t, newKey, oldKey)
	rig.warm(t)

	_, err := rig.authorize("res-revoked")
	if !isAuthFailure(err) {
		t.Fatalf("err = %v, want payment.Failed(authentication)", err)
	}
	if got := rig.wire.sent(); len(got) != 1 {
		t.Fatalf("keys sent = %v, want one request: resending the same key cannot help", got)
	}
	if n := rig.store.reads.Load(); n != 2 {
		t.Fatalf("secret reads = %d, want 2 (cold start, one forced refresh)", n)
	}
}

// TestRefusedKeysDoNotStormSecretsManager: while Stripe refuses the stored key, every call
// fails, but the store is read once per rate-limit window, not once per call.
func TestRefusedKeysDoNotStormSecretsManager(t *testing.T) {
	rig := newKeyRig(t, newKey, oldKey)
	rig.warm(t)
	for range 20 {
		if _, err := rig.authorize("res-storm"); !isAuthFailure(err) {
			t.Fatalf("err = %v, want payment.Failed(authentication)", err)
		}
	}
	if n := rig.store.reads.Load(); n != 2 {
		t.Fatalf("secret reads after 20 refused calls = %d, want 2 (cold start, one forced refresh)", n)
	}
	// Once the window has passed and the key has been rotated, the next refusal picks it up.
	rig.clock.Advance(secrets.DefaultMinRefetch)
	rig.store.set(newKey, nil)
	if _, err := rig.authorize("res-storm"); err != nil {
		t.Fatalf("authorize after the window: %v", err)
	}
	if n := rig.store.reads.Load(); n != 3 {
		t.Fatalf("secret reads = %d, want 3", n)
	}
}

// TestRotatedKeyIsPickedUpAfterTheTTL: with the old key still valid at Stripe (a rolling
// rotation), nothing is refused, and the new key is used once the cached one expires.
func TestRotatedKeyIsPickedUpAfterTheTTL(t *testing.T) {
	rig := newKeyRig(t, "", oldKey)
	rig.warm(t)
	rig.store.set(newKey, nil)

	rig.clock.Advance(secrets.DefaultTTL - time.Second)
	if _, err := rig.authorize("res-ttl-1"); err != nil {
		t.Fatal(err)
	}
	rig.clock.Advance(time.Second)
	if _, err := rig.authorize("res-ttl-2"); err != nil {
		t.Fatal(err)
	}
	if got := rig.wire.sent(); len(got) != 2 || got[0] != oldKey || got[1] != newKey {
		t.Fatalf("keys sent = %v, want the old key before the TTL and the new one at it", got)
	}
}

// TestUnreadableKeySendsNothingAndIsUncertain: with no key to send, the call is not made, and
// the saga sees an outcome it retries rather than a definitive failure.
func TestUnreadableKeySendsNothingAndIsUncertain(t *testing.T) {
	rig := newKeyRig(t, "", oldKey)
	rig.store.set("", errors.New("secrets manager unavailable"))

	_, err := rig.authorize("res-no-key")
	var uncertain *payment.Uncertain
	if !errors.As(err, &uncertain) || uncertain.Reason != "credentials_unavailable" {
		t.Fatalf("err = %v, want payment.Uncertain(credentials_unavailable)", err)
	}
	if got := rig.wire.sent(); len(got) != 0 {
		t.Fatalf("keys sent = %v, want no request", got)
	}
}

// TestRefusedKeyWhoseRereadFailsIsUncertain: Stripe refuses the cached key while Secrets
// Manager, which may hold its rotated successor, cannot be read. The payment is not failed over
// that: the call is Uncertain, which the saga retries, and the refused key is not sent again
// until a reread succeeds.
func TestRefusedKeyWhoseRereadFailsIsUncertain(t *testing.T) {
	rig := newKeyRig(t, newKey, oldKey)
	rig.warm(t)
	rig.store.set(newKey, errors.New("secrets manager unavailable"))

	for i, wantSent := range []int{1, 1} {
		_, err := rig.authorize("res-reread-fails")
		var uncertain *payment.Uncertain
		if !errors.As(err, &uncertain) || uncertain.Reason != "credentials_unavailable" {
			t.Fatalf("call %d: err = %v, want payment.Uncertain(credentials_unavailable)", i, err)
		}
		if got := rig.wire.sent(); len(got) != wantSent {
			t.Fatalf("call %d: keys sent = %v, want only the first call's refused request", i, got)
		}
	}
	rig.clock.Advance(secrets.DefaultMinRefetch)
	rig.store.set(newKey, nil)
	if _, err := rig.authorize("res-reread-fails"); err != nil {
		t.Fatalf("authorize once the store answers: %v", err)
	}
	if got := rig.wire.sent(); len(got) != 2 || got[1] != newKey {
		t.Fatalf("keys sent = %v, want the new key once the store answers", got)
	}
}

// TestStaticKeySourceBehavesLikeKey: secrets.Static is the fixed key of tests and the local
// stack, and a refusal is not resent.
func TestStaticKeySourceBehavesLikeKey(t *testing.T) {
	sim := stripesim.New(stripesim.Options{APIKey: newKey})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	for _, tc := range []struct {
		key    string
		wantOK bool
	}{{newKey, true}, {oldKey, false}} {
		wire := &keyRecorder{}
		api := stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{KeySource: secrets.Static(tc.key), BaseURL: sim.URL(),
			HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: wire}, Logger: quietLogger()})
		_, err := stripeadapter.New(api, quietLogger()).CreateOrReuseAuthorization(ctx,
			payment.AuthorizationRequest{ReservationID: "res-static-" + tc.key, Amount: 100, Currency: "eur"})
		if (err == nil) != tc.wantOK || !tc.wantOK && !isAuthFailure(err) || len(wire.sent()) != 1 {
			t.Fatalf("key %s: err = %v after %d requests", tc.key, err, len(wire.sent()))
		}
	}
}
