package obs

import (
	"context"
	"os"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Invocation is the Lambda invocation a line is logged in: the fields every line of it carries.
type Invocation struct {
	// Service is the function's name.
	Service string
	// RequestID is the Lambda request id (logged as requestId).
	RequestID string
	// TraceID is the X-Ray trace id, the Root of the invocation's trace header.
	TraceID string
	// ColdStart says this is the first invocation of the function in its process.
	ColdStart bool
}

type invocationKey struct{}

// WithInvocation returns ctx carrying inv, whose fields every line logged with it carries.
func WithInvocation(ctx context.Context, inv Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// InvocationFrom returns the invocation ctx carries, if any.
func InvocationFrom(ctx context.Context) (Invocation, bool) {
	inv, ok := ctx.Value(invocationKey{}).(Invocation)
	return inv, ok
}

// runtimeTraceKey is the context key aws-lambda-go stores each invocation's
// Lambda-Runtime-Trace-Id header under. It is a plain string there, so it must be one here.
const runtimeTraceKey = "x-amzn-trace-id"

// traceEnv is the variable the Lambda runtime also sets to the trace header, before each
// invocation, when it runs one at a time.
const traceEnv = "_X_AMZN_TRACE_ID"

// Invocations are one function's invocations in this process; the first to begin is its cold
// start. The Lambda wiring begins each invocation once, before the handler runs, so that no
// handler has to remember to.
type Invocations struct {
	// Service is the function's name.
	Service string
	// Lookup reads the environment (nil: os.LookupEnv).
	Lookup func(string) (string, bool)

	begun atomic.Bool
}

// Begin returns ctx carrying the invocation that ctx is the runtime's context of: its request
// id from the Lambda context, its trace id from the trace header the runtime put in the
// context, and whether it is the first. Each is read from this invocation's context, never
// kept from an earlier one: a second invocation running at the same time in the same process
// has a context of its own. Only when the context holds no trace header is _X_AMZN_TRACE_ID
// read, and only when the runtime runs one invocation at a time, since it sets that variable
// per invocation then and not at all otherwise.
func (f *Invocations) Begin(ctx context.Context) context.Context {
	inv := Invocation{Service: f.Service, ColdStart: !f.begun.Swap(true)}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.RequestID = lc.AwsRequestID
	}
	header, _ := ctx.Value(runtimeTraceKey).(string)
	if header == "" && lambdacontext.MaxConcurrency() <= 1 {
		lookup := f.Lookup
		if lookup == nil {
			lookup = os.LookupEnv
		}
		header, _ = lookup(traceEnv)
	}
	inv.TraceID = TraceRoot(header)
	return WithInvocation(ctx, inv)
}

// TraceRoot returns the X-Ray trace id of a trace header ("Root=1-…;Parent=…;Sampled=…"):
// its Root, as Powertools logs xray_trace_id. A bare trace id is returned as it is.
func TraceRoot(header string) string {
	header = strings.TrimSpace(header)
	if !strings.Contains(header, "=") {
		return header
	}
	for part := range strings.SplitSeq(header, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && k == "Root" {
			return v
		}
	}
	return ""
}
