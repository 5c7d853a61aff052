package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeVerifier accepts payloads {"id","type","pi","res","apiVersion"} signed "ok"; an
// apiVersion other than pinnedAPIVersion is reported as a mismatch, as the Stripe adapter does.
// The signature sigSecretUnavailable plays a signing secret that cannot be read.
type fakeVerifier struct{}

const (
	pinnedAPIVersion     = "2025-01-01"
	sigSecretUnavailable = "secret-unavailable"
)

func (fakeVerifier) VerifyWebhook(_ context.Context, payload []byte, sig string) (payment.Event, error) {
	if sig == sigSecretUnavailable {
		return payment.Event{}, &payment.WebhookUnverifiable{Err: errors.New("secrets manager: throttled")}
	}
	if sig != "ok" {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookBadSignature}
	}
	var v struct{ ID, Type, PI, Res, APIVersion string }
	if err := json.Unmarshal(payload, &v); err != nil {
		return payment.Event{}, &payment.WebhookRejected{Reason: payment.WebhookMalformedBody, Err: err}
	}
	return payment.Event{ID: v.ID, Type: v.Type, PaymentIntentID: v.PI, ReservationID: v.Res,
		APIVersion: v.APIVersion, APIVersionMismatch: v.APIVersion != "" && v.APIVersion != pinnedAPIVersion}, nil
}

// memDedupe is DedupeStore in memory, with the same lease semantics as DynamoDedupe.
type memDedupe struct {
	mu        sync.Mutex
	now       func() time.Time
	callbacks map[string]memCallback
}

type memCallback struct {
	sent    bool
	lease   time.Time
	eventID string
}

func newMemDedupe(now func() time.Time) *memDedupe {
	return &memDedupe{now: now, callbacks: map[string]memCallback{}}
}

func (m *memDedupe) ClaimCallback(_ context.Context, k, eventID string, lease time.Duration) (Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.callbacks[k]
	switch {
	case ok && c.sent && c.eventID == eventID:
		return SentByThisEvent, nil
	case ok && c.sent:
		return AlreadySent, nil
	case ok && m.now().Before(c.lease):
		return InProgress, nil
	}
	c.lease, c.eventID = m.now().Add(lease), eventID
	m.callbacks[k] = c
	return Claimed, nil
}

func (m *memDedupe) CompleteCallback(_ context.Context, k, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.callbacks[k]
	c.sent = true
	m.callbacks[k] = c
	return nil
}

type rig struct {
	h       *Handler
	clock   *clock.Fake
	store   *sagatest.MemStore
	pay     *sagatest.Payments
	dedupe  *memDedupe
	sfn     *sagatest.StepFunctions
	metrics *metrics.Memory
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{clock: clock.NewFake(t0), sfn: sagatest.NewStepFunctions(), pay: sagatest.NewPayments(), metrics: metrics.NewMemory()}
	r.store = sagatest.NewMemStore(r.clock.Now)
	r.put(reservation.Reservation{ID: "r1", CustomerID: "alice", Inventory: reservation.PaymentPending, Payment: reservation.Authorizing,
		PaymentIntentID: "pi_1", TaskToken: "tok-1", Version: 3, HoldExpiresAt: t0.Add(5 * time.Minute)})
	r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StateAuthorized, ProviderStatus: "requires_capture"})
	r.dedupe = newMemDedupe(r.clock.Now)
	h, err := New(Deps{Verifier: fakeVerifier{}, Payments: r.pay, Store: r.store, Dedupe: r.dedupe, SFN: r.sfn,
		Now: r.clock.Now, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: r.metrics})
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	return r
}

// reservation reads a stored reservation.
func (r *rig) reservation(id string) reservation.Reservation {
	res, _ := r.store.Reservation(id)
	return res
}

// put stores a reservation as it is (the state some earlier write left).
func (r *rig) put(res reservation.Reservation) { sagatest.PutReservation(r.store, res) }

// change changes the stored "r1" in place.
func (r *rig) change(mut func(*reservation.Reservation)) {
	res := r.reservation("r1")
	mut(&res)
	r.put(res)
}

// updates lists the payment updates the store applied.
func (r *rig) updates() []sagatest.Change {
	var out []sagatest.Change
	for _, c := range r.store.Changes() {
		if c.Op == sagatest.OpUpdatePayment {
			out = append(out, c)
		}
	}
	return out
}

