package saga

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

type harness struct {
	t     testing.TB
	now   time.Time
	store *fakeStore
	pay   *fakePayments
	mem   *metrics.Memory
	steps *Steps
}

func newHarness(t testing.TB, policy reservation.LateSuccessPolicy) *harness {
	t.Helper()
	h := &harness{t: t, now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), pay: newFakePayments(), mem: metrics.NewMemory()}
	clock := func() time.Time { return h.now }
	h.store = newFakeStore(clock)
	h.steps = &Steps{Store: h.store, Payments: h.pay, Now: clock, Metrics: h.mem, Policy: policy,
		Hold: 10 * time.Minute, ReconcileAttempts: 3, ReconcileBackoff: 10 * time.Second,
		Log: slog.New(slog.DiscardHandler)}
	return h
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func input(id, pm string, seats ...string) Input {
	return Input{ReservationID: id, EventID: "ev1", SeatIDs: seats, CustomerID: "cus_" + id, Amount: 4200,
		Currency: "eur", IdempotencyKey: "key-" + id, PaymentMethod: pm, CorrelationID: "corr-" + id}
}

func (h *harness) claim(in Input) Hold {
	h.t.Helper()
	hold, err := h.steps.Claim(context.Background(), State{Input: in})
	if err != nil {
		h.t.Fatalf("claim %s: %v", in.ReservationID, err)
	}
	return hold
}

func (h *harness) authorize(in Input, token string) error {
	_, err := h.steps.Authorize(context.Background(), AuthorizeEvent{Input: State{Input: in}, TaskToken: token})
	return err
}

// webhookAuthorized does what the webhook handler does on payment_intent.amount_capturable_updated.
func (h *harness) webhookAuthorized(id string) {
	h.t.Helper()
	r := h.store.get(id)
	if _, err := h.store.UpdatePayment(context.Background(), PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(r),
		Event: reservation.AuthorizationOK, From: reservation.Authorizing, CaptureBefore: h.now.Add(7 * 24 * time.Hour)}); err != nil {
		h.t.Fatalf("webhook transition: %v", err)
	}
}

func (h *harness) expectState(id string, inv reservation.InventoryState, pay reservation.PaymentState) {
	h.t.Helper()
	r := h.store.get(id)
	if r.Inventory != inv || r.Payment != pay {
		h.t.Fatalf("reservation %s is %s/%s, want %s/%s", id, r.Inventory, r.Payment, inv, pay)
	}
}

func (h *harness) expectSeatOwner(seat, owner string) {
	h.t.Helper()
	if got := h.store.owner[seat]; got != owner {
		h.t.Fatalf("seat %s owned by %q, want %q", seat, got, owner)
	}
}

func wantErr[T error](t testing.TB, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error %v (%T), want %T", err, err, target)
	}
	if Routable(err) != error(target) {
		t.Fatalf("routed error is wrapped: %T", err)
	}
	return target
}

