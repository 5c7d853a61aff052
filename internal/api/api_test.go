package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type rig struct {
	h       *Handler
	clock   *clock.Fake
	sfn     *sagatest.StepFunctions
	res     *reservations
	gate    *gate
	cat     *fakeCatalog
	pay     *sagatest.Payments
	metrics *metrics.Memory
}

func newRig(t testing.TB) *rig {
	t.Helper()
	clk := clock.NewFake(testNow)
	r := &rig{
		clock:   clk,
		sfn:     sagatest.NewStepFunctions(),
		res:     &reservations{MemStore: sagatest.NewMemStore(clk.Now)},
		cat:     &fakeCatalog{seats: map[string]CatalogSeat{}},
		pay:     sagatest.NewPayments(),
		metrics: metrics.NewMemory(),
	}
	r.sfn.Now = clk.Now
	r.gate = newGate(clk.Now, r.res.MemStore)
	for _, s := range []string{"A1", "A2", "A3", "B1"} {
		r.cat.seats["ev1#"+s] = CatalogSeat{Seat: reservation.Seat{EventID: "ev1", SeatID: s, State: reservation.Available,
			PriceMinor: 2500, Currency: "EUR"}}
	}
	h, err := New(Deps{
		Reservations: r.res, Admissions: r.gate, Seats: r.cat, SFN: r.sfn, Payments: r.pay,
		StateMachineARN: testMachine, MaxSeats: 3,
		Now:     clk.Now,
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics: r.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	return r
}

func claims(sub string) map[string]any {
	if sub == "" {
		return nil
	}
	return map[string]any{"claims": map[string]any{"sub": sub}}
}

func postReq(sub, eventID, key, body string) events.APIGatewayProxyRequest {
	req := events.APIGatewayProxyRequest{
		Resource: ResourceCreate, Path: "/events/" + eventID + "/reservations", HTTPMethod: "POST",
		PathParameters: map[string]string{"eventId": eventID},
		Headers:        map[string]string{},
		Body:           body,
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1", Authorizer: claims(sub)},
	}
	if key != "" {
		req.Headers["idempotency-key"] = key
	}
	req.Headers["content-type"] = "application/json"
	return req
}

func idReq(method, sub, id string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		Resource: ResourceReservation, Path: "/reservations/" + id, HTTPMethod: method,
		PathParameters: map[string]string{"id": id},
		RequestContext: events.APIGatewayProxyRequestContext{Authorizer: claims(sub)},
	}
}

const goodBody = `{"seatIds":["A1","A2"],"amount":5000,"currency":"EUR","paymentMethod":"pm_card_visa"}`

func decode[T any](t *testing.T, resp events.APIGatewayProxyResponse) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
		t.Fatalf("response body %q: %v", resp.Body, err)
	}
	return v
}

func (r *rig) do(t *testing.T, req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	t.Helper()
	resp, err := r.h.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	return resp
}

// withContentType replaces the request's Content-Type header with values (none: no header);
// more than one value goes in MultiValueHeaders, as API Gateway passes a repeated header.
func withContentType(values ...string) func(*events.APIGatewayProxyRequest) {
	return func(req *events.APIGatewayProxyRequest) {
		delete(req.Headers, "content-type")
		switch len(values) {
		case 0:
		case 1:
			req.Headers["Content-Type"] = values[0]
		default:
			req.Headers["Content-Type"] = values[len(values)-1]
			req.MultiValueHeaders = map[string][]string{"Content-Type": values}
		}
	}
}

