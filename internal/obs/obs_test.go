package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/seatsaga/seatsaga/internal/config"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/obs"
)

func lastLine(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[len(lines)-1], err)
	}
	return m
}

func TestLevelFromEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want slog.Level
	}{
		{"unset", nil, slog.LevelInfo},
		{"debug", map[string]string{"LOG_LEVEL": "debug"}, slog.LevelDebug},
		{"upper case warn", map[string]string{"LOG_LEVEL": "WARN"}, slog.LevelWarn},
		{"seatsaga wins over LOG_LEVEL", map[string]string{"SEATSAGA_LOG_LEVEL": "error", "LOG_LEVEL": "debug"}, slog.LevelError},
		{"lambda advanced logging", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "DEBUG"}, slog.LevelDebug},
		{"lambda's level wins", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "WARN", "SEATSAGA_LOG_LEVEL": "debug", "LOG_LEVEL": "debug"}, slog.LevelWarn},
		{"trace means debug", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "TRACE"}, slog.LevelDebug},
		{"fatal is above error", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "FATAL"}, slog.LevelError + 4},
		{"garbage falls back", map[string]string{"LOG_LEVEL": "loud"}, slog.LevelInfo},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := obs.LevelFromEnv(config.MapLookup(tc.env))
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLevelFilters(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelWarn)
	log.Info("quiet")
	if buf.Len() != 0 {
		t.Fatalf("info logged at warn level: %s", buf.String())
	}
	log.Warn("loud")
	if lastLine(t, &buf)["message"] != "loud" {
		t.Fatal("warn not logged")
	}
}

func TestContextIDsOnEveryLine(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelDebug)
	ctx := obs.WithCorrelation(obs.WithReservation(context.Background(), "r-42"), "c-7")
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1"})

	log.InfoContext(ctx, "claimed", "seats", 2)
	m := lastLine(t, &buf)
	if m["reservationId"] != "r-42" || m["correlationId"] != "c-7" || m["requestId"] != "req-1" || m["seats"] != 2.0 {
		t.Fatalf("line %v", m)
	}

	obs.Logger(ctx, log).Info("no context method")
	m = lastLine(t, &buf)
	if m["reservationId"] != "r-42" || m["correlationId"] != "c-7" {
		t.Fatalf("Logger(ctx) line %v", m)
	}

	// The ids stay at the top level, where queries look, inside a caller's group.
	log.With("step", "claim").WithGroup("g").With("a", 1).InfoContext(ctx, "grouped", "k", "v")
	m = lastLine(t, &buf)
	g, _ := m["g"].(map[string]any)
	if m["step"] != "claim" || m["reservationId"] != "r-42" || m["requestId"] != "req-1" || g["k"] != "v" || g["a"] != 1.0 || len(g) != 2 {
		t.Fatalf("grouped line %v", m)
	}

	log.Info("no ids")
	if _, ok := lastLine(t, &buf)["reservationId"]; ok {
		t.Fatal("id logged without a context carrying it")
	}
	if obs.ReservationID(ctx) != "r-42" || obs.CorrelationID(ctx) != "c-7" {
		t.Fatal("accessors")
	}
}

type cardDetails struct {
	Number   string `json:"number"`
	ExpMonth int    `json:"exp_month"`
	CVC      string `json:"cvc"`
	Last4    string `json:"last4"`
	Brand    string `json:"brand"`
}

type paymentLog struct {
	ReservationID string      `json:"reservationId"`
	ClientSecret  string      `json:"client_secret"`
	Card          cardDetails `json:"card"`
	Notes         []string    `json:"notes"`
}