func TestHappyPath(t *testing.T) {
	h := newHarness(t, reservation.LateSuccessReacquire)
	ctx := context.Background()
	in := input("r1", "pm_card_visa", "A1", "A2")
	hold := h.claim(in)
	if hold.SecondsLeft != 600 || hold.Version != 1 {
		t.Fatalf("hold %+v", hold)
	}
	if err := h.authorize(in, "tok1"); err != nil {
		t.Fatal(err)
	}
	h.expectState("r1", reservation.PaymentPending, reservation.Authorizing)
	if got := h.store.get("r1").TaskToken; got != "tok1" {
		t.Fatalf("task token %q", got)
	}
	h.webhookAuthorized("r1")
	if _, err := h.steps.Confirm(ctx, State{Input: in}); err != nil {
		t.Fatal(err)
	}
	capture, err := h.steps.Capture(ctx, State{Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if capture.AmountCaptured != 4200 {
		t.Fatalf("captured %d", capture.AmountCaptured)
	}
	h.expectState("r1", reservation.Confirmed, reservation.Paid)
	h.expectSeatOwner("A1", "r1")
	if h.pay.creates != 1 || h.pay.captures != 1 {
		t.Fatalf("creates %d captures %d", h.pay.creates, h.pay.captures)
	}
	// Every step re-run after success returns the same answer and moves no money.
	if again, err := h.steps.Claim(ctx, State{Input: in}); err != nil || again.ReservationID != "r1" {
		t.Fatalf("claim replay: %+v, %v", again, err)
	}
	if _, err := h.steps.Confirm(ctx, State{Input: in}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.steps.Capture(ctx, State{Input: in}); err != nil {
		t.Fatal(err)
	}
	if h.pay.captures != 1 {
		t.Fatalf("captures %d after re-runs", h.pay.captures)
	}
	if n := h.mem.Get(MetricStepOutcome, metrics.Dim{Name: "step", Value: "capture"}, metrics.Dim{Name: "outcome", Value: "paid"}); n != 2 {
		t.Fatalf("capture paid count %d", n)
	}
}

func TestClaim(t *testing.T) {
	cases := []struct {
		name  string
		setup func(h *harness)
		in    Input
		check func(t *testing.T, h *harness, hold Hold, err error)
	}{
		{
			name: "seat taken by another buyer",
			setup: func(h *harness) {
				h.claim(input("winner", "", "A1"))
			},
			in: input("loser", "", "A1", "A2"),
			check: func(t *testing.T, h *harness, _ Hold, err error) {
				su := wantErr[*reservation.SeatUnavailable](t, err)
				if !slices.Equal(su.SeatIDs, []string{"A1"}) {
					t.Fatalf("seats %v", su.SeatIDs)
				}
				if _, ok := h.store.res["loser"]; ok {
					t.Fatal("loser reservation written")
				}
				h.expectSeatOwner("A2", "")
				if h.pay.creates != 0 {
					t.Fatal("payment object created for a loser")
				}
			},
		},
		{
			name: "invalid request writes nothing",
			in:   Input{ReservationID: "r1", EventID: "ev1", CustomerID: "c", Amount: -1, Currency: "eur", IdempotencyKey: "k"},
			check: func(t *testing.T, h *harness, _ Hold, err error) {
				wantErr[*InvalidRequest](t, err)
				if len(h.store.res) != 0 {
					t.Fatal("written")
				}
			},
		},
		{
			name: "replay after a crash returns the same hold",
			setup: func(h *harness) {
				h.claim(input("r1", "", "A1"))
				h.advance(time.Minute)
			},
			in: input("r1", "", "A1"),
			check: func(t *testing.T, h *harness, hold Hold, err error) {
				if err != nil || hold.Version != 1 || hold.SecondsLeft != 540 {
					t.Fatalf("hold %+v err %v", hold, err)
				}
			},
		},
		{
			name: "replay after the hold lapsed",
			setup: func(h *harness) {
				h.claim(input("r1", "", "A1"))
				h.advance(11 * time.Minute)
			},
			in: input("r1", "", "A1"),
			check: func(t *testing.T, _ *harness, _ Hold, err error) {
				wantErr[*reservation.HoldExpired](t, err)
			},
		},
		{
			name: "store conflict is retryable",
			setup: func(h *harness) {
				h.store.fail["claim"] = &reservation.StaleVersion{ReservationID: "r1", Expected: 1}
			},
			in: input("r1", "", "A1"),
			check: func(t *testing.T, _ *harness, _ Hold, err error) {
				wantErr[*TransactionConflict](t, err)
			},
		},
		{
			name: "store failure is transient",
			setup: func(h *harness) {
				h.store.fail["claim"] = errBoom
			},
			in: input("r1", "", "A1"),
			check: func(t *testing.T, _ *harness, _ Hold, err error) {
				wantErr[*TransientError](t, err)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			if tc.setup != nil {
				tc.setup(h)
			}
			hold, err := h.steps.Claim(context.Background(), State{Input: tc.in})
			tc.check(t, h, hold, err)
		})
	}
}

func TestAuthorize(t *testing.T) {
	cases := []struct {
		name  string
		pm    string
		setup func(h *harness, in Input)
		check func(t *testing.T, h *harness, err error)
	}{
		{
			name: "declined card",
			pm:   "pm_card_declined",
			check: func(t *testing.T, h *harness, err error) {
				wantErr[*PaymentDeclined](t, err)
				h.expectState("r1", reservation.PaymentPending, reservation.Authorizing)
			},
		},
		{
			name: "hold lapsed before payment",
			setup: func(h *harness, _ Input) {
				h.advance(10 * time.Minute)
			},
			check: func(t *testing.T, h *harness, err error) {
				wantErr[*reservation.HoldExpired](t, err)
				h.expectState("r1", reservation.Held, reservation.NotStarted)
			},
		},
		{
			name: "3-D Secure waits for the buyer",
			pm:   "pm_3ds",
			check: func(t *testing.T, h *harness, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if h.pay.status("r1") != "requires_action" {
					t.Fatal(h.pay.status("r1"))
				}
			},
		},
		{
			name: "new attempt stores the new token and reuses the PaymentIntent",
			pm:   "pm_card_visa",
			setup: func(h *harness, in Input) {
				if err := h.authorize(in, "tok0"); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, h *harness, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if h.pay.creates != 1 || h.store.get("r1").TaskToken != "tok1" {
					t.Fatalf("creates %d token %q", h.pay.creates, h.store.get("r1").TaskToken)
				}
			},
		},
		{
			name: "provider timeout is uncertain and a redelivery reuses the intent",
			pm:   "pm_card_visa",
			setup: func(h *harness, in Input) {
				h.pay.fail["confirm"] = []error{&payment.Uncertain{Op: payment.OpConfirmPaymentMethod, Reason: "timeout"}}
				wantErr[*PaymentUncertain](h.t, h.authorize(in, "tok1"))
			},
			check: func(t *testing.T, h *harness, err error) {
				if err != nil || h.pay.creates != 1 || h.pay.status("r1") != "requires_capture" {
					t.Fatalf("err %v creates %d status %s", err, h.pay.creates, h.pay.status("r1"))
				}
			},
		},
		{
			name: "crash after recording, before returning",
			pm:   "pm_card_visa",
			setup: func(h *harness, in Input) {
				// The first run recorded PAYMENT_PENDING and the intent; its answer was lost.
				if err := h.authorize(in, "tok1"); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, h *harness, err error) {
				if err != nil || h.pay.creates != 1 {
					t.Fatalf("err %v creates %d", err, h.pay.creates)
				}
				h.expectState("r1", reservation.PaymentPending, reservation.Authorizing)
			},
		},
		{
			name: "empty task token",
			setup: func(h *harness, in Input) {
				wantErr[*InvalidRequest](h.t, h.authorize(in, ""))
			},
			check: func(t *testing.T, h *harness, err error) {},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := input("r1", tc.pm, "A1")
			h.claim(in)
			if tc.setup != nil {
				tc.setup(h, in)
			}
			tc.check(t, h, h.authorize(in, "tok1"))
		})
	}
}

// TestAuthorizeProviderRefusalIsNotADecline: the provider refusing the system's own request
// (a wrong key, an invalid request) on create or confirm is *ProviderRefused, counted per
// category for an operator; it is not a decline, so nobody is told their card failed, and it
// is not routed by name: the wait's States.ALL catch reconciles while the hold keeps the seats.
func TestAuthorizeProviderRefusalIsNotADecline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		op       string
		refusal  *payment.Failed
		category payment.FailureCategory
		wantPay  reservation.PaymentState
	}{
		{name: "create refused: authentication", op: "create",
			refusal:  &payment.Failed{Op: payment.OpAuthorize, HTTPStatus: 401, Category: payment.FailureAuthentication, Type: "authentication_error"},
			category: payment.FailureAuthentication, wantPay: reservation.NotStarted},
		{name: "confirm refused: invalid request", op: "confirm",
			refusal:  &payment.Failed{Op: payment.OpConfirmPaymentMethod, HTTPStatus: 400, Category: payment.FailureInvalidRequest, Type: "invalid_request_error"},
			category: payment.FailureInvalidRequest, wantPay: reservation.Authorizing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := input("r1", "pm_card_visa", "A1")
			h.claim(in)
			h.pay.fail[tc.op] = []error{tc.refusal}
			err := h.authorize(in, "tok1")
			refused := wantErr[*ProviderRefused](t, err)
			if refused.Category != string(tc.category) {
				t.Fatalf("category %q, want %q", refused.Category, tc.category)
			}
			if name := asl.ErrorTypeName(Routable(err)); name != "ProviderRefused" {
				t.Fatalf("the Lambda runtime would name it %q", name)
			}
			if n := h.mem.Get(MetricProviderRefusals, metrics.Dim{Name: "category", Value: string(tc.category)}); n != 1 {
				t.Fatalf("refusals counted %v", n)
			}
			authorize := metrics.Dim{Name: "step", Value: "authorize"}
			if h.mem.Get(MetricStepOutcome, authorize, metrics.Dim{Name: "outcome", Value: "provider_refused"}) != 1 ||
				h.mem.Get(MetricStepOutcome, authorize, metrics.Dim{Name: "outcome", Value: "declined"}) != 0 {
				t.Fatal("not counted as a provider refusal")
			}
			h.expectState("r1", reservation.PaymentPending, tc.wantPay)
			h.expectSeatOwner("A1", "r1")
			// Reconcile keeps the hold: the buyer may still pay once the refusal is fixed.
			st := State{Input: in, Failure: &Failure{Error: "ProviderRefused"}}
			if res := reconcile(t, h, &st); res.Outcome != OutcomeResume {
				t.Fatalf("reconcile: %+v", res)
			}
			h.expectState("r1", reservation.PaymentPending, tc.wantPay)
		})
	}
}

