package stripeadapter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// BenchmarkAuthorizeConfirmCapture measures one reservation's payment (create, confirm,
// capture: three HTTP round trips) through the adapter against the simulator on loopback.
//
//	go test -run '^$' -bench AuthorizeConfirmCapture -benchtime 2s ./internal/payment/stripeadapter/
func BenchmarkAuthorizeConfirmCapture(b *testing.B) {
	srv := newSimServerTB(b)
	p := srv.Provider(b, 5*time.Second, 0)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := fmt.Sprintf("bench-%d", i)
		auth, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: res, Amount: 1000, Currency: "eur"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID, PaymentMethod: stripesim.PaymentMethodVisa, Attempt: 1}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID}); err != nil {
			b.Fatal(err)
		}
	}
}
