package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// apiResponse is an API answer: status, headers and the JSON body decoded loosely.
type apiResponse struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r apiResponse) str(key string) string {
	s, _ := r.Body[key].(string)
	return s
}

// callAPI sends one request through the API Gateway stand-in as customer ("" sends no token;
// key "" sends no Idempotency-Key header).
func callAPI(e *Env, method, path, customer, key, body string) apiResponse {
	e.T.Helper()
	resp, raw := e.send(method, path, customer, key, body)
	out := apiResponse{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

// createBody renders a create request body.
func createBody(amount int64, paymentMethod string, seats ...string) string {
	b, _ := json.Marshal(map[string]any{"seatIds": seats, "amount": amount, "currency": "eur", "paymentMethod": paymentMethod})
	return string(b)
}

// countExecutions counts the state machine's executions.
func countExecutions(e *Env) int {
	e.T.Helper()
	n := 0
	p := sfn.NewListExecutionsPaginator(e.Stack.SFN, &sfn.ListExecutionsInput{StateMachineArn: aws.String(e.Stack.StateMachineARN)})
	for p.HasMorePages() {
		page, err := p.NextPage(e.Ctx)
		if err != nil {
			e.T.Fatalf("list executions: %v", err)
		}
		n += len(page.Executions)
	}
	return n
}

// countItems counts the items of a table (strongly consistent scan).
func countItems(e *Env, logical string) int {
	e.T.Helper()
	out, err := e.Stack.DynamoDB.Scan(e.Ctx, &dynamodb.ScanInput{
		TableName: aws.String(e.Stack.Names.Of(logical)), Select: ddbtypes.SelectCount, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		e.T.Fatalf("scan %s: %v", logical, err)
	}
	return int(out.Count)
}

// Bad input matrix through the API: the right 4xx, nothing written, no execution started.
func TestAPIRefusesBadInputAndWritesNothing(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 12)
	// Alice's buyer never finishes 3-D Secure, so her saga stays waiting for payment while the
	// bad requests arrive (a card that authorizes at once can move past AUTHORIZING before
	// WaitingForPayment's poll sees it, and the wait then times out).
	good := createBody(5000, stripesim.PaymentMethodThreeDSecureAbandoned, seats[0], seats[1])

	// Alice's one good reservation, so "someone else's reservation" has something to probe.
	created := callAPI(e, "POST", "/events/ev1/reservations", "alice", "alice-1", good)
	if created.Status != http.StatusAccepted {
		t.Fatalf("good request: %d %s", created.Status, created.Raw)
	}
	aliceID := created.str("reservationId")
	e.WaitingForPayment(aliceID)
	// A seat priced in another currency, and a seat item left without a price (as a catalog
	// loader that bypasses inventory.CreateSeats would write it).
	if err := e.Store.CreateSeats(e.Ctx, "ev1", inventory.SeatsAt(4000, "usd", "USD1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Stack.DynamoDB.PutItem(e.Ctx, &dynamodb.PutItemInput{
		TableName: aws.String(e.Stack.Names.Of(tables.SeatsTable)),
		Item: map[string]ddbtypes.AttributeValue{
			tables.AttrSeatKey: &ddbtypes.AttributeValueMemberS{Value: reservation.SeatKey("ev1", "FREE1")},
			tables.AttrEventID: &ddbtypes.AttributeValueMemberS{Value: "ev1"},
			tables.AttrSeatID:  &ddbtypes.AttributeValueMemberS{Value: "FREE1"},
			"state":            &ddbtypes.AttributeValueMemberS{Value: string(reservation.Available)},
			"version":          &ddbtypes.AttributeValueMemberN{Value: "1"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	executions, reservations := countExecutions(e), countItems(e, tables.ReservationsTable)

	cases := []struct {
		name       string
		method     string
		path       string
		customer   string
		key        string
		body       string
		wantStatus int
		wantCode   string
	}{
		{"no token", "POST", "/events/ev1/reservations", "", "k", good, 401, ""},
		{"malformed JSON", "POST", "/events/ev1/reservations", "bob", "k1", `{"seatIds":["S01"`, 400, "invalid_json"},
		{"unknown field", "POST", "/events/ev1/reservations", "bob", "k2", `{"seatIds":["S01"],"amount":1,"currency":"eur","paymentMethod":"pm","customerId":"alice"}`, 400, "unknown_field"},
		{"unknown event", "POST", "/events/nope/reservations", "bob", "k3", good, 404, "event_not_found"},
		{"unknown seat", "POST", "/events/ev1/reservations", "bob", "k4", createBody(100, "pm_card_visa", "Z99"), 400, "unknown_seat"},
		{"empty seats", "POST", "/events/ev1/reservations", "bob", "k5", createBody(100, "pm_card_visa"), 400, "no_seats"},
		{"duplicate seats", "POST", "/events/ev1/reservations", "bob", "k6", createBody(100, "pm_card_visa", seats[2], seats[2]), 400, "duplicate_seat"},
		{"too many seats", "POST", "/events/ev1/reservations", "bob", "k7", createBody(100, "pm_card_visa", seats[:11]...), 400, "too_many_seats"},
		{"zero amount", "POST", "/events/ev1/reservations", "bob", "k8", createBody(0, "pm_card_visa", seats[2]), 400, "invalid_amount"},
		{"one cent for a seat", "POST", "/events/ev1/reservations", "bob", "k10", createBody(1, "pm_card_visa", seats[2]), 409, "price_changed"},
		{"stale price", "POST", "/events/ev1/reservations", "bob", "k11", createBody(SeatPrice-1, "pm_card_visa", seats[2]), 409, "price_changed"},
		{"price in another currency", "POST", "/events/ev1/reservations", "bob", "k12",
			`{"seatIds":["` + seats[2] + `"],"amount":2500,"currency":"usd","paymentMethod":"pm_card_visa"}`, 409, "price_changed"},
		{"seat without a price", "POST", "/events/ev1/reservations", "bob", "k13", `{"seatIds":["FREE1"],"paymentMethod":"pm_card_visa"}`, 409, "seat_not_priced"},
		{"seats in two currencies", "POST", "/events/ev1/reservations", "bob", "k14",
			`{"seatIds":["` + seats[2] + `","USD1"],"paymentMethod":"pm_card_visa"}`, 422, "mixed_currency"},
		{"missing Idempotency-Key", "POST", "/events/ev1/reservations", "bob", "", good, 400, "missing_idempotency_key"},
		{"oversized Idempotency-Key", "POST", "/events/ev1/reservations", "bob", strings.Repeat("k", 65), good, 400, "invalid_idempotency_key"},
		{"seats visibly taken", "POST", "/events/ev1/reservations", "bob", "k9", good, 409, "seats_unavailable"},
		{"someone else's reservation: GET", "GET", "/reservations/" + aliceID, "bob", "", "", 404, "not_found"},
		{"someone else's reservation: DELETE", "DELETE", "/reservations/" + aliceID, "bob", "", "", 404, "not_found"},
		{"malformed reservation id", "GET", "/reservations/not-an-id", "bob", "", "", 404, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := callAPI(e, tc.method, tc.path, tc.customer, tc.key, tc.body)
			if resp.Status != tc.wantStatus || (tc.wantCode != "" && resp.str("code") != tc.wantCode) {
				t.Fatalf("got %d %s, want %d %s", resp.Status, resp.Raw, tc.wantStatus, tc.wantCode)
			}
			if tc.wantCode != "" && resp.str("message") == "" {
				t.Fatalf("no message: %s", resp.Raw)
			}
		})
	}
	if n := countExecutions(e); n != executions {
		t.Fatalf("%d executions after the bad requests, want %d", n, executions)
	}
	if n := countItems(e, tables.ReservationsTable); n != reservations {
		t.Fatalf("%d reservations after the bad requests, want %d", n, reservations)
	}
	// Alice's saga goes on meanwhile; every outbox event must be hers.
	out, err := e.Stack.DynamoDB.Scan(e.Ctx, &dynamodb.ScanInput{TableName: aws.String(e.Stack.Names.Of(tables.OutboxTable)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range out.Items {
		if env, err := outbox.FromItem(item); err != nil || env.ReservationID != aliceID {
			t.Fatalf("outbox item of %q (%v): a refused request wrote something", env.ReservationID, err)
		}
	}
	for _, s := range seats[2:] {
		e.ExpectSeat("ev1", s, reservation.Available, "")
	}
	if _, ok := e.Ledger(api.ReservationID("bob", "k9")); ok {
		t.Fatal("a refused request created a payment")
	}
	// Alice still sees her own reservation.
	if own := callAPI(e, "GET", "/reservations/"+aliceID, "alice", "", ""); own.Status != 200 || own.str("reservationId") != aliceID || own.str("status") == "" {
		t.Fatalf("owner GET: %d %s", own.Status, own.Raw)
	}
}

// The same Idempotency-Key twice: one reservation, one execution; the same key with another
// body: 409. A replay after the saga finished reports the outcome.
func TestAPIIdempotencyKeyMakesOneReservation(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 4)
	body := createBody(5000, stripesim.PaymentMethodVisa, seats[0], seats[1])
	first := callAPI(e, "POST", "/events/ev1/reservations", "alice", "order-42", body)
	if first.Status != http.StatusAccepted || first.str("status") != api.StatusPending {
		t.Fatalf("first: %d %s", first.Status, first.Raw)
	}
	id := first.str("reservationId")
	if id != api.ReservationID("alice", "order-42") || first.Header.Get("Location") != "/reservations/"+id {
		t.Fatalf("first: id %q location %q", id, first.Header.Get("Location"))
	}
	// The client retries, seats in another order: the same reservation.
	replay := callAPI(e, "POST", "/events/ev1/reservations", "alice", "order-42", createBody(5000, stripesim.PaymentMethodVisa, seats[1], seats[0]))
	if replay.Status != http.StatusAccepted || replay.str("reservationId") != id {
		t.Fatalf("replay: %d %s", replay.Status, replay.Raw)
	}
	// The same key for something else.
	other := callAPI(e, "POST", "/events/ev1/reservations", "alice", "order-42", createBody(2500, stripesim.PaymentMethodVisa, seats[2]))
	if other.Status != http.StatusConflict || other.str("code") != "idempotency_key_reused" {
		t.Fatalf("other body: %d %s", other.Status, other.Raw)
	}
	x := e.Finish(e.Stack.ExecutionARN(id))
	e.ExpectEnding(x, saga.EndConfirmed)
	after := callAPI(e, "POST", "/events/ev1/reservations", "alice", "order-42", body)
	if after.Status != http.StatusAccepted || after.str("reservationId") != id || after.str("status") != string(reservation.Confirmed) {
		t.Fatalf("replay after the saga: %d %s", after.Status, after.Raw)
	}
	if other := callAPI(e, "POST", "/events/ev1/reservations", "alice", "order-42", createBody(2500, stripesim.PaymentMethodVisa, seats[2])); other.Status != http.StatusConflict {
		t.Fatalf("other body after the saga: %d %s", other.Status, other.Raw)
	}
	if n := countExecutions(e); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	if n := countItems(e, tables.ReservationsTable); n != 1 {
		t.Fatalf("%d reservations, want 1", n)
	}
	e.ExpectReservation(id, reservation.Confirmed, reservation.Paid)
	e.ExpectSeat("ev1", seats[2], reservation.Available, "")
	if n := countType(e.OutboxTypes(id), outbox.SeatsHeld); n != 1 {
		t.Fatalf("%d SeatsHeld events", n)
	}
	l, ok := e.Ledger(id)
	if !ok || l.Captures != 1 || l.Captured != 5000 {
		t.Fatalf("ledger %+v", l)
	}
	// The owner's GET shows the outcome; concurrent retries of a new key start one execution.
	if got := callAPI(e, "GET", "/reservations/"+id, "alice", "", ""); got.Status != 200 || got.str("paymentState") != string(reservation.Paid) {
		t.Fatalf("GET: %d %s", got.Status, got.Raw)
	}
	expectConcurrentRetriesStartOneExecution(e, seats[3])
	e.Invariants()
}

// expectConcurrentRetriesStartOneExecution sends the same new request five times at once: all
// get the same reservation, one execution starts.
func expectConcurrentRetriesStartOneExecution(e *Env, seat string) {
	e.T.Helper()
	before := countExecutions(e)
	results := make(chan apiResponse, 5)
	for i := 0; i < 5; i++ {
		go func() {
			results <- callAPI(e, "POST", "/events/ev1/reservations", "carol", "carol-1", createBody(2500, stripesim.PaymentMethodVisa, seat))
		}()
	}
	want := api.ReservationID("carol", "carol-1")
	for i := 0; i < 5; i++ {
		r := <-results
		if r.Status != http.StatusAccepted || r.str("reservationId") != want {
			e.T.Fatalf("concurrent retry: %d %s", r.Status, r.Raw)
		}
	}
	if n := countExecutions(e); n != before+1 {
		e.T.Fatalf("%d executions after concurrent retries, want %d", n, before+1)
	}
	x := e.Finish(e.Stack.ExecutionARN(want))
	e.ExpectEnding(x, saga.EndConfirmed)
}

func countType(types []outbox.Type, t outbox.Type) int {
	n := 0
	for _, x := range types {
		if x == t {
			n++
		}
	}
	return n
}

// postReservation is a small convenience for tests that only need a reservation id.
func postReservation(e *Env, customer, key string, paymentMethod string, seats ...string) string {
	e.T.Helper()
	resp := callAPI(e, "POST", "/events/ev1/reservations", customer, key, createBody(2500*int64(len(seats)), paymentMethod, seats...))
	if resp.Status != http.StatusAccepted {
		e.T.Fatalf("POST: %d %s", resp.Status, resp.Raw)
	}
	return resp.str("reservationId")
}

// GET shows the owner what the browser needs to finish paying (the client secret while 3-D
// Secure is pending); DELETE cancels once, repeats harmlessly, and a confirmed reservation
// cannot be canceled.
func TestAPIStatusShowsThePaymentStepAndCancelIsIdempotent(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 2)
	id := postReservation(e, "alice", "k1", stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	e.WaitingForPayment(id)
	e.WaitFor("the PaymentIntent to ask for 3-D Secure", e.Deadline(id), func() bool {
		l, ok := e.Ledger(id)
		return ok && l.Status == "requires_action"
	})
	got := callAPI(e, "GET", "/reservations/"+id, "alice", "", "")
	if got.Status != 200 || got.str("status") != string(reservation.PaymentPending) || got.str("paymentState") != string(reservation.Authorizing) ||
		got.str("clientSecret") == "" || got.str("nextAction") == "" || got.str("paymentIntentId") == "" || got.str("holdExpiresAt") == "" {
		t.Fatalf("GET while paying: %d %s", got.Status, got.Raw)
	}
	if strings.Contains(got.Raw, "taskToken") || strings.Contains(got.Raw, "customerId") {
		t.Fatalf("GET leaks internals: %s", got.Raw)
	}
	del := callAPI(e, "DELETE", "/reservations/"+id, "alice", "", "")
	if del.Status != http.StatusAccepted || del.Body["cancelRequested"] != true {
		t.Fatalf("DELETE: %d %s", del.Status, del.Raw)
	}
	if again := callAPI(e, "DELETE", "/reservations/"+id, "alice", "", ""); again.Status != http.StatusAccepted && again.Status != http.StatusOK {
		t.Fatalf("DELETE again: %d %s", again.Status, again.Raw)
	}
	x := e.Finish(e.Stack.ExecutionARN(id))
	e.ExpectEnding(x, saga.EndCustomerCanceled)
	e.ExpectPath(x, "Claim seats", "Wait for payment authorization", "Void payment after customer cancel", "Canceled by customer")
	e.ExpectReservation(id, reservation.Released, reservation.Canceled)
	if after := callAPI(e, "DELETE", "/reservations/"+id, "alice", "", ""); after.Status != http.StatusOK || after.str("status") != string(reservation.Released) {
		t.Fatalf("DELETE after release: %d %s", after.Status, after.Raw)
	}

	// A confirmed reservation cannot be canceled.
	paid := postReservation(e, "bob", "b1", stripesim.PaymentMethodVisa, seats[1])
	e.ExpectEnding(e.Finish(e.Stack.ExecutionARN(paid)), saga.EndConfirmed)
	if c := callAPI(e, "DELETE", "/reservations/"+paid, "bob", "", ""); c.Status != http.StatusConflict || c.str("code") != "already_confirmed" {
		t.Fatalf("DELETE confirmed: %d %s", c.Status, c.Raw)
	}
	e.ExpectReservation(paid, reservation.Confirmed, reservation.Paid)
	e.Invariants()
}
