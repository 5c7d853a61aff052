package stripeadapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// TestRefundKeyCarriesTheAttempt checks the idempotency key each refund attempt sends; an
// attempt below 1 is the first, so callers that never set one keep a single key.
func TestRefundKeyCarriesTheAttempt(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":4200,"currency":"eur"}`))
			return
		}
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"id":"re_1","object":"refund","status":"pending","amount":4200,"currency":"eur","payment_intent":"pi_1","metadata":{"reservation_id":"res-1"}}`))
	}))
	t.Cleanup(srv.Close)
	a := adapterFor(srv.URL, 2*time.Second)

	for _, c := range []struct {
		name    string
		attempt int
		wantKey string
	}{
		{"no attempt counts as the first", 0, "res-1:refund:1"},
		{"negative attempt counts as the first", -1, "res-1:refund:1"},
		{"first attempt", 1, "res-1:refund:1"},
		{"attempt after a failed refund", 2, "res-1:refund:2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			keys = nil
			mu.Unlock()
			r, err := a.Refund(context.Background(), payment.RefundRequest{ReservationID: "res-1", PaymentIntentID: "pi_1", Attempt: c.attempt})
			if err != nil || r.Status != payment.RefundPending || r.RefundID != "re_1" {
				t.Fatalf("refund: %+v, %v", r, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != 1 || keys[0] != c.wantKey {
				t.Fatalf("keys sent %q, want [%q]", keys, c.wantKey)
			}
		})
	}
}
