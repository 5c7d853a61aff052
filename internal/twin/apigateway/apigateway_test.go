package apigateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// echo answers with what it received, so the test sees the event API Gateway would build.
func echo(_ context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	if ev.Body == "boom" {
		return events.APIGatewayProxyResponse{}, errors.New("boom")
	}
	b, _ := json.Marshal(ev)
	return events.APIGatewayProxyResponse{
		StatusCode: 201,
		Headers:    map[string]string{"Content-Type": "application/json", "X-Echo": "1"},
		Body:       string(b),
	}, nil
}

func startStack(t *testing.T) (string, *DevAuthorizer) {
	t.Helper()
	host := lambdahost.New(lambdahost.Options{AccountID: "000000000000"})
	host.Register("api", echo)
	host.Register("webhook", echo)
	ctx, cancel := context.WithCancel(context.Background())
	lambdaURL, err := host.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(lambdaURL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
		}),
	})
	auth := &DevAuthorizer{Secret: []byte("test-secret")}
	srv := New(Options{
		Invoker:    LambdaInvoker{Client: client},
		Authorizer: auth,
		Routes: []Route{
			{Method: "POST", Resource: "/events/{eventId}/reservations", Function: "api", Authorized: true},
			{Method: "GET", Resource: "/reservations/{id}", Function: "api", Authorized: true},
			{Method: "DELETE", Resource: "/reservations/{id}", Function: "api", Authorized: true},
			{Method: "POST", Resource: "/webhooks/stripe", Function: "webhook"},
		},
	})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Close()
		cancel()
		_ = host.Close()
	})
	return base, auth
}

func do(t *testing.T, method, url, token, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestRoutesBuildProxyEvents(t *testing.T) {
	base, auth := startStack(t)
	token, err := auth.Token("cust-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, body := do(t, "POST", base+"/events/ev%2D1/reservations?x=1", token, `{"seatIds":["A1"]}`,
		map[string]string{"Idempotency-Key": "k1"})
	if status != 201 || hdr.Get("X-Echo") != "1" {
		t.Fatalf("status %d headers %v body %s", status, hdr, body)
	}
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Resource != "/events/{eventId}/reservations" || ev.HTTPMethod != "POST" || ev.PathParameters["eventId"] != "ev-1" {
		t.Errorf("resource %q method %q params %v", ev.Resource, ev.HTTPMethod, ev.PathParameters)
	}
	if ev.Headers["Idempotency-Key"] != "k1" || ev.QueryStringParameters["x"] != "1" || ev.Body != `{"seatIds":["A1"]}` {
		t.Errorf("headers %v query %v body %q", ev.Headers, ev.QueryStringParameters, ev.Body)
	}
	claims, _ := ev.RequestContext.Authorizer["claims"].(map[string]any)
	if claims["sub"] != "cust-1" || ev.RequestContext.Authorizer["principalId"] != "cust-1" {
		t.Errorf("authorizer context %v", ev.RequestContext.Authorizer)
	}
	if ev.RequestContext.RequestID == "" || ev.RequestContext.Stage != "local" || ev.RequestContext.Identity.SourceIP != "127.0.0.1" {
		t.Errorf("request context %+v", ev.RequestContext)
	}

	// The webhook route is public and passes the body byte for byte.
	status, _, body = do(t, "POST", base+"/webhooks/stripe", "", `{"id":"evt_1"}`, map[string]string{"Stripe-Signature": "t=1,v1=x"})
	if status != 201 {
		t.Fatalf("webhook status %d: %s", status, body)
	}
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Body != `{"id":"evt_1"}` || ev.Headers["Stripe-Signature"] != "t=1,v1=x" || ev.RequestContext.Authorizer != nil {
		t.Errorf("webhook event body %q headers %v authorizer %v", ev.Body, ev.Headers, ev.RequestContext.Authorizer)
	}
}

func TestGatewayErrors(t *testing.T) {
	base, auth := startStack(t)
	good, _ := auth.Token("cust-1", time.Hour)
	expired, _ := (&DevAuthorizer{Secret: auth.Secret, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }}).Token("cust-1", time.Hour)
	forged, _ := (&DevAuthorizer{Secret: []byte("other")}).Token("cust-1", time.Hour)
	cases := []struct {
		name, method, path, token, body string
		want                            int
		wantMsg                         string
	}{
		{"no token", "GET", "/reservations/r1", "", "", 401, "Unauthorized"},
		{"expired token", "GET", "/reservations/r1", expired, "", 401, "Unauthorized"},
		{"forged token", "GET", "/reservations/r1", forged, "", 401, "Unauthorized"},
		{"garbage token", "GET", "/reservations/r1", "dev.abc", "", 401, "Unauthorized"},
		{"unknown path", "GET", "/nope", good, "", 403, "Missing Authentication Token"},
		{"wrong method", "PUT", "/reservations/r1", good, "", 403, "Missing Authentication Token"},
		{"function error", "DELETE", "/reservations/r1", good, "boom", 502, "Internal server error"},
		{"authorized", "DELETE", "/reservations/r1", good, "", 201, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, tc.method, base+tc.path, tc.token, tc.body, nil)
			if status != tc.want {
				t.Fatalf("status %d, want %d: %s", status, tc.want, body)
			}
			if tc.wantMsg != "" && !strings.Contains(body, tc.wantMsg) {
				t.Fatalf("body %s, want message %q", body, tc.wantMsg)
			}
		})
	}
}

func TestMalformedProxyResponseIs502(t *testing.T) {
	srv := New(Options{
		Invoker: InvokerFunc(func(context.Context, string, []byte) ([]byte, error) { return []byte(`"not a response"`), nil }),
		Routes:  []Route{{Method: "GET", Resource: "/x", Function: "f"}},
	})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if status, _, body := do(t, "GET", base+"/x", "", "", nil); status != 502 {
		t.Fatalf("status %d: %s", status, body)
	}
}
