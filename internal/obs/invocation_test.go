package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/obs"
)

// Trace headers as the Lambda runtime sends them, and their X-Ray trace ids.
const (
	headerA = "Root=1-6650a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"
	traceA  = "1-6650a1b2-0123456789abcdef01234567"
	headerB = "Root=1-6650a1b3-fedcba9876543210fedcba98;Parent=1f2e3d4c5b6a7988;Sampled=0"
	traceB  = "1-6650a1b3-fedcba9876543210fedcba98"
)

// runtimeContext is the context aws-lambda-go hands a handler: the Lambda context with the
// request id, and the trace header under the runtime's own key.
func runtimeContext(requestID, traceHeader string) context.Context {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
	// A plain string key, because that is what aws-lambda-go stores it under.
	return context.WithValue(ctx, "x-amzn-trace-id", traceHeader)
}

// lastRaw returns the last line of buf as written.
func lastRaw(buf *bytes.Buffer) []byte {
	all := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	return all[len(all)-1]
}

// noEnv is an environment without _X_AMZN_TRACE_ID.
var noEnv = config.MapLookup(nil)

// lines parses every line of buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestEveryLineHasTheLevelATimestampTheMessageAndTheService(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelDebug, obs.WithService("claim"))
	before := time.Now().UTC().Truncate(time.Millisecond)
	log.Warn("outside any invocation", "seats", 2)
	m := lastLine(t, &buf)
	if m["level"] != "WARN" || m["message"] != "outside any invocation" || m["service"] != "claim" || m["seats"] != 2.0 {
		t.Fatalf("line %v", m)
	}
	for _, slogKey := range []string{"time", "msg"} {
		if _, ok := m[slogKey]; ok {
			t.Errorf("slog's %q key is still on the line: %v", slogKey, m)
		}
	}
	ts, _ := m["timestamp"].(string)
	at, err := time.Parse(obs.TimestampLayout, ts)
	if err != nil || !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000Z") || at.Before(before) {
		t.Fatalf("timestamp %q (%v), want RFC 3339 in UTC with milliseconds, not before %v", ts, err, before)
	}
}

// A record's time in another zone is written in UTC, to the millisecond.
func TestTheTimestampIsUTCWithMilliseconds(t *testing.T) {
	var buf bytes.Buffer
	h := obs.NewHandler(&buf, slog.LevelInfo)
	at := time.Date(2026, 3, 1, 1, 2, 3, 456789000, time.FixedZone("CET", 3600))
	if err := h.Handle(context.Background(), slog.NewRecord(at, slog.LevelInfo, "x", 0)); err != nil {
		t.Fatal(err)
	}
	if got := lastLine(t, &buf)["timestamp"]; got != "2026-03-01T00:02:03.456Z" {
		t.Fatalf("timestamp %v, want 2026-03-01T00:02:03.456Z", got)
	}
}

func TestColdStartIsTrueOnlyOnTheFirstInvocation(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo)
	fn := &obs.Invocations{Service: "claim", Lookup: noEnv}
	for i := range 3 {
		ctx := fn.Begin(runtimeContext(fmt.Sprintf("req-%d", i), headerA))
		log.InfoContext(ctx, "step")
		log.InfoContext(ctx, "again")
	}
	for i, m := range lines(t, &buf) {
		if want := i < 2; m["cold_start"] != want {
			t.Errorf("line %d (%s): cold_start %v, want %v", i, m["requestId"], m["cold_start"], want)
		}
	}
	// Another function of the same process has its own cold start.
	buf.Reset()
	log.InfoContext((&obs.Invocations{Service: "api", Lookup: noEnv}).Begin(runtimeContext("req-api", headerA)), "request")
	if m := lastLine(t, &buf); m["cold_start"] != true || m["service"] != "api" {
		t.Fatalf("first line of another function: %v", m)
	}
}

// Each invocation's lines carry its own request and trace ids, never an earlier invocation's,
// nor a trace header left in the environment when the runtime's context has one.
func TestRequestAndTraceIDsComeFromEachInvocationsContext(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo, obs.WithService("fallback"))
	stale := config.MapLookup(map[string]string{"_X_AMZN_TRACE_ID": headerA})
	fn := &obs.Invocations{Service: "authorize", Lookup: stale}

	log.InfoContext(fn.Begin(runtimeContext("req-1", headerA)), "first")
	log.InfoContext(fn.Begin(runtimeContext("req-2", headerB)), "second")
	got := lines(t, &buf)
	for i, want := range []struct{ req, trace string }{{"req-1", traceA}, {"req-2", traceB}} {
		m := got[i]
		if m["requestId"] != want.req || m["xray_trace_id"] != want.trace || m["service"] != "authorize" {
			t.Errorf("line %d: %v, want requestId %s, xray_trace_id %s, service authorize", i, m, want.req, want.trace)
		}
		if err := obs.CheckInvocationLine(bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))[i]); err != nil {
			t.Errorf("line %d: %v", i, err)
		}
	}
}