// authorized brings r1 to PAYMENT_PENDING/AUTHORIZED as the webhook would.
func authorized(t *testing.T, h *harness, pm string) Input {
	t.Helper()
	in := input("r1", pm, "A1")
	h.claim(in)
	if err := h.authorize(in, "tok1"); err != nil {
		t.Fatal(err)
	}
	h.webhookAuthorized("r1")
	return in
}

func TestConfirm(t *testing.T) {
	t.Run("hold lapsed", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := authorized(t, h, "pm_card_visa")
		h.advance(10 * time.Minute)
		_, err := h.steps.Confirm(context.Background(), State{Input: in})
		wantErr[*reservation.HoldExpired](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.Authorized)
	})
	t.Run("report arrived before the webhook's write: provider truth recorded", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "pm_card_visa", "A1")
		h.claim(in)
		if err := h.authorize(in, "tok1"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.steps.Confirm(context.Background(), State{Input: in}); err != nil {
			t.Fatal(err)
		}
		h.expectState("r1", reservation.Confirmed, reservation.Authorized)
	})
	t.Run("not authorized at the provider", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "pm_3ds", "A1")
		h.claim(in)
		if err := h.authorize(in, "tok1"); err != nil {
			t.Fatal(err)
		}
		_, err := h.steps.Confirm(context.Background(), State{Input: in})
		wantErr[*ConflictError](t, err)
	})
	t.Run("crash after the write", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := authorized(t, h, "pm_card_visa")
		first, err := h.steps.Confirm(context.Background(), State{Input: in})
		if err != nil {
			t.Fatal(err)
		}
		again, err := h.steps.Confirm(context.Background(), State{Input: in})
		if err != nil || again != first {
			t.Fatalf("%+v vs %+v, %v", again, first, err)
		}
	})
}

func TestCapture(t *testing.T) {
	confirmed := func(t *testing.T, h *harness) Input {
		in := authorized(t, h, "pm_card_visa")
		if _, err := h.steps.Confirm(context.Background(), State{Input: in}); err != nil {
			t.Fatal(err)
		}
		return in
	}
	t.Run("response lost: retried with the same key, one capture", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := confirmed(t, h)
		h.pay.fail["capture"] = []error{&payment.Uncertain{Op: payment.OpCapture, Reason: "timeout"}}
		h.pay.actAndFail["capture"] = true
		_, err := h.steps.Capture(context.Background(), State{Input: in})
		wantErr[*PaymentUncertain](t, err)
		// The unanswered capture is recorded unknown: the seats stay sold and the
		// reservation is on the reconciliation index.
		h.expectState("r1", reservation.Confirmed, reservation.UnknownNeedsReconciliation)
		if _, err := h.steps.Capture(context.Background(), State{Input: in}); err != nil {
			t.Fatal(err)
		}
		h.expectState("r1", reservation.Confirmed, reservation.Paid)
		if h.pay.captures != 1 {
			t.Fatalf("captures %d", h.pay.captures)
		}
	})
	// The capture-failure policy, whether the truth read before the capture shows the
	// authorization gone or the provider refuses the capture because it lapsed meanwhile.
	for _, tc := range []struct {
		name  string
		lapse func(h *harness, rp *racingPayments)
	}{
		{name: "definitive failure: policy releases seats and notifies", lapse: func(h *harness, _ *racingPayments) {
			h.pay.force("r1", "canceled") // the authorization lapsed at the provider
		}},
		{name: "capture refused, the authorization lapsed after the truth was read: policy releases seats and notifies",
			lapse: func(h *harness, rp *racingPayments) {
				rp.beforeCapture = func() { h.pay.force("r1", "canceled") }
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			rp := &racingPayments{fakePayments: h.pay}
			h.steps.Payments = rp
			in := confirmed(t, h)
			tc.lapse(h, rp)
			_, err := h.steps.Capture(context.Background(), State{Input: in})
			wantErr[*CaptureFailed](t, err)
			if rp.beforeCapture != nil {
				t.Fatal("the capture was never sent")
			}
			h.expectState("r1", reservation.Released, reservation.Failed)
			h.expectSeatOwner("A1", "")
			if h.pay.captures != 0 {
				t.Fatalf("captures %d", h.pay.captures)
			}
			// The failure and the release are one write: one PaymentFailed record whose
			// snapshot has the seats released, with the customer notified; no separate release.
			recs := h.store.Records("r1")
			last := recs[len(recs)-1]
			var snap outbox.ReservationSnapshot
			if err := json.Unmarshal(last.Payload, &snap); err != nil {
				t.Fatal(err)
			}
			if last.Type != outbox.PaymentFailed || snap.InventoryState != string(reservation.Released) ||
				snap.PaymentState != string(reservation.Failed) || !snap.NotifyCustomer {
				t.Fatalf("last record %s %+v", last.Type, snap)
			}
			for _, rec := range recs {
				if rec.Type == outbox.SeatsReleased {
					t.Fatalf("a separate release record: %v", h.store.events)
				}
			}
			_, err = h.steps.Capture(context.Background(), State{Input: in})
			wantErr[*CaptureFailed](t, err)
			if n := len(h.store.Records("r1")); n != len(recs) {
				t.Fatalf("the re-run wrote %d records", n-len(recs))
			}
		})
	}
	t.Run("refusal while still capturable stays uncertain", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := confirmed(t, h)
		h.pay.fail["capture"] = []error{&payment.Failed{Op: payment.OpCapture, Code: "rate_limit"}}
		_, err := h.steps.Capture(context.Background(), State{Input: in})
		wantErr[*PaymentUncertain](t, err)
	})
}