func TestRedaction(t *testing.T) {
	const pan = "4242424242424242"
	secrets := []string{pan, "4242 4242 4242 4242", "sk_test_51Habc", "whsec_abc123", "pi_3Nabc_secret_xyz", "123", "AKIDEXAMPLE/secret"}
	cases := []struct {
		name string
		log  func(*slog.Logger)
		keep []string // values that must survive
	}{
		{"card number by name", func(l *slog.Logger) { l.Info("x", "cardNumber", pan) }, nil},
		{"card number snake case", func(l *slog.Logger) { l.Info("x", "card_number", pan) }, nil},
		{"card number in a free-text value", func(l *slog.Logger) { l.Info("charging 4242 4242 4242 4242 now") }, []string{"charging", "now"}},
		{"card number in a message field", func(l *slog.Logger) { l.Info("x", "detail", "card "+pan+" declined") }, []string{"declined"}},
		{"cvc", func(l *slog.Logger) { l.Info("x", "cvc", "123") }, nil},
		{"client secret by name", func(l *slog.Logger) { l.Info("x", "clientSecret", "anything") }, nil},
		{"client secret by shape", func(l *slog.Logger) { l.Info("x", "ref", "pi_3Nabc_secret_xyz") }, nil},
		{"stripe key by name", func(l *slog.Logger) { l.Info("x", "stripeApiKey", "whatever") }, nil},
		{"stripe key by shape", func(l *slog.Logger) { l.Info("x", "cfg", "key=sk_test_51Habc") }, []string{"key="}},
		{"webhook secret", func(l *slog.Logger) { l.Info("x", "webhook_secret", "whsec_abc123") }, nil},
		{"aws secret", func(l *slog.Logger) { l.Info("x", "SecretAccessKey", "AKIDEXAMPLE/secret") }, nil},
		{"card group", func(l *slog.Logger) {
			l.Info("x", slog.Group("card", "number", pan, "cvc", "123", "last4", "4242", "brand", "visa"))
		}, []string{`"last4":"4242"`, `"brand":"visa"`}},
		{"struct logged whole", func(l *slog.Logger) {
			l.Info("x", "payment", paymentLog{ReservationID: "r-1", ClientSecret: "pi_3Nabc_secret_xyz",
				Card:  cardDetails{Number: pan, ExpMonth: 12, CVC: "123", Last4: "4242", Brand: "visa"},
				Notes: []string{"sk_test_51Habc"}})
		}, []string{`"reservationId":"r-1"`, `"last4":"4242"`}},
		{"error text", func(l *slog.Logger) {
			l.Error("x", "err", fmt.Errorf("stripe: %w", errors.New("bad key sk_test_51Habc")))
		}, []string{"stripe: bad key"}},
		{"With attrs", func(l *slog.Logger) { l.With("client_secret", "pi_3Nabc_secret_xyz").Info("x") }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(obs.NewLogger(&buf, slog.LevelDebug))
			out := buf.String()
			for _, s := range secrets {
				if s == "123" {
					if strings.Contains(out, `"123"`) {
						t.Errorf("cvc printed: %s", out)
					}
					continue
				}
				if strings.Contains(out, s) {
					t.Errorf("secret %q printed: %s", s, out)
				}
			}
			if !strings.Contains(out, obs.Redacted) {
				t.Errorf("nothing marked redacted: %s", out)
			}
			for _, k := range tc.keep {
				if !strings.Contains(out, k) {
					t.Errorf("lost %q: %s", k, out)
				}
			}
		})
	}
}

func TestNoFalsePositives(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelDebug)
	log.Info("x",
		"seatNumber", "A12",
		"number", 17,
		"amount", int64(1234567890123), // 13 digits, fails Luhn
		"idempotencyKey", "cust-1:k-9",
		"taskToken", "AAAAKgAAAAIAAAAAAAAAA",
		"paymentIntentId", "pi_3Nabc",
	)
	m := lastLine(t, &buf)
	for k, want := range map[string]any{
		"seatNumber": "A12", "number": 17.0, "amount": 1234567890123.0,
		"idempotencyKey": "cust-1:k-9", "taskToken": "AAAAKgAAAAIAAAAAAAAAA", "paymentIntentId": "pi_3Nabc",
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

func TestRedactString(t *testing.T) {
	cases := []struct{ in, want string }{
		{"no digits", "no digits"},
		{"order 1234567890123", "order 1234567890123"},
		{"card 4000-0000-0000-0002 x", "card [REDACTED] x"},
		{"sk_live_abcDEF123", "[REDACTED]"},
	}
	for _, tc := range cases {
		if got := obs.RedactString(tc.in); got != tc.want {
			t.Errorf("RedactString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	fixed := func() time.Time { return time.Unix(1, 0) }
	logger := slog.New(slog.DiscardHandler)
	recorder := metrics.NewMemory()
	cases := []struct {
		name     string
		now      func() time.Time
		logger   *slog.Logger
		recorder metrics.Recorder
	}{
		{name: "nothing given"},
		{name: "everything given", now: fixed, logger: logger, recorder: recorder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now, l, r := obs.Defaults(tc.now, tc.logger, tc.recorder)
			if now == nil || l == nil || r == nil {
				t.Fatal("left unset")
			}
			if tc.now != nil && (now().Unix() != 1 || l != logger || r != recorder) {
				t.Fatal("replaced what was given")
			}
			if tc.now == nil && (l != slog.Default() || r != metrics.Recorder(metrics.Discard{})) {
				t.Fatalf("defaults %v %T", l, r)
			}
		})
	}
}
