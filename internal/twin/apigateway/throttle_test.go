package apigateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// Past its burst the stage answers 429 {"message":"Too Many Requests"} as API Gateway does,
// without invoking the function, and admits requests again at its rate as its bucket refills.
func TestTheStageAnswers429PastItsBurstAndRecoversAtItsRate(t *testing.T) {
	c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var invoked atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	srv := New(Options{
		Clock:    c,
		Throttle: &throttle.Limit{Size: 3, RefillPerSecond: 2},
		Invoker: InvokerFunc(func(context.Context, string, []byte) ([]byte, error) {
			invoked.Add(1)
			return []byte(`{"statusCode":200,"body":"ok"}`), nil
		}),
		Routes: []Route{{Method: "POST", Resource: "/webhooks/stripe", Function: "webhook"}},
		Observer: func(r Request) {
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		},
	})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	post := func() (int, http.Header, string) { return do(t, "POST", ts.URL+"/webhooks/stripe", "", "{}", nil) }
	// admitted posts until one is throttled and returns how many got through; a stage that
	// never throttles fails the test.
	admitted := func() int {
		t.Helper()
		for ok := 0; ; ok++ {
			if ok > 100 {
				t.Fatal("100 requests admitted in a row: the stage does not throttle")
			}
			status, hdr, body := post()
			if status == http.StatusOK {
				continue
			}
			if status != http.StatusTooManyRequests || body != `{"message":"Too Many Requests"}` ||
				hdr.Get("X-Amzn-Errortype") != "TooManyRequestsException" {
				t.Fatalf("throttled answer %d %q %s, want 429 TooManyRequestsException {\"message\":\"Too Many Requests\"}", status, hdr.Get("X-Amzn-Errortype"), body)
			}
			return ok
		}
	}
	if got := admitted(); got != 3 {
		t.Fatalf("a burst admitted %d requests, want the burst limit's 3", got)
	}
	if got := invoked.Load(); got != 3 {
		t.Fatalf("the function ran %d times, want 3: a throttled request reached it", got)
	}
	c.Advance(499 * time.Millisecond)
	if got := admitted(); got != 0 {
		t.Fatalf("%d requests admitted before half a second at 2/s", got)
	}
	c.Advance(time.Millisecond)
	if got := admitted(); got != 1 {
		t.Fatalf("%d requests admitted after half a second at 2/s, want 1", got)
	}
	c.Advance(time.Minute)
	if got := admitted(); got != 3 {
		t.Fatalf("%d requests admitted after a minute, want no more than the burst's 3", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if statuses[http.StatusTooManyRequests] != 4 || statuses[http.StatusOK] != 7 {
		t.Fatalf("observer saw %v, want 7 answered 200 and 4 answered 429", statuses)
	}
}

// Without a throttle the stage admits every request, as before.
func TestAStageWithoutThrottleAdmitsEveryRequest(t *testing.T) {
	srv := New(Options{
		Invoker: InvokerFunc(func(context.Context, string, []byte) ([]byte, error) {
			return []byte(`{"statusCode":200,"body":"ok"}`), nil
		}),
		Routes: []Route{{Method: "POST", Resource: "/webhooks/stripe", Function: "webhook"}},
	})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	for i := range 50 {
		if status, _, body := do(t, "POST", ts.URL+"/webhooks/stripe", "", "{}", nil); status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, status, body)
		}
	}
}