// A host that puts no trace header in the context still gets the one the runtime set in the
// environment for this invocation; without either the line has no trace id rather than a made-up one.
func TestTheTraceIDFallsBackToTheEnvironmentOnlyWithoutOneInTheContext(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo)
	bare := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})

	env := config.MapLookup(map[string]string{"_X_AMZN_TRACE_ID": headerB})
	log.InfoContext((&obs.Invocations{Service: "api", Lookup: env}).Begin(bare), "from env")
	if got := lastLine(t, &buf)["xray_trace_id"]; got != traceB {
		t.Fatalf("xray_trace_id %v, want the environment's %s", got, traceB)
	}
	log.InfoContext((&obs.Invocations{Service: "api", Lookup: noEnv}).Begin(bare), "none")
	if m := lastLine(t, &buf); m["xray_trace_id"] != nil || obs.CheckInvocationLine(lastRaw(&buf)) == nil {
		t.Fatalf("a line without any trace header: %v, want no xray_trace_id and a failed check", m)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Two invocations running at once in one process (Lambda's multi-concurrency, or the local
// host) share the function and its logger, and each line still carries its own invocation's
// request and trace ids, whatever the other one does meanwhile.
func TestConcurrentInvocationsNeverSeeEachOthersIDs(t *testing.T) {
	var out lockedBuffer
	log := obs.NewLogger(&out, slog.LevelInfo).With("component", "saga")
	fn := &obs.Invocations{Service: "capture", Lookup: config.MapLookup(map[string]string{"_X_AMZN_TRACE_ID": headerA})}
	want := map[string]string{"req-a": traceA, "req-b": traceB}
	headers := map[string]string{"req-a": headerA, "req-b": headerB}

	const perInvocation = 500
	start := make(chan struct{})
	var wg sync.WaitGroup
	for req := range want {
		wg.Go(func() {
			ctx := fn.Begin(runtimeContext(req, headers[req]))
			<-start
			for i := range perInvocation {
				log.InfoContext(ctx, "working", "i", i)
				obs.Logger(ctx, log).Info("without a context", "i", i)
			}
		})
	}
	close(start)
	wg.Wait()

	seen := map[string]int{}
	cold := map[string]bool{}
	for _, m := range lines(t, &out.buf) {
		req, _ := m["requestId"].(string)
		if m["xray_trace_id"] != want[req] {
			t.Fatalf("line of %q carries trace %v, want %s: %v", req, m["xray_trace_id"], want[req], m)
		}
		seen[req]++
		if m["cold_start"] == true {
			cold[req] = true
		}
	}
	if seen["req-a"] != 2*perInvocation || seen["req-b"] != 2*perInvocation {
		t.Fatalf("lines per invocation %v, want %d each", seen, 2*perInvocation)
	}
	if len(cold) != 1 {
		t.Fatalf("cold starts %v, want exactly one of the two invocations", cold)
	}
}

// The check the boot test holds every function's output to passes a line of a begun
// invocation and fails the control: a handler the wiring did not wrap, whose context has the
// Lambda request id and the runtime's trace header but no begun invocation.
func TestAHandlerMissingTheInvocationWrapperFailsTheCheck(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo, obs.WithService("confirm"))
	ctx := runtimeContext("req-1", headerA)

	log.InfoContext((&obs.Invocations{Service: "confirm", Lookup: noEnv}).Begin(ctx), "wrapped")
	if err := obs.CheckInvocationLine(lastRaw(&buf)); err != nil {
		t.Fatalf("a begun invocation's line fails the check: %v\n%s", err, buf.String())
	}
	buf.Reset()
	log.InfoContext(ctx, "unwrapped")
	err := obs.CheckInvocationLine(bytes.TrimSpace(buf.Bytes()))
	if err == nil || !strings.Contains(err.Error(), "cold_start") || !strings.Contains(err.Error(), "xray_trace_id") {
		t.Fatalf("unwrapped line %s: check says %v, want it to name cold_start and xray_trace_id", buf.String(), err)
	}
}

func TestCheckInvocationLine(t *testing.T) {
	good := map[string]any{"level": "INFO", "timestamp": "2026-03-01T00:02:03.456Z", "message": "m", "service": "api",
		"cold_start": false, "requestId": "req-1", "xray_trace_id": traceA}
	with := func(k string, v any) string {
		m := map[string]any{}
		for key, val := range good {
			m[key] = val
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := []struct {
		name, line, wantErr string
	}{
		{"a full line", with("level", "INFO"), ""},
		{"an EMF metric line", `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Seatsaga"}]},"Count":1}`, ""},
		{"an EMF metric line with its values first", `{"ApiResponses":1,"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Seatsaga"}]},"route":"GET /x"}`, ""},
		{"an _aws member that is no EMF document", `{"_aws":{"note":"x"}}`, "no level"},
		{"text", "INFO claimed seats", "not a JSON object"},
		{"a JSON array", `[1]`, "not a JSON object"},
		{"no level", with("level", nil), "no level"},
		{"slog's custom level", with("level", "ERROR+4"), "none of Lambda's"},
		{"local time", with("timestamp", "2026-03-01T01:02:03.456+01:00"), "not RFC 3339 in UTC"},
		{"no milliseconds", with("timestamp", "2026-03-01T00:02:03Z"), "not RFC 3339 in UTC"},
		{"slog's msg", with("message", nil), "no message"},
		{"no service", with("service", nil), "no service"},
		{"cold start as text", with("cold_start", "true"), "no cold_start"},
		{"no request id", with("requestId", nil), "no requestId"},
		{"a trace header", with("xray_trace_id", headerA), "not an X-Ray trace id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := obs.CheckInvocationLine([]byte(tc.line))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("CheckInvocationLine(%s) = %v, want %q", tc.line, err, tc.wantErr)
			}
		})
	}
}

func TestTraceRoot(t *testing.T) {
	for in, want := range map[string]string{
		headerA:                       traceA,
		"Sampled=1;Root=" + traceB:    traceB,
		traceA:                        traceA,
		"":                            "",
		"Parent=53995c3f42cd8ad8":     "",
		" Root=" + traceA + " ; x=y ": traceA,
	} {
		if got := obs.TraceRoot(in); got != want {
			t.Errorf("TraceRoot(%q) = %q, want %q", in, got, want)
		}
	}
}

// A caller's attribute named like one of the handler's keys is renamed, so that no line
// carries a key twice; a domain id the caller logs itself is not repeated from the context.
func TestACallersAttributeCannotRepeatAHandlerKey(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo)
	ctx := obs.WithReservation((&obs.Invocations{Service: "authorize", Lookup: noEnv}).Begin(runtimeContext("req-1", headerA)), "r-ctx")
	log.With("service", "stripe").ErrorContext(ctx, "payment call failed", "message", "card declined", "requestId", "req_stripe", "reservationId", "r-1")
	line := strings.TrimSpace(buf.String())
	for _, key := range []string{"message", "service", "requestId", "reservationId"} {
		if n := strings.Count(line, `"`+key+`":`); n != 1 {
			t.Errorf("%s appears %d times: %s", key, n, line)
		}
	}
	m := lastLine(t, &buf)
	if m["message"] != "payment call failed" || m["attr_message"] != "card declined" || m["service"] != "authorize" ||
		m["attr_service"] != "stripe" || m["requestId"] != "req-1" || m["attr_requestId"] != "req_stripe" || m["reservationId"] != "r-1" {
		t.Fatalf("line %v", m)
	}
}

