package stripesim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type rig struct {
	t     *testing.T
	sim   *stripesim.Sim
	clock *clock.Fake
	url   string
}

func newRig(t *testing.T, opts stripesim.Options) *rig {
	t.Helper()
	fake := clock.NewFake(start)
	opts.Clock = fake
	if opts.APIKey == "" {
		opts.APIKey = "sk_test_rig"
	}
	sim := stripesim.New(opts)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { sim.Close(); srv.Close() })
	return &rig{t: t, sim: sim, clock: fake, url: srv.URL}
}

type reply struct {
	status   int
	header   http.Header
	body     map[string]any
	transErr error
}

func (r reply) errField(name string) string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e[name].(string)
	return s
}

func (r reply) str(name string) string { s, _ := r.body[name].(string); return s }
func (r reply) num(name string) int64  { f, _ := r.body[name].(float64); return int64(f) }

// call sends one form-encoded request as stripe-go would.
func (rg *rig) call(method, path, key string, form url.Values) reply {
	rg.t.Helper()
	var body io.Reader
	target := rg.url + path
	if method == http.MethodGet {
		if len(form) > 0 {
			target += "?" + form.Encode()
		}
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		rg.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk_test_rig")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return reply{transErr: err}
	}
	defer resp.Body.Close()
	out := reply{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(&out.body); err != nil {
		rg.t.Fatalf("%s %s: undecodable body: %v", method, path, err)
	}
	return out
}

func (rg *rig) createIntent(res string, amount string) string {
	rg.t.Helper()
	r := rg.call("POST", "/v1/payment_intents", res+":authorize", url.Values{
		"amount": {amount}, "currency": {"eur"}, "capture_method": {"manual"},
		"metadata[reservation_id]": {res}, "payment_method_types[0]": {"card"},
	})
	if r.status != 200 || r.str("status") != stripesim.StatusRequiresPaymentMethod {
		rg.t.Fatalf("create: %d %v", r.status, r.body)
	}
	return r.str("id")
}

func (rg *rig) confirm(id, key, pm string) reply {
	return rg.call("POST", "/v1/payment_intents/"+id+"/confirm", key, url.Values{"payment_method": {pm}, "expand[0]": {"latest_charge"}})
}

func TestPaymentIntentStatusMachine(t *testing.T) {
	t.Run("manual capture: authorize, partial capture releases the rest", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.createIntent("r1", "1000")
		r := rg.confirm(id, "r1:confirm:1", stripesim.PaymentMethodVisa)
		if r.status != 200 || r.str("status") != stripesim.StatusRequiresCapture || r.num("amount_capturable") != 1000 {
			t.Fatalf("confirm: %d %v", r.status, r.body)
		}
		ch := r.body["latest_charge"].(map[string]any)
		card := ch["payment_method_details"].(map[string]any)["card"].(map[string]any)
		if int64(card["capture_before"].(float64)) != start.Add(7*24*time.Hour).Unix() {
			t.Fatalf("capture_before = %v", card["capture_before"])
		}
		r = rg.call("POST", "/v1/payment_intents/"+id+"/capture", "r1:capture", url.Values{"amount_to_capture": {"400"}})
		if r.status != 200 || r.str("status") != stripesim.StatusSucceeded || r.num("amount_received") != 400 {
			t.Fatalf("capture: %d %v", r.status, r.body)
		}
		e := rg.sim.Ledger().ForReservation("r1")[0]
		if e.Authorized != 1000 || e.Captured != 400 || e.Voided != 600 || e.Held() != 0 {
			t.Fatalf("ledger: %+v", e)
		}
	})

	t.Run("operations in the wrong state are refused with Stripe's error", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.createIntent("r2", "1000")
		tests := []struct {
			name, path, code string
			form             url.Values
			status           int
		}{
			{"capture before authorization", "/v1/payment_intents/" + id + "/capture", "payment_intent_unexpected_state", nil, 400},
			{"refund before capture", "/v1/refunds", "charge_not_refundable", url.Values{"payment_intent": {id}}, 400},
			{"confirm with an unknown method", "/v1/payment_intents/" + id + "/confirm", "resource_missing", url.Values{"payment_method": {"pm_nope"}}, 400},
			{"unknown parameter", "/v1/payment_intents/" + id + "/capture", "parameter_unknown", url.Values{"amount": {"5"}}, 400},
			{"unknown intent", "/v1/payment_intents/pi_missing/cancel", "resource_missing", nil, 404},
			{"bad cancellation reason", "/v1/payment_intents/" + id + "/cancel", "", url.Values{"cancellation_reason": {"bored"}}, 400},
		}
		for i, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := rg.call("POST", tc.path, "k"+string(rune('a'+i)), tc.form)
				if r.status != tc.status || r.errField("type") != "invalid_request_error" || r.errField("code") != tc.code || r.errField("message") == "" {
					t.Fatalf("%d %v", r.status, r.body)
				}
			})
		}
		rg.confirm(id, "r2:confirm:1", stripesim.PaymentMethodVisa)
		rg.call("POST", "/v1/payment_intents/"+id+"/capture", "r2:capture", nil)
		for name, r := range map[string]reply{
			"confirm after capture": rg.confirm(id, "r2:confirm:2", stripesim.PaymentMethodVisa),
			"cancel after capture":  rg.call("POST", "/v1/payment_intents/"+id+"/cancel", "r2:cancel", nil),
		} {
			if r.status != 400 || r.errField("code") != "payment_intent_unexpected_state" {
				t.Fatalf("%s: %d %v", name, r.status, r.body)
			}
		}
		full := rg.call("POST", "/v1/refunds", "r2:refund", url.Values{"payment_intent": {id}})
		again := rg.call("POST", "/v1/refunds", "r2:refund:2", url.Values{"payment_intent": {id}})
		if full.status != 200 || full.num("amount") != 1000 || again.status != 400 || again.errField("code") != "charge_already_refunded" {
			t.Fatalf("refunds: %v / %v", full.body, again.body)
		}
	})

	t.Run("declines carry Stripe's card_error body", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.createIntent("r3", "1000")
		r := rg.confirm(id, "r3:confirm:1", stripesim.PaymentMethodInsufficientFunds)
		if r.status != 402 || r.errField("type") != "card_error" || r.errField("code") != "card_declined" ||
			r.errField("decline_code") != "insufficient_funds" || r.errField("charge") == "" {
			t.Fatalf("%d %v", r.status, r.body)
		}
		pi := r.body["error"].(map[string]any)["payment_intent"].(map[string]any)
		if pi["status"] != stripesim.StatusRequiresPaymentMethod || pi["last_payment_error"] == nil {
			t.Fatalf("payment_intent in the error: %v", pi)
		}
	})

	t.Run("3-D Secure that fails returns to requires_payment_method", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{ThreeDSDelay: time.Minute})
		id := rg.createIntent("r4", "1000")
		if r := rg.confirm(id, "r4:confirm:1", stripesim.PaymentMethodThreeDSecureFails); r.str("status") != stripesim.StatusRequiresAction {
			t.Fatalf("confirm: %v", r.body)
		}
		rg.clock.Advance(time.Minute)
		r := rg.call("GET", "/v1/payment_intents/"+id, "", nil)
		lpe, _ := r.body["last_payment_error"].(map[string]any)
		if r.str("status") != stripesim.StatusRequiresPaymentMethod || lpe["code"] != "payment_intent_authentication_failure" {
			t.Fatalf("after failed authentication: %v", r.body)
		}
	})

	t.Run("a new confirm makes the pending 3-D Secure of the old attempt stale", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{ThreeDSDelay: time.Minute})
		id := rg.createIntent("r5", "1000")
		rg.confirm(id, "r5:confirm:1", stripesim.PaymentMethodThreeDSecure)
		rg.call("POST", "/v1/payment_intents/"+id+"/cancel", "r5:cancel", nil)
		rg.clock.Advance(time.Minute)
		if r := rg.call("GET", "/v1/payment_intents/"+id, "", nil); r.str("status") != stripesim.StatusCanceled {
			t.Fatalf("canceled intent came back to life: %v", r.body)
		}
		if e := rg.sim.Ledger().ForReservation("r5")[0]; e.Authorized != 0 {
			t.Fatalf("ledger: %+v", e)
		}
	})

	t.Run("cancel while processing: allowed by default, refused and replayed with RefuseCancelWhileProcessing", func(t *testing.T) {
		for _, refuse := range []bool{false, true} {
			rg := newRig(t, stripesim.Options{RefuseCancelWhileProcessing: refuse, LateAuthorizationDelay: time.Minute})
			id := rg.createIntent("r8", "1000")
			if r := rg.confirm(id, "r8:confirm:1", stripesim.PaymentMethodAuthorizeLate); r.str("status") != stripesim.StatusProcessing {
				t.Fatalf("confirm: %v", r.body)
			}
			r := rg.call("POST", "/v1/payment_intents/"+id+"/cancel", "r8:cancel:1", nil)
			if !refuse {
				if r.status != 200 || r.str("status") != stripesim.StatusCanceled {
					t.Fatalf("cancel while processing: %d %v", r.status, r.body)
				}
				continue
			}
			errBody, _ := r.body["error"].(map[string]any)
			if r.status != 400 || errBody["code"] != "payment_intent_unexpected_state" {
				t.Fatalf("cancel while processing: %d %v", r.status, r.body)
			}
			rg.clock.Advance(time.Minute)
			if again := rg.call("POST", "/v1/payment_intents/"+id+"/cancel", "r8:cancel:1", nil); again.status != 400 ||
				again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("same key after authorization: %d %v, want the stored refusal", again.status, again.body)
			}
			if next := rg.call("POST", "/v1/payment_intents/"+id+"/cancel", "r8:cancel:2", nil); next.status != 200 ||
				next.str("status") != stripesim.StatusCanceled {
				t.Fatalf("new key after authorization: %d %v", next.status, next.body)
			}
		}
	})

	t.Run("abandoned 3-D Secure completed on demand", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.createIntent("r7", "1000")
		if err := rg.sim.Authenticate(id, true); !errors.Is(err, stripesim.ErrNotAwaitingAuthentication) {
			t.Fatalf("authenticate before confirm: %v", err)
		}
		rg.confirm(id, "r7:confirm:1", stripesim.PaymentMethodThreeDSecureAbandoned)
		if err := rg.sim.Authenticate(id, true); err != nil {
			t.Fatal(err)
		}
		if r := rg.call("GET", "/v1/payment_intents/"+id, "", nil); r.str("status") != stripesim.StatusRequiresCapture {
			t.Fatalf("after authentication: %v", r.body)
		}
	})

	t.Run("an authorization lapses after its capture window", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.createIntent("r6", "1000")
		rg.confirm(id, "r6:confirm:1", stripesim.PaymentMethodVisa)
		rg.clock.Advance(7*24*time.Hour + time.Second)
		r := rg.call("POST", "/v1/payment_intents/"+id+"/capture", "r6:capture", nil)
		if r.status != 400 || r.errField("code") != "charge_expired_for_capture" {
			t.Fatalf("late capture: %d %v", r.status, r.body)
		}
		r = rg.call("GET", "/v1/payment_intents/"+id, "", nil)
		if r.str("status") != stripesim.StatusCanceled || r.str("cancellation_reason") != "automatic" {
			t.Fatalf("lapsed intent: %v", r.body)
		}
		if e := rg.sim.Ledger().ForReservation("r6")[0]; e.Voided != 1000 || e.Captured != 0 {
			t.Fatalf("ledger: %+v", e)
		}
	})

	t.Run("API keys are checked", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		req, _ := http.NewRequest("GET", rg.url+"/v1/payment_intents/pi_x", nil)
		req.Header.Set("Authorization", "Bearer sk_test_other")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("status = %d", resp.StatusCode)
		}
	})
}

