package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// TestDecideMapsTheSettlementDecision is the webhook's mapping of reservation.Decide over the
// combinations a webhook meets: while the saga waits, sell answers record the authorization
// and report success, unwind answers report CustomerCanceled or PaymentDeclined and record
// only what the decision records, wait answers do nothing; when it does not wait, stale.
func TestDecideMapsTheSettlementDecision(t *testing.T) {
	const (
		declined = saga.ErrPaymentDeclined
		canceled = saga.ErrCustomerCanceled
	)
	type want struct {
		kind      decisionKind
		event     reservation.PaymentEvent
		success   bool
		errorName string
	}
	record := func(ev reservation.PaymentEvent) want { return want{kind: decideRecord, event: ev} }
	fail := func(name string) want { return want{kind: decideCallback, errorName: name} }
	var (
		succeed = want{kind: decideCallback, success: true}
		nothing = want{kind: decideNothing}
		stale   = want{kind: decideStale}
	)
	waiting := func(p reservation.PaymentState, cancelled bool) reservation.Reservation {
		return reservation.Reservation{ID: "r1", Inventory: reservation.PaymentPending, Payment: p, PaymentIntentID: "pi_1",
			TaskToken: "tok-1", Version: 3, HoldExpiresAt: t0.Add(time.Minute), CustomerCanceled: cancelled}
	}
	with := func(r reservation.Reservation, mut func(*reservation.Reservation)) reservation.Reservation {
		mut(&r)
		return r
	}
	cases := []struct {
		name  string
		r     reservation.Reservation
		truth reservation.Truth
		want  want
	}{
		{"authorized: record it first", waiting(reservation.Authorizing, false), reservation.TruthAuthorized, record(reservation.AuthorizationOK)},
		{"authorized and recorded: success", waiting(reservation.Authorized, false), reservation.TruthAuthorized, succeed},
		{"authorized after an unknown: record it", waiting(reservation.UnknownNeedsReconciliation, false), reservation.TruthAuthorized, record(reservation.AuthorizationOK)},
		{"cancelled and authorized: record the authorization", waiting(reservation.Authorizing, true), reservation.TruthAuthorized, record(reservation.AuthorizationOK)},
		{"cancelled, authorization recorded: CustomerCanceled, never success", waiting(reservation.Authorized, true), reservation.TruthAuthorized, fail(canceled)},
		{"awaiting the buyer: nothing", waiting(reservation.Authorizing, false), reservation.TruthAwaitingBuyer, nothing},
		{"processing: nothing", waiting(reservation.Authorizing, false), reservation.TruthProcessing, nothing},
		{"cancelled while awaiting the buyer: CustomerCanceled, the void left to compensation", waiting(reservation.Authorizing, true), reservation.TruthAwaitingBuyer, fail(canceled)},
		{"cancelled while processing: CustomerCanceled", waiting(reservation.Authorizing, true), reservation.TruthProcessing, fail(canceled)},
		{"declined: the decline is recorded first", waiting(reservation.Authorizing, false), reservation.TruthDeclined, record(reservation.PaymentDeclined)},
		{"declined, recorded before: PaymentDeclined", waiting(reservation.Failed, false), reservation.TruthDeclined, fail(declined)},
		{"cancelled and declined: the decline is recorded first", waiting(reservation.Authorizing, true), reservation.TruthDeclined, record(reservation.PaymentDeclined)},
		{"cancelled, decline recorded: CustomerCanceled", waiting(reservation.Failed, true), reservation.TruthDeclined, fail(canceled)},
		{"canceled at the provider: record the void", waiting(reservation.Authorizing, false), reservation.TruthCanceled, record(reservation.VoidPayment)},
		{"void recorded before a crash: PaymentDeclined", waiting(reservation.Canceled, false), reservation.TruthCanceled, fail(declined)},
		{"cancelled, void recorded: CustomerCanceled", waiting(reservation.Canceled, true), reservation.TruthCanceled, fail(canceled)},
		{"captured before confirming: the saga reacquires, nothing here", waiting(reservation.Paid, false), reservation.TruthCaptured, nothing},
		{"cancelled and captured: CustomerCanceled, the refund left to compensation", waiting(reservation.Paid, true), reservation.TruthCaptured, fail(canceled)},
		{"no answer from the provider: nothing", waiting(reservation.Authorizing, false), reservation.TruthUnavailable, nothing},
		{"hold lapsed: stale", with(waiting(reservation.Authorizing, false), func(r *reservation.Reservation) { r.HoldExpiresAt = t0 }),
			reservation.TruthAuthorized, stale},
		{"no task token: stale", with(waiting(reservation.Authorizing, false), func(r *reservation.Reservation) { r.TaskToken = "" }),
			reservation.TruthAuthorized, stale},
		{"held, before authorize: stale", with(waiting(reservation.NotStarted, false), func(r *reservation.Reservation) { r.Inventory = reservation.Held }),
			reservation.TruthAuthorized, stale},
		{"released and cancelled, payment authorizing: stale", with(waiting(reservation.Authorizing, true), func(r *reservation.Reservation) { r.Inventory = reservation.Released }),
			reservation.TruthAuthorized, stale},
		{"confirmed: stale", with(waiting(reservation.Authorized, false), func(r *reservation.Reservation) { r.Inventory = reservation.Confirmed }),
			reservation.TruthAuthorized, stale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.r, tc.truth, t0)
			got := want{kind: d.kind, event: d.event, success: d.success, errorName: d.errorName}
			if got != tc.want {
				t.Fatalf("got %+v (settlement %+v), want %+v", got, d.settlement, tc.want)
			}
		})
	}
}

// TestWebhookOfAnotherAPIVersionIsProcessedAndCounted: an event rendered for another API
// version is processed like any other, and counted.
func TestWebhookOfAnotherAPIVersionIsProcessedAndCounted(t *testing.T) {
	r := newRig(t)
	for i, version := range []string{"2019-02-19", pinnedAPIVersion} {
		payload, _ := json.Marshal(map[string]string{"id": "evt_" + version, "type": "payment_intent.amount_capturable_updated",
			"pi": "pi_1", "apiVersion": version})
		res, err := r.h.Process(context.Background(), payload, "ok")
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if want := []Action{ActionAuthorized, ActionAlreadyReported}[i]; res.Action != want {
			t.Fatalf("delivery %d: action %q, want %q", i, res.Action, want)
		}
	}
	if got := r.metrics.Total("WebhookAPIVersionMismatch"); got != 1 {
		t.Fatalf("WebhookAPIVersionMismatch %d, want 1", got)
	}
}
