package awsgate_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

const (
	region   = awsgate.DefaultRegion
	account  = awsgate.DefaultAccountID
	adminKey = "admin-key"
)

// gateUnderTest is a started gate, its URL and the log records it wrote.
type gateUnderTest struct {
	*awsgate.Gate
	URL  string
	logs *recordingHandler
}

// startGate starts a gate on a free loopback port, with adminKey registered as the admin, and
// closes it when the test ends.
func startGate(t testing.TB, o awsgate.Options) *gateUnderTest {
	t.Helper()
	logs := &recordingHandler{}
	o.Logger = slog.New(logs)
	g, err := awsgate.New(o)
	if err != nil {
		t.Fatal(err)
	}
	url, err := g.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close gate: %v", err)
		}
	})
	g.AddAdmin(adminKey)
	return &gateUnderTest{Gate: g, URL: url, logs: logs}
}

func staticCredentials(accessKeyID string) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(accessKeyID, "not-checked", "")
}

// The clients retry nothing, so that a test sees each answer the gate gave.

func (g *gateUnderTest) dynamoDB(accessKeyID string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: region, BaseEndpoint: aws.String(g.URL),
		Credentials: staticCredentials(accessKeyID), RetryMaxAttempts: 1,
		// DynamoDB Local sends no CRC32 with cancelled transactions.
		DisableValidateResponseChecksum: true})
}

func (g *gateUnderTest) streams(accessKeyID string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{Region: region, BaseEndpoint: aws.String(g.URL),
		Credentials: staticCredentials(accessKeyID), RetryMaxAttempts: 1})
}

func (g *gateUnderTest) stepFunctions(accessKeyID string) *sfn.Client {
	return sfn.New(sfn.Options{Region: region, BaseEndpoint: aws.String(g.URL),
		Credentials: staticCredentials(accessKeyID), RetryMaxAttempts: 1})
}

func (g *gateUnderTest) secrets(accessKeyID string) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{Region: region, BaseEndpoint: aws.String(g.URL),
		Credentials: staticCredentials(accessKeyID), RetryMaxAttempts: 1})
}

func (g *gateUnderTest) events(accessKeyID string) *eventbridge.Client {
	return eventbridge.New(eventbridge.Options{Region: region, BaseEndpoint: aws.String(g.URL),
		Credentials: staticCredentials(accessKeyID), RetryMaxAttempts: 1})
}

// wantAPIError fails the test unless err is an API error with code, answered with status 400,
// and returns it.
func wantAPIError(t testing.TB, err error, code string) smithy.APIError {
	t.Helper()
	return wantAPIErrorCodeAndStatus(t, err, code, 400)
}

// wantAPIErrorCodeAndStatus fails the test unless err is an API error with code, answered with
// HTTP status, and returns it.
func wantAPIErrorCodeAndStatus(t testing.TB, err error, code string, status int) smithy.APIError {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error = %v, want a smithy.APIError %s", err, code)
	}
	if apiErr.ErrorCode() != code {
		t.Fatalf("error code = %s (%v), want %s", apiErr.ErrorCode(), err, code)
	}
	var respErr *awshttp.ResponseError
	if !errors.As(err, &respErr) {
		t.Fatalf("error = %v, want an HTTP response error", err)
	}
	if respErr.HTTPStatusCode() != status {
		t.Fatalf("HTTP status = %d, want %d", respErr.HTTPStatusCode(), status)
	}
	return apiErr
}

// wantAPIErrorCode fails the test unless err is an API error, and returns its code.
func wantAPIErrorCode(t testing.TB, err error) string {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error = %v, want a smithy.APIError", err)
	}
	return apiErr.ErrorCode()
}

// wantAccessDenied fails the test unless err is AWS's AccessDeniedException for action on
// resource.
func wantAccessDenied(t testing.TB, err error, action, resource string) {
	t.Helper()
	apiErr := wantAPIError(t, err, "AccessDeniedException")
	want := "is not authorized to perform: " + action + " on resource: " + resource +
		" because no identity-based policy allows the " + action + " action"
	if !strings.Contains(apiErr.ErrorMessage(), want) {
		t.Fatalf("message = %q, want one containing %q", apiErr.ErrorMessage(), want)
	}
}

// recordingHandler is a slog.Handler that keeps every record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// warnings lists the attributes of every Warn record, by key.
func (h *recordingHandler) warnings() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.records {
		if r.Level != slog.LevelWarn {
			continue
		}
		attrs := map[string]string{"msg": r.Message}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}
