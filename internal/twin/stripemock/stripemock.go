// Package stripemock starts Stripe's stripe-mock (tools/bin/stripe-mock, installed by
// `make tools`) on free loopback ports for contract tests and stops it afterwards.
// stripe-mock validates every request against Stripe's OpenAPI description and answers with
// fixtures; it keeps no state, so behaviour is tested against internal/twin/stripesim instead.
package stripemock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/modroot"

	"github.com/seatsaga/seatsaga/internal/twin/childproc"
)

// EnvBinary names the environment variable holding stripe-mock's path (the Makefile sets it).
const EnvBinary = "SEATSAGA_STRIPE_MOCK"

// ErrNotInstalled is returned (wrapped) when no stripe-mock binary can be found.
var ErrNotInstalled = errors.New("stripe-mock is not installed: run `make tools`")

// Server is a running stripe-mock.
type Server struct {
	// URL is the HTTP base URL, e.g. http://127.0.0.1:41234, for stripeadapter.NewClientAPI.
	URL string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// BinaryPath finds stripe-mock: $SEATSAGA_STRIPE_MOCK if set, else <module root>/tools/bin/stripe-mock,
// the module root being the nearest directory above the working directory holding go.mod.
func BinaryPath() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: $%s=%s: %v", ErrNotInstalled, EnvBinary, p, err)
		}
		return p, nil
	}
	root, err := modroot.FromWorkingDir()
	if err != nil {
		return "", fmt.Errorf("%w: %v and $%s unset", ErrNotInstalled, err, EnvBinary)
	}
	p := filepath.Join(root, "tools", "bin", "stripe-mock")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: %s missing", ErrNotInstalled, p)
	}
	return p, nil
}

// Start launches stripe-mock on system-chosen loopback ports (HTTP and HTTPS, so that two
// test binaries never collide on stripe-mock's fixed default ports) and waits until it
// listens. The child dies with the test process (Pdeathsig SIGKILL) even if Stop is missed.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinaryPath()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	child, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}

	addrCh := make(chan string, 1)
	go func() {
		// stripe-mock announces "Listening for HTTP at address: 127.0.0.1:NNNN"; keep
		// draining afterwards so it never blocks on a full pipe.
		sc := bufio.NewScanner(out)
		const marker = "Listening for HTTP at address: "
		for sc.Scan() {
			if i := strings.Index(sc.Text(), marker); i >= 0 {
				select {
				case addrCh <- strings.TrimSpace(sc.Text()[i+len(marker):]):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		<-child.Done()
		s.waitErr = child.Err()
		close(s.done)
	}()

	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	select {
	case addr := <-addrCh:
		s.URL = "http://" + addr
	case <-s.done:
		return nil, fmt.Errorf("stripe-mock exited before listening: %v", s.waitErr)
	case <-ctx.Done():
		s.Stop()
		return nil, ctx.Err()
	case <-timeout.C:
		s.Stop()
		return nil, errors.New("stripe-mock did not report a listening address within 20s")
	}
	if err := waitDialable(ctx, strings.TrimPrefix(s.URL, "http://")); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func waitDialable(ctx context.Context, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("stripe-mock at %s not reachable: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills stripe-mock and waits for it to exit. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
		}
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
	})
}

// StartT starts stripe-mock for a test and stops it in t.Cleanup; it fails the test (never
// skips it) when stripe-mock is missing, so a contract test cannot pass by not running.
func StartT(t testing.TB) *Server {
	t.Helper()
	s, err := Start(context.Background())
	if err != nil {
		t.Fatalf("stripemock: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}
