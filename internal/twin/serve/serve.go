// Package serve runs one http.Handler on a TCP listener for the twin's local services: it
// starts once, and Close waits a bounded time for the requests in flight before it cuts them
// off, so that a hanging request cannot hold up the stack's shutdown.
package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults that hold when a Server's fields are zero.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultShutdownTimeout   = 3 * time.Second
)

// ErrStarted is what Start returns on a Server that was started before (closed or not).
var ErrStarted = errors.New("already started")

// Server serves one handler. Its zero value is ready to Start; set the fields before. A Server
// starts once: after Close it stays closed. Its methods are safe for concurrent use.
type Server struct {
	// Name, when set, starts Start's errors, as a package names its own: "cognito" gives
	// "cognito: already started".
	Name string
	// ReadHeaderTimeout is the http.Server's (default DefaultReadHeaderTimeout).
	ReadHeaderTimeout time.Duration
	// IdleTimeout is the http.Server's (zero: no limit of its own).
	IdleTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for requests in flight before it closes
	// their connections (default DefaultShutdownTimeout).
	ShutdownTimeout time.Duration

	mu   sync.Mutex
	srv  *http.Server
	ln   net.Listener
	done chan struct{} // closed when Serve returned
	stop func() bool   // unregisters the cut-off on the start context
}

// Start listens on addr (e.g. "127.0.0.1:0" for a free loopback port), serves h there in the
// background and returns the base URL, "http://host:port". It fails with ErrStarted, or with
// the listener's error after "listen on <addr>: "; either after "<Name>: ".
func (s *Server) Start(addr string, h http.Handler) (string, error) {
	return s.StartContext(context.Background(), addr, h)
}

// StartContext is Start, and the server is also cut off (its listener and connections closed
// at once, without waiting for requests in flight) when ctx ends. Close is still needed to wait
// for it to stop.
func (s *Server) StartContext(ctx context.Context, addr string, h http.Handler) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", s.named(ErrStarted)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", s.named(fmt.Errorf("listen on %s: %w", addr, err))
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(s.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       s.IdleTimeout,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	s.srv, s.ln, s.done = srv, ln, done
	s.stop = context.AfterFunc(ctx, func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

func (s *Server) named(err error) error {
	if s.Name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", s.Name, err)
}

// URL is the base URL Start returned; empty before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops the server: it stops accepting, waits up to ShutdownTimeout for requests in
// flight, then closes their connections (their handlers may still be running), and returns
// once the server stopped. The error is that of closing the connections, when the wait ran
// out. Closing a server never started, or closed before, does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, done, stop := s.srv, s.done, s.stop
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.ShutdownTimeout, DefaultShutdownTimeout))
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = srv.Close()
	}
	<-done
	return err
}