func TestCompensate(t *testing.T) {
	cases := []struct {
		name        string
		pm          string
		reason      string
		webhook     func(h *harness)
		wantPayment reservation.PaymentState
		wantPI      string
		wantLabel   string
		// wantRerun is what a redelivery reports: it finds the reservation settled and
		// reports the stored state, and FAILED does not say whether a void happened.
		wantRerun string
	}{
		// A decline is recorded FAILED before the void and stays FAILED after it; the step
		// still reports the void it made.
		{name: "decline recorded by the webhook: voided, reported voided, stays FAILED", pm: "pm_card_declined", reason: ErrPaymentDeclined,
			webhook: func(h *harness) {
				r := h.store.get("r1")
				h.store.UpdatePayment(context.Background(), PaymentUpdate{ReservationID: "r1", Guard: reservation.GuardOf(r), Event: reservation.PaymentDeclined, From: reservation.Authorizing})
			},
			wantPayment: reservation.Failed, wantPI: "canceled", wantLabel: "voided", wantRerun: "none"},
		{name: "decline answered synchronously: recorded FAILED, voided, reported voided", pm: "pm_card_declined", reason: ErrPaymentDeclined,
			wantPayment: reservation.Failed, wantPI: "canceled", wantLabel: "voided", wantRerun: "none"},
		{name: "customer cancels after authorization", pm: "pm_card_visa", reason: ErrCustomerCanceled,
			webhook:     func(h *harness) { h.webhookAuthorized("r1") },
			wantPayment: reservation.Canceled, wantPI: "canceled", wantLabel: "voided", wantRerun: "voided"},
		{name: "customer cancels during 3-D Secure", pm: "pm_3ds", reason: ErrCustomerCanceled,
			wantPayment: reservation.Canceled, wantPI: "canceled", wantLabel: "voided", wantRerun: "voided"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := input("r1", tc.pm, "A1")
			h.claim(in)
			h.authorize(in, "tok1")
			if tc.webhook != nil {
				tc.webhook(h)
			}
			st := State{Input: in, Failure: &Failure{Error: tc.reason}}
			res, err := h.steps.Compensate(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Payment != tc.wantLabel || !res.SeatsReleased {
				t.Fatalf("result %+v", res)
			}
			h.expectState("r1", reservation.Released, tc.wantPayment)
			h.expectSeatOwner("A1", "")
			if got := h.pay.status("r1"); got != tc.wantPI || h.pay.cancels != 1 {
				t.Fatalf("intent %s, cancels %d", got, h.pay.cancels)
			}
			// A re-run changes nothing and cancels nothing twice.
			again, err := h.steps.Compensate(context.Background(), st)
			if err != nil || again.Payment != tc.wantRerun || again.SeatsReleased {
				t.Fatalf("re-run: %+v %v", again, err)
			}
			if h.pay.cancels != 1 {
				t.Fatal("canceled twice")
			}
			if h.mem.Total(MetricCompensationOutcome) == 0 {
				t.Fatal("no compensation metric")
			}
		})
	}
	t.Run("provider down: uncertain, seats kept", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := authorized(t, h, "pm_card_visa")
		h.pay.fail["cancel"] = []error{&payment.Uncertain{Op: payment.OpCancel, Reason: "timeout"}}
		st := State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}}
		_, err := h.steps.Compensate(context.Background(), st)
		wantErr[*PaymentUncertain](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		// The ASL's retry, with the provider back, voids under the same key and releases.
		if res, err := h.steps.Compensate(context.Background(), st); err != nil || res.Payment != "voided" || !res.SeatsReleased {
			t.Fatalf("retry: %+v %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
	})
	t.Run("claim never landed", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		res, err := h.steps.Compensate(context.Background(), State{Input: input("ghost", "", "A1"), Failure: &Failure{Error: ErrHoldExpired}})
		if err != nil || res.SeatsReleased {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

func reconcile(t *testing.T, h *harness, st *State) ReconcileResult {
	t.Helper()
	res, err := h.steps.Reconcile(context.Background(), *st)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	st.Reconcile = &res
	return res
}

func TestReconcile(t *testing.T) {
	t.Run("3-D Secure never completed: at the deadline the intent is canceled and the seat freed", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "pm_3ds", "A1")
		h.claim(in)
		h.authorize(in, "tok1")
		h.advance(10 * time.Minute)
		st := State{Input: in, Failure: &Failure{Error: "States.Timeout"}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeExpired {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		if h.pay.status("r1") != "canceled" {
			t.Fatal(h.pay.status("r1"))
		}
		h.claim(input("r2", "", "A1"))
		h.expectSeatOwner("A1", "r2")
	})

	lateCase := func(t *testing.T, policy reservation.LateSuccessPolicy, takeSeat bool) (*harness, State) {
		h := newHarness(t, policy)
		in := input("r1", "pm_slow", "A1")
		h.claim(in)
		h.authorize(in, "tok1")
		h.advance(10 * time.Minute)
		st := State{Input: in, Failure: &Failure{Error: "States.Timeout"}}
		res := reconcile(t, h, &st)
		if res.Outcome != OutcomeRetry || res.RetryAfterSeconds != 10 {
			t.Fatalf("processing: %+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Authorizing)
		if takeSeat {
			h.claim(input("r2", "", "A1"))
		}
		h.advance(10 * time.Second)
		h.pay.force("r1", "requires_capture") // the late authorization
		return h, st
	}
	t.Run("late success, seat still free: reacquired, then captured", func(t *testing.T) {
		h, st := lateCase(t, reservation.LateSuccessReacquire, false)
		if res := reconcile(t, h, &st); res.Outcome != OutcomeCapture {
			t.Fatalf("%+v", res)
		}
		// Reconcile records CAPTURE_PENDING before handing the capture to the ASL.
		h.expectState("r1", reservation.Confirmed, reservation.CapturePending)
		if _, err := h.steps.Capture(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		h.expectState("r1", reservation.Confirmed, reservation.Paid)
		h.expectSeatOwner("A1", "r1")
	})
	t.Run("late success, seat taken: voided and customer notified, no capture", func(t *testing.T) {
		h, st := lateCase(t, reservation.LateSuccessReacquire, true)
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		h.expectSeatOwner("A1", "r2")
		if h.pay.captures != 0 || h.pay.status("r1") != "canceled" {
			t.Fatalf("captures %d status %s", h.pay.captures, h.pay.status("r1"))
		}
		// The authorization is recorded, then voided with the customer told, in that order.
		if i := slices.Index(h.store.events, "PaymentAuthorized:settlement: Authorized (States.Timeout)"); i < 0 ||
			!slices.Contains(h.store.events[i:], "PaymentVoid:settlement: Void (States.Timeout):notify") {
			t.Fatalf("events %v", h.store.events)
		}
	})
	t.Run("late success, policy void", func(t *testing.T) {
		h, st := lateCase(t, reservation.LateSuccessVoid, false)
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		h.expectSeatOwner("A1", "")
	})
	t.Run("authorized at the deadline with the seat still ours, policy void", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessVoid)
		in := authorized(t, h, "pm_card_visa")
		h.advance(10 * time.Minute)
		st := State{Input: in, Failure: &Failure{Error: ErrHoldExpired}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeVoided {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
		h.expectSeatOwner("A1", "")
	})
	t.Run("capture uncertain, provider captured: paid", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := authorized(t, h, "pm_card_visa")
		h.steps.Confirm(context.Background(), State{Input: in})
		h.pay.fail["capture"] = []error{&payment.Uncertain{Op: payment.OpCapture, Reason: "timeout"}}
		h.pay.actAndFail["capture"] = true
		h.steps.Capture(context.Background(), State{Input: in})
		st := State{Input: in, Failure: &Failure{Error: ErrPaymentUncertain}}
		if res := reconcile(t, h, &st); res.Outcome != OutcomePaid {
			t.Fatalf("%+v", res)
		}
		h.expectState("r1", reservation.Confirmed, reservation.Paid)
	})
	t.Run("provider down: unknown, seats protected, bounded, then resolved", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "pm_3ds", "A1")
		h.claim(in)
		h.authorize(in, "tok1")
		h.advance(10 * time.Minute)
		down := &payment.Uncertain{Op: payment.OpRetrieve, Reason: "connection"}
		h.pay.fail["retrieve"] = []error{down, down, down}
		st := State{Input: in, Failure: &Failure{Error: "States.Timeout"}}
		var outcomes []string
		for i := 0; i < 3; i++ {
			outcomes = append(outcomes, reconcile(t, h, &st).Outcome)
		}
		if strings.Join(outcomes, ",") != "retry,retry,unresolved" {
			t.Fatalf("outcomes %v", outcomes)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.UnknownNeedsReconciliation)
		// Nobody else can take the seat while the money's fate is unknown.
		if _, err := h.steps.Claim(context.Background(), State{Input: input("r2", "", "A1")}); err == nil {
			t.Fatal("seat protected in reconciliation was claimed")
		}
		// The provider is back: the sweeper's pass settles it.
		outcome, err := h.steps.Resolve(context.Background(), in)
		if err != nil || outcome != OutcomeExpired {
			t.Fatalf("resolve: %s %v", outcome, err)
		}
		h.expectState("r1", reservation.Released, reservation.Canceled)
	})
	t.Run("re-run of a settled reservation", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := authorized(t, h, "pm_card_visa")
		h.steps.Confirm(context.Background(), State{Input: in})
		h.steps.Capture(context.Background(), State{Input: in})
		st := State{Input: in}
		if res := reconcile(t, h, &st); res.Outcome != OutcomePaid || res.Attempt != 1 {
			t.Fatalf("%+v", res)
		}
	})
}

func TestRoutable(t *testing.T) {
	inner := &reservation.SeatUnavailable{EventID: "ev1", SeatIDs: []string{"A1"}}
	wrapped := fmt.Errorf("claim: %w", inner)
	if Routable(wrapped) != error(inner) {
		t.Fatal("not unwrapped")
	}
	if Routable(errBoom) != errBoom || Routable(nil) != nil {
		t.Fatal("passthrough")
	}
}

func TestReconcileDecisions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name        string
		pm          string
		setup       func(h *harness, in Input)
		attempt     int
		wantOutcome string
		wantInv     reservation.InventoryState
		wantPay     reservation.PaymentState
		wantPI      string
		check       func(t *testing.T, h *harness, res ReconcileResult)
	}{
		// The wait failed while the buyer is still paying: back to the wait, for the time
		// left on the hold (all of it here: the clock did not move).
		{name: "buyer still paying within the hold: resume the wait", pm: "pm_3ds",
			wantOutcome: OutcomeResume, wantInv: reservation.PaymentPending, wantPay: reservation.Authorizing, wantPI: "requires_action",
			check: func(t *testing.T, h *harness, res ReconcileResult) {
				r := h.store.get("r1")
				if res.Resumes != 1 || res.Hold == nil || res.Hold.SecondsLeft != 600 || !res.Hold.HoldExpiresAt.Equal(r.HoldExpiresAt) ||
					res.Hold.ReservationID != "r1" || res.Hold.Version != r.Version {
					t.Fatalf("resume %+v hold %+v", res, res.Hold)
				}
			}},
		{name: "authorized within the hold, report lost: confirm, record the capture request, then capture", pm: "pm_card_visa",
			wantOutcome: OutcomeCapture, wantInv: reservation.Confirmed, wantPay: reservation.CapturePending, wantPI: "requires_capture"},
		// The decline is recorded first and stays the record after the void.
		{name: "declined at the provider", pm: "pm_card_declined",
			setup:       func(h *harness, _ Input) { h.advance(10 * time.Minute) },
			wantOutcome: OutcomeFailed, wantInv: reservation.Released, wantPay: reservation.Failed, wantPI: "canceled"},
		{name: "canceled at the provider", pm: "pm_3ds",
			setup:       func(h *harness, _ Input) { h.pay.force("r1", "canceled") },
			wantOutcome: OutcomeFailed, wantInv: reservation.Released, wantPay: reservation.Canceled, wantPI: "canceled"},
		{name: "captured while the seats are confirmed", pm: "pm_card_visa",
			setup: func(h *harness, in Input) {
				h.webhookAuthorized("r1")
				h.steps.Confirm(ctx, State{Input: in})
				h.pay.fail["capture"] = []error{&payment.Uncertain{Op: payment.OpCapture, Reason: "timeout"}}
				h.pay.actAndFail["capture"] = true
				h.steps.Capture(ctx, State{Input: in})
			},
			wantOutcome: OutcomePaid, wantInv: reservation.Confirmed, wantPay: reservation.Paid, wantPI: "succeeded"},
		{name: "captured after the hold lapsed: recorded, seats reacquired", pm: "pm_card_visa",
			setup: func(h *harness, _ Input) {
				h.webhookAuthorized("r1")
				h.advance(10 * time.Minute)
				h.pay.force("r1", "succeeded")
			},
			wantOutcome: OutcomePaid, wantInv: reservation.Confirmed, wantPay: reservation.Paid, wantPI: "succeeded"},
		{name: "authorization lapsed after confirm: capture-failure policy", pm: "pm_card_visa",
			setup: func(h *harness, in Input) {
				h.webhookAuthorized("r1")
				h.steps.Confirm(ctx, State{Input: in})
				h.pay.force("r1", "canceled")
			},
			wantOutcome: OutcomeCaptureFailed, wantInv: reservation.Released, wantPay: reservation.Failed, wantPI: "canceled"},
		// The intent shows refunded, but no refund of ours is recorded (here: our refund,
		// attempt 1, whose answer was lost). Only the refund itself says it succeeded, so the
		// first run records REFUND_PENDING with the seats protected; the next one repeats
		// attempt 1 under its key, finds that refund, reads it back and settles.
		{name: "refunded at the provider, our refund's id lost: pending, then found again by its key", pm: "pm_card_visa",
			setup: func(h *harness, _ Input) {
				h.webhookAuthorized("r1")
				h.advance(10 * time.Minute)
				h.pay.force("r1", "succeeded")
				if _, err := h.pay.Refund(ctx, payment.RefundRequest{ReservationID: "r1", PaymentIntentID: h.pay.byRes["r1"], Attempt: 1}); err != nil {
					h.t.Fatal(err)
				}
			},
			wantOutcome: OutcomeRetry, wantInv: reservation.PaymentPending, wantPay: reservation.RefundPending, wantPI: "succeeded",
			check: func(t *testing.T, h *harness, res ReconcileResult) {
				h.expectSeatOwner("A1", "r1")
				// refundAttempts holds the lost refund's attempt 1 only: this run sent nothing.
				if r := h.store.get("r1"); r.RefundID != "" || len(h.pay.refundAttempts) != 1 || res.Detail != "the refund is pending" {
					t.Fatalf("refund id %q, attempts sent %v, %+v", r.RefundID, h.pay.refundAttempts, res)
				}
				st := State{Input: input("r1", "pm_card_visa", "A1"), Reconcile: &res}
				for run := 1; run <= 2; run++ {
					next, err := h.steps.Reconcile(ctx, st)
					if err != nil || next.Outcome != OutcomeVoided {
						t.Fatalf("run %d: %+v %v", run, next, err)
					}
					st.Reconcile = &next
				}
				h.expectState("r1", reservation.Released, reservation.Refunded)
				h.expectSeatOwner("A1", "")
				// One refund in all: finding it again repeated attempt 1 under its key.
				if r := h.store.get("r1"); r.RefundID != "re_1" || h.pay.refunds != 1 || !slices.Equal(h.pay.refundAttempts, []int{1, 1}) {
					t.Fatalf("refund id %q, refunds %d, attempts sent %v", r.RefundID, h.pay.refunds, h.pay.refundAttempts)
				}
			}},
		// A processing payment cannot be voided: the lapsed hold's seats go back as an expiry
		// (AUTHORIZING money can still be voided once it authorizes), and with the attempts
		// spent the step hands over without forcing UNKNOWN: RELEASED with money authorizing
		// is on the sweeper's index already.
		{name: "still processing when the attempts are spent: seats expired, left to the sweeper", pm: "pm_slow", attempt: 2,
			setup:       func(h *harness, _ Input) { h.advance(10 * time.Minute) },
			wantOutcome: OutcomeUnresolved, wantInv: reservation.Released, wantPay: reservation.Authorizing, wantPI: "processing",
			check: func(t *testing.T, h *harness, _ ReconcileResult) {
				r := h.store.get("r1")
				if r.Outcome != reservation.OutcomeExpired || !r.Unsettled() || h.pay.cancelAttempts != nil {
					t.Fatalf("outcome %s unsettled %v cancels sent %v", r.Outcome, r.Unsettled(), h.pay.cancelAttempts)
				}
				h.expectSeatOwner("A1", "")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			in := input("r1", tc.pm, "A1")
			h.claim(in)
			h.authorize(in, "tok1")
			if tc.setup != nil {
				tc.setup(h, in)
			}
			st := State{Input: in, Reconcile: &ReconcileResult{Attempt: tc.attempt}}
			res, err := h.steps.Reconcile(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.wantOutcome {
				t.Fatalf("outcome %+v, want %s", res, tc.wantOutcome)
			}
			h.expectState("r1", tc.wantInv, tc.wantPay)
			if got := h.pay.status("r1"); got != tc.wantPI {
				t.Fatalf("intent %s, want %s", got, tc.wantPI)
			}
			if tc.check != nil {
				tc.check(t, h, res)
			}
			// A re-run (redelivery, or a crash before the answer) decides the same.
			if tc.wantOutcome != OutcomeRetry && tc.wantOutcome != OutcomeCapture && tc.wantOutcome != OutcomeResume {
				again, err := h.steps.Reconcile(ctx, st)
				if err != nil || again.Outcome != tc.wantOutcome {
					t.Fatalf("re-run: %+v %v", again, err)
				}
			}
		})
	}
	t.Run("no payment ever started", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "", "A1")
		h.claim(in)
		h.advance(10 * time.Minute)
		res, err := h.steps.Reconcile(ctx, State{Input: in})
		if err != nil || res.Outcome != OutcomeExpired {
			t.Fatalf("%+v %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.NotStarted)
	})
	t.Run("store failure is transient", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		in := input("r1", "", "A1")
		h.claim(in)
		h.store.fail["get"] = errBoom
		_, err := h.steps.Reconcile(ctx, State{Input: in})
		wantErr[*TransientError](t, err)
	})
}

