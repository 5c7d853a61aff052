package apigateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// edgeServer starts a stand-in whose webhook route (open, no token) invokes a function that
// counts its invocations and answers 200.
func edgeServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var invoked atomic.Int64
	srv := New(Options{
		Invoker: InvokerFunc(func(context.Context, string, []byte) ([]byte, error) {
			invoked.Add(1)
			return []byte(`{"statusCode":200,"body":"ok"}`), nil
		}),
		Routes: []Route{
			{Method: "POST", Resource: "/webhooks/stripe", Function: "webhook"},
			{Method: "GET", Resource: "/reservations/{id}", Function: "api"},
		},
	})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return base, &invoked
}

// errorShape decodes the API's JSON error shape, failing on anything else.
func errorShape(t *testing.T, hdr http.Header, body string) (code, message string) {
	t.Helper()
	var e struct{ Code, Message string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code == "" || e.Message == "" || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("answer %q (Content-Type %q) is not the JSON error shape", body, hdr.Get("Content-Type"))
	}
	return e.Code, e.Message
}

// A request whose proxy event Lambda would refuse (over its 6 MB invocation payload) is
// answered 413 in the API's error shape and reaches no function; a text body under it is
// invoked, and a binary body of the same size is not, since API Gateway base64-encodes it into
// the event: Lambda's limit on the event, not API Gateway's 10 MB on the body, bites first.
func TestBodiesLambdaWouldRefuseAre413BeforeAnyInvocation(t *testing.T) {
	base, invoked := edgeServer(t)
	const binarySize = LambdaPayloadLimit * 4 / 5 // base64 makes it 16/15 of the limit
	for _, tc := range []struct {
		name       string
		body       []byte
		wantStatus int
	}{
		{"text under the limit", bytes.Repeat([]byte("a"), LambdaPayloadLimit-64<<10), 200},
		{"text over the limit", bytes.Repeat([]byte("a"), LambdaPayloadLimit+1), 413},
		{"text of the same size as the binary one", bytes.Repeat([]byte("a"), binarySize), 200},
		{"binary that base64 takes over the limit", bytes.Repeat([]byte{0xff}, binarySize), 413},
		{"over API Gateway's own 10 MB", bytes.Repeat([]byte("a"), GatewayBodyLimit+1), 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := invoked.Load()
			status, hdr, body := do(t, "POST", base+"/webhooks/stripe", "", string(tc.body), nil)
			if status != tc.wantStatus {
				t.Fatalf("status %d (%.200s), want %d", status, body, tc.wantStatus)
			}
			calls := invoked.Load() - before
			if tc.wantStatus == 200 {
				if calls != 1 {
					t.Fatalf("%d invocations, want 1", calls)
				}
				return
			}
			if code, _ := errorShape(t, hdr, body); code != CodeBodyTooLarge {
				t.Fatalf("code %q, want %s", code, CodeBodyTooLarge)
			}
			if calls != 0 {
				t.Fatalf("%d invocations for a refused body", calls)
			}
		})
	}
}

// rawRequest writes request to a fresh connection and reads the whole answer.
func rawRequest(t *testing.T, base, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer to %q: %v", request, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Requests net/http refuses before any handler runs (an invalid percent-escape in the path, a
// control byte in the path or a header) get the API's JSON error shape, not net/http's plain
// text; the control shows the same connection path serving a well-formed request.
func TestMalformedRequestLinesAndHeadersGetTheJSONErrorShape(t *testing.T) {
	base, invoked := edgeServer(t)
	for _, tc := range []struct {
		name    string
		request string
	}{
		{"invalid path escape", "GET /reservations/%zz HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"control byte in the path", "GET /reservations/a\x01b HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"control byte in a header value", "GET /reservations/a HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\x01\r\n\r\n"},
		{"control byte in a header name", "GET /reservations/a HTTP/1.1\r\nHost: x\r\nIdem\x01: k\r\n\r\n"},
		{"malformed header line", "GET /reservations/a HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawRequest(t, base, tc.request)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d %q, want 400", resp.StatusCode, body)
			}
			if code, _ := errorShape(t, resp.Header, body); code != CodeBadRequest {
				t.Fatalf("code %q, want %s", code, CodeBadRequest)
			}
		})
	}
	if n := invoked.Load(); n != 0 {
		t.Fatalf("%d invocations for malformed requests", n)
	}
	resp, body := rawRequest(t, base, "GET /reservations/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "ok" || invoked.Load() != 1 {
		t.Fatalf("well-formed request: %d %q, %d invocations", resp.StatusCode, body, invoked.Load())
	}
}

// Only net/http's own error answers are rewritten: a function's answer that happens to be a
// plain-text 400 passes through as the function wrote it.
func TestAFunctionsOwnPlainTextErrorIsNotRewritten(t *testing.T) {
	srv := New(Options{
		Invoker: InvokerFunc(func(context.Context, string, []byte) ([]byte, error) {
			return []byte(`{"statusCode":400,"headers":{"Content-Type":"text/plain; charset=utf-8","Connection":"close"},"body":"400 Bad Request"}`), nil
		}),
		Routes: []Route{{Method: "GET", Resource: "/reservations/{id}", Function: "api"}},
	})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	status, hdr, body := do(t, "GET", base+"/reservations/a", "", "", nil)
	if status != 400 || body != "400 Bad Request" || hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("got %d %q %q", status, hdr.Get("Content-Type"), body)
	}
}

func TestRewriteTouchesOnlyNetHTTPErrorAnswers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"HTTP/1.1 400 Bad Request" + netHTTPErrorHeaders + "400 Bad Request", true},
		{"HTTP/1.1 431 Request Header Fields Too Large" + netHTTPErrorHeaders + "431 Request Header Fields Too Large", true},
		{"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nok", false},
		{"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nx", false},
		{"chunk of a body" + netHTTPErrorHeaders, false},
	} {
		out, ok := rewriteNetHTTPError([]byte(tc.in))
		if ok != tc.want {
			t.Fatalf("%q: rewritten %v, want %v", tc.in, ok, tc.want)
		}
		if ok && !bytes.Contains(out, []byte("\r\nContent-Type: application/json\r\n")) {
			t.Fatalf("%q became %q", tc.in, out)
		}
	}
}