func TestIdempotency(t *testing.T) {
	create := url.Values{"amount": {"1000"}, "currency": {"eur"}, "capture_method": {"manual"}, "metadata[reservation_id]": {"ri"}}

	t.Run("replay returns the first response", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		first := rg.call("POST", "/v1/payment_intents", "k1", create)
		second := rg.call("POST", "/v1/payment_intents", "k1", create)
		if first.str("id") == "" || second.str("id") != first.str("id") || second.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("first %v, second %v", first.body, second.body)
		}
		if n := len(rg.sim.Ledger().Entries); n != 1 {
			t.Fatalf("%d PaymentIntents", n)
		}
	})

	t.Run("other parameters are an idempotency_error", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		rg.call("POST", "/v1/payment_intents", "k1", create)
		changed := url.Values{}
		for k, v := range create {
			changed[k] = v
		}
		changed.Set("amount", "1001")
		r := rg.call("POST", "/v1/payment_intents", "k1", changed)
		if r.status != 400 || r.errField("type") != "idempotency_error" {
			t.Fatalf("%d %v", r.status, r.body)
		}
		r = rg.call("POST", "/v1/payment_intents/whatever/capture", "k1", nil)
		if r.status != 400 || r.errField("type") != "idempotency_error" {
			t.Fatalf("same key on another endpoint: %d %v", r.status, r.body)
		}
	})

	t.Run("validation failures are not saved", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		bad := rg.call("POST", "/v1/payment_intents", "k1", url.Values{"currency": {"eur"}})
		if bad.status != 400 || bad.errField("code") != "parameter_missing" {
			t.Fatalf("%d %v", bad.status, bad.body)
		}
		if good := rg.call("POST", "/v1/payment_intents", "k1", create); good.status != 200 {
			t.Fatalf("after a validation failure the key must be free: %d %v", good.status, good.body)
		}
	})

	t.Run("a request with the key in flight gets 409", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		rg.sim.SetLatency(stripesim.EndpointCreateIntent, 600*time.Millisecond)
		var wg sync.WaitGroup
		var first reply
		wg.Add(1)
		go func() { defer wg.Done(); first = rg.call("POST", "/v1/payment_intents", "k1", create) }()
		time.Sleep(150 * time.Millisecond) // well inside the first call's latency
		second := rg.call("POST", "/v1/payment_intents", "k1", create)
		wg.Wait()
		if first.status != 200 || second.status != 409 || second.errField("code") != "idempotency_key_in_use" {
			t.Fatalf("first %d, second %d %v", first.status, second.status, second.body)
		}
	})

	t.Run("keys expire after 24 hours", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		first := rg.call("POST", "/v1/payment_intents", "k1", create)
		rg.clock.Advance(25 * time.Hour)
		second := rg.call("POST", "/v1/payment_intents", "k1", create)
		if second.str("id") == first.str("id") {
			t.Fatal("a pruned key still replayed")
		}
	})
}