// Code that logs without a context gets the invocation's fields through obs.Logger.
func TestLoggerBindsTheInvocationForLinesWithoutAContext(t *testing.T) {
	var buf bytes.Buffer
	base := obs.NewLogger(&buf, slog.LevelInfo)
	ctx := (&obs.Invocations{Service: "relay", Lookup: noEnv}).Begin(runtimeContext("req-1", headerA))
	obs.Logger(ctx, base).With("k", "v").Warn("PutEvents failed")
	if err := obs.CheckInvocationLine(bytes.TrimSpace(buf.Bytes())); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if m := lastLine(t, &buf); m["requestId"] != "req-1" || m["k"] != "v" {
		t.Fatalf("line %v", m)
	}
	buf.Reset()
	base.Info("the base logger is unchanged")
	if _, ok := lastLine(t, &buf)["requestId"]; ok {
		t.Fatal("binding a logger changed the logger it was bound from")
	}
}

// The ids are not mistaken for card numbers by the redaction rule.
func TestTheInvocationsIDsAreNotRedacted(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo)
	const digits = "4242424242424242"
	log.InfoContext((&obs.Invocations{Service: "api", Lookup: noEnv}).Begin(runtimeContext(digits, headerA)), "x", "card", digits)
	if m := lastLine(t, &buf); m["requestId"] != digits || m["card"] != obs.Redacted {
		t.Fatalf("line %v", m)
	}
}