func TestResolveForTheSweeper(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := authorized(t, h, "pm_card_visa")
	h.steps.Confirm(ctx, State{Input: in})
	down := &payment.Uncertain{Op: payment.OpRetrieve, Reason: "connection"}
	h.pay.fail["retrieve"] = []error{down}
	if outcome, err := h.steps.Resolve(ctx, in); err != nil || outcome != OutcomeRetry {
		t.Fatalf("provider down: %s %v", outcome, err)
	}
	h.expectState("r1", reservation.Confirmed, reservation.UnknownNeedsReconciliation)
	outcome, err := h.steps.Resolve(ctx, in)
	if err != nil || outcome != OutcomePaid {
		t.Fatalf("provider back: %s %v", outcome, err)
	}
	h.expectState("r1", reservation.Confirmed, reservation.Paid)
	if h.pay.captures != 1 {
		t.Fatalf("captures %d", h.pay.captures)
	}
}

// TestCompensateAfterACancelOfSoldSeats: a CustomerCanceled signal that reaches compensate
// after the seats were confirmed and paid cannot be recorded (a cancel of CONFIRMED seats is
// refused), so nothing is refunded: the decision says sold and compensate hands over to
// reconcile, which routes paid.
func TestCompensateAfterACancelOfSoldSeats(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	in := authorized(t, h, "pm_card_visa")
	h.steps.Confirm(ctx, State{Input: in})
	if _, err := h.steps.Capture(ctx, State{Input: in}); err != nil {
		t.Fatal(err)
	}
	st := State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}}
	res, err := h.steps.Compensate(ctx, st)
	wantErr[*SettlementContinues](t, err)
	if res.Payment != "none" || res.SeatsReleased {
		t.Fatalf("%+v", res)
	}
	h.expectState("r1", reservation.Confirmed, reservation.Paid)
	h.expectSeatOwner("A1", "r1")
	if h.store.get("r1").CustomerCanceled || h.pay.refunds != 0 {
		t.Fatalf("cancel recorded %v, refunds %d", h.store.get("r1").CustomerCanceled, h.pay.refunds)
	}
	if got := reconcile(t, h, &st); got.Outcome != OutcomePaid {
		t.Fatalf("reconcile: %+v", got)
	}
}