func TestFaults(t *testing.T) {
	create := url.Values{"amount": {"1000"}, "currency": {"eur"}, "capture_method": {"manual"}, "metadata[reservation_id]": {"rf"}}

	t.Run("fail before acting changes nothing and keeps the key free", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		rg.sim.FailNext(stripesim.EndpointCreateIntent, 2)
		for i := 0; i < 2; i++ {
			if r := rg.call("POST", "/v1/payment_intents", "k1", create); r.status != 500 || r.errField("type") != "api_error" {
				t.Fatalf("call %d: %d %v", i, r.status, r.body)
			}
		}
		if n := len(rg.sim.Ledger().Entries); n != 0 {
			t.Fatalf("%d PaymentIntents after failures", n)
		}
		if r := rg.call("POST", "/v1/payment_intents", "k1", create); r.status != 200 {
			t.Fatalf("third call: %d", r.status)
		}
	})

	t.Run("rate limited answers 429 and does not act", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		rg.sim.InjectFault(stripesim.EndpointCreateIntent, stripesim.Fault{Kind: stripesim.FaultRateLimited})
		if r := rg.call("POST", "/v1/payment_intents", "k1", create); r.status != 429 || r.errField("code") != "rate_limit" {
			t.Fatalf("rate limited call: %d %v", r.status, r.body)
		}
		if n := len(rg.sim.Ledger().Entries); n != 0 {
			t.Fatalf("%d PaymentIntents after a rate-limited call", n)
		}
		// Nothing was saved under the key: the retry acts.
		if r := rg.call("POST", "/v1/payment_intents", "k1", create); r.status != 200 {
			t.Fatalf("retry after 429: %d %v", r.status, r.body)
		}
	})

	t.Run("a fault the call never reaches stays armed and is not reported", func(t *testing.T) {
		// The provider down for a window answers 500 before acting: a rate limit, a latency
		// and a lost response armed for the same endpoint cannot take effect on that call,
		// so they must neither be reported injected nor be used up by it.
		rg := newRig(t, stripesim.Options{})
		var down, limited, slow, lost atomic.Int32
		ep := stripesim.EndpointCreateIntent
		rg.sim.FailUntil(ep, time.Now().Add(300*time.Millisecond), func() { down.Add(1) })
		rg.sim.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultRateLimited, OnInjected: func() { limited.Add(1) }})
		rg.sim.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultLatency, Latency: time.Millisecond, OnInjected: func() { slow.Add(1) }})
		rg.sim.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultDropConnection, OnInjected: func() { lost.Add(1) }})
		if r := rg.call("POST", "/v1/payment_intents", "k1", create); r.status != 500 {
			t.Fatalf("during the outage: %d %v", r.status, r.body)
		}
		if down.Load() != 1 || limited.Load() != 0 || slow.Load() != 0 || lost.Load() != 0 {
			t.Fatalf("reported down %d, rate limited %d, slow %d, lost %d; want only the outage",
				down.Load(), limited.Load(), slow.Load(), lost.Load())
		}
		time.Sleep(350 * time.Millisecond) // the outage ends
		if r := rg.call("POST", "/v1/payment_intents", "k1", create); r.status != 429 || limited.Load() != 1 {
			t.Fatalf("after the outage: %d %v, rate limited %d; want the armed 429", r.status, r.body, limited.Load())
		}
		// Without a key: net/http would resend a keyed POST on the dropped connection.
		if r := rg.call("POST", "/v1/payment_intents", "", create); r.transErr == nil || slow.Load() != 1 || lost.Load() != 1 {
			t.Fatalf("after the 429: %d %v, slow %d, lost %d; want the slow call whose connection drops",
				r.status, r.transErr, slow.Load(), lost.Load())
		}
	})

	for _, kind := range []stripesim.FaultKind{stripesim.FaultDropConnection, stripesim.FaultLoseResponse} {
		t.Run(string(kind)+" acts and saves the answer", func(t *testing.T) {
			// A short hold: the server gives up on the silent client before the client's own
			// timeout, which the adapter's behaviour suite covers.
			rg := newRig(t, stripesim.Options{LostResponseHold: 200 * time.Millisecond})
			rg.sim.InjectFault(stripesim.EndpointCreateIntent, stripesim.Fault{Kind: kind})
			began := time.Now()
			lost := rg.call("POST", "/v1/payment_intents", "k1", create)
			if lost.transErr == nil {
				t.Fatalf("got an answer: %d %v", lost.status, lost.body)
			}
			if kind == stripesim.FaultDropConnection && time.Since(began) > time.Second {
				t.Fatalf("dropping took %v", time.Since(began))
			}
			if n := len(rg.sim.Ledger().Entries); n != 1 {
				t.Fatalf("%d PaymentIntents after the lost answer", n)
			}
			replay := rg.call("POST", "/v1/payment_intents", "k1", create)
			if replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" || len(rg.sim.Ledger().Entries) != 1 {
				t.Fatalf("retry: %d %v", replay.status, replay.body)
			}
		})
	}

	t.Run("faults can be cleared", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		rg.sim.InjectFault(stripesim.EndpointCreateIntent, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
		rg.call("POST", "/v1/payment_intents", "k1", create)
		rg.call("POST", "/v1/payment_intents", "k2", create)
		rg.sim.ClearFaults()
		if r := rg.call("POST", "/v1/payment_intents", "k3", create); r.status != 200 {
			t.Fatalf("after clearing: %d", r.status)
		}
	})
}

