package e2e

import (
	"bytes"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/secrets"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// deliverWebhook posts a webhook payload to the API's webhook route, signed now on the stack's
// clock as Stripe signs it, and returns the HTTP status.
func deliverWebhook(e *Env, payload []byte) int {
	e.T.Helper()
	req, err := http.NewRequestWithContext(e.Ctx, "POST", e.Stack.Endpoints.API+"/webhooks/stripe", bytes.NewReader(payload))
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", stripesim.SignPayload(payload, e.Stack.WebhookSecret, e.Clock.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("deliver webhook: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A webhook delivered 5 times and out of order: one transition, one SendTaskSuccess, and
// the saga confirms. The simulator's own deliveries are withheld so the test controls every
// one of them.
func TestWebhookDeliveredFiveTimesOutOfOrderConfirmsOnce(t *testing.T) {
	e := New(t, Options{})
	e.Stack.Payments.SetWebhook(stripesim.WebhookConfig{}) // keep events, deliver none
	seats := e.Seed("ev1", 2)
	id := postReservation(e, "alice", "k1", stripesim.PaymentMethodVisa, seats[0])
	r := e.WaitingForPayment(id)
	e.WaitFor("the PaymentIntent to be authorized", e.Deadline(id), func() bool {
		l, ok := e.Ledger(id)
		return ok && l.Status == "requires_capture"
	})

	var payloads [][]byte
	for _, ev := range e.Stack.Payments.Events() {
		if strings.Contains(string(ev.Payload), r.PaymentIntentID) {
			payloads = append(payloads, ev.Payload)
		}
	}
	if len(payloads) < 2 {
		t.Fatalf("want at least two events about %s, got %d", r.PaymentIntentID, len(payloads))
	}
	// Newest first, then the older ones, repeated: five deliveries out of order, two of them
	// at the same moment.
	var deliveries [][]byte
	for i := 0; len(deliveries) < 5; i++ {
		deliveries = append(deliveries, payloads[len(payloads)-1-i%len(payloads)])
	}
	statuses := make([]int, len(deliveries))
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses[i] = deliverWebhook(e, deliveries[i])
		}(i)
	}
	wg.Wait()
	for i := 2; i < len(deliveries); i++ {
		statuses[i] = deliverWebhook(e, deliveries[i])
	}
	// A delivery told to come back (409: another one was reporting) is redelivered, as Stripe
	// would.
	for i, st := range statuses {
		for attempt := 0; st != http.StatusOK && attempt < 20; attempt++ {
			if st != http.StatusConflict {
				t.Fatalf("delivery %d: status %d", i, st)
			}
			time.Sleep(50 * time.Millisecond)
			st = deliverWebhook(e, deliveries[i])
		}
		if st != http.StatusOK {
			t.Fatalf("delivery %d never acknowledged", i)
		}
	}

	x := e.Finish(e.Stack.ExecutionARN(id))
	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed")
	e.ExpectReservation(id, reservation.Confirmed, reservation.Paid)
	e.ExpectSeat("ev1", seats[0], reservation.Confirmed, id)

	if n := e.Stack.Metrics.Total("WebhookTransitions"); n != 1 {
		t.Fatalf("%d webhook transitions, want 1", n)
	}
	if n := e.Stack.Metrics.Get("WebhookCallbacks", metrics.Dim{Name: "outcome", Value: "authorized"}); n != 1 {
		t.Fatalf("%d SendTaskSuccess, want 1", n)
	}
	if n := countType(e.OutboxTypes(id), outbox.PaymentAuthorized); n != 1 {
		t.Fatalf("%d PaymentAuthorized events, want 1", n)
	}
	history, err := e.Stack.History(e.Ctx, e.Stack.ExecutionARN(id))
	if err != nil {
		t.Fatal(err)
	}
	succeeded := 0
	for _, ev := range history {
		if ev.Type == sfntypes.HistoryEventTypeTaskSucceeded && ev.TaskSucceededEventDetails != nil &&
			strings.Contains(aws.ToString(ev.TaskSucceededEventDetails.Resource), "waitForTaskToken") {
			succeeded++
		}
	}
	if succeeded != 1 {
		t.Fatalf("the payment wait succeeded %d times in the history, want 1", succeeded)
	}
	l, _ := e.Ledger(id)
	if l.Captures != 1 || l.Captured != 2500 {
		t.Fatalf("ledger %+v", l)
	}

	// Delivering everything again once the saga is done changes nothing.
	for _, p := range payloads {
		if st := deliverWebhook(e, p); st != http.StatusOK {
			t.Fatalf("late redelivery: %d", st)
		}
	}
	if n := e.Stack.Metrics.Total("WebhookTransitions"); n != 1 {
		t.Fatalf("%d webhook transitions after late redelivery", n)
	}
	e.ExpectReservation(id, reservation.Confirmed, reservation.Paid)
	// A forged delivery is refused and recorded nowhere.
	forged := append([]byte(nil), payloads[0]...)
	req, _ := http.NewRequestWithContext(e.Ctx, "POST", e.Stack.Endpoints.API+"/webhooks/stripe", bytes.NewReader(forged))
	req.Header.Set("Stripe-Signature", stripesim.SignPayload(forged, "whsec_wrong", e.Clock.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("forged webhook: %d", resp.StatusCode)
	}
	e.Invariants()
}

// Stripe rolls the endpoint's signing secret and the operator puts the new one in Secrets
// Manager: the running webhook function, which cached the old secret at its cold start, fails
// to verify the first event signed with the new one, reads the secret again and accepts it, so
// the booking is confirmed without a restart. The forced re-read is rate-limited, so the roll
// happens a minute after the cold start's read.
func TestARolledWebhookSecretIsPickedUpWithoutARestart(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	first := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(first)), saga.EndConfirmed)
	e.Clock.Advance(time.Minute)
	rolled := e.Clock.Now()
	if err := e.Stack.RollWebhookSecret(e.Ctx, "whsec_rolled_"+first.ReservationID); err != nil {
		t.Fatal(err)
	}
	second := Input("bob", "k1", "ev1", stripesim.PaymentMethodVisa, seats[1])
	x := e.Finish(e.Reserve(second))
	e.ExpectEnding(x, saga.EndConfirmed)
	e.ExpectReservation(second.ReservationID, reservation.Confirmed, reservation.Paid)
	if took := e.Clock.Now().Sub(rolled); took >= secrets.DefaultTTL {
		t.Fatalf("confirmed %s after the roll: the cache's expiry, not the failed signature, picked the secret up", took)
	}
	// The cold start read the secret once; the first event signed with the new one read it again.
	var reads int64
	for _, d := range e.Stack.Gate.Decisions() {
		if d.Allowed && d.Action == "secretsmanager:GetSecretValue" && strings.HasSuffix(d.Principal, "/webhook") &&
			d.Resource == e.Stack.SecretARN(deploy.StripeWebhookSecret) {
			reads += d.Count
		}
	}
	if reads < 2 {
		t.Errorf("the webhook read its signing secret %d times: the roll was not picked up by a re-read", reads)
	}
}
