// Package ddbtest gives tests one DynamoDB Local per test binary and fresh, uniquely prefixed
// tables per test. It lives apart from dynamodblocal so that binaries do not link package
// testing.
//
//	func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		env := ddbtest.New(t) // all tables of tables.All(), deleted when the test ends
//		... env.Client, env.Names ...
//	}
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
)

var (
	mu       sync.Mutex
	server   *dynamodblocal.Server
	client   *dynamodb.Client
	startErr error
	counter  atomic.Int64
	runID    = randomID()
)

// Main starts (or reuses, via $DYNAMODB_ENDPOINT) DynamoDB Local, runs the tests and stops it.
// A missing Java or jar fails the run with the message saying what to install.
func Main(m *testing.M) int {
	if _, _, err := shared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if server != nil {
		_ = server.Stop()
		server = nil
	}
	return code
}

// Endpoint returns the shared server's endpoint, starting it when Main did not.
func Endpoint(t testing.TB) string {
	t.Helper()
	s, _, err := shared()
	if err != nil {
		t.Fatal(err)
	}
	return s.Endpoint()
}

// Env is one test's view of DynamoDB Local: a client and table names no other test uses.
type Env struct {
	Endpoint string
	Client   *dynamodb.Client
	Names    tables.Names
}

// New creates the given tables (all of tables.All() when none are given) under a prefix unique
// to this test and deletes them when the test ends. Without Main it starts a server on first use;
// that server dies with the test binary.
func New(t testing.TB, defs ...tables.Table) *Env {
	t.Helper()
	s, c, err := shared()
	if err != nil {
		t.Fatal(err)
	}
	names := tables.Names{Prefix: Prefix(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := dynamodblocal.CreateTables(ctx, c, names, withoutTTL(defs)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamodblocal.DeleteTables(ctx, c, names, defs...); err != nil {
			t.Logf("ddbtest: cleanup: %v", err)
		}
	})
	return &Env{Endpoint: s.Endpoint(), Client: c, Names: names}
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// Prefix returns a table-name prefix unique to this test, this binary run and this call; it
// is safe for a shared $DYNAMODB_ENDPOINT.
func Prefix(t testing.TB) string {
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 60 {
		name = name[:60]
	}
	return fmt.Sprintf("%s-%d-%s-", runID, counter.Add(1), name)
}

func shared() (*dynamodblocal.Server, *dynamodb.Client, error) {
	mu.Lock()
	defer mu.Unlock()
	if server != nil || startErr != nil {
		return server, client, startErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := dynamodblocal.Start(ctx)
	if err != nil {
		startErr = err
		return nil, nil, err
	}
	c, err := dynamodblocal.NewClient(ctx, s.Endpoint())
	if err != nil {
		_ = s.Stop()
		startErr = err
		return nil, nil, err
	}
	server, client = s, c
	return server, client, nil
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "t" + hex.EncodeToString(b)
}

// withoutTTL returns the tables (all of them when defs is empty) without TTL. Tests run on fake
// clocks fixed at dates that pass, and DynamoDB Local expires items by the wall clock: with TTL
// on, a test's items would vanish mid-test once its date is a week old. TTL is garbage
// collection only (internal/tables), so no behaviour under test depends on it.
func withoutTTL(defs []tables.Table) []tables.Table {
	if len(defs) == 0 {
		defs = tables.All()
	}
	out := make([]tables.Table, len(defs))
	for i, d := range defs {
		d.TTLAttribute = ""
		out[i] = d
	}
	return out
}
