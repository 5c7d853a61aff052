package lambdahost_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

func newRuntimeAPI(t *testing.T) *lambdahost.RuntimeAPI {
	t.Helper()
	a, err := lambdahost.NewRuntimeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

type invokeResult struct {
	resp lambdahost.Response
	err  error
}

// invokeAsync starts a.Invoke, which blocks until a runtime polls and answers.
func invokeAsync(ctx context.Context, a *lambdahost.RuntimeAPI, inv lambdahost.Invocation) <-chan invokeResult {
	ch := make(chan invokeResult, 1)
	go func() {
		resp, err := a.Invoke(ctx, inv)
		ch <- invokeResult{resp, err}
	}()
	return ch
}

func runtimeURL(a *lambdahost.RuntimeAPI, path string) string {
	return "http://" + a.Address() + "/2018-06-01/runtime/" + path
}

// next does what aws-lambda-go's runtime client does to get an event.
func next(t *testing.T, a *lambdahost.RuntimeAPI) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, runtimeURL(a, "invocation/next"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func post(t *testing.T, a *lambdahost.RuntimeAPI, path, body string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, runtimeURL(a, path), strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func result(t *testing.T, ch <-chan invokeResult) invokeResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Invoke did not return")
		return invokeResult{}
	}
}

func TestRuntimeAPINextCarriesTheEventAndLambdasHeaders(t *testing.T) {
	a := newRuntimeAPI(t)
	select {
	case <-a.Polled():
		t.Fatal("Polled before any GET /invocation/next")
	default:
	}
	inv := lambdahost.Invocation{
		RequestID:       "req-1",
		Payload:         []byte(`{"seat":"A1"}`),
		FunctionARN:     "arn:aws:lambda:us-east-1:123456789012:function:claim",
		Timeout:         3 * time.Second,
		TraceID:         "Root=1-5e1b4151-5ac6c58f5b5daa6532e4f2e8;Parent=d9a1e4c1a1b2c3d4;Sampled=1",
		ClientContext:   []byte(`{"custom":{"k":"v"}}`),
		CognitoIdentity: []byte(`{"cognitoIdentityId":"id-1","cognitoIdentityPoolId":"pool-1"}`),
	}
	ch := invokeAsync(t.Context(), a, inv)
	before := time.Now()
	resp, body := next(t, a)
	<-a.Polled()

	if resp.StatusCode != http.StatusOK || string(body) != `{"seat":"A1"}` {
		t.Fatalf("next: %d %s", resp.StatusCode, body)
	}
	for h, want := range map[string]string{
		"Lambda-Runtime-Aws-Request-Id":       "req-1",
		"Lambda-Runtime-Invoked-Function-Arn": inv.FunctionARN,
		"Lambda-Runtime-Trace-Id":             inv.TraceID,
		"Lambda-Runtime-Client-Context":       string(inv.ClientContext),
		"Lambda-Runtime-Cognito-Identity":     string(inv.CognitoIdentity),
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	ms, err := strconv.ParseInt(resp.Header.Get("Lambda-Runtime-Deadline-Ms"), 10, 64)
	if err != nil {
		t.Fatalf("deadline header %q", resp.Header.Get("Lambda-Runtime-Deadline-Ms"))
	}
	if d := time.UnixMilli(ms).Sub(before); d < 2*time.Second || d > 4*time.Second {
		t.Errorf("deadline %s from now, want about 3s", d)
	}

	status, _ := post(t, a, "invocation/req-1/response", `{"ok":true}`, http.Header{"Content-Type": {"application/octet-stream"}})
	if status != http.StatusAccepted {
		t.Fatalf("response status %d, want 202", status)
	}
	r := result(t, ch)
	if r.err != nil || string(r.resp.Payload) != `{"ok":true}` || r.resp.ErrorType != "" ||
		r.resp.ContentType != "application/octet-stream" || r.resp.RequestID != "req-1" {
		t.Fatalf("Invoke = %+v, %v", r.resp, r.err)
	}
}

func TestRuntimeAPIOmitsAbsentContextHeadersAndAlwaysSendsATrace(t *testing.T) {
	a := newRuntimeAPI(t)
	ch := invokeAsync(t.Context(), a, lambdahost.Invocation{Payload: []byte(`{}`)})
	resp, _ := next(t, a)
	for _, h := range []string{"Lambda-Runtime-Client-Context", "Lambda-Runtime-Cognito-Identity"} {
		if _, ok := resp.Header[h]; ok {
			t.Errorf("%s sent without a value", h)
		}
	}
	if !strings.HasPrefix(resp.Header.Get("Lambda-Runtime-Trace-Id"), "Root=1-") {
		t.Errorf("trace header %q", resp.Header.Get("Lambda-Runtime-Trace-Id"))
	}
	id := resp.Header.Get("Lambda-Runtime-Aws-Request-Id")
	if id == "" {
		t.Fatal("no request id")
	}
	post(t, a, "invocation/"+id+"/response", `null`, nil)
	if r := result(t, ch); r.err != nil || string(r.resp.Payload) != "null" {
		t.Fatalf("Invoke = %+v, %v", r.resp, r.err)
	}
}

func TestRuntimeAPIErrorPostIsAFunctionError(t *testing.T) {
	cases := []struct {
		name, body, header, wantType string
	}{
		// aws-lambda-go posts the document and no header.
		{"document", `{"errorMessage":"seat A1 is unavailable","errorType":"SeatUnavailable"}`, "", "SeatUnavailable"},
		{"document wins over header", `{"errorMessage":"m","errorType":"SeatUnavailable"}`, "Runtime.Other", "SeatUnavailable"},
		{"header only", ``, "Runtime.Custom", "Runtime.Custom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newRuntimeAPI(t)
			ch := invokeAsync(t.Context(), a, lambdahost.Invocation{RequestID: "req-e", Payload: []byte(`{}`)})
			next(t, a)
			h := http.Header{"Content-Type": {"application/json"}}
			if tc.header != "" {
				h.Set("Lambda-Runtime-Function-Error-Type", tc.header)
			}
			if status, _ := post(t, a, "invocation/req-e/error", tc.body, h); status != http.StatusAccepted {
				t.Fatalf("status %d", status)
			}
			r := result(t, ch)
			if r.err != nil || r.resp.ErrorType != tc.wantType {
				t.Fatalf("Invoke = %+v, %v", r.resp, r.err)
			}
			var doc errorBody
			if err := json.Unmarshal(r.resp.Payload, &doc); err != nil || doc.ErrorType != tc.wantType {
				t.Fatalf("error document %s: %v", r.resp.Payload, err)
			}
			if tc.body != "" && string(r.resp.Payload) != tc.body {
				t.Errorf("document %s, want it as posted: %s", r.resp.Payload, tc.body)
			}
		})
	}
}

func TestRuntimeAPIResponseWithErrorTrailersIsAFunctionError(t *testing.T) {
	// aws-lambda-go reports a handler's response reader failing mid-body this way.
	a := newRuntimeAPI(t)
	ch := invokeAsync(t.Context(), a, lambdahost.Invocation{RequestID: "req-t", Payload: []byte(`{}`)})
	next(t, a)
	doc := `{"errorMessage":"read failed","errorType":"errorString"}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, runtimeURL(a, "invocation/req-t/response"),
		io.MultiReader(strings.NewReader("partial")))
	req.Trailer = http.Header{
		"Lambda-Runtime-Function-Error-Type": {"errorString"},
		"Lambda-Runtime-Function-Error-Body": {base64.StdEncoding.EncodeToString([]byte(doc))},
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := result(t, ch)
	if r.err != nil || r.resp.ErrorType != "errorString" || string(r.resp.Payload) != doc {
		t.Fatalf("Invoke = %+v (%s), %v", r.resp, r.resp.Payload, r.err)
	}
}

func TestRuntimeAPIRefusesARequestIDItDidNotHandOut(t *testing.T) {
	a := newRuntimeAPI(t)
	for _, path := range []string{"invocation/nope/response", "invocation/nope/error"} {
		status, body := post(t, a, path, `{}`, nil)
		if status != http.StatusBadRequest || !strings.Contains(body, "InvalidRequestID") {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
}

func TestRuntimeAPIInitErrorIsAcceptedOnlyBeforeTheFirstPoll(t *testing.T) {
	a := newRuntimeAPI(t)
	status, _ := post(t, a, "init/error", `{"errorMessage":"no config","errorType":"Runtime.ConfigError"}`,
		http.Header{"Lambda-Runtime-Function-Error-Type": {"Runtime.ConfigError"}})
	if status != http.StatusAccepted {
		t.Fatalf("init/error status %d", status)
	}
	<-a.InitFailed()
	if e := a.InitError(); e == nil || e.ErrorType != "Runtime.ConfigError" || e.ErrorMessage != "no config" {
		t.Fatalf("InitError = %+v", e)
	}

	b := newRuntimeAPI(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch := invokeAsync(ctx, b, lambdahost.Invocation{RequestID: "req-i", Payload: []byte(`{}`)})
	next(t, b)
	status, body := post(t, b, "init/error", `{}`, nil)
	if status != http.StatusForbidden || !strings.Contains(body, "InvalidStateTransition") {
		t.Errorf("init/error after a poll: %d %s", status, body)
	}
	cancel()
	result(t, ch)
}

func TestRuntimeAPIInvokeNobodyPollsForIsNotDelivered(t *testing.T) {
	a := newRuntimeAPI(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := a.Invoke(ctx, lambdahost.Invocation{Payload: []byte(`{}`)})
	if !errors.Is(err, lambdahost.ErrNotDelivered) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotDelivered and DeadlineExceeded", err)
	}
}

func TestRuntimeAPIUnansweredInvocationTimesOutAndTheLateAnswerIsAccepted(t *testing.T) {
	a := newRuntimeAPI(t)
	ch := invokeAsync(t.Context(), a, lambdahost.Invocation{RequestID: "req-late", Payload: []byte(`{}`), Timeout: 200 * time.Millisecond})
	next(t, a)
	if r := result(t, ch); !errors.Is(r.err, lambdahost.ErrTimedOut) {
		t.Fatalf("err = %v, want ErrTimedOut", r.err)
	}
	// Refusing it would make aws-lambda-go exit.
	if status, _ := post(t, a, "invocation/req-late/response", `{}`, nil); status != http.StatusAccepted {
		t.Errorf("late answer status %d, want 202", status)
	}
}

func TestRuntimeAPICloseEndsAWaitingInvoke(t *testing.T) {
	a := newRuntimeAPI(t)
	ch := invokeAsync(t.Context(), a, lambdahost.Invocation{Payload: []byte(`{}`)})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); !errors.Is(r.err, lambdahost.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", r.err)
	}
}