func TestStartAndClose(t *testing.T) {
	sim := stripesim.New(stripesim.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sim.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL = %q", sim.URL())
	}
	cancel()
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := http.Get(sim.URL() + "/v1/payment_intents/pi_x")
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server still answering after its context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sim.Close() // idempotent
}

// capturedIntent authorizes and captures 1000 for res with pm.
func (rg *rig) capturedIntent(res, pm string) string {
	rg.t.Helper()
	id := rg.createIntent(res, "1000")
	if r := rg.confirm(id, res+":confirm:1", pm); r.status != 200 {
		rg.t.Fatalf("confirm: %d %v", r.status, r.body)
	}
	if r := rg.call("POST", "/v1/payment_intents/"+id+"/capture", res+":capture", nil); r.status != 200 {
		rg.t.Fatalf("capture: %d %v", r.status, r.body)
	}
	return id
}

// latestCharge reads the PaymentIntent's charge.
func (rg *rig) latestCharge(id string) map[string]any {
	rg.t.Helper()
	r := rg.call("GET", "/v1/payment_intents/"+id, "", url.Values{"expand[0]": {"latest_charge"}})
	ch, _ := r.body["latest_charge"].(map[string]any)
	if ch == nil {
		rg.t.Fatalf("no charge: %v", r.body)
	}
	return ch
}

