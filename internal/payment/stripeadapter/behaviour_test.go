package stripeadapter_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/payment/stripeadapter"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// serverUnderTest is a stateful Stripe-compatible server plus the controls the behavioural
// suite needs. The suite talks to it only through the adapter (the port), and checks money
// only through the server's own books.
type serverUnderTest interface {
	// Provider returns an adapter whose HTTP client gives up after timeout, with stripe-go's
	// own retries as given.
	Provider(t testing.TB, timeout time.Duration, retries int64) payment.Provider
	// Advance moves the server's clock (3-D Secure completion, late authorization).
	Advance(d time.Duration)
	// LoseNextResponse makes the next call of op act and then lose its response.
	LoseNextResponse(op payment.Op)
	// FailNextBeforeActing makes the next call of op fail with 500 before acting.
	FailNextBeforeActing(op payment.Op)
	// SlowDown adds latency to every call of op.
	SlowDown(op payment.Op, d time.Duration)
	// Books returns what the server authorized, captured, voided and refunded for a
	// reservation, one entry per PaymentIntent.
	Books(reservationID string) []stripesim.LedgerEntry
	// Timing gives the server's delays for the payment methods that use them.
	ThreeDSDelay() time.Duration
	LateAuthorizationDelay() time.Duration
	// RefundDelay is how long a refund stays pending before it settles.
	RefundDelay() time.Duration
}

// simServer runs internal/twin/stripesim on a fake clock.
type simServer struct {
	sim   *stripesim.Sim
	clock *clock.Fake
	opts  stripesim.Options
}

func newSimServer(t *testing.T) *simServer { return newSimServerTB(t) }

func newSimServerTB(t testing.TB) *simServer {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	opts := stripesim.Options{
		Clock:                  fake,
		APIKey:                 "sk_test_sim",
		ThreeDSDelay:           20 * time.Second,
		LateAuthorizationDelay: 3 * time.Minute,
		LostResponseHold:       5 * time.Second,
		// Refunds stay pending for a while, as refunds can at Stripe, so the suite sees the
		// difference between an accepted refund and a succeeded one.
		RefundDelay: 10 * time.Minute,
		// Stripe refuses to cancel a processing payment in all but rare cases.
		RefuseCancelWhileProcessing: true,
	}
	sim := stripesim.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(func() { cancel(); sim.Close() })
	return &simServer{sim: sim, clock: fake, opts: opts}
}

var simEndpoints = map[payment.Op]stripesim.Endpoint{
	payment.OpAuthorize:            stripesim.EndpointCreateIntent,
	payment.OpConfirmPaymentMethod: stripesim.EndpointConfirmIntent,
	payment.OpRetrieve:             stripesim.EndpointRetrieveIntent,
	payment.OpCapture:              stripesim.EndpointCaptureIntent,
	payment.OpCancel:               stripesim.EndpointCancelIntent,
	payment.OpRefund:               stripesim.EndpointCreateRefund,

	payment.OpRetrieveRefund: stripesim.EndpointRetrieveRefund,
}

func (s *simServer) Provider(t testing.TB, timeout time.Duration, retries int64) payment.Provider {
	api := stripeadapter.NewClientAPIWithConfig(stripeadapter.ClientConfig{
		Key:               "sk_test_sim",
		BaseURL:           s.sim.URL(),
		HTTPClient:        &http.Client{Timeout: timeout},
		MaxNetworkRetries: retries,
		Logger:            quietLogger(),
	})
	return stripeadapter.New(api, quietLogger())
}
func (s *simServer) Advance(d time.Duration)            { s.clock.Advance(d) }
func (s *simServer) LoseNextResponse(op payment.Op)     { s.sim.LoseResponseNext(simEndpoints[op], 1) }
func (s *simServer) FailNextBeforeActing(op payment.Op) { s.sim.FailNext(simEndpoints[op], 1) }
func (s *simServer) SlowDown(op payment.Op, d time.Duration) {
	s.sim.SetLatency(simEndpoints[op], d)
}
func (s *simServer) Books(reservationID string) []stripesim.LedgerEntry {
	return s.sim.Ledger().ForReservation(reservationID)
}
func (s *simServer) ThreeDSDelay() time.Duration           { return s.opts.ThreeDSDelay }
func (s *simServer) LateAuthorizationDelay() time.Duration { return s.opts.LateAuthorizationDelay }
func (s *simServer) RefundDelay() time.Duration            { return s.opts.RefundDelay }