// cancelAfterCapture has r1's customer cancel while the seats are PAYMENT_PENDING with the
// money already captured (a capture that outlived its step), refunds starting in status
// refundStatus.
func cancelAfterCapture(t *testing.T, h *harness, refundStatus payment.RefundStatus) State {
	t.Helper()
	in := authorized(t, h, "pm_card_visa")
	h.pay.force("r1", "succeeded")
	h.pay.refundStatus = refundStatus
	return State{Input: in, Failure: &Failure{Error: ErrCustomerCanceled}}
}

func TestCompensateRefundsCapturedMoney(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reservation.LateSuccessReacquire)
	st := cancelAfterCapture(t, h, "")
	res, err := h.steps.Compensate(ctx, st)
	if err != nil || res.Payment != "refunded" || !res.SeatsReleased {
		t.Fatalf("%+v %v", res, err)
	}
	h.expectState("r1", reservation.Released, reservation.Refunded)
	h.expectSeatOwner("A1", "")
	if h.pay.refunds != 1 || h.pay.captures != 0 || !slices.Equal(h.pay.refundAttempts, []int{1}) {
		t.Fatalf("refunds %d captures %d attempts %v", h.pay.refunds, h.pay.captures, h.pay.refundAttempts)
	}
	if again, err := h.steps.Compensate(ctx, st); err != nil || again.Payment != "refunded" || h.pay.refunds != 1 {
		t.Fatalf("re-run refunded again: %+v %v, refunds %d", again, err, h.pay.refunds)
	}
}