// TestCreateRefusesBadInput is internal/twin/e2e's TestAPIRefusesBadInputAndWritesNothing at
// unit level: every bad request gets the right 4xx and code, and nothing is started.
func TestCreateRefusesBadInput(t *testing.T) {
	seats := func(n int) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf(`"S%d"`, i)
		}
		return `{"seatIds":[` + strings.Join(ids, ",") + `],"amount":100,"currency":"eur","paymentMethod":"pm_x"}`
	}
	cases := []struct {
		name       string
		sub, event string
		key        string
		body       string
		setup      func(*rig)
		wantStatus int
		wantCode   string
		// edit, when set, changes the request before it is sent.
		edit func(*events.APIGatewayProxyRequest)
	}{
		{"no authenticated customer", "", "ev1", "k1", goodBody, nil, 401, "unauthorized", nil},
		{"no content type", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType()},
		{"empty content type", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("")},
		{"plain text body", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("text/plain")},
		{"form-encoded body", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("application/x-www-form-urlencoded")},
		{"json lookalike type", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("application/jsonp")},
		{"json in latin-1", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("application/json; charset=iso-8859-1")},
		{"json with another parameter", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("application/json; profile=x")},
		{"malformed content type", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("application/json; charset")},
		{"two content types", "alice", "ev1", "k1", goodBody, nil, 415, "unsupported_media_type", withContentType("application/json", "text/plain")},
		{"seatIds key in another case", "alice", "ev1", "k1", `{"SeatIds":["A1"],"amount":2500,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "unknown_field", nil},
		{"paymentMethod key in another case", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":2500,"currency":"eur","paymentmethod":"pm"}`, nil, 400, "unknown_field", nil},
		{"key given twice", "alice", "ev1", "k1", `{"seatIds":["A1"],"seatIds":["A2"],"amount":2500,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_json", nil},
		{"key given twice, once escaped", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":2500,"currency":"eur","paymentMethod":"pm","p\u0061ymentMethod":"pm_other"}`, nil, 400, "invalid_json", nil},
		{"null body", "alice", "ev1", "k1", `null`, nil, 400, "invalid_json", nil},
		{"currency with a Kelvin sign", "alice", "ev1", "k1", `{"seatIds":["A1"],"currency":"\u212Arw","paymentMethod":"pm"}`, nil, 400, "invalid_currency", nil},
		{"currency with a dotted capital I", "alice", "ev1", "k1", `{"seatIds":["A1"],"currency":"\u0130nr","paymentMethod":"pm"}`, nil, 400, "invalid_currency", nil},
		{"currency with a dotless i", "alice", "ev1", "k1", `{"seatIds":["A1"],"currency":"\u0131nr","paymentMethod":"pm"}`, nil, 400, "invalid_currency", nil},
		{"event id with an undecoded escape", "alice", "%zz", "k1", goodBody, nil, 400, "invalid_event_id", nil},
		{"event id with invalid UTF-8", "alice", "ev\xff", "k1", goodBody, nil, 400, "invalid_event_id", nil},
		{"idempotency key with a non-ASCII byte", "alice", "ev1", "k\x80", goodBody, nil, 400, "invalid_idempotency_key", nil},
		{"customer id with a hash", "a#b", "ev1", "k1", goodBody, nil, 401, "unauthorized", nil},
		{"malformed event id", "alice", "ev 1", "k1", goodBody, nil, 400, "invalid_event_id", nil},
		{"event id too long", "alice", strings.Repeat("e", 65), "k1", goodBody, nil, 400, "invalid_event_id", nil},
		{"missing idempotency key", "alice", "ev1", "", goodBody, nil, 400, "missing_idempotency_key", nil},
		{"oversized idempotency key", "alice", "ev1", strings.Repeat("k", 65), goodBody, nil, 400, "invalid_idempotency_key", nil},
		{"idempotency key with a space", "alice", "ev1", "k 1", goodBody, nil, 400, "invalid_idempotency_key", nil},
		{"idempotency key with a control byte", "alice", "ev1", "k\x01", goodBody, nil, 400, "invalid_idempotency_key", nil},
		{"empty body", "alice", "ev1", "k1", "", nil, 400, "invalid_json", nil},
		{"malformed json", "alice", "ev1", "k1", `{"seatIds":["A1"`, nil, 400, "invalid_json", nil},
		{"not an object", "alice", "ev1", "k1", `["A1"]`, nil, 400, "invalid_json", nil},
		{"two objects", "alice", "ev1", "k1", goodBody + goodBody, nil, 400, "invalid_json", nil},
		{"unknown field", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":1,"currency":"eur","paymentMethod":"pm","discount":5}`, nil, 400, "unknown_field", nil},
		{"customer id in the body", "alice", "ev1", "k1", `{"customerId":"bob","seatIds":["A1"],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "unknown_field", nil},
		{"wrong type", "alice", "ev1", "k1", `{"seatIds":"A1","amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_field", nil},
		{"fractional amount", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":1.5,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_field", nil},
		{"no seats", "alice", "ev1", "k1", `{"seatIds":[],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "no_seats", nil},
		{"seats missing", "alice", "ev1", "k1", `{"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "no_seats", nil},
		{"too many seats", "alice", "ev1", "k1", seats(4), nil, 400, "too_many_seats", nil},
		{"duplicate seat", "alice", "ev1", "k1", `{"seatIds":["A1","A1"],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "duplicate_seat", nil},
		{"seat id with a hash", "alice", "ev1", "k1", `{"seatIds":["A#1"],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_seat_id", nil},
		{"empty seat id", "alice", "ev1", "k1", `{"seatIds":[""],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_seat_id", nil},
		{"zero amount", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":0,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_amount", nil},
		{"negative amount", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":-5,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_amount", nil},
		{"huge amount", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":99999999999999,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "invalid_amount", nil},
		{"bad currency", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":1,"currency":"euro","paymentMethod":"pm"}`, nil, 400, "invalid_currency", nil},
		{"missing payment method", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":1,"currency":"eur"}`, nil, 400, "invalid_payment_method", nil},
		{"body too large", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":1,"currency":"eur","paymentMethod":"` + strings.Repeat("p", MaxBodyBytes) + `"}`, nil, 413, "body_too_large", nil},
		{"unknown event", "alice", "nope", "k1", goodBody, nil, 404, "event_not_found", nil},
		{"unknown seat", "alice", "ev1", "k1", `{"seatIds":["A1","Z9"],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 400, "unknown_seat", nil},
		{"seat taken", "alice", "ev1", "k1", goodBody, func(r *rig) {
			r.cat.seats["ev1#A2"] = CatalogSeat{Seat: reservation.Seat{EventID: "ev1", SeatID: "A2", State: reservation.Confirmed, ReservationID: "r_other",
				PriceMinor: 2500, Currency: "EUR"}}
		}, 409, "seats_unavailable", nil},
		{"seat held by a live hold", "alice", "ev1", "k1", goodBody, func(r *rig) {
			r.cat.seats["ev1#A1"] = CatalogSeat{Seat: reservation.Seat{EventID: "ev1", SeatID: "A1", State: reservation.Held, ReservationID: "r_other", HoldExpiresAt: testNow.Add(time.Minute),
				PriceMinor: 2500, Currency: "EUR"}}
		}, 409, "seats_unavailable", nil},
		{"not on sale yet", "alice", "ev1", "k1", goodBody, func(r *rig) {
			cs := r.cat.seats["ev1#A1"]
			cs.OnSaleFrom = testNow.Add(time.Hour)
			r.cat.seats["ev1#A1"] = cs
		}, 409, "not_on_sale", nil},
		{"sale over", "alice", "ev1", "k1", goodBody, func(r *rig) {
			cs := r.cat.seats["ev1#A2"]
			cs.OnSaleUntil = testNow
			r.cat.seats["ev1#A2"] = cs
		}, 409, "not_on_sale", nil},
		{"seat price went up", "alice", "ev1", "k1", goodBody, func(r *rig) {
			cs := r.cat.seats["ev1#A2"]
			cs.Seat.PriceMinor = 3000
			r.cat.seats["ev1#A2"] = cs
		}, 409, "price_changed", nil},
		{"amount below the seat prices", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":1,"currency":"eur","paymentMethod":"pm"}`, nil, 409, "price_changed", nil},
		{"amount without currency below the seat prices", "alice", "ev1", "k1", `{"seatIds":["A1"],"amount":2499,"paymentMethod":"pm"}`, nil, 409, "price_changed", nil},
		{"currency differs from the seat prices", "alice", "ev1", "k1", `{"seatIds":["A1","A2"],"amount":5000,"currency":"usd","paymentMethod":"pm"}`, nil, 409, "price_changed", nil},
		{"currency alone differs", "alice", "ev1", "k1", `{"seatIds":["A1"],"currency":"usd","paymentMethod":"pm"}`, nil, 409, "price_changed", nil},
		{"seat without a price", "alice", "ev1", "k1", `{"seatIds":["A1","A2"],"paymentMethod":"pm"}`, func(r *rig) {
			cs := r.cat.seats["ev1#A2"]
			cs.Seat.PriceMinor, cs.Seat.Currency = 0, ""
			r.cat.seats["ev1#A2"] = cs
		}, 409, "seat_not_priced", nil},
		{"seat with a price but no currency", "alice", "ev1", "k1", goodBody, func(r *rig) {
			cs := r.cat.seats["ev1#A1"]
			cs.Seat.Currency = ""
			r.cat.seats["ev1#A1"] = cs
		}, 409, "seat_not_priced", nil},
		{"seats in two currencies", "alice", "ev1", "k1", `{"seatIds":["A1","A2"],"paymentMethod":"pm"}`, func(r *rig) {
			cs := r.cat.seats["ev1#A2"]
			cs.Seat.Currency = "USD"
			r.cat.seats["ev1#A2"] = cs
		}, 422, "mixed_currency", nil},
		{"seats cost more than one reservation may charge", "alice", "ev1", "k1", `{"seatIds":["A1","A2"],"paymentMethod":"pm"}`, func(r *rig) {
			for _, s := range []string{"A1", "A2"} {
				cs := r.cat.seats["ev1#"+s]
				cs.Seat.PriceMinor = MaxAmount
				r.cat.seats["ev1#"+s] = cs
			}
		}, 422, "amount_too_large", nil},
		{"catalog unavailable", "alice", "ev1", "k1", goodBody, func(r *rig) { r.cat.err = fmt.Errorf("read: %w", errBoom) }, 500, "internal", nil},
		{"catalog throttled", "alice", "ev1", "k1", goodBody, func(r *rig) {
			r.cat.err = fmt.Errorf("read: %w", &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"})
		}, 429, "throttled", nil},
		{"catalog unreachable", "alice", "ev1", "k1", goodBody, func(r *rig) {
			r.cat.err = fmt.Errorf("read: %w", &smithy.GenericAPIError{Code: "InternalServerError"})
		}, 503, "unavailable", nil},
		{"gate unavailable", "alice", "ev1", "k1", goodBody, func(r *rig) {
			r.gate.err = fmt.Errorf("admit: %w", errBoom)
		}, 500, "internal", nil},
		{"seat leased to another buyer", "alice", "ev1", "k1", goodBody, func(r *rig) {
			r.gate.leases[reservation.SeatKey("ev1", "A2")] = lease{by: "r_other", until: testNow.Add(time.Second)}
		}, 409, "seats_unavailable", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			req := postReq(tc.sub, tc.event, tc.key, tc.body)
			if tc.edit != nil {
				tc.edit(&req)
			}
			resp := r.do(t, req)
			e := decode[Error](t, resp)
			if resp.StatusCode != tc.wantStatus || e.Code != tc.wantCode {
				t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, e.Code, e.Message, tc.wantStatus, tc.wantCode)
			}
			if e.Message == "" {
				t.Fatal("error without a message")
			}
			if n := r.sfn.Started(); n != 0 {
				t.Fatalf("%d executions started, want none", n)
			}
		})
	}
}

func TestCreateStartsOneExecutionPerKey(t *testing.T) {
	r := newRig(t)
	resp := r.do(t, postReq("alice", "ev1", "key-1", goodBody))
	if resp.StatusCode != 202 {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	v := decode[ReservationStatus](t, resp)
	wantID := ReservationID("alice", "key-1")
	if v.ReservationID != wantID || v.Status != StatusPending || v.StatusURL != "/reservations/"+wantID {
		t.Fatalf("view %+v", v)
	}
	if resp.Headers["Location"] != v.StatusURL {
		t.Fatalf("Location %q", resp.Headers["Location"])
	}
	ex, _ := r.sfn.Execution(sagatest.ExecutionARN(testMachine, wantID))
	var in saga.Input
	if err := json.Unmarshal([]byte(ex.Input), &in); err != nil {
		t.Fatal(err)
	}
	if in.CustomerID != "alice" || in.EventID != "ev1" || in.Currency != "eur" || in.Amount != 5000 ||
		in.IdempotencyKey != "key-1" || in.PaymentMethod != "pm_card_visa" || in.ReservationID != wantID ||
		len(in.SeatIDs) != 2 || in.RequestHash == "" || in.CorrelationID != "req-1" {
		t.Fatalf("execution input %+v", in)
	}

	// The same request again, seats in another order: the same reservation, no new execution.
	replay := r.do(t, postReq("alice", "ev1", "key-1", `{"seatIds":["A2","A1"],"amount":5000,"currency":"eur","paymentMethod":"pm_card_visa"}`))
	if replay.StatusCode != 202 || decode[ReservationStatus](t, replay).ReservationID != wantID {
		t.Fatalf("replay: %d %s", replay.StatusCode, replay.Body)
	}
	// Once the Claim step wrote the reservation, the replay reports it.
	r.res.put(reservation.Reservation{ID: wantID, CustomerID: "alice", Inventory: reservation.Held,
		Payment: reservation.NotStarted, HoldExpiresAt: testNow.Add(10 * time.Minute), Version: 1})
	replay = r.do(t, postReq("alice", "ev1", "key-1", goodBody))
	if rv := decode[ReservationStatus](t, replay); replay.StatusCode != 202 || rv.Status != "HELD" || rv.HoldExpiresAt == nil {
		t.Fatalf("replay after claim: %d %s", replay.StatusCode, replay.Body)
	}
	// The same key with another body is a conflict.
	other := r.do(t, postReq("alice", "ev1", "key-1", `{"seatIds":["A3"],"amount":5000,"currency":"eur","paymentMethod":"pm_card_visa"}`))
	if other.StatusCode != 409 || decode[Error](t, other).Code != "idempotency_key_reused" {
		t.Fatalf("other body: %d %s", other.StatusCode, other.Body)
	}
	// Another customer's same key is another reservation.
	bob := r.do(t, postReq("bob", "ev1", "key-1", `{"seatIds":["A3"],"amount":2500,"currency":"eur","paymentMethod":"pm_card_visa"}`))
	if bob.StatusCode != 202 || decode[ReservationStatus](t, bob).ReservationID == wantID {
		t.Fatalf("bob: %d %s", bob.StatusCode, bob.Body)
	}
	if n := r.sfn.Started(); n != 2 {
		t.Fatalf("%d executions started, want 2", n)
	}
	if r.metrics.Total("IdempotencyConflicts") != 1 || r.metrics.Total("ReservationReplays") != 2 {
		t.Fatalf("metrics %v", r.metrics.Snapshot())
	}
}

// Two tries of one POST race: both pass the gate (the admission is the same request's), one
// starts the execution and the other is answered from the store without a second start. A
// different request under the same key that reaches the gate first makes this one a conflict.
func TestCreateRaceWithConcurrentRetry(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sameBody   bool
		wantStatus int
	}{
		{"same request won the start", true, 202},
		{"other request passed the gate first", false, 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			id := ReservationID("alice", "k")
			body := goodBody
			if !tc.sameBody {
				body = `{"seatIds":["A3"],"amount":2500,"currency":"eur","paymentMethod":"pm_card_visa"}`
			}
			req, _ := DecodeCreateRequest(body, false, 3)
			// The concurrent try passes the gate after this one read no admission, and starts
			// the execution with its own input.
			r.gate.beforeAdmit = func(g *gate) {
				g.beforeAdmit = nil
				g.records[id] = reservation.Admission{ReservationID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: req.SeatIDs,
					RequestHash: RequestHash("alice", "ev1", req), State: reservation.Admitted}
				in, _ := json.Marshal(saga.Input{CustomerID: "alice", RequestHash: RequestHash("alice", "ev1", req)})
				r.sfn.PutExecution(sagatest.ExecutionARN(testMachine, id), string(in), sfntypes.ExecutionStatusRunning)
			}
			resp := r.do(t, postReq("alice", "ev1", "k", goodBody))
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if r.sfn.Started() != 0 {
				t.Fatal("the second try started an execution")
			}
		})
	}
}

func TestCreateAdmitsOwnAndExpiredHolds(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	r.cat.seats["ev1#A1"] = CatalogSeat{Seat: reservation.Seat{State: reservation.Held, ReservationID: "r_gone", HoldExpiresAt: testNow.Add(-time.Second),
		PriceMinor: 2500, Currency: "EUR"}}
	r.cat.seats["ev1#A2"] = CatalogSeat{Seat: reservation.Seat{State: reservation.Held, ReservationID: id, HoldExpiresAt: testNow.Add(time.Minute),
		PriceMinor: 2500, Currency: "EUR"}}
	if resp := r.do(t, postReq("alice", "ev1", "k", goodBody)); resp.StatusCode != 202 {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
}

// The server prices the reservation: a body without amount and currency is charged the sum of
// the seats' prices, a body that states them is charged the same, and a stale stated price is
// refused with the server's price in the error body.
func TestCreateChargesTheServerPrice(t *testing.T) {
	r := newRig(t)
	cs := r.cat.seats["ev1#A2"]
	cs.Seat.PriceMinor = 4000 // price tiers: A2 costs more than A1
	r.cat.seats["ev1#A2"] = cs

	inputOf := func(t *testing.T, key string) saga.Input {
		t.Helper()
		ex, ok := r.sfn.Execution(sagatest.ExecutionARN(testMachine, ReservationID("alice", key)))
		if !ok {
			t.Fatalf("no execution for %s", key)
		}
		var in saga.Input
		if err := json.Unmarshal([]byte(ex.Input), &in); err != nil {
			t.Fatal(err)
		}
		return in
	}
	resp := r.do(t, postReq("alice", "ev1", "no-price", `{"seatIds":["A1","A2"],"paymentMethod":"pm_card_visa"}`))
	if resp.StatusCode != 202 {
		t.Fatalf("without a stated price: %d %s", resp.StatusCode, resp.Body)
	}
	if in := inputOf(t, "no-price"); in.Amount != 6500 || in.Currency != "eur" {
		t.Fatalf("charged %d %s, want 6500 eur", in.Amount, in.Currency)
	}
	// Each request holds the seats' admission leases: let them lapse, as no claim follows here.
	r.clock.Advance(config.DefaultAdmissionLease)
	resp = r.do(t, postReq("alice", "ev1", "right-price", `{"seatIds":["A1","A2"],"amount":6500,"currency":"EUR","paymentMethod":"pm_card_visa"}`))
	if resp.StatusCode != 202 {
		t.Fatalf("with the right price: %d %s", resp.StatusCode, resp.Body)
	}
	if in := inputOf(t, "right-price"); in.Amount != 6500 || in.Currency != "eur" {
		t.Fatalf("charged %d %s, want 6500 eur", in.Amount, in.Currency)
	}
	r.clock.Advance(config.DefaultAdmissionLease)
	resp = r.do(t, postReq("alice", "ev1", "stale", goodBody))
	e := decode[Error](t, resp)
	if resp.StatusCode != 409 || e.Code != "price_changed" || e.Amount != 6500 || e.Currency != "eur" {
		t.Fatalf("stale price: %d %s", resp.StatusCode, resp.Body)
	}
	if n := r.sfn.Started(); n != 2 {
		t.Fatalf("%d executions started, want 2", n)
	}
}

func TestCreateAcceptsBase64Body(t *testing.T) {
	r := newRig(t)
	req := postReq("alice", "ev1", "k", base64.StdEncoding.EncodeToString([]byte(goodBody)))
	req.IsBase64Encoded = true
	if resp := r.do(t, req); resp.StatusCode != 202 {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
}

func TestGet(t *testing.T) {
	id := ReservationID("alice", "k")
	pending := reservation.Reservation{ID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: []string{"A1"},
		Inventory: reservation.PaymentPending, Payment: reservation.Authorizing, PaymentIntentID: "pi_1",
		HoldExpiresAt: testNow.Add(5 * time.Minute), Amount: 100, Currency: "EUR", Version: 3, TaskToken: "secret-token"}
	// admitted is a buyer the gate let through whose claim has not written the reservation;
	// rejected one whose claim turned them away.
	admitted := func(customer string) func(*rig) {
		return func(r *rig) {
			r.gate.records[id] = reservation.Admission{ReservationID: id, CustomerID: customer, EventID: "ev1", SeatIDs: []string{"A1"},
				Amount: 2500, Currency: "EUR", State: reservation.Admitted}
		}
	}
	rejected := func(r *rig) {
		admitted("alice")(r)
		r.gate.reject(id)
	}
	cases := []struct {
		name       string
		sub, id    string
		setup      func(*rig)
		wantStatus int
		wantState  string
		wantSecret string
	}{
		{"owner sees the payment wait and the client secret", "alice", id, func(r *rig) {
			r.res.put(pending)
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", State: payment.StateAuthorizing, ClientSecret: "pi_1_secret_x", NextAction: "use_stripe_sdk"})
		}, 200, "PAYMENT_PENDING", "pi_1_secret_x"},
		{"no secret once authorized", "alice", id, func(r *rig) {
			p := pending
			p.Payment = reservation.Authorized
			r.res.put(p)
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", State: payment.StateAuthorized, ClientSecret: "pi_1_secret_x"})
		}, 200, "PAYMENT_PENDING", ""},
		{"a recorded cancel shows with its money and without the client secret", "alice", id, func(r *rig) {
			p := pending
			p.CustomerCanceled = true
			r.res.put(p)
			r.pay.Put(payment.Authorization{PaymentIntentID: "pi_1", State: payment.StateAuthorizing, ClientSecret: "pi_1_secret_x", NextAction: "use_stripe_sdk"})
		}, 200, "PAYMENT_PENDING", ""},
		{"provider down still answers", "alice", id, func(r *rig) {
			r.res.put(pending)
			r.pay.FailAll(sagatest.PayRetrieve, errBoom)
		}, 200, "PAYMENT_PENDING", ""},
		{"someone else's reservation is not found", "bob", id, func(r *rig) { r.res.put(pending) }, 404, "", ""},
		{"malformed id", "alice", "r_UPPER", nil, 404, "", ""},
		{"no authenticated customer", "", id, nil, 401, "", ""},
		{"before the claim: pending", "alice", id, admitted("alice"), 200, StatusPending, ""},
		{"turned away by the claim: rejected", "alice", id, rejected, 200, StatusRejected, ""},
		{"someone else's admission", "bob", id, admitted("alice"), 404, "", ""},
		{"nothing at all", "alice", id, nil, 404, "", ""},
		{"store down", "alice", id, func(r *rig) { r.res.Fail[sagatest.OpGet] = errBoom }, 500, "", ""},
		{"admissions down", "alice", id, func(r *rig) { r.gate.err = errBoom }, 500, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			resp := r.do(t, idReq("GET", tc.sub, tc.id))
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if strings.Contains(resp.Body, "secret-token") {
				t.Fatal("the task token leaked into the response")
			}
			if tc.wantStatus != 200 {
				return
			}
			v := decode[ReservationStatus](t, resp)
			if v.Status != tc.wantState || v.ClientSecret != tc.wantSecret || v.ReservationID != id {
				t.Fatalf("view %+v", v)
			}
			wantMoney := ""
			if stored, ok := r.res.Reservation(id); ok && stored.CustomerCanceled {
				wantMoney = MoneyWillBeVoided
			}
			if v.CancelRequested != (wantMoney != "") || v.Money != wantMoney {
				t.Fatalf("cancelRequested %v money %q, want money %q", v.CancelRequested, v.Money, wantMoney)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	id := ReservationID("alice", "k")
	base := reservation.Reservation{ID: id, CustomerID: "alice", Inventory: reservation.PaymentPending,
		Payment: reservation.Authorizing, PaymentIntentID: "pi_1", TaskToken: "tok-1", Version: 3, HoldExpiresAt: testNow.Add(time.Minute)}
	with := func(mut func(*reservation.Reservation)) func(*rig) {
		return func(r *rig) {
			res := base
			if mut != nil {
				mut(&res)
			}
			r.res.put(res)
		}
	}
	and := func(setups ...func(*rig)) func(*rig) {
		return func(r *rig) {
			for _, s := range setups {
				s(r)
			}
		}
	}
	signalFails := func(err error) func(*rig) { return func(r *rig) { r.sfn.FailAll(sagatest.SFNSendTaskFailure, err) } }
	admission := func(state reservation.AdmissionState) func(*rig) {
		return func(r *rig) {
			r.gate.records[id] = reservation.Admission{ReservationID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: []string{"A1"},
				Amount: 2500, Currency: "EUR", State: state}
		}
	}
	cases := []struct {
		name       string
		sub        string
		setup      func(*rig)
		wantStatus int
		wantCode   string
		// wantMoney is the answer's money field (the error's on a 409).
		wantMoney string
		// wantSignals counts SendTaskFailure calls; wantRecorded, that the stored reservation
		// carries the cancel afterwards.
		wantSignals  int
		wantRecorded bool
	}{
		{"waiting for payment: recorded, then the wait fails with CustomerCanceled", "alice", with(nil),
			202, "", MoneyWillBeVoided, 1, true},
		{"the webhook closed the wait: still recorded, the authorization will be voided", "alice", and(with(func(r *reservation.Reservation) {
			r.Payment = reservation.Authorized
		}), signalFails(&sfntypes.TaskTimedOut{Message: aws.String("closed")})),
			202, "", MoneyWillBeVoided, 1, true},
		{"the saga is reconciling with no live token: recorded, the provider's answer decides", "alice", and(with(func(r *reservation.Reservation) {
			r.Payment, r.HoldExpiresAt = reservation.UnknownNeedsReconciliation, testNow.Add(-time.Minute)
		}), signalFails(&sfntypes.TaskDoesNotExist{Message: aws.String("gone")})),
			202, "", MoneyReconciling, 1, true},
		{"a dead token: recorded all the same", "alice", and(with(nil), signalFails(&sfntypes.InvalidToken{Message: aws.String("invalid")})),
			202, "", MoneyWillBeVoided, 1, true},
		{"step functions down during the signal: recorded, still 202", "alice", and(with(nil), signalFails(errBoom)),
			202, "", MoneyWillBeVoided, 1, true},
		{"released while the payment still authorizes: recorded so a late authorization is voided", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Outcome = reservation.Released, reservation.OutcomeExpired
		}), 202, "", MoneyWillBeVoided, 0, true},
		{"held before authorize ran: recorded, nothing to signal", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment, r.PaymentIntentID, r.TaskToken = reservation.Held, reservation.NotStarted, "", ""
		}), 202, "", MoneyNone, 0, true},
		{"released and voided: recorded, settled already", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment = reservation.Released, reservation.Canceled
		}), 200, "", MoneyVoided, 0, true},
		{"released and refunded: recorded, settled already", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment = reservation.Released, reservation.Refunded
		}), 200, "", MoneyRefunded, 0, true},
		{"released with a refund pending: recorded, the saga still waits for the refund", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment = reservation.Released, reservation.RefundPending
		}), 202, "", MoneyRefundPending, 0, true},
		{"captured for seats not sold: recorded, the money will be refunded", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment = reservation.Released, reservation.Paid
		}), 202, "", MoneyWillBeRefunded, 0, true},
		{"confirmed and captured: 409, nothing written", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment = reservation.Confirmed, reservation.Paid
		}), 409, "already_confirmed", MoneyCaptured, 0, false},
		{"confirmed, capture under way: 409, nothing written", "alice", with(func(r *reservation.Reservation) {
			r.Inventory, r.Payment = reservation.Confirmed, reservation.CapturePending
		}), 409, "already_confirmed", MoneyBeingCaptured, 0, false},
		{"a confirm wins the race: stale version, then confirmed, 409", "alice", func(r *rig) {
			with(func(r *reservation.Reservation) { r.Payment = reservation.Authorized })(r)
			r.res.beforeCancel = func(res *reservation.Reservation) {
				if res.Inventory == reservation.PaymentPending {
					res.Inventory, res.Outcome, res.Version = reservation.Confirmed, reservation.OutcomeConfirmed, res.Version+1
				}
			}
		}, 409, "already_confirmed", MoneyBeingCaptured, 0, false},
		{"a saga step moves the version once: read again, recorded", "alice", func(r *rig) {
			with(nil)(r)
			moved := false
			r.res.beforeCancel = func(res *reservation.Reservation) {
				if !moved {
					moved = true
					res.Version++
				}
			}
		}, 202, "", MoneyWillBeVoided, 1, true},
		{"the reservation keeps changing: 409 to retry, nothing recorded", "alice", func(r *rig) {
			with(nil)(r)
			r.res.beforeCancel = func(res *reservation.Reservation) { res.Version++ }
		}, 409, "reservation_busy", "", 0, false},
		{"the store refuses the write: 500, no signal", "alice", func(r *rig) {
			with(nil)(r)
			r.res.Fail[sagatest.OpCancel] = errBoom
		}, 500, "internal", "", 0, false},
		{"someone else's", "bob", with(nil), 404, "not_found", "", 0, false},
		{"no authenticated customer", "", with(nil), 401, "unauthorized", "", 0, false},
		{"the claim turned the buyer away: the rejected view", "alice", admission(reservation.AdmissionRejected), 200, "", "", 0, false},
		{"someone else's admission", "bob", admission(reservation.Admitted), 404, "not_found", "", 0, false},
		{"nothing at all", "alice", nil, 404, "not_found", "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			before := r.res.stored(id)
			resp := r.do(t, idReq("DELETE", tc.sub, id))
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if tc.wantCode != "" {
				e := decode[Error](t, resp)
				if e.Code != tc.wantCode || e.Money != tc.wantMoney {
					t.Fatalf("code %q money %q (%s), want %q %q", e.Code, e.Money, e.Message, tc.wantCode, tc.wantMoney)
				}
			} else {
				v := decode[ReservationStatus](t, resp)
				if v.CancelRequested != tc.wantRecorded || v.Money != tc.wantMoney {
					t.Fatalf("cancelRequested %v money %q, want %v %q", v.CancelRequested, v.Money, tc.wantRecorded, tc.wantMoney)
				}
			}
			after := r.res.stored(id)
			if after.CustomerCanceled != tc.wantRecorded {
				t.Fatalf("cancel recorded %v, want %v", after.CustomerCanceled, tc.wantRecorded)
			}
			if tc.wantRecorded && after.Version <= before.Version {
				t.Fatalf("version %d after the cancel, %d before: the write did not bump it", after.Version, before.Version)
			}
			if n := r.res.cancelWrites(); !tc.wantRecorded && n != 0 {
				t.Fatalf("%d writes, want none", n)
			}
			signals := r.sfn.Answers()
			if len(signals) != tc.wantSignals {
				t.Fatalf("%d SendTaskFailure calls, want %d", len(signals), tc.wantSignals)
			}
			for _, f := range signals {
				if f.Op != sagatest.SFNSendTaskFailure || f.Error != "CustomerCanceled" || f.TaskToken != "tok-1" {
					t.Fatalf("SendTaskFailure %+v", f)
				}
			}
			if want := map[bool]int64{true: 1, false: 0}[tc.wantRecorded]; r.metrics.Total("CustomerCancels") != want {
				t.Fatalf("CustomerCancels %d, want %d", r.metrics.Total("CustomerCancels"), want)
			}
			if tc.wantCode == "not_ready" && resp.Headers["Retry-After"] == "" {
				t.Fatal("not_ready without Retry-After")
			}
			if strings.Contains(resp.Body, "tok-1") {
				t.Fatal("the task token leaked into the response")
			}
		})
	}
}