// eventsAfter returns the types and data objects of the events emitted after the first n.
func (rg *rig) eventsAfter(n int) ([]string, []map[string]any) {
	rg.t.Helper()
	var (
		types   []string
		objects []map[string]any
	)
	for _, ev := range rg.sim.Events()[n:] {
		var body struct {
			Data struct {
				Object map[string]any `json:"object"`
			} `json:"data"`
		}
		if err := json.Unmarshal(ev.Payload, &body); err != nil {
			rg.t.Fatal(err)
		}
		types = append(types, ev.Type)
		objects = append(objects, body.Data.Object)
	}
	return types, objects
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRefundSettlement(t *testing.T) {
	t.Run("without a delay a refund succeeds at once", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.capturedIntent("rs1", stripesim.PaymentMethodVisa)
		before := len(rg.sim.Events())
		r := rg.call("POST", "/v1/refunds", "rs1:refund:1", url.Values{"payment_intent": {id}})
		if r.status != 200 || r.str("status") != stripesim.RefundStatusSucceeded || r.body["failure_reason"] != nil {
			t.Fatalf("refund: %d %v", r.status, r.body)
		}
		if types, _ := rg.eventsAfter(before); !sameStrings(types, []string{"charge.refunded"}) {
			t.Fatalf("events %v", types)
		}
		e := rg.sim.Ledger().ForReservation("rs1")[0]
		if e.Refunded != 1000 || e.Refunds != 1 || e.RefundsPending != 0 || e.RefundPendingAmount != 0 || e.Net() != 0 {
			t.Fatalf("ledger: %+v", e)
		}
	})

	t.Run("with a delay a refund is pending, counted in amount_refunded, and succeeds after the delay", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{RefundDelay: time.Hour})
		id := rg.capturedIntent("rs2", stripesim.PaymentMethodVisa)
		r := rg.call("POST", "/v1/refunds", "rs2:refund:1", url.Values{"payment_intent": {id}, "amount": {"400"}})
		if r.status != 200 || r.str("status") != stripesim.RefundStatusPending {
			t.Fatalf("refund: %d %v", r.status, r.body)
		}
		refundID := r.str("id")
		if ch := rg.latestCharge(id); ch["amount_refunded"] != float64(400) {
			t.Fatalf("charge while pending: %v", ch)
		}
		e := rg.sim.Ledger().ForReservation("rs2")[0]
		if e.Refunded != 0 || e.RefundsPending != 1 || e.RefundPendingAmount != 400 || e.Net() != 1000 {
			t.Fatalf("ledger while pending: %+v", e)
		}
		before := len(rg.sim.Events())
		rg.clock.Advance(time.Hour - time.Second)
		if got := rg.call("GET", "/v1/refunds/"+refundID, "", nil); got.str("status") != stripesim.RefundStatusPending {
			t.Fatalf("before the delay: %v", got.body)
		}
		rg.clock.Advance(time.Second)
		if got := rg.call("GET", "/v1/refunds/"+refundID, "", nil); got.str("status") != stripesim.RefundStatusSucceeded {
			t.Fatalf("after the delay: %v", got.body)
		}
		types, objects := rg.eventsAfter(before)
		if !sameStrings(types, []string{"charge.refund.updated", "refund.updated"}) ||
			objects[0]["id"] != refundID || objects[0]["status"] != stripesim.RefundStatusSucceeded {
			t.Fatalf("events %v %v", types, objects)
		}
		if ch := rg.latestCharge(id); ch["amount_refunded"] != float64(400) {
			t.Fatalf("charge after success: %v", ch)
		}
		e = rg.sim.Ledger().ByReservation()["rs2"]
		if e.Refunded != 400 || e.Refunds != 1 || e.RefundsPending != 0 || e.RefundPendingAmount != 0 || e.Net() != 600 {
			t.Fatalf("ledger after success: %+v", e)
		}
	})

	t.Run("pm_card_refundFail: pending, then failed after the delay; the merchant keeps the money", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{RefundDelay: time.Minute})
		id := rg.capturedIntent("rs3", stripesim.PaymentMethodRefundFail)
		r := rg.call("POST", "/v1/refunds", "rs3:refund:1", url.Values{"payment_intent": {id}})
		if r.status != 200 || r.str("status") != stripesim.RefundStatusPending {
			t.Fatalf("refund: %d %v", r.status, r.body)
		}
		refundID := r.str("id")
		if ch := rg.latestCharge(id); ch["amount_refunded"] != float64(1000) || ch["refunded"] != true {
			t.Fatalf("charge while pending: %v", ch)
		}
		before := len(rg.sim.Events())
		rg.clock.Advance(time.Minute)
		got := rg.call("GET", "/v1/refunds/"+refundID, "", nil)
		if got.str("status") != stripesim.RefundStatusFailed || got.str("failure_reason") != "expired_or_canceled_card" {
			t.Fatalf("after the delay: %v", got.body)
		}
		if ch := rg.latestCharge(id); ch["amount_refunded"] != float64(0) || ch["refunded"] != false {
			t.Fatalf("charge after the failure: %v", ch)
		}
		if pi := rg.call("GET", "/v1/payment_intents/"+id, "", nil); pi.str("status") != stripesim.StatusSucceeded {
			t.Fatalf("payment after the failure: %v", pi.body)
		}
		types, objects := rg.eventsAfter(before)
		if !sameStrings(types, []string{"charge.refund.updated", "refund.failed"}) ||
			objects[1]["id"] != refundID || objects[1]["status"] != stripesim.RefundStatusFailed ||
			objects[1]["failure_reason"] != "expired_or_canceled_card" || objects[1]["payment_intent"] != id {
			t.Fatalf("events %v %v", types, objects)
		}
		e := rg.sim.Ledger().ForReservation("rs3")[0]
		if e.Refunded != 0 || e.Refunds != 0 || e.RefundsPending != 0 || e.RefundsFailed != 1 || e.RefundFailedAmount != 1000 || e.Net() != 1000 {
			t.Fatalf("ledger after the failure: %+v", e)
		}
		// The failed amount is refundable again, under a new key.
		if again := rg.call("POST", "/v1/refunds", "rs3:refund:2", url.Values{"payment_intent": {id}}); again.status != 200 ||
			again.num("amount") != 1000 || again.str("id") == refundID {
			t.Fatalf("second refund: %d %v", again.status, again.body)
		}
	})

	t.Run("pm_card_refundFail without a delay: the refund is answered failed", func(t *testing.T) {
		rg := newRig(t, stripesim.Options{})
		id := rg.capturedIntent("rs4", stripesim.PaymentMethodRefundFail)
		before := len(rg.sim.Events())
		r := rg.call("POST", "/v1/refunds", "rs4:refund:1", url.Values{"payment_intent": {id}})
		if r.status != 200 || r.str("status") != stripesim.RefundStatusFailed || r.str("failure_reason") != "expired_or_canceled_card" {
			t.Fatalf("refund: %d %v", r.status, r.body)
		}
		if types, _ := rg.eventsAfter(before); !sameStrings(types, []string{"charge.refunded", "charge.refund.updated", "refund.failed"}) {
			t.Fatalf("events %v", types)
		}
		if ch := rg.latestCharge(id); ch["amount_refunded"] != float64(0) {
			t.Fatalf("charge: %v", ch)
		}
		e := rg.sim.Ledger().ForReservation("rs4")[0]
		if e.RefundsFailed != 1 || e.RefundsPending != 0 || e.RefundPendingAmount != 0 || e.Refunded != 0 || e.Net() != 1000 {
			t.Fatalf("ledger: %+v", e)
		}
	})
}
