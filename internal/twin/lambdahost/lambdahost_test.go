package lambdahost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
)

// SeatUnavailable is returned by pointer, as the saga's named errors are.
type SeatUnavailable struct{ Seat string }

func (e *SeatUnavailable) Error() string { return "seat " + e.Seat + " is unavailable" }

// PaymentDeclined is returned by value.
type PaymentDeclined struct{ Code string }

func (e PaymentDeclined) Error() string { return "payment declined: " + e.Code }

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting  string `json:"greeting"`
	RequestID string `json:"requestId"`
	ARN       string `json:"arn"`
	Deadline  bool   `json:"deadline"`
}

func greet(ctx context.Context, in greetIn) (greetOut, error) {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return greetOut{}, errors.New("no lambda context")
	}
	_, hasDeadline := ctx.Deadline()
	return greetOut{Greeting: "hello " + in.Name, RequestID: lc.AwsRequestID, ARN: lc.InvokedFunctionArn, Deadline: hasDeadline}, nil
}

func start(t *testing.T, opts lambdahost.Options) (*lambdahost.Host, *lambda.Client) {
	t.Helper()
	h := lambdahost.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	endpoint, err := h.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = h.Close()
	})
	client := lambda.New(lambda.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("local", "local", ""),
		RetryMaxAttempts: 1,
	})
	return h, client
}

func invoke(t *testing.T, c *lambda.Client, name string, payload string) (*lambda.InvokeOutput, error) {
	t.Helper()
	return c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(payload)})
}

type errorBody struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
	StackTrace   []struct {
		Path  string `json:"path"`
		Line  int    `json:"line"`
		Label string `json:"label"`
	} `json:"stackTrace"`
}

func invokeFunctionError(t *testing.T, c *lambda.Client, name, payload string) errorBody {
	t.Helper()
	out, err := invoke(t, c, name, payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	if out.StatusCode != 200 {
		t.Fatalf("status = %d, want 200", out.StatusCode)
	}
	if aws.ToString(out.FunctionError) != "Unhandled" {
		t.Fatalf("FunctionError = %q, want Unhandled (payload %s)", aws.ToString(out.FunctionError), out.Payload)
	}
	var body errorBody
	if err := json.Unmarshal(out.Payload, &body); err != nil {
		t.Fatalf("error payload %s: %v", out.Payload, err)
	}
	return body
}

func TestInvokeSuccessByNameAndARN(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	h.Register("greet", greet)
	for _, name := range []string{
		"greet",
		"greet:$LATEST",
		h.FunctionARN("greet"),
		h.FunctionARN("greet") + ":live",
		"123456789012:function:greet",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := invoke(t, c, name, `{"name":"ada"}`)
			if err != nil {
				t.Fatal(err)
			}
			if out.FunctionError != nil {
				t.Fatalf("unexpected function error %s", out.Payload)
			}
			var got greetOut
			if err := json.Unmarshal(out.Payload, &got); err != nil {
				t.Fatal(err)
			}
			if got.Greeting != "hello ada" || got.ARN != h.FunctionARN("greet") || got.RequestID == "" || !got.Deadline {
				t.Fatalf("got %+v", got)
			}
			if aws.ToString(out.ExecutedVersion) != "$LATEST" {
				t.Errorf("ExecutedVersion = %q", aws.ToString(out.ExecutedVersion))
			}
		})
	}
	if n := h.Invocations("greet"); n != 5 {
		t.Errorf("invocations = %d, want 5", n)
	}
}

