package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStartServesAndRefusesASecondStart(t *testing.T) {
	var s Server
	if s.URL() != "" {
		t.Fatalf("URL before Start = %q, want empty", s.URL())
	}
	base, err := s.Start("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !strings.HasPrefix(base, "http://127.0.0.1:") || s.URL() != base {
		t.Fatalf("Start = %q, URL = %q", base, s.URL())
	}
	resp, err := http.Get(base + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello /x" {
		t.Fatalf("body = %q", body)
	}
	if _, err := s.Start("127.0.0.1:0", http.NotFoundHandler()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
}

func TestStartReportsTheListenError(t *testing.T) {
	s := Server{Name: "twin"}
	_, err := s.Start("127.0.0.1:-1", http.NotFoundHandler())
	if err == nil || !strings.HasPrefix(err.Error(), "twin: listen on 127.0.0.1:-1: ") {
		t.Fatalf("Start on a bad address: %v", err)
	}
	// A failed Start leaves the server unstarted.
	if _, err := s.Start("127.0.0.1:0", http.NotFoundHandler()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start("127.0.0.1:0", http.NotFoundHandler()); err == nil || err.Error() != "twin: already started" || !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v, want twin: already started", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// startHanging starts a server whose handler hangs until the test ends, sends it a request and
// returns, once the handler is running, the channel the request's error arrives on.
func startHanging(t *testing.T, start func(http.Handler) (string, error)) <-chan error {
	t.Helper()
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	base, err := start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get(base)
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered
	return got
}

func TestCloseIsBoundedWhileARequestHangs(t *testing.T) {
	s := Server{ShutdownTimeout: 100 * time.Millisecond}
	got := startHanging(t, func(h http.Handler) (string, error) { return s.Start("127.0.0.1:0", h) })
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("Close took %s, want about the 100ms shutdown timeout", took)
	}
	if err := <-got; err == nil {
		t.Fatal("the hanging request succeeded; want its connection cut")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Start("127.0.0.1:0", http.NotFoundHandler()); !errors.Is(err, ErrStarted) {
		t.Fatalf("Start after Close: %v, want ErrStarted", err)
	}
}

func TestCloseBeforeStartDoesNothing(t *testing.T) {
	var s Server
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStartContextCutsOffWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := Server{ShutdownTimeout: time.Minute}
	got := startHanging(t, func(h http.Handler) (string, error) { return s.StartContext(ctx, "127.0.0.1:0", h) })
	cancel()
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("the hanging request succeeded; want its connection cut")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request was not cut off when the context ended")
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close after the cut-off took %s", took)
	}
}