// TestCompensateRefundPending: an accepted refund is REFUND_PENDING, with its id, until the
// provider says how it ended; the seats stay protected meanwhile. A failed refund is money
// captured again and a new attempt with its own key; past reservation.MaxRefundAttempts
// failures a person must look.
func TestCompensateRefundPending(t *testing.T) {
	ctx := context.Background()
	// pending runs compensate and expects it to wait for the refund it made, attempt n.
	pending := func(t *testing.T, h *harness, st State, n int) {
		t.Helper()
		res, err := h.steps.Compensate(ctx, st)
		unsure := wantErr[*PaymentUncertain](t, err)
		if !strings.Contains(unsure.Detail, "waits for the provider") || res.Payment != "refunded" || res.SeatsReleased {
			t.Fatalf("%+v: %v", res, err)
		}
		h.expectState("r1", reservation.PaymentPending, reservation.RefundPending)
		h.expectSeatOwner("A1", "r1")
		r := h.store.get("r1")
		if want := fmt.Sprintf("re_%d", n); r.RefundID != want || r.RefundAttempts != n-1 {
			t.Fatalf("refund %s after %d failed, want %s after %d", r.RefundID, r.RefundAttempts, want, n-1)
		}
	}
	t.Run("succeeded: refunded and released", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := cancelAfterCapture(t, h, payment.RefundPending)
		pending(t, h, st, 1)
		// Asked again before it settled: still waiting, no second refund.
		pending(t, h, st, 1)
		h.pay.settleRefund("re_1", payment.RefundSucceeded)
		res, err := h.steps.Compensate(ctx, st)
		if err != nil || res.Payment != "refunded" || !res.SeatsReleased {
			t.Fatalf("%+v %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
		if !slices.Equal(h.pay.refundAttempts, []int{1}) {
			t.Fatalf("refund attempts %v", h.pay.refundAttempts)
		}
	})
	t.Run("failed: a new attempt with its own key", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := cancelAfterCapture(t, h, payment.RefundPending)
		pending(t, h, st, 1)
		h.pay.settleRefund("re_1", payment.RefundFailed)
		pending(t, h, st, 2)
		if !slices.Equal(h.pay.refundAttempts, []int{1, 2}) {
			t.Fatalf("refund attempts %v", h.pay.refundAttempts)
		}
		h.pay.settleRefund("re_2", payment.RefundSucceeded)
		if res, err := h.steps.Compensate(ctx, st); err != nil || !res.SeatsReleased {
			t.Fatalf("%+v %v", res, err)
		}
		h.expectState("r1", reservation.Released, reservation.Refunded)
	})
	t.Run("failing past the bound: escalated, seats protected", func(t *testing.T) {
		h := newHarness(t, reservation.LateSuccessReacquire)
		st := cancelAfterCapture(t, h, payment.RefundPending)
		for n := 1; n <= reservation.MaxRefundAttempts; n++ {
			pending(t, h, st, n)
			h.pay.settleRefund(fmt.Sprintf("re_%d", n), payment.RefundFailed)
		}
		_, err := h.steps.Compensate(ctx, st)
		wantErr[*SettlementContinues](t, err)
		h.expectState("r1", reservation.PaymentPending, reservation.Paid)
		h.expectSeatOwner("A1", "r1")
		if r := h.store.get("r1"); r.RefundAttempts != reservation.MaxRefundAttempts || len(h.pay.refundAttempts) != reservation.MaxRefundAttempts {
			t.Fatalf("%d failed refunds recorded, %d sent", r.RefundAttempts, len(h.pay.refundAttempts))
		}
		if res := reconcile(t, h, &st); res.Outcome != OutcomeUnresolved {
			t.Fatalf("reconcile: %+v", res)
		}
		if n := h.mem.Total(MetricSettlementEscalated); n != 2 {
			t.Fatalf("escalations counted %v, want 2 (compensate, reconcile)", n)
		}
	})
}

