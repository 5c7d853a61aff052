package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/apigateway"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// sendWithHeaders sends one request through the API Gateway stand-in as customer with exactly
// the given headers besides the token (send adds a Content-Type of its own).
func sendWithHeaders(e *Env, method, path, customer, body string, headers map[string]string) apiResponse {
	e.T.Helper()
	req, err := http.NewRequestWithContext(e.Ctx, method, e.Stack.Endpoints.API+path, strings.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	token, err := e.Stack.Token(customer)
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := apiResponse{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

// sendRaw writes request bytes as they are to the stand-in, for requests no HTTP client would
// send, and reads the answer.
func sendRaw(e *Env, request string) apiResponse {
	e.T.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(e.Stack.Endpoints.API, "http://"), 5*time.Second)
	if err != nil {
		e.T.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		e.T.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		e.T.Fatalf("read the answer to %q: %v", request, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := apiResponse{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

// The stricter edge through the local stack's HTTP API: bodies not declared JSON, keys in
// another case or given twice, currencies that only case folding would make valid, bodies
// Lambda could not be sent, malformed paths and header bytes each get a 4xx in the API's JSON
// error shape, and none of them writes anything or starts an execution; the gateway's refusals
// invoke no function at all.
func TestTheEdgeRefusesBadInputInTheAPIShapeAndWritesNothing(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 4)
	good := createBody(SeatPrice, stripesim.PaymentMethodThreeDSecureAbandoned, seats[0])
	executions, reservations, admissions := countExecutions(e), countItems(e, tables.ReservationsTable), countItems(e, tables.AdmissionsTable)
	jsonHeaders := map[string]string{"Content-Type": "application/json", api.IdempotencyKeyHeader: "edge"}
	with := func(k, v string) map[string]string {
		h := map[string]string{api.IdempotencyKeyHeader: "edge"}
		if k != "" {
			h[k] = v
		}
		return h
	}
	token, err := e.Stack.Token("bob")
	if err != nil {
		t.Fatal(err)
	}
	auth := "Authorization: Bearer " + token + "\r\n"

	cases := []struct {
		name       string
		send       func() apiResponse
		wantStatus int
		wantCode   string
		// byGateway: the stand-in refuses it before invoking any function.
		byGateway bool
	}{
		{"no Content-Type", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob", good, with("", ""))
		},
			415, "unsupported_media_type", false},
		{"text/plain body", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob", good, with("Content-Type", "text/plain"))
		}, 415, "unsupported_media_type", false},
		{"key in another case", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob",
				`{"SeatIds":["`+seats[1]+`"],"paymentMethod":"pm_card_visa"}`, jsonHeaders)
		}, 400, "unknown_field", false},
		{"key given twice", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob",
				`{"seatIds":["`+seats[1]+`"],"seatIds":["`+seats[2]+`"],"paymentMethod":"pm_card_visa"}`, jsonHeaders)
		}, 400, "invalid_json", false},
		{"currency with a Kelvin sign", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob",
				`{"seatIds":["`+seats[1]+`"],"currency":"\u212Arw","paymentMethod":"pm_card_visa"}`, jsonHeaders)
		}, 400, "invalid_currency", false},
		{"body over Lambda's payload limit", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob", strings.Repeat(" ", apigateway.LambdaPayloadLimit+1), jsonHeaders)
		}, 413, "body_too_large", true},
		{"binary body that base64 takes over the limit", func() apiResponse {
			return sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob", strings.Repeat("\xff", apigateway.LambdaPayloadLimit*4/5), jsonHeaders)
		}, 413, "body_too_large", true},
		{"invalid path escape", func() apiResponse {
			return sendRaw(e, "GET /reservations/%zz HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n")
		}, 400, "bad_request", true},
		{"control byte in a header", func() apiResponse {
			return sendRaw(e, "POST /events/ev1/reservations HTTP/1.1\r\nHost: x\r\n"+auth+"Idempotency-Key: k\x01\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		}, 400, "bad_request", true},
		{"escape that decodes to no valid id", func() apiResponse {
			return sendWithHeaders(e, "GET", "/reservations/%ff", "bob", "", nil)
		}, 404, "not_found", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			invocations := e.Stack.Lambdas.TotalInvocations()
			resp := tc.send()
			if resp.Status != tc.wantStatus || resp.str("code") != tc.wantCode || resp.str("message") == "" {
				t.Fatalf("got %d %.300s, want %d %s with a message", resp.Status, resp.Raw, tc.wantStatus, tc.wantCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if n := e.Stack.Lambdas.TotalInvocations() - invocations; tc.byGateway && n != 0 {
				t.Fatalf("%d invocations for a request the gateway refuses", n)
			}
		})
	}
	if n := countExecutions(e); n != executions {
		t.Fatalf("%d executions after the bad requests, want %d", n, executions)
	}
	if n := countItems(e, tables.ReservationsTable); n != reservations {
		t.Fatalf("%d reservations after the bad requests, want %d", n, reservations)
	}
	if n := countItems(e, tables.AdmissionsTable); n != admissions {
		t.Fatalf("%d admissions after the bad requests, want %d", n, admissions)
	}

	// The control: the same request declared JSON with the UTF-8 charset is admitted.
	ok := sendWithHeaders(e, "POST", "/events/ev1/reservations", "bob", good,
		map[string]string{"Content-Type": "application/json; charset=utf-8", api.IdempotencyKeyHeader: "edge-ok"})
	if ok.Status != http.StatusAccepted || ok.str("reservationId") != api.ReservationID("bob", "edge-ok") {
		t.Fatalf("good request: %d %s", ok.Status, ok.Raw)
	}
	if n := countItems(e, tables.AdmissionsTable); n <= admissions {
		t.Fatalf("%d admission items after the good request, want more than %d: the control wrote nothing", n, admissions)
	}
}