func TestErrorTypesAreTheGoRuntimes(t *testing.T) {
	// The names below are what aws-lambda-go v1.55.1 reports (lambda/errors.go: the reflect
	// type name of the error, the element's name for a pointer), and so what Step Functions
	// sees as the error name.
	seat := &SeatUnavailable{Seat: "A1"}
	cases := []struct {
		name     string
		err      error
		wantType string
		wantMsg  string
	}{
		{"pointer type", seat, "SeatUnavailable", "seat A1 is unavailable"},
		{"value type", PaymentDeclined{Code: "card_declined"}, "PaymentDeclined", "payment declined: card_declined"},
		{"errors.New", errors.New("plain"), "errorString", "plain"},
		{"fmt.Errorf with %w", fmt.Errorf("claim: %w", seat), "wrapError", "claim: seat A1 is unavailable"},
		{"fmt.Errorf with two %w", fmt.Errorf("%w and %w", seat, errors.New("x")), "wrapErrors", "seat A1 is unavailable and x"},
		{"fmt.Errorf without %w", fmt.Errorf("claim: %v", seat), "errorString", "claim: seat A1 is unavailable"},
		{"errors.Join", errors.Join(seat, errors.New("y")), "joinError", "seat A1 is unavailable\ny"},
	}
	h, c := start(t, lambdahost.Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.Register("fail", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, tc.err })
			body := invokeFunctionError(t, c, "fail", `{}`)
			if body.ErrorType != tc.wantType || body.ErrorMessage != tc.wantMsg {
				t.Fatalf("got %q %q, want %q %q", body.ErrorType, body.ErrorMessage, tc.wantType, tc.wantMsg)
			}
			if st := h.Stats("fail"); st.Invocations != 1 || st.Errors != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestPanicIsShapedLikeTheRuntime(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	cases := []struct {
		name     string
		value    any
		wantType string
		wantMsg  string
	}{
		{"string", "boom", "string", "boom"},
		{"error pointer", &SeatUnavailable{Seat: "B2"}, "SeatUnavailable", "seat B2 is unavailable"},
		{"runtime error", nil, "boundsError", "runtime error: index out of range [3] with length 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.Register("panics", func(ctx context.Context) error {
				if tc.value == nil {
					var s []int
					_ = s[len(tc.name)-10]
				}
				panic(tc.value)
			})
			body := invokeFunctionError(t, c, "panics", `{}`)
			if body.ErrorType != tc.wantType || body.ErrorMessage != tc.wantMsg {
				t.Fatalf("got %q %q, want %q %q", body.ErrorType, body.ErrorMessage, tc.wantType, tc.wantMsg)
			}
			if len(body.StackTrace) == 0 {
				t.Fatal("no stack trace")
			}
			found := false
			for _, f := range body.StackTrace {
				if strings.HasSuffix(f.Path, "lambdahost_test.go") {
					found = true
				}
			}
			if !found {
				t.Errorf("stack trace does not reach the handler: %+v", body.StackTrace)
			}
		})
	}
}

func TestBadHandlerAndBadInput(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	h.Register("notAFunc", 42)
	h.Register("greet", greet)

	body := invokeFunctionError(t, c, "notAFunc", `{}`)
	if body.ErrorType != "errorString" || !strings.Contains(body.ErrorMessage, "handler kind int is not func") {
		t.Errorf("invalid handler: %+v", body)
	}
	body = invokeFunctionError(t, c, "greet", `{"name":7}`)
	if body.ErrorType != "UnmarshalTypeError" {
		t.Errorf("wrong input type: %+v", body)
	}

	_, err := invoke(t, c, "greet", `{not json`)
	var bad *types.InvalidRequestContentException
	if !errors.As(err, &bad) {
		t.Errorf("invalid JSON payload: err = %v, want InvalidRequestContentException", err)
	}
}

func TestUnknownFunction(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	for _, name := range []string{"missing", h.FunctionARN("missing")} {
		_, err := invoke(t, c, name, `{}`)
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Fatalf("%s: err = %v, want ResourceNotFoundException", name, err)
		}
		if !strings.Contains(aws.ToString(nf.Message), h.FunctionARN("missing")) {
			t.Errorf("message %q does not name the function", aws.ToString(nf.Message))
		}
	}
}

// blocker is a handler that holds its concurrency slot until released.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) handle(context.Context) (string, error) {
	b.entered <- struct{}{}
	<-b.release
	return "done", nil
}

