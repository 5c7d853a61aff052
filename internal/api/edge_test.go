package api

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The controls of the bad-input table's Content-Type rows: a body declared JSON, in any case,
// with or without the UTF-8 charset, is read, so the 415s are about the declaration alone.
func TestCreateAcceptsABodyDeclaredJSON(t *testing.T) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8"} {
		t.Run(ct, func(t *testing.T) {
			r := newRig(t)
			req := postReq("alice", "ev1", "k1", goodBody)
			withContentType(ct)(&req)
			if resp := r.do(t, req); resp.StatusCode != 202 {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if r.sfn.Started() != 1 {
				t.Fatalf("%d executions started, want 1", r.sfn.Started())
			}
		})
	}
}

// A path that arrives with an escape API Gateway could not decode, or bytes no id may hold, is
// answered with the API's own JSON error, whether the gateway filled PathParameters or only the
// path.
func TestMalformedPathsGetTheJSONErrorShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  events.APIGatewayProxyRequest
		want int
	}{
		{"GET with an undecoded escape", idReq("GET", "alice", "%zz"), 404},
		{"DELETE with an undecoded escape", idReq("DELETE", "alice", "%zz"), 404},
		{"GET with invalid UTF-8", idReq("GET", "alice", "r_\xff"), 404},
		{"GET by path alone", events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/reservations/%zz",
			RequestContext: events.APIGatewayProxyRequestContext{Authorizer: claims("alice")}}, 404},
		{"POST by path alone", events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/events/%zz/reservations",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k"}, Body: goodBody,
			RequestContext: events.APIGatewayProxyRequestContext{Authorizer: claims("alice")}}, 400},
		{"unknown path", events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/%zz",
			RequestContext: events.APIGatewayProxyRequestContext{Authorizer: claims("alice")}}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			resp := r.do(t, tc.req)
			e := decode[Error](t, resp)
			if resp.StatusCode != tc.want || e.Code == "" || e.Message == "" {
				t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
			}
		})
	}
}