// TestCancelTwiceAnswersTheSameAndCountsOnce: a repeated DELETE writes nothing more, answers
// the same body, and tells the waiting saga again (harmless: a closed wait is only logged).
func TestCancelTwiceAnswersTheSameAndCountsOnce(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	r.res.put(reservation.Reservation{ID: id, CustomerID: "alice", Inventory: reservation.PaymentPending,
		Payment: reservation.Authorizing, TaskToken: "tok-1", Version: 3, HoldExpiresAt: testNow.Add(time.Minute)})
	first := r.do(t, idReq("DELETE", "alice", id))
	// The first signal closed the wait: Step Functions answers the second one TaskTimedOut.
	second := r.do(t, idReq("DELETE", "alice", id))
	if first.StatusCode != 202 || second.StatusCode != first.StatusCode || second.Body != first.Body {
		t.Fatalf("first %d %s\nsecond %d %s", first.StatusCode, first.Body, second.StatusCode, second.Body)
	}
	if r.res.cancelWrites() != 1 || r.metrics.Total("CustomerCancels") != 1 {
		t.Fatalf("%d writes, CustomerCancels %d; want 1 and 1", r.res.cancelWrites(), r.metrics.Total("CustomerCancels"))
	}
	if got := r.metrics.Get("CustomerCancelSignals", metrics.Dim{Name: "outcome", Value: "wait_closed"}); got != 1 {
		t.Fatalf("%d signals found the wait closed, want 1", got)
	}
}