// TestResolveCapturesWhatTheExecutionLeft: the sweeper's pass over a reservation whose
// execution died after Confirm captures once, whatever the capture step managed before dying,
// also when the saga's own loop allows a single reconcile attempt.
func TestResolveCapturesWhatTheExecutionLeft(t *testing.T) {
	uncertain := &payment.Uncertain{Op: payment.OpCapture, Reason: "timeout"}
	cases := []struct {
		name     string
		attempts int
		// crash runs what the capture step did before the execution died.
		crash func(h *harness, in Input)
		want  reservation.PaymentState // before Resolve
	}{
		{name: "authorized, capture never ran", attempts: 3, crash: func(*harness, Input) {}, want: reservation.Authorized},
		{name: "authorized, single reconcile attempt configured", attempts: 1, crash: func(*harness, Input) {}, want: reservation.Authorized},
		// An unanswered capture is recorded UNKNOWN_NEEDS_RECONCILIATION.
		{name: "capture unanswered, the provider never got it", attempts: 3, crash: func(h *harness, in Input) {
			h.pay.fail["capture"] = []error{uncertain}
			h.steps.Capture(context.Background(), State{Input: in})
		}, want: reservation.UnknownNeedsReconciliation},
		{name: "capture unanswered, the provider captured but the answer was lost", attempts: 3, crash: func(h *harness, in Input) {
			h.pay.fail["capture"] = []error{uncertain}
			h.pay.actAndFail["capture"] = true
			h.steps.Capture(context.Background(), State{Input: in})
			h.pay.actAndFail["capture"] = false
		}, want: reservation.UnknownNeedsReconciliation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, reservation.LateSuccessReacquire)
			h.steps.ReconcileAttempts = tc.attempts
			in := authorized(t, h, "pm_card_visa")
			if _, err := h.steps.Confirm(ctx, State{Input: in}); err != nil {
				t.Fatal(err)
			}
			tc.crash(h, in)
			h.expectState("r1", reservation.Confirmed, tc.want)
			// Found days later, long after the hold's deadline.
			h.advance(48 * time.Hour)
			for pass := 1; pass <= 2; pass++ {
				outcome, err := h.steps.Resolve(ctx, in)
				if err != nil || outcome != OutcomePaid {
					t.Fatalf("pass %d: %s %v", pass, outcome, err)
				}
				h.expectState("r1", reservation.Confirmed, reservation.Paid)
				if h.pay.captures != 1 {
					t.Fatalf("pass %d: %d captures", pass, h.pay.captures)
				}
			}
		})
	}
}

// An unknown payment method is the buyer's decline: the step ends declined, as for a refused
// card, and the log says so as a warning an operator can follow, counted apart so that a rate
// of them (every buyer's method unknown: a publishable key of another account) reaches the
// UnknownPaymentMethods alarm. A refused card is neither a warning nor counted there.
func TestAnUnknownPaymentMethodIsTheBuyersDeclineLoggedAsAWarning(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      string
		wantLevel string
		wantCount int64
		// wantPay is the payment state the step leaves: no webhook reports a method the
		// provider refused before any attempt, so the step records that decline itself; a
		// refused card's is the webhook's to record.
		wantPay reservation.PaymentState
	}{
		{"unknown payment method", payment.CodeUnknownPaymentMethod, "WARN", 1, reservation.Failed},
		{"refused card", "card_declined", "INFO", 0, reservation.Authorizing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reservation.LateSuccessReacquire)
			var logs bytes.Buffer
			h.steps.Log = slog.New(slog.NewJSONHandler(&logs, nil))
			in := input("r1", "pm_nope", "A1")
			h.claim(in)
			h.pay.fail["confirm"] = []error{&payment.Declined{Op: payment.OpConfirmPaymentMethod, Code: tc.code, Message: "m"}}
			declined := wantErr[*PaymentDeclined](t, h.authorize(in, "tok1"))
			if declined.Code != tc.code {
				t.Fatalf("declined with %q, want %q", declined.Code, tc.code)
			}
			if n := h.mem.Get(MetricUnknownPaymentMethods); n != tc.wantCount {
				t.Fatalf("%s counted %v, want %v", MetricUnknownPaymentMethods, n, tc.wantCount)
			}
			var level string
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "saga step finished" && rec["step"] == "authorize" {
					level, _ = rec["level"].(string)
				}
			}
			if level != tc.wantLevel {
				t.Fatalf("the authorize step logged at %q, want %q:\n%s", level, tc.wantLevel, logs.String())
			}
			h.expectState("r1", reservation.PaymentPending, tc.wantPay)
			if tc.wantPay == reservation.Failed {
				// The compensation unwinds at once: nobody waits for a payment that cannot come.
				st := State{Input: in, Failure: &Failure{Error: ErrPaymentDeclined}}
				if _, err := h.steps.Compensate(context.Background(), st); err != nil {
					t.Fatalf("compensate: %v", err)
				}
				if r := h.store.get("r1"); r.Inventory != reservation.Released {
					t.Fatalf("after the compensation: %s/%s, want the seats released", r.Inventory, r.Payment)
				}
			}
		})
	}
}