func (r *rig) deliver(t *testing.T, id, typ, pi, sig string) events.APIGatewayProxyResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"id": id, "type": typ, "pi": pi})
	resp, err := r.h.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: "POST", Path: "/webhooks/stripe", Body: string(body),
		Headers: map[string]string{"stripe-signature": sig},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func action(t *testing.T, resp events.APIGatewayProxyResponse) Action {
	t.Helper()
	var res Result
	if err := json.Unmarshal([]byte(resp.Body), &res); err != nil {
		t.Fatal(err)
	}
	return res.Action
}

func TestWebhookOutcomes(t *testing.T) {
	cases := []struct {
		name        string
		setup       func(*rig)
		sig         string
		pi          string
		wantStatus  int
		wantAction  Action
		wantPayment reservation.PaymentState
		wantSuccess int
		wantFailure string
		// wantRecorded: the delivery is done, so delivering the same event again changes
		// nothing and sends nothing.
		wantRecorded bool
	}{
		{name: "bad signature changes nothing", sig: "forged", pi: "pi_1", wantStatus: 400,
			wantPayment: reservation.Authorizing},
		{name: "an unreadable signing secret changes nothing and asks for a redelivery", sig: sigSecretUnavailable, pi: "pi_1",
			wantStatus: 503, wantPayment: reservation.Authorizing},
		{name: "authorized: transition and SendTaskSuccess", sig: "ok", pi: "pi_1", wantStatus: 200,
			wantAction: ActionAuthorized, wantPayment: reservation.Authorized, wantSuccess: 1, wantRecorded: true},
		{name: "declined: FAILED recorded and PaymentDeclined, the open intent left to compensation's void", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StateFailed,
				ProviderStatus: "requires_payment_method", LastDecline: &payment.Declined{Code: "card_declined"}})
		}, wantStatus: 200, wantAction: ActionDeclined, wantPayment: reservation.Failed, wantFailure: saga.ErrPaymentDeclined, wantRecorded: true},
		{name: "a cancelled, waiting reservation authorized: recorded, and CustomerCanceled instead of success", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.change(func(res *reservation.Reservation) { res.CustomerCanceled = true })
		}, wantStatus: 200, wantAction: ActionCustomerCanceled, wantPayment: reservation.Authorized, wantFailure: saga.ErrCustomerCanceled, wantRecorded: true},
		{name: "a cancelled, waiting reservation declined: CustomerCanceled", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.change(func(res *reservation.Reservation) { res.CustomerCanceled = true })
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StateFailed, ProviderStatus: "requires_payment_method"})
		}, wantStatus: 200, wantAction: ActionCustomerCanceled, wantPayment: reservation.Failed, wantFailure: saga.ErrCustomerCanceled, wantRecorded: true},
		{name: "a cancelled reservation the saga no longer waits for: nothing changes", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.change(func(res *reservation.Reservation) {
				res.CustomerCanceled, res.Inventory, res.Outcome = true, reservation.Released, reservation.OutcomeReleased
			})
		}, wantStatus: 200, wantAction: ActionStale, wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "canceled at the provider: CANCELED and PaymentDeclined", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StateCanceled, ProviderStatus: "canceled"})
		}, wantStatus: 200, wantAction: ActionDeclined, wantPayment: reservation.Canceled, wantFailure: saga.ErrPaymentDeclined, wantRecorded: true},
		{name: "still authenticating: nothing to do", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", ReservationID: "r1", State: payment.StateAuthorizing, ProviderStatus: "requires_action"})
		}, wantStatus: 200, wantAction: ActionIgnored, wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "hold expired: the saga reconciles, the webhook changes nothing", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.clock.Set(t0.Add(5 * time.Minute))
		}, wantStatus: 200, wantAction: ActionStale, wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "reservation already released", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.change(func(res *reservation.Reservation) {
				res.Inventory, res.Payment = reservation.Released, reservation.Canceled
			})
		}, wantStatus: 200, wantAction: ActionStale, wantPayment: reservation.Canceled, wantRecorded: true},
		{name: "another PaymentIntent than the reservation's", sig: "ok", pi: "pi_old", setup: func(r *rig) {
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_old", ReservationID: "r1", State: payment.StateAuthorized})
		}, wantStatus: 200, wantAction: ActionStale, wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "unknown reservation", sig: "ok", pi: "pi_x", setup: func(r *rig) {
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_x", ReservationID: "r_unknown", State: payment.StateAuthorized})
		}, wantStatus: 200, wantAction: ActionIgnored, wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "unknown PaymentIntent", sig: "ok", pi: "pi_missing", wantStatus: 200, wantAction: ActionIgnored,
			wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "event without a PaymentIntent", sig: "ok", pi: "", wantStatus: 200, wantAction: ActionIgnored,
			wantPayment: reservation.Authorizing, wantRecorded: true},
		{name: "provider cannot answer: redeliver", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.pay.FailAll(sagatest.PayRetrieve, &payment.Uncertain{Op: payment.OpRetrieve, Reason: "timeout"})
		}, wantStatus: 500, wantPayment: reservation.Authorizing},
		{name: "PaymentIntent not recorded yet: redeliver later", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.change(func(res *reservation.Reservation) {
				res.PaymentIntentID, res.TaskToken, res.Payment = "", "", reservation.NotStarted
			})
		}, wantStatus: 409, wantPayment: reservation.NotStarted},
		{name: "a concurrent writer moves first: read again", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.store.Fail[sagatest.OpUpdatePayment] = &reservation.StaleVersion{ReservationID: "r1", Expected: 3, Actual: 4}
		},
			wantStatus: 200, wantAction: ActionAuthorized, wantPayment: reservation.Authorized, wantSuccess: 1, wantRecorded: true},
		{name: "the saga stopped waiting", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.sfn.FailNext(sagatest.SFNSendTaskSuccess, &sfntypes.TaskTimedOut{Message: aws.String("closed")})
		}, wantStatus: 200, wantAction: ActionTaskClosed, wantPayment: reservation.Authorized, wantRecorded: true},
		{name: "step functions down: redeliver", sig: "ok", pi: "pi_1", setup: func(r *rig) {
			r.sfn.FailNext(sagatest.SFNSendTaskSuccess, errors.New("connection refused"))
		}, wantStatus: 500, wantPayment: reservation.Authorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated", tc.pi, tc.sig)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if tc.wantStatus == 200 {
				if a := action(t, resp); a != tc.wantAction {
					t.Fatalf("action %q, want %q", a, tc.wantAction)
				}
			}
			if got := r.reservation("r1").Payment; got != tc.wantPayment {
				t.Fatalf("payment %s, want %s", got, tc.wantPayment)
			}
			successes, failures := r.sfn.Successes(), r.sfn.Failures()
			if len(successes) != tc.wantSuccess {
				t.Fatalf("%d SendTaskSuccess, want %d", len(successes), tc.wantSuccess)
			}
			if tc.wantFailure == "" && len(failures) != 0 || tc.wantFailure != "" &&
				(len(failures) != 1 || failures[0].Error != tc.wantFailure) {
				t.Fatalf("SendTaskFailure %+v, want %q", failures, tc.wantFailure)
			}
			for _, u := range r.updates() {
				if u.InventoryEvent != "" {
					t.Fatalf("the webhook released the seats: %+v", u)
				}
			}
			if tc.wantRecorded {
				updates := len(r.updates())
				again := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated", tc.pi, tc.sig)
				if again.StatusCode != 200 || len(r.updates()) != updates || len(r.sfn.Successes()) != len(successes) ||
					len(r.sfn.Failures()) != len(failures) {
					t.Fatalf("redelivery: %d %s, %d updates (was %d), %d successes, %d failures", again.StatusCode, again.Body,
						len(r.updates()), updates, len(r.sfn.Successes()), len(r.sfn.Failures()))
				}
			}
			for _, s := range successes {
				var out saga.PaymentOutcome
				if err := json.Unmarshal([]byte(s.Output), &out); err != nil || out.PaymentIntentID != "pi_1" ||
					out.State != "AUTHORIZED" || out.Version != 4 || s.TaskToken != "tok-1" {
					t.Fatalf("SendTaskSuccess %+v output %s", s, s.Output)
				}
			}
		})
	}
}