func TestRouting(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name string
		req  events.APIGatewayProxyRequest
		want int
	}{
		{"unknown path", events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/nope"}, 404},
		{"wrong method", events.APIGatewayProxyRequest{HTTPMethod: "PUT", Resource: ResourceReservation}, 405},
		{"path only, no resource", func() events.APIGatewayProxyRequest {
			q := postReq("alice", "ev1", "k", goodBody)
			q.Resource, q.PathParameters = "", nil
			return q
		}(), 202},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if resp := r.do(t, tc.req); resp.StatusCode != tc.want {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
		})
	}
}

func TestReservationID(t *testing.T) {
	a, b := ReservationID("alice", "k"), ReservationID("alice", "k")
	if a != b || !ValidReservationID(a) {
		t.Fatalf("%q %q", a, b)
	}
	if ReservationID("alice", "k2") == a || ReservationID("bob", "k") == a {
		t.Fatal("ids collide")
	}
	// The separator keeps "ab"+"c" apart from "a"+"bc".
	if ReservationID("ab", "c") == ReservationID("a", "bc") {
		t.Fatal("ids collide across the separator")
	}
	for _, bad := range []string{"", "r_", "x_" + a[2:], a + "a", strings.ToUpper(a)} {
		if ValidReservationID(bad) {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// rendered is a request as JSON, so that two requests compare by value (Amount is a pointer).
func rendered(req CreateRequest) string {
	b, _ := json.Marshal(req)
	return string(b)
}

func FuzzDecodeCreateRequest(f *testing.F) {
	f.Add(goodBody)
	f.Add(`{"seatIds":["A1","A1"]}`)
	f.Add(`{}`)
	f.Add(`{"SeatIds":["A1"],"paymentMethod":"pm"}`)
	f.Add(`{"seatIds":["A1"],"seatIds":["A2"],"paymentMethod":"pm"}`)
	f.Add(`{"seatIds":["A1"],"currency":"\u212Arw","paymentMethod":"pm"}`)
	f.Add(`{"seatIds":["A1"],"amount":1e3,"paymentMethod":"pm"}`)
	f.Add(`{"seatIds":["A1"],"paymentMethod":"pm"} `)
	f.Fuzz(func(t *testing.T, body string) {
		req, e := DecodeCreateRequest(body, false, 5)
		// The same bytes sent base64-encoded (as API Gateway passes a body that is not UTF-8)
		// must be judged the same way.
		req64, e64 := DecodeCreateRequest(base64.StdEncoding.EncodeToString([]byte(body)), true, 5)
		if (e == nil) != (e64 == nil) || e != nil && e.Code != e64.Code {
			t.Fatalf("plain %v, base64 %v", e, e64)
		}
		if e != nil {
			if e.Status != 400 && e.Status != 413 || e.Code == "" || e.Message == "" {
				t.Fatalf("bad error %+v", e)
			}
			return
		}
		if rendered(req) != rendered(req64) {
			t.Fatalf("plain %+v, base64 %+v", req, req64)
		}
		if len(req.SeatIDs) == 0 || len(req.SeatIDs) > 5 || req.Amount != nil && (*req.Amount <= 0 || *req.Amount > MaxAmount) ||
			req.Currency != "" && (len(req.Currency) != 3 || strings.Trim(req.Currency, "abcdefghijklmnopqrstuvwxyz") != "") ||
			req.PaymentMethod == "" || !printable(req.PaymentMethod) {
			t.Fatalf("accepted invalid request %+v", req)
		}
		seen := map[string]bool{}
		for _, s := range req.SeatIDs {
			if !validID(s) || seen[s] {
				t.Fatalf("accepted seat ids %q", req.SeatIDs)
			}
			seen[s] = true
		}
		// Every key of an accepted body is a field name spelled exactly, and none twice.
		dec := json.NewDecoder(strings.NewReader(body))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			k := tok.(string)
			if !createFields[k] || keys[k] {
				t.Fatalf("accepted key %q in %q", k, body)
			}
			keys[k] = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		// What was accepted, encoded again, decodes to itself: normalization is idempotent
		// and the request hash cannot depend on how the client spelled the body.
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, e := DecodeCreateRequest(string(again), false, 5)
		if e != nil || rendered(back) != rendered(req) || RequestHash("c", "ev", back) != RequestHash("c", "ev", req) {
			t.Fatalf("re-encoded %s: %+v, %v; want %+v", again, back, e, req)
		}
	})
}

// A StartExecution that Step Functions throttles is counted (and the start queued), for the alarm
// that tells the operator which quota to raise; a refusal of another kind is not a throttle.
func TestThrottledStepFunctionsCallsAreCounted(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int64
	}{
		{"throttled", &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}, 1},
		{"another failure", &smithy.GenericAPIError{Code: "InvalidArn"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.sfn.FailAll(sagatest.SFNStartExecution, tc.err)
			r.do(t, postReq("alice", "ev1", "k1", goodBody))
			if got := r.metrics.Get(MetricStepFunctionsThrottled, metrics.Dim{Name: "op", Value: "StartExecution"}); got != tc.want {
				t.Fatalf("%s = %d, want %d", MetricStepFunctionsThrottled, got, tc.want)
			}
		})
	}
}

// A winner whose start Step Functions throttles is queued, not failed: the api records the
// execution's input on the admission for the starter, keeps the seats leased while it waits, and
// answers 202 queued; a retry with the same key is answered from the admission; replays and
// status reads make no Step Functions call at all.
func TestAThrottledStartIsQueuedAndReplaysCallNoStepFunctions(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	r.sfn.FailNext(sagatest.SFNStartExecution, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"})
	resp := r.do(t, postReq("alice", "ev1", "k", goodBody))
	if v := decode[ReservationStatus](t, resp); resp.StatusCode != 202 || !v.Queued || v.Status != StatusPending {
		t.Fatalf("throttled start: %d %s", resp.StatusCode, resp.Body)
	}
	if len(r.gate.queued) != 1 || r.sfn.Started() != 0 {
		t.Fatalf("%d starts queued and %d started, want 1 and 0", len(r.gate.queued), r.sfn.Started())
	}
	var in saga.Input
	if err := json.Unmarshal([]byte(r.gate.queued[0]), &in); err != nil || in.ReservationID != id || in.Amount != 5000 {
		t.Fatalf("queued input %s: %v", r.gate.queued[0], err)
	}
	if v := decode[ReservationStatus](t, r.do(t, idReq("GET", "alice", id))); v.Status != StatusPending || !v.Queued {
		t.Fatalf("status of a queued start %+v", v)
	}
	// A retry is answered from the admission: the starter starts it, and passing the gate
	// again could only lose the seats the queued start keeps leased.
	if resp := r.do(t, postReq("alice", "ev1", "k", goodBody)); resp.StatusCode != 202 || !decode[ReservationStatus](t, resp).Queued || r.sfn.Started() != 0 {
		t.Fatalf("retry: %d %s, %d started", resp.StatusCode, resp.Body, r.sfn.Started())
	}
	// The queued start keeps the seats leased past the gate's usual lease.
	r.clock.Advance(config.DefaultAdmissionLease)
	if resp := r.do(t, postReq("bob", "ev1", "k", `{"seatIds":["A2"],"paymentMethod":"pm_card_visa"}`)); resp.StatusCode != 409 {
		t.Fatalf("bob for a queued winner's seat: %d %s", resp.StatusCode, resp.Body)
	}
	// The status route and a replay, before and after the claim, read DynamoDB only.
	calls := r.sfn.Calls(sagatest.SFNStartExecution) + r.sfn.Calls(sagatest.SFNDescribeExecution)
	if v := decode[ReservationStatus](t, r.do(t, idReq("GET", "alice", id))); v.Status != StatusPending {
		t.Fatalf("status before the claim %+v", v)
	}
	r.res.put(reservation.Reservation{ID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: []string{"A1", "A2"}, Inventory: reservation.Held,
		Payment: reservation.NotStarted, HoldExpiresAt: testNow.Add(10 * time.Minute), Version: 1})
	if resp := r.do(t, postReq("alice", "ev1", "k", goodBody)); resp.StatusCode != 202 || decode[ReservationStatus](t, resp).Status != "HELD" {
		t.Fatalf("replay after the claim: %d %s", resp.StatusCode, resp.Body)
	}
	if v := decode[ReservationStatus](t, r.do(t, idReq("GET", "alice", id))); v.Status != "HELD" {
		t.Fatalf("status after the claim %+v", v)
	}
	if now := r.sfn.Calls(sagatest.SFNStartExecution) + r.sfn.Calls(sagatest.SFNDescribeExecution); now != calls {
		t.Fatalf("%d Step Functions calls for status reads and a replay, want none", now-calls)
	}
}

// A queued winner who gives up cancels before the claim: 200 with the RELEASED view (the cancel
// recorded, no money), the admission CANCELED and its seats free at once for the next buyer;
// the status route and a retry of the POST say the same and let nothing through again.
func TestAQueuedBuyerCancelsBeforeTheClaimAndTheSeatsAreOnSaleAgain(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	r.sfn.FailNext(sagatest.SFNStartExecution, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"})
	if resp := r.do(t, postReq("alice", "ev1", "k", goodBody)); resp.StatusCode != 202 || !decode[ReservationStatus](t, resp).Queued {
		t.Fatalf("throttled start: %d %s", resp.StatusCode, resp.Body)
	}
	canceled := func(what string, resp events.APIGatewayProxyResponse, want int) {
		t.Helper()
		v := decode[ReservationStatus](t, resp)
		if resp.StatusCode != want || v.Status != "RELEASED" || !v.CancelRequested || v.Money != MoneyNone || v.Queued {
			t.Fatalf("%s: %d %s, want %d RELEASED, cancel recorded, money none", what, resp.StatusCode, resp.Body, want)
		}
	}
	canceled("cancel", r.do(t, idReq("DELETE", "alice", id)), 200)
	if r.gate.records[id].State != reservation.AdmissionCanceled || r.gate.canceled != 1 || r.metrics.Total("CustomerCancels") != 1 {
		t.Fatalf("admission %s, %d canceled, %d counted", r.gate.records[id].State, r.gate.canceled, r.metrics.Total("CustomerCancels"))
	}
	canceled("cancel again", r.do(t, idReq("DELETE", "alice", id)), 200)
	canceled("status", r.do(t, idReq("GET", "alice", id)), 200)
	canceled("retry of the POST", r.do(t, postReq("alice", "ev1", "k", goodBody)), 202)
	if r.gate.admitted != 1 || len(r.gate.queued) != 1 || r.sfn.Started() != 0 || r.metrics.Total("CustomerCancels") != 1 {
		t.Fatalf("%d admitted, %d queued, %d started, %d cancels counted after the retries, want 1 1 0 1",
			r.gate.admitted, len(r.gate.queued), r.sfn.Started(), r.metrics.Total("CustomerCancels"))
	}
	// Well within the queued start's hour-long lease, the seats are another buyer's to take.
	if resp := r.do(t, postReq("bob", "ev1", "k", goodBody)); resp.StatusCode != 202 {
		t.Fatalf("bob for the canceled seats: %d %s", resp.StatusCode, resp.Body)
	}
}

// The cancel is written but giving the slot back fails: the DELETE is a 5xx to retry, and the
// retry finds the cancel recorded and writes nothing. The cancel is counted once all the same,
// by the call that wrote it.
func TestACancelWrittenByADeleteThatFailedAfterwardsIsCountedOnce(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	r.gate.records[id] = reservation.Admission{ReservationID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: []string{"A1"},
		Amount: 2500, Currency: "EUR", State: reservation.Admitted, HoldSlot: -1}
	r.gate.giveBackErr = &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "try again", Fault: smithy.FaultServer}
	if resp := r.do(t, idReq("DELETE", "alice", id)); resp.StatusCode < 500 {
		t.Fatalf("a DELETE whose give-back failed: %d %s, want a 5xx to retry", resp.StatusCode, resp.Body)
	}
	if resp := r.do(t, idReq("DELETE", "alice", id)); resp.StatusCode != 200 {
		t.Fatalf("the retried DELETE: %d %s", resp.StatusCode, resp.Body)
	}
	if n := r.metrics.Total("CustomerCancels"); n != 1 {
		t.Fatalf("%d cancels counted, want 1", n)
	}
}

// The claim writes the reservation between the DELETE's read and its write: the cancel is then
// recorded on the reservation and the waiting saga told, as for any held reservation.
func TestACancelThatTheClaimOvertakesIsRecordedOnTheReservation(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	r.gate.records[id] = reservation.Admission{ReservationID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: []string{"A1"},
		Amount: 2500, Currency: "EUR", State: reservation.Admitted, HoldSlot: -1}
	r.gate.beforeCancel = func(string) {
		r.res.put(reservation.Reservation{ID: id, CustomerID: "alice", EventID: "ev1", SeatIDs: []string{"A1"},
			Inventory: reservation.PaymentPending, Payment: reservation.Authorizing, TaskToken: "tok-1",
			HoldExpiresAt: testNow.Add(10 * time.Minute), Version: 2})
	}
	resp := r.do(t, idReq("DELETE", "alice", id))
	if v := decode[ReservationStatus](t, resp); resp.StatusCode != 202 || !v.CancelRequested || v.Money != MoneyWillBeVoided {
		t.Fatalf("cancel overtaken by the claim: %d %s", resp.StatusCode, resp.Body)
	}
	if !r.res.stored(id).CustomerCanceled || r.gate.records[id].State != reservation.Admitted {
		t.Fatalf("reservation canceled %v, admission %s: want the cancel on the reservation, the admission untouched",
			r.res.stored(id).CustomerCanceled, r.gate.records[id].State)
	}
	if n := len(r.sfn.Answers()); n != 1 {
		t.Fatalf("%d signals to the waiting saga, want 1", n)
	}
}

// A throttled start that cannot be queued either is a 429 to retry, never a 5xx, and nothing
// started.
func TestAThrottledStartThatCannotBeQueuedIs429(t *testing.T) {
	r := newRig(t)
	r.sfn.FailNext(sagatest.SFNStartExecution, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"})
	r.gate.queueErr = &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}
	resp := r.do(t, postReq("alice", "ev1", "k", goodBody))
	if resp.StatusCode != 429 || resp.Headers["Retry-After"] == "" || r.sfn.Started() != 0 {
		t.Fatalf("throttled start and queue: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
}

// A start whose answer was lost, retried and then throttled, for a buyer the saga already
// turned away: there is nothing left to queue, and the buyer is told what the saga decided,
// not 500.
func TestAThrottledRetryOfAStartTheSagaAlreadyAnsweredIsToldItsOutcome(t *testing.T) {
	r := newRig(t)
	// The first attempt took effect and the saga rejected the buyer at once; the retry of the
	// lost answer is what the api sees, and it is throttled.
	r.sfn.FailNext(sagatest.SFNStartExecution, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"})
	r.gate.beforeQueue = r.gate.reject
	resp := r.do(t, postReq("alice", "ev1", "k", goodBody))
	if resp.StatusCode != 202 || decode[ReservationStatus](t, resp).Status != StatusRejected {
		t.Fatalf("throttled retry of an answered start: %d %s", resp.StatusCode, resp.Body)
	}
}

// A buyer the claim turned away is told so on replay and on GET, without a second start.
func TestARejectedAdmissionIsAnsweredRejectedWithoutAStart(t *testing.T) {
	r := newRig(t)
	id := ReservationID("alice", "k")
	if resp := r.do(t, postReq("alice", "ev1", "k", goodBody)); resp.StatusCode != 202 {
		t.Fatalf("post: %d %s", resp.StatusCode, resp.Body)
	}
	r.gate.reject(id)
	resp := r.do(t, postReq("alice", "ev1", "k", goodBody))
	if resp.StatusCode != 202 || decode[ReservationStatus](t, resp).Status != StatusRejected || r.sfn.Started() != 1 {
		t.Fatalf("replay of a rejected admission: %d %s, %d started", resp.StatusCode, resp.Body, r.sfn.Started())
	}
	if v := decode[ReservationStatus](t, r.do(t, idReq("GET", "alice", id))); v.Status != StatusRejected || v.Amount != 5000 {
		t.Fatalf("status %+v", v)
	}
}

// A second buyer for a seat the gate let the first through for is turned away with a 409 and
// starts nothing, until the lease lapses with no claim behind it.
func TestTheGateTurnsASecondBuyerAwayUntilTheLeaseLapses(t *testing.T) {
	r := newRig(t)
	if resp := r.do(t, postReq("alice", "ev1", "k", goodBody)); resp.StatusCode != 202 {
		t.Fatalf("alice: %d %s", resp.StatusCode, resp.Body)
	}
	resp := r.do(t, postReq("bob", "ev1", "k", `{"seatIds":["A2"],"paymentMethod":"pm_card_visa"}`))
	if resp.StatusCode != 409 || decode[Error](t, resp).Code != "seats_unavailable" || r.sfn.Started() != 1 {
		t.Fatalf("bob during alice's lease: %d %s, %d started", resp.StatusCode, resp.Body, r.sfn.Started())
	}
	r.clock.Advance(config.DefaultAdmissionLease)
	if resp := r.do(t, postReq("bob", "ev1", "k", `{"seatIds":["A2"],"paymentMethod":"pm_card_visa"}`)); resp.StatusCode != 202 || r.sfn.Started() != 2 {
		t.Fatalf("bob after the lease: %d %s", resp.StatusCode, resp.Body)
	}
}

// A customer at the cap of reservations in progress is refused 409 hold_limit before anything
// starts; once a hold's time is over, its place under the cap is free again.
func TestACustomerAtTheCapIsRefusedHoldLimit(t *testing.T) {
	r := newRig(t)
	r.h.d.MaxActiveReservations = 2
	for i, seat := range []string{"A1", "A2"} {
		body := fmt.Sprintf(`{"seatIds":[%q],"paymentMethod":"pm_card_visa"}`, seat)
		if resp := r.do(t, postReq("alice", "ev1", fmt.Sprintf("k%d", i), body)); resp.StatusCode != 202 {
			t.Fatalf("reservation %d: %d %s", i, resp.StatusCode, resp.Body)
		}
	}
	third := `{"seatIds":["A3"],"paymentMethod":"pm_card_visa"}`
	resp := r.do(t, postReq("alice", "ev1", "k2", third))
	if e := decode[Error](t, resp); resp.StatusCode != 409 || e.Code != "hold_limit" || !strings.Contains(e.Message, "2 reservations") {
		t.Fatalf("third reservation: %d %s", resp.StatusCode, resp.Body)
	}
	if r.sfn.Started() != 2 {
		t.Fatalf("%d executions started, want 2", r.sfn.Started())
	}
	if resp := r.do(t, postReq("bob", "ev1", "k2", third)); resp.StatusCode != 202 {
		t.Fatalf("another customer: %d %s", resp.StatusCode, resp.Body)
	}
	r.clock.Advance(r.h.d.AdmissionLease + r.h.d.Hold)
	if resp := r.do(t, postReq("alice", "ev1", "k3", `{"seatIds":["B1"],"paymentMethod":"pm_card_visa"}`)); resp.StatusCode != 202 {
		t.Fatalf("after the holds' time: %d %s", resp.StatusCode, resp.Body)
	}
}
