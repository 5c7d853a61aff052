package stripeadapter_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// TestCancelKeyCarriesTheAttempt checks the idempotency key each cancel attempt sends, and that
// a cancel without an attempt is refused before any request leaves.
func TestCancelKeyCarriesTheAttempt(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"pi_1","object":"payment_intent","status":"canceled","amount":4200,"currency":"eur","metadata":{"reservation_id":"res-1"}}`))
	}))
	t.Cleanup(srv.Close)
	a := adapterFor(srv.URL, 2*time.Second)
	ctx := context.Background()

	cases := []struct {
		name    string
		attempt int
		wantKey string
	}{
		{"first attempt", 1, "res-1:cancel:1"},
		{"same attempt again reuses its key", 1, "res-1:cancel:1"},
		{"attempt after a refusal", 2, "res-1:cancel:2"},
		{"many refusals later", 12, "res-1:cancel:12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			keys = nil
			mu.Unlock()
			auth, err := a.Cancel(ctx, payment.CancelRequest{ReservationID: "res-1", PaymentIntentID: "pi_1", Attempt: c.attempt})
			if err != nil || auth.State != payment.StateCanceled {
				t.Fatalf("cancel: %+v, %v", auth, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != 1 || keys[0] != c.wantKey {
				t.Fatalf("keys sent %q, want [%q]", keys, c.wantKey)
			}
		})
	}

	t.Run("no attempt: validation error, nothing sent", func(t *testing.T) {
		mu.Lock()
		keys = nil
		mu.Unlock()
		_, err := a.Cancel(ctx, payment.CancelRequest{ReservationID: "res-1", PaymentIntentID: "pi_1"})
		var invalid *payment.ValidationError
		if !errors.As(err, &invalid) || invalid.Field != "Attempt" {
			t.Fatalf("got %v, want ValidationError on Attempt", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(keys) != 0 {
			t.Fatalf("requests sent: %q", keys)
		}
	})
}