// TestWebhookDeliveredManyTimesOutOfOrder is internal/twin/e2e's
// TestWebhookDeliveredFiveTimesOutOfOrderConfirmsOnce at unit level: five deliveries, of the
// same event and of other events about the same PaymentIntent, in any order, make one
// transition and one SendTaskSuccess.
func TestWebhookDeliveredManyTimesOutOfOrder(t *testing.T) {
	r := newRig(t)
	deliveries := []struct{ id, typ string }{
		{"evt_3", "payment_intent.amount_capturable_updated"},
		{"evt_1", "payment_intent.created"},
		{"evt_3", "payment_intent.amount_capturable_updated"},
		{"evt_2", "payment_intent.requires_action"},
		{"evt_3", "payment_intent.amount_capturable_updated"},
	}
	for _, d := range deliveries {
		if resp := r.deliver(t, d.id, d.typ, "pi_1", "ok"); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", d.id, resp.StatusCode, resp.Body)
		}
	}
	if len(r.updates()) != 1 || len(r.sfn.Successes()) != 1 || len(r.sfn.Failures()) != 0 {
		t.Fatalf("%d transitions, %d successes, %d failures", len(r.updates()), len(r.sfn.Successes()), len(r.sfn.Failures()))
	}
	if got := r.metrics.Get("WebhookEvents", metrics.Dim{Name: "action", Value: "duplicate"}); got != 2 {
		t.Fatalf("%d duplicates counted", got)
	}
}

