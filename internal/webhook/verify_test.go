package webhook

import (
	"context"
	"errors"
	"testing"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// ctxVerifier records the context it was asked to verify under.
type ctxVerifier struct {
	fakeVerifier
	got context.Context
}

func (v *ctxVerifier) VerifyWebhookContext(ctx context.Context, payload []byte, sig string) (payment.Event, error) {
	v.got = ctx
	return v.VerifyWebhook(payload, sig)
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