func TestBehaviourAgainstSimulator(t *testing.T) {
	runBehaviour(t, func(t *testing.T) serverUnderTest { return newSimServer(t) })
}

// runBehaviour is the behavioural suite of the payment port. Each case gets a fresh server.
func runBehaviour(t *testing.T, newServer func(t *testing.T) serverUnderTest) {
	ctx := context.Background()
	const amount, currency = int64(4999), "eur"

	authorize := func(t *testing.T, p payment.Provider, res, method string, attempt int) payment.Authorization {
		t.Helper()
		auth, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: res, Amount: amount, Currency: currency})
		if err != nil {
			t.Fatalf("create authorization: %v", err)
		}
		if auth.State != payment.StateAuthorizing || auth.ProviderStatus != "requires_payment_method" || auth.ReservationID != res {
			t.Fatalf("new authorization = %+v", auth)
		}
		auth, err = p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID, PaymentMethod: method, Attempt: attempt})
		if err != nil {
			t.Fatalf("confirm with %s: %v", method, err)
		}
		return auth
	}
	oneEntry := func(t *testing.T, srv serverUnderTest, res string) stripesim.LedgerEntry {
		t.Helper()
		books := srv.Books(res)
		if len(books) != 1 {
			t.Fatalf("books for %s hold %d PaymentIntents, want 1: %+v", res, len(books), books)
		}
		return books[0]
	}

	t.Run("authorize then capture", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-capture", stripesim.PaymentMethodVisa, 1)
		if auth.State != payment.StateAuthorized || auth.AmountCapturable != amount {
			t.Fatalf("after confirm: %+v", auth)
		}
		wantDeadline := auth.Created.Add(payment.DefaultAuthorizationValidity)
		if !auth.CaptureBefore.Equal(wantDeadline) {
			t.Fatalf("CaptureBefore = %v, want %v", auth.CaptureBefore, wantDeadline)
		}
		captured, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: "res-capture", PaymentIntentID: auth.PaymentIntentID})
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		if captured.State != payment.StatePaid || captured.AmountReceived != amount {
			t.Fatalf("after capture: %+v", captured)
		}
		e := oneEntry(t, srv, "res-capture")
		if e.Authorized != amount || e.Captured != amount || e.Captures != 1 || e.Held() != 0 {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("decline then retry with another method on the same reservation", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		const res = "res-decline"
		created, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: res, Amount: amount, Currency: currency})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			method, declineCode string
			attempt             int
		}{
			{stripesim.PaymentMethodDeclined, "generic_decline", 1},
			{stripesim.PaymentMethodInsufficientFunds, "insufficient_funds", 2},
		} {
			_, err = p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: created.PaymentIntentID, PaymentMethod: tc.method, Attempt: tc.attempt})
			var declined *payment.Declined
			if !errors.As(err, &declined) || declined.DeclineCode != tc.declineCode || declined.ProviderStatus != "requires_payment_method" {
				t.Fatalf("confirm with %s: err = %v, want Declined(%s)", tc.method, err, tc.declineCode)
			}
		}
		truth, err := p.Retrieve(ctx, created.PaymentIntentID)
		if err != nil {
			t.Fatal(err)
		}
		if truth.State != payment.StateFailed || truth.LastDecline == nil || truth.LastDecline.DeclineCode != "insufficient_funds" {
			t.Fatalf("after declines: %+v", truth)
		}
		// A retried Lambda of attempt 2 replays the stored decline instead of charging.
		_, err = p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: created.PaymentIntentID, PaymentMethod: stripesim.PaymentMethodInsufficientFunds, Attempt: 2})
		if !payment.IsDeclined(err) {
			t.Fatalf("replayed attempt 2: %v, want the stored decline", err)
		}
		// Reusing a declined attempt's key with another card is the alf.io #1254 trap: the
		// provider refuses it, which is why every attempt has its own key.
		_, err = p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: created.PaymentIntentID, PaymentMethod: stripesim.PaymentMethodVisa, Attempt: 2})
		var failed *payment.Failed
		if !errors.As(err, &failed) || failed.Type != "idempotency_error" {
			t.Fatalf("attempt 2 with another card: %v, want Failed(idempotency_error)", err)
		}
		auth, err := p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: res, PaymentIntentID: created.PaymentIntentID, PaymentMethod: stripesim.PaymentMethodVisa, Attempt: 3})
		if err != nil || auth.State != payment.StateAuthorized || auth.LastDecline != nil {
			t.Fatalf("attempt 3 with a good card: %+v, %v", auth, err)
		}
		e := oneEntry(t, srv, res)
		if e.Declines != 2 || e.Authorized != amount || e.Captured != 0 {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("3-D Secure completed late", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-3ds", stripesim.PaymentMethodThreeDSecure, 1)
		if auth.State != payment.StateAuthorizing || auth.ProviderStatus != "requires_action" || auth.NextAction != "use_stripe_sdk" {
			t.Fatalf("after confirm: %+v", auth)
		}
		if !auth.CaptureBefore.IsZero() {
			t.Fatalf("capture deadline before authorization: %v", auth.CaptureBefore)
		}
		srv.Advance(srv.ThreeDSDelay() - time.Second)
		if still, _ := p.Retrieve(ctx, auth.PaymentIntentID); still.State != payment.StateAuthorizing {
			t.Fatalf("authorized before the buyer finished: %+v", still)
		}
		srv.Advance(time.Second)
		done, err := p.Retrieve(ctx, auth.PaymentIntentID)
		if err != nil || done.State != payment.StateAuthorized || done.NextAction != "" || done.CaptureBefore.IsZero() {
			t.Fatalf("after the buyer authenticated: %+v, %v", done, err)
		}
	})

	t.Run("3-D Secure never completed, then voided", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-3ds-never", stripesim.PaymentMethodThreeDSecureAbandoned, 1)
		srv.Advance(24 * time.Hour)
		still, err := p.Retrieve(ctx, auth.PaymentIntentID)
		if err != nil || still.State != payment.StateAuthorizing || still.ProviderStatus != "requires_action" {
			t.Fatalf("a day later: %+v, %v", still, err)
		}
		canceled, err := p.Cancel(ctx, payment.CancelRequest{ReservationID: "res-3ds-never", PaymentIntentID: auth.PaymentIntentID, Attempt: 1, Reason: "abandoned"})
		if err != nil || canceled.State != payment.StateCanceled {
			t.Fatalf("cancel: %+v, %v", canceled, err)
		}
		if e := oneEntry(t, srv, "res-3ds-never"); e.Authorized != 0 || e.Voided != 0 {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("authorization that succeeds late", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-late", stripesim.PaymentMethodAuthorizeLate, 1)
		if auth.State != payment.StateAuthorizing || auth.ProviderStatus != "processing" {
			t.Fatalf("after confirm: %+v", auth)
		}
		srv.Advance(srv.LateAuthorizationDelay())
		late, err := p.Retrieve(ctx, auth.PaymentIntentID)
		if err != nil || late.State != payment.StateAuthorized {
			t.Fatalf("after the delay: %+v, %v", late, err)
		}
	})

	t.Run("cancel refused while processing; the next attempt voids it once authorized", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-cancel-late", stripesim.PaymentMethodAuthorizeLate, 1)
		if auth.ProviderStatus != "processing" {
			t.Fatalf("after confirm: %+v", auth)
		}
		first := payment.CancelRequest{ReservationID: "res-cancel-late", PaymentIntentID: auth.PaymentIntentID, Attempt: 1, Reason: "abandoned"}
		_, err := p.Cancel(ctx, first)
		var failed *payment.Failed
		if !errors.As(err, &failed) || failed.Code != "payment_intent_unexpected_state" {
			t.Fatalf("cancel while processing: %v, want Failed(payment_intent_unexpected_state)", err)
		}
		srv.Advance(srv.LateAuthorizationDelay())
		if late, err := p.Retrieve(ctx, auth.PaymentIntentID); err != nil || late.State != payment.StateAuthorized {
			t.Fatalf("after the delay: %+v, %v", late, err)
		}
		// The same attempt reuses its key: the stored refusal is replayed and nothing moves.
		if _, err := p.Cancel(ctx, first); !errors.As(err, &failed) || failed.Code != "payment_intent_unexpected_state" {
			t.Fatalf("same attempt again: %v, want the stored refusal", err)
		}
		if e := oneEntry(t, srv, "res-cancel-late"); e.Voided != 0 || e.Held() != amount {
			t.Fatalf("books after the replayed refusal: %+v", e)
		}
		next := first
		next.Attempt = 2
		canceled, err := p.Cancel(ctx, next)
		if err != nil || canceled.State != payment.StateCanceled {
			t.Fatalf("next attempt: %+v, %v", canceled, err)
		}
		if again, err := p.Cancel(ctx, next); err != nil || again.State != payment.StateCanceled {
			t.Fatalf("next attempt repeated: %+v, %v", again, err)
		}
		if e := oneEntry(t, srv, "res-cancel-late"); e.Voided != amount || e.Held() != 0 || e.Captured != 0 {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("capture whose response is lost is uncertain and captures once on retry", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 500*time.Millisecond, 0)
		auth := authorize(t, p, "res-lost", stripesim.PaymentMethodVisa, 1)
		srv.LoseNextResponse(payment.OpCapture)
		req := payment.CaptureRequest{ReservationID: "res-lost", PaymentIntentID: auth.PaymentIntentID}
		_, err := p.Capture(ctx, req)
		var uncertain *payment.Uncertain
		if !errors.As(err, &uncertain) || uncertain.Reason != "timeout" || uncertain.PaymentIntentID != auth.PaymentIntentID {
			t.Fatalf("capture with lost response: %v, want Uncertain(timeout)", err)
		}
		// The provider acted although the caller could not know.
		if e := oneEntry(t, srv, "res-lost"); e.Captures != 1 {
			t.Fatalf("books after the lost response: %+v", e)
		}
		captured, err := p.Capture(ctx, req)
		if err != nil || captured.State != payment.StatePaid {
			t.Fatalf("retry with the same key: %+v, %v", captured, err)
		}
		truth, err := p.Retrieve(ctx, auth.PaymentIntentID)
		if err != nil || truth.State != payment.StatePaid || truth.AmountReceived != amount {
			t.Fatalf("retrieve: %+v, %v", truth, err)
		}
		if e := oneEntry(t, srv, "res-lost"); e.Captures != 1 || e.Captured != amount {
			t.Fatalf("books after the retry: %+v", e)
		}
	})

	t.Run("capture failing before acting is uncertain and captures once on retry", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-500", stripesim.PaymentMethodVisa, 1)
		srv.FailNextBeforeActing(payment.OpCapture)
		req := payment.CaptureRequest{ReservationID: "res-500", PaymentIntentID: auth.PaymentIntentID}
		_, err := p.Capture(ctx, req)
		var uncertain *payment.Uncertain
		if !errors.As(err, &uncertain) || uncertain.Reason != "server_error" || uncertain.HTTPStatus != 500 {
			t.Fatalf("capture on 500: %v, want Uncertain(server_error)", err)
		}
		if e := oneEntry(t, srv, "res-500"); e.Captures != 0 {
			t.Fatalf("books after the 500: %+v", e)
		}
		if captured, err := p.Capture(ctx, req); err != nil || captured.State != payment.StatePaid {
			t.Fatalf("retry: %+v, %v", captured, err)
		}
		if e := oneEntry(t, srv, "res-500"); e.Captures != 1 {
			t.Fatalf("books after the retry: %+v", e)
		}
	})

	t.Run("stripe-go own retry after a lost response reuses the key", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 1)
		auth := authorize(t, p, "res-drop", stripesim.PaymentMethodVisa, 1)
		srv.LoseNextResponse(payment.OpCapture)
		captured, err := srv.Provider(t, 300*time.Millisecond, 1).Capture(ctx, payment.CaptureRequest{ReservationID: "res-drop", PaymentIntentID: auth.PaymentIntentID})
		if err != nil || captured.State != payment.StatePaid {
			t.Fatalf("capture with one client retry: %+v, %v", captured, err)
		}
		if e := oneEntry(t, srv, "res-drop"); e.Captures != 1 {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("concurrent capture with the key in flight is uncertain, one capture", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-concurrent", stripesim.PaymentMethodVisa, 1)
		srv.SlowDown(payment.OpCapture, 600*time.Millisecond)
		req := payment.CaptureRequest{ReservationID: "res-concurrent", PaymentIntentID: auth.PaymentIntentID}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 1 {
					time.Sleep(150 * time.Millisecond) // well inside the first call's latency
				}
				_, errs[i] = p.Capture(ctx, req)
			}()
		}
		wg.Wait()
		var uncertain *payment.Uncertain
		if errs[0] != nil || !errors.As(errs[1], &uncertain) || uncertain.Reason != "idempotency_key_in_use" {
			t.Fatalf("concurrent captures: %v / %v, want success / Uncertain(idempotency_key_in_use)", errs[0], errs[1])
		}
		if e := oneEntry(t, srv, "res-concurrent"); e.Captures != 1 {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("cancel after authorization releases it", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		auth := authorize(t, p, "res-void", stripesim.PaymentMethodVisa, 1)
		req := payment.CancelRequest{ReservationID: "res-void", PaymentIntentID: auth.PaymentIntentID, Attempt: 1, Reason: "abandoned"}
		canceled, err := p.Cancel(ctx, req)
		if err != nil || canceled.State != payment.StateCanceled || canceled.AmountCapturable != 0 {
			t.Fatalf("cancel: %+v, %v", canceled, err)
		}
		if again, err := p.Cancel(ctx, req); err != nil || again.State != payment.StateCanceled {
			t.Fatalf("repeated cancel: %+v, %v", again, err)
		}
		_, err = p.Capture(ctx, payment.CaptureRequest{ReservationID: "res-void", PaymentIntentID: auth.PaymentIntentID})
		var failed *payment.Failed
		if !errors.As(err, &failed) || failed.Code != "payment_intent_unexpected_state" {
			t.Fatalf("capture after cancel: %v, want Failed(payment_intent_unexpected_state)", err)
		}
		e := oneEntry(t, srv, "res-void")
		if e.Voided != amount || e.Held() != 0 || e.Captured != 0 {
			t.Fatalf("books: %+v", e)
		}
	})

	captured := func(t *testing.T, p payment.Provider, res, method string) payment.Authorization {
		t.Helper()
		auth := authorize(t, p, res, method, 1)
		if _, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID}); err != nil {
			t.Fatalf("capture: %v", err)
		}
		return auth
	}

	t.Run("refund is pending until the provider settles it; only RetrieveRefund shows it succeeded", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		const res = "res-refund"
		auth := captured(t, p, res, stripesim.PaymentMethodVisa)
		req := payment.RefundRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID, Attempt: 1, Reason: "requested_by_customer"}
		refund, err := p.Refund(ctx, req)
		if err != nil || refund.Amount != amount || refund.Status != payment.RefundPending || refund.RefundID == "" ||
			refund.ReservationID != res || refund.PaymentIntentID != auth.PaymentIntentID {
			t.Fatalf("refund: %+v, %v", refund, err)
		}
		// The PaymentIntent cannot tell a pending refund from a succeeded one.
		if a := refund.Authorization; a == nil || a.State != payment.StateRefunded || a.AmountRefunded != amount {
			t.Fatalf("payment read back while the refund is pending: %+v", a)
		}
		again, err := p.Refund(ctx, req)
		if err != nil || again.RefundID != refund.RefundID {
			t.Fatalf("repeated refund: %+v, %v; want the first refund replayed", again, err)
		}
		if e := oneEntry(t, srv, res); e.Refunded != 0 || e.Refunds != 0 || e.RefundsPending != 1 ||
			e.RefundPendingAmount != amount || e.Net() != amount {
			t.Fatalf("books while pending: %+v", e)
		}
		srv.Advance(srv.RefundDelay() - time.Second)
		if still, err := p.RetrieveRefund(ctx, refund.RefundID); err != nil || still.Status != payment.RefundPending {
			t.Fatalf("before the delay: %+v, %v", still, err)
		}
		srv.Advance(time.Second)
		done, err := p.RetrieveRefund(ctx, refund.RefundID)
		if err != nil || done.Status != payment.RefundSucceeded || done.RefundID != refund.RefundID || done.Amount != amount ||
			done.ReservationID != res || done.PaymentIntentID != auth.PaymentIntentID || done.FailureReason != "" {
			t.Fatalf("after the delay: %+v, %v", done, err)
		}
		if e := oneEntry(t, srv, res); e.Refunded != amount || e.Refunds != 1 || e.RefundsPending != 0 ||
			e.RefundPendingAmount != 0 || e.Net() != 0 {
			t.Fatalf("books after success: %+v", e)
		}
	})

	t.Run("refund that fails at the provider leaves the money with the merchant; the next attempt has its own key", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		const res = "res-refund-fails"
		auth := captured(t, p, res, stripesim.PaymentMethodRefundFail)
		first := payment.RefundRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID, Attempt: 1}
		refund, err := p.Refund(ctx, first)
		if err != nil || refund.Status != payment.RefundPending || refund.Authorization == nil ||
			refund.Authorization.State != payment.StateRefunded {
			t.Fatalf("refund: %+v, %v", refund, err)
		}
		srv.Advance(srv.RefundDelay())
		failed, err := p.RetrieveRefund(ctx, refund.RefundID)
		if err != nil || failed.Status != payment.RefundFailed || failed.FailureReason != "expired_or_canceled_card" {
			t.Fatalf("after the delay: %+v, %v", failed, err)
		}
		truth, err := p.Retrieve(ctx, auth.PaymentIntentID)
		if err != nil || truth.State != payment.StatePaid || truth.AmountRefunded != 0 {
			t.Fatalf("payment after the failed refund: %+v, %v", truth, err)
		}
		if e := oneEntry(t, srv, res); e.Refunded != 0 || e.RefundsFailed != 1 || e.RefundFailedAmount != amount ||
			e.RefundsPending != 0 || e.Net() != amount {
			t.Fatalf("books after the failure: %+v", e)
		}
		// The same attempt replays its stored answer (the refund as it was created) and acts
		// no more; only RetrieveRefund is current.
		if replay, err := p.Refund(ctx, first); err != nil || replay.RefundID != refund.RefundID {
			t.Fatalf("same attempt again: %+v, %v", replay, err)
		}
		if e := oneEntry(t, srv, res); e.RefundsPending != 0 || e.RefundsFailed != 1 {
			t.Fatalf("books after the replay: %+v", e)
		}
		next := first
		next.Attempt = 2
		second, err := p.Refund(ctx, next)
		if err != nil || second.RefundID == refund.RefundID || second.Status != payment.RefundPending {
			t.Fatalf("next attempt: %+v, %v; want a new pending refund", second, err)
		}
		if e := oneEntry(t, srv, res); e.RefundsPending != 1 || e.RefundPendingAmount != amount || e.RefundsFailed != 1 {
			t.Fatalf("books after the next attempt: %+v", e)
		}
	})

	t.Run("refund whose response is lost is uncertain and refunds once on retry", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 500*time.Millisecond, 0)
		const res = "res-refund-lost"
		auth := captured(t, p, res, stripesim.PaymentMethodVisa)
		srv.LoseNextResponse(payment.OpRefund)
		req := payment.RefundRequest{ReservationID: res, PaymentIntentID: auth.PaymentIntentID, Attempt: 1}
		if _, err := p.Refund(ctx, req); !payment.IsUncertain(err) {
			t.Fatalf("refund with lost response: %v, want Uncertain", err)
		}
		refund, err := p.Refund(ctx, req)
		if err != nil || refund.Status != payment.RefundPending {
			t.Fatalf("retry with the same attempt: %+v, %v", refund, err)
		}
		if e := oneEntry(t, srv, res); e.RefundsPending != 1 || e.RefundPendingAmount != amount {
			t.Fatalf("books: %+v", e)
		}
	})

	t.Run("retrieving an unknown refund is a definitive not-found", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		_, err := p.RetrieveRefund(ctx, "re_doesnotexist")
		var failed *payment.Failed
		if !errors.As(err, &failed) || !failed.NotFound() || failed.Category != payment.FailureNotFound || failed.Op != payment.OpRetrieveRefund {
			t.Fatalf("retrieve unknown refund: %v, want Failed(not_found)", err)
		}
	})

	t.Run("idempotent create replays and a changed request is refused", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		req := payment.AuthorizationRequest{ReservationID: "res-idem", Amount: amount, Currency: currency}
		first, err := p.CreateOrReuseAuthorization(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		second, err := p.CreateOrReuseAuthorization(ctx, req)
		if err != nil || second.PaymentIntentID != first.PaymentIntentID {
			t.Fatalf("replay: %+v, %v; want %s", second, err, first.PaymentIntentID)
		}
		reuse, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: "res-idem", Amount: amount, Currency: currency, PaymentIntentID: first.PaymentIntentID})
		if err != nil || reuse.PaymentIntentID != first.PaymentIntentID {
			t.Fatalf("reuse by id: %+v, %v", reuse, err)
		}
		changed := req
		changed.Amount = amount + 1
		_, err = p.CreateOrReuseAuthorization(ctx, changed)
		var failed *payment.Failed
		if !errors.As(err, &failed) || failed.Type != "idempotency_error" || failed.HTTPStatus != 400 {
			t.Fatalf("changed request: %v, want Failed(idempotency_error)", err)
		}
		_ = oneEntry(t, srv, "res-idem")
	})

	t.Run("unknown payment intent is a definitive failure", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		_, err := p.Retrieve(ctx, "pi_doesnotexist")
		var failed *payment.Failed
		if !errors.As(err, &failed) || !failed.NotFound() {
			t.Fatalf("retrieve unknown: %v, want Failed(resource_missing)", err)
		}
	})

	t.Run("invalid requests are refused before any call", func(t *testing.T) {
		srv := newServer(t)
		p := srv.Provider(t, 2*time.Second, 0)
		for name, call := range map[string]func() error{
			"no reservation": func() error {
				_, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{Amount: 1, Currency: "eur"})
				return err
			},
			"zero amount": func() error {
				_, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: "r", Currency: "eur"})
				return err
			},
			"attempt 0": func() error {
				_, err := p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: "r", PaymentIntentID: "pi", PaymentMethod: "pm"})
				return err
			},
			"capture without intent": func() error {
				_, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: "r"})
				return err
			},
			"retrieve refund without id": func() error {
				_, err := p.RetrieveRefund(ctx, "")
				return err
			},
		} {
			var invalid *payment.ValidationError
			if err := call(); !errors.As(err, &invalid) {
				t.Errorf("%s: %v, want ValidationError", name, err)
			}
		}
		if l := srv.Books("r"); len(l) != 0 {
			t.Fatalf("books: %+v", l)
		}
	})
}