func TestWebhookConcurrentDeliveries(t *testing.T) {
	r := newRig(t)
	var wg sync.WaitGroup
	statuses := make(chan int, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses <- r.deliver(t, "evt_"+string(rune('a'+i%3)), "payment_intent.amount_capturable_updated", "pi_1", "ok").StatusCode
		}(i)
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 && s != 409 {
			t.Fatalf("status %d", s)
		}
	}
	if len(r.updates()) != 1 || len(r.sfn.Successes()) != 1 {
		t.Fatalf("%d transitions, %d successes", len(r.updates()), len(r.sfn.Successes()))
	}
}

// TestWebhookCrashBeforeCallback: the transition was written and the callback claimed, then
// the delivery died. A redelivery inside the lease is told to come back; after it, it sends
// the callback exactly once.
func TestWebhookCrashBeforeCallback(t *testing.T) {
	r := newRig(t)
	r.sfn.FailNext(sagatest.SFNSendTaskSuccess, errors.New("lambda died"))
	if resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated", "pi_1", "ok"); resp.StatusCode != 500 {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	if resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated", "pi_1", "ok"); resp.StatusCode != 409 {
		t.Fatalf("inside the lease: %d %s", resp.StatusCode, resp.Body)
	}
	r.clock.Advance(DefaultCallbackLease + time.Second)
	resp := r.deliver(t, "evt_1", "payment_intent.amount_capturable_updated", "pi_1", "ok")
	if resp.StatusCode != 200 || action(t, resp) != ActionAuthorized {
		t.Fatalf("after the lease: %d %s", resp.StatusCode, resp.Body)
	}
	resp = r.deliver(t, "evt_2", "payment_intent.succeeded", "pi_1", "ok")
	if resp.StatusCode != 200 || action(t, resp) != ActionAlreadyReported {
		t.Fatalf("another event: %d %s", resp.StatusCode, resp.Body)
	}
	if len(r.updates()) != 1 || len(r.sfn.Successes()) != 1 {
		t.Fatalf("%d transitions, %d successes", len(r.updates()), len(r.sfn.Successes()))
	}
}

// TestWebhookNewTaskToken: a new attempt of the wait state records a new token, which gets
// its own callback even though the old one was reported.
func TestWebhookNewTaskToken(t *testing.T) {
	r := newRig(t)
	if resp := r.deliver(t, "evt_1", "x", "pi_1", "ok"); action(t, resp) != ActionAuthorized {
		t.Fatal(resp.Body)
	}
	r.change(func(res *reservation.Reservation) { res.TaskToken = "tok-2" })
	if resp := r.deliver(t, "evt_2", "x", "pi_1", "ok"); action(t, resp) != ActionAuthorized {
		t.Fatal(resp.Body)
	}
	if successes := r.sfn.Successes(); len(successes) != 2 || successes[1].TaskToken != "tok-2" {
		t.Fatalf("successes %+v", successes)
	}
}