func TestConcurrencyLimits(t *testing.T) {
	cases := []struct {
		name       string
		hostLimit  int
		reserved   int
		wantReason string
	}{
		{"host limit", 1, 0, "ConcurrentInvocationLimitExceeded"},
		{"reserved concurrency", 10, 1, "ReservedFunctionConcurrentInvocationLimitExceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, c := start(t, lambdahost.Options{MaxConcurrency: tc.hostLimit})
			b := newBlocker()
			h.RegisterWith("slow", b.handle, lambdahost.FunctionConfig{ReservedConcurrency: tc.reserved})
			first := make(chan error, 1)
			go func() {
				_, err := invoke(t, c, "slow", `{}`)
				first <- err
			}()
			<-b.entered

			_, err := invoke(t, c, "slow", `{}`)
			var tm *types.TooManyRequestsException
			if !errors.As(err, &tm) {
				t.Fatalf("second invoke: err = %v, want TooManyRequestsException", err)
			}
			if string(tm.Reason) != tc.wantReason {
				t.Errorf("reason = %q, want %q", tm.Reason, tc.wantReason)
			}
			close(b.release)
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			// The slot is free again.
			if _, err := invoke(t, c, "slow", `{}`); err != nil {
				t.Fatal(err)
			}
			if st := h.Stats("slow"); st.Throttles != 1 || st.Invocations != 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestFaultHooks(t *testing.T) {
	var effects atomic.Int64
	handler := func(context.Context, json.RawMessage) (string, error) {
		effects.Add(1)
		return "ok", nil
	}

	t.Run("fail before: no effect, service error, then recovers", func(t *testing.T) {
		effects.Store(0)
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		if err := h.FailBefore("step", 2, lambdahost.ServiceException()); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			_, err := invoke(t, c, "step", `{}`)
			var se *types.ServiceException
			if !errors.As(err, &se) {
				t.Fatalf("call %d: err = %v, want ServiceException", i, err)
			}
		}
		if effects.Load() != 0 || h.Invocations("step") != 0 {
			t.Fatalf("handler ran despite the fault: effects %d", effects.Load())
		}
		out, err := invoke(t, c, "step", `{}`)
		if err != nil || string(out.Payload) != `"ok"` {
			t.Fatalf("after the fault: %v %s", err, out.Payload)
		}
		if st := h.Stats("step"); st.FaultsInjected != 2 || st.Invocations != 1 || st.Requests != 3 {
			t.Errorf("stats %+v", st)
		}
	})

	t.Run("fail after: effect happened, caller sees service error", func(t *testing.T) {
		effects.Store(0)
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		_ = h.FailAfter("step", 1, lambdahost.ServiceException())
		_, err := invoke(t, c, "step", `{}`)
		var se *types.ServiceException
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want ServiceException", err)
		}
		if effects.Load() != 1 || h.Invocations("step") != 1 {
			t.Fatalf("effects %d, invocations %d; want 1, 1", effects.Load(), h.Invocations("step"))
		}
		if _, err := invoke(t, c, "step", `{}`); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("fail after with a timeout-shaped error", func(t *testing.T) {
		effects.Store(0)
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		_ = h.FailAfter("step", 1, lambdahost.Timeout(3*time.Second))
		body := invokeFunctionError(t, c, "step", `{}`)
		if body.ErrorType != "Sandbox.Timedout" || !strings.Contains(body.ErrorMessage, "Task timed out after 3.00 seconds") {
			t.Fatalf("got %+v", body)
		}
		if effects.Load() != 1 {
			t.Fatalf("effects %d, want 1", effects.Load())
		}
	})

	t.Run("fail after with a runtime crash", func(t *testing.T) {
		effects.Store(0)
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		_ = h.FailAfter("step", 1, lambdahost.Crash())
		body := invokeFunctionError(t, c, "step", `{}`)
		if body.ErrorType != "Runtime.ExitError" || !strings.HasPrefix(body.ErrorMessage, "RequestId: ") {
			t.Fatalf("got %+v", body)
		}
		if effects.Load() != 1 {
			t.Fatalf("effects %d, want 1", effects.Load())
		}
	})

	t.Run("fail before with a throttle", func(t *testing.T) {
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		_ = h.FailBefore("step", 1, lambdahost.TooManyRequests())
		_, err := invoke(t, c, "step", `{}`)
		var tm *types.TooManyRequestsException
		if !errors.As(err, &tm) {
			t.Fatalf("err = %v, want TooManyRequestsException", err)
		}
	})

	t.Run("function error of a chosen type", func(t *testing.T) {
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		_ = h.FailBefore("step", 1, lambdahost.FunctionError("PaymentUncertain", "provider timed out"))
		body := invokeFunctionError(t, c, "step", `{}`)
		if body.ErrorType != "PaymentUncertain" || body.ErrorMessage != "provider timed out" {
			t.Fatalf("got %+v", body)
		}
	})

	t.Run("latency", func(t *testing.T) {
		h, c := start(t, lambdahost.Options{})
		h.Register("step", handler)
		_ = h.SetLatency("step", 150*time.Millisecond)
		began := time.Now()
		if _, err := invoke(t, c, "step", `{}`); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d < 150*time.Millisecond {
			t.Fatalf("answered after %v, before the added latency", d)
		}
		h.ClearFaults("step")
	})

	t.Run("unknown function", func(t *testing.T) {
		h := lambdahost.New(lambdahost.Options{})
		if err := h.FailBefore("nope", 1, lambdahost.ServiceException()); err == nil {
			t.Fatal("want an error for an unknown function")
		}
	})
}

func TestFunctionTimeout(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	release := make(chan struct{})
	defer close(release)
	h.RegisterWith("hangs", func(ctx context.Context) error {
		<-release
		return nil
	}, lambdahost.FunctionConfig{Timeout: 100 * time.Millisecond})
	body := invokeFunctionError(t, c, "hangs", `{}`)
	if body.ErrorType != "Sandbox.Timedout" || !strings.Contains(body.ErrorMessage, "Task timed out after 0.10 seconds") {
		t.Fatalf("got %+v", body)
	}
}

func TestAsyncAndDryRun(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	ran := make(chan string, 1)
	h.Register("async", func(_ context.Context, in greetIn) error {
		ran <- in.Name
		return nil
	})
	out, err := c.Invoke(context.Background(), &lambda.InvokeInput{
		FunctionName: aws.String("async"), InvocationType: types.InvocationTypeEvent, Payload: []byte(`{"name":"bo"}`),
	})
	if err != nil || out.StatusCode != 202 {
		t.Fatalf("event invoke: %v %+v", err, out)
	}
	select {
	case name := <-ran:
		if name != "bo" {
			t.Fatalf("handler got %q", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("async handler did not run")
	}
	out, err = c.Invoke(context.Background(), &lambda.InvokeInput{
		FunctionName: aws.String("async"), InvocationType: types.InvocationTypeDryRun,
	})
	if err != nil || out.StatusCode != 204 {
		t.Fatalf("dry run: %v %+v", err, out)
	}
}

func BenchmarkInvoke(b *testing.B) {
	h := lambdahost.New(lambdahost.Options{})
	h.Register("greet", greet)
	endpoint, err := h.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	c := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	in := &lambda.InvokeInput{FunctionName: aws.String("greet"), Payload: []byte(`{"name":"ada"}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Invoke(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGateHoldsInvocationsUntilOpened(t *testing.T) {
	h := lambdahost.New(lambdahost.Options{})
	var ran atomic.Int64
	h.Register("step", func(ctx context.Context, in map[string]any) (map[string]any, error) {
		ran.Add(1)
		return in, nil
	})
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	open, waiting, err := h.Gate("step")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(srv.URL+"/2015-03-31/functions/step/invocations", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for waiting() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if waiting() != 1 || ran.Load() != 0 {
		t.Fatalf("gated invocation: waiting %d, ran %d; want 1 waiting, none ran", waiting(), ran.Load())
	}
	// Still held a while later: the gate does not time out by itself.
	time.Sleep(200 * time.Millisecond)
	if waiting() != 1 || ran.Load() != 0 {
		t.Fatalf("after 200ms: waiting %d, ran %d; want the invocation still held", waiting(), ran.Load())
	}
	open()
	<-done
	if ran.Load() != 1 || waiting() != 0 {
		t.Fatalf("after opening: ran %d, waiting %d; want 1 ran, none waiting", ran.Load(), waiting())
	}
}

// Concurrent invocations of one function each get their own answer: the runtime's RPC Invoke
// returns a pooled buffer's bytes, so a Function shared between invocations let one
// invocation's answer be overwritten by the next (run with -race to see the shared buffer).
func TestConcurrentInvocationsEachGetTheirOwnAnswer(t *testing.T) {
	h, c := start(t, lambdahost.Options{})
	h.Register("greet", greet)
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("buyer-%03d", i)
			out, err := invoke(t, c, "greet", `{"name":"`+name+`"}`)
			if err != nil {
				errs <- err.Error()
				return
			}
			var got greetOut
			if err := json.Unmarshal(out.Payload, &got); err != nil || got.Greeting != "hello "+name {
				errs <- fmt.Sprintf("%s got %s", name, out.Payload)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
