package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// syncBuffer is a bytes.Buffer safe for the handlers' concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.buf.String())
	b.buf.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// invoke calls h as the Lambda runtime does (aws-lambda-go's reflection over its type, a
// context with the Lambda context and the trace header) and returns the lines it logged.
func invoke(t *testing.T, h any, out *syncBuffer, requestID string, payload string) []string {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
	header := fmt.Sprintf("Root=1-6650a1b2-%024x;Parent=53995c3f42cd8ad8;Sampled=0", len(requestID)*7919)
	ctx = context.WithValue(ctx, "x-amzn-trace-id", header)
	// Some of the events are refused; what matters here is what the handler logged.
	_, _ = lambda.NewHandler(h).Invoke(ctx, []byte(payload))
	return out.lines()
}

// Every function's handler, as build wires it, logs each line of an invocation with the
// invocation's fields, though no handler adds them itself: the wiring begins the invocation.
// The events below are served without reaching AWS.
func TestEveryLineOfAWiredHandlersInvocationCarriesTheInvocationsFields(t *testing.T) {
	cases := []struct {
		fn, event string
		// reservation is the id every line must carry ("" when the event names none).
		reservation string
	}{
		{fn: FnAPI, event: `{"httpMethod":"GET","path":"/nowhere","resource":"/nowhere"}`},
		{fn: FnWebhook, event: `{"httpMethod":"POST","path":"/webhooks/stripe","body":"{}","headers":{"Stripe-Signature":"t=1,v1=00"}}`},
		{fn: FnConsumer, event: `{"id":"ev-1","detail-type":"SeatsHeld","source":"seatsaga.reservations","detail":"not an envelope"}`},
		{fn: FnClaim, event: `{"reservationId":"r-42","correlationId":"c-7"}`, reservation: "r-42"},
		// The relay logs a published event at debug level only, with the event's ids.
		{fn: FnRelay, event: `{"Records":[{"eventName":"INSERT","dynamodb":{"SequenceNumber":"1","NewImage":{
			"eventId":{"S":"r-9#v1#SeatsHeld"},"type":{"S":"SeatsHeld"},"reservationId":{"S":"r-9"},
			"aggregateVersion":{"N":"1"},"createdAt":{"S":"2026-03-01T00:00:00Z"},"correlationId":{"S":"c-9"}}}}]}`,
			reservation: "r-9"},
	}
	for _, tc := range cases {
		t.Run(tc.fn, func(t *testing.T) {
			out := &syncBuffer{}
			d := full()
			d.Logger = obs.NewLogger(out, slog.LevelDebug)
			a, err := build(d, tc.fn)
			if err != nil {
				t.Fatal(err)
			}
			h := a.Handlers()[tc.fn]
			for i, req := range []string{"req-first", "req-second"} {
				got := invoke(t, h, out, req, tc.event)
				t.Logf("%s:\n%s", req, strings.Join(got, "\n"))
				if len(got) == 0 {
					t.Fatalf("invocation %s logged nothing; the test proves nothing", req)
				}
				for _, line := range got {
					if err := obs.CheckInvocationLine([]byte(line)); err != nil {
						t.Errorf("%s: %v\n%s", req, err, line)
						continue
					}
					var m map[string]any
					_ = json.Unmarshal([]byte(line), &m)
					if m[obs.KeyService] != tc.fn || m[obs.KeyRequestID] != req || m[obs.KeyColdStart] != (i == 0) {
						t.Errorf("%s: service %v, requestId %v, cold_start %v; want %s, %s, %v\n%s",
							req, m[obs.KeyService], m[obs.KeyRequestID], m[obs.KeyColdStart], tc.fn, req, i == 0, line)
					}
					if tc.reservation != "" && m[obs.KeyReservationID] != tc.reservation {
						t.Errorf("%s: reservationId %v, want the event's %s\n%s", req, m[obs.KeyReservationID], tc.reservation, line)
					}
				}
			}
		})
	}
}

// The wrapper keeps the handler's type, which the Lambda runtime reflects on and callers
// assert, and passes the event and the handler's answer through.
func TestTheInvocationWrapperKeepsTheHandlersType(t *testing.T) {
	var seen context.Context
	raw := func(ctx context.Context, st saga.State) (saga.Hold, error) {
		seen = ctx
		return saga.Hold{ReservationID: st.ReservationID, Version: 3}, nil
	}
	h, err := withInvocation(FnClaim, raw)
	if err != nil {
		t.Fatal(err)
	}
	typed, ok := h.(func(context.Context, saga.State) (saga.Hold, error))
	if !ok || reflect.TypeOf(h) != reflect.TypeOf(raw) {
		t.Fatalf("wrapped handler is a %T, want %T", h, raw)
	}
	hold, err := typed(context.Background(), saga.State{Input: saga.Input{ReservationID: "r-1", CorrelationID: "c-1"}})
	if err != nil || hold.ReservationID != "r-1" || hold.Version != 3 {
		t.Fatalf("answer %+v, %v", hold, err)
	}
	inv, ok := obs.InvocationFrom(seen)
	if !ok || inv.Service != FnClaim || !inv.ColdStart || obs.ReservationID(seen) != "r-1" || obs.CorrelationID(seen) != "c-1" {
		t.Fatalf("the handler's context carries %+v (%v), reservation %q, correlation %q", inv, ok, obs.ReservationID(seen), obs.CorrelationID(seen))
	}
}

// A handler that takes no context could not log its invocation's fields: build refuses it
// rather than serving it without them.
func TestAHandlerWithoutAContextIsRefused(t *testing.T) {
	for _, h := range []any{
		func(saga.State) error { return nil },
		func() {},
		"not a function",
		(func(context.Context) error)(nil),
	} {
		if _, err := withInvocation(FnClaim, h); err == nil {
			t.Errorf("%T accepted", h)
		}
	}
}
