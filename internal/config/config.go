// Package config reads a Lambda's settings from its environment once per cold start. The CDK
// app sets these variables; the local stack builds the same Config directly.
package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/tables"
)

// Environment variable names shared by the CDK app, the Lambda mains and the local stack.
// There is no endpoint override among them: a function reaches AWS (or the local twin's gate)
// only through the SDK's own AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>, so that no
// variable of ours can point a deployed function past IAM or the twin past its grants.
const (
	EnvStage                  = "SEATSAGA_STAGE"
	EnvTablePrefix            = "SEATSAGA_TABLE_PREFIX"
	EnvStateMachineARN        = "SEATSAGA_STATE_MACHINE_ARN"
	EnvEventBusName           = "SEATSAGA_EVENT_BUS_NAME"
	EnvStripeSecretARN        = "SEATSAGA_STRIPE_SECRET_ARN"
	EnvStripeWebhookSecretARN = "SEATSAGA_STRIPE_WEBHOOK_SECRET_ARN"
	EnvStripeAPIBase          = "SEATSAGA_STRIPE_API_BASE"
	EnvLateSuccessPolicy      = "SEATSAGA_LATE_SUCCESS_POLICY"
	EnvHoldSeconds            = "SEATSAGA_HOLD_SECONDS"
	EnvMaxSeats               = "SEATSAGA_MAX_SEATS"
	EnvSweepGraceSeconds      = "SEATSAGA_SWEEP_GRACE_SECONDS"
	EnvMetricsNamespace       = "SEATSAGA_METRICS_NAMESPACE"
	EnvAdmissionLeaseSeconds  = "SEATSAGA_ADMISSION_LEASE_SECONDS"
	EnvMaxActiveReservations  = "SEATSAGA_MAX_ACTIVE_RESERVATIONS"
	// EnvAllowedOrigins lists, comma-separated, the browser origins the api answers may be
	// read by.
	EnvAllowedOrigins = "SEATSAGA_ALLOWED_ORIGINS"
)

// Config is every setting a seatsaga handler may need; each handler uses a part of it.
type Config struct {
	Stage                  string
	Tables                 tables.Names
	StateMachineARN        string
	EventBusName           string
	StripeSecretARN        string
	StripeWebhookSecretARN string
	StripeAPIBase          string
	LateSuccessPolicy      string
	Hold                   time.Duration
	MaxSeats               int
	SweepGrace             time.Duration
	MetricsNamespace       string
	AllowedOrigins         []string
	// AdmissionLease is how long the API's admission gate keeps other buyers off the seats of
	// a buyer it let through, if no claim follows.
	AdmissionLease time.Duration
	// MaxActiveReservations caps how many reservations one customer may have in progress at
	// once (held or paying), so that one buyer cannot hoard a sale's seats.
	MaxActiveReservations int
}

// Defaults that hold when a variable is unset.
const (
	DefaultHold             = 10 * time.Minute
	DefaultMaxSeats         = 10
	DefaultSweepGrace       = 2 * time.Minute
	DefaultAdmissionLease   = 10 * time.Second
	DefaultMaxActive        = 2
	DefaultLateSuccess      = "reacquire"
	DefaultMetricsNamespace = "Seatsaga"
)

// FromLookup reads the configuration through lookup: os.LookupEnv in a Lambda, the
// environment a function's spec renders on the local stack, MapLookup in tests.
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	get := func(name, fallback string) string {
		if v, ok := lookup(name); ok && v != "" {
			return v
		}
		return fallback
	}
	cfg := Config{
		Stage:                  get(EnvStage, "dev"),
		Tables:                 tables.Names{Prefix: get(EnvTablePrefix, "")},
		StateMachineARN:        get(EnvStateMachineARN, ""),
		EventBusName:           get(EnvEventBusName, ""),
		StripeSecretARN:        get(EnvStripeSecretARN, ""),
		StripeWebhookSecretARN: get(EnvStripeWebhookSecretARN, ""),
		StripeAPIBase:          get(EnvStripeAPIBase, ""),
		LateSuccessPolicy:      get(EnvLateSuccessPolicy, DefaultLateSuccess),
		MetricsNamespace:       get(EnvMetricsNamespace, DefaultMetricsNamespace),
	}
	for _, o := range strings.Split(get(EnvAllowedOrigins, ""), ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.AllowedOrigins = append(cfg.AllowedOrigins, o)
		}
	}
	var err error
	if cfg.Hold, err = seconds(get(EnvHoldSeconds, ""), DefaultHold); err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvHoldSeconds, err)
	}
	if cfg.SweepGrace, err = seconds(get(EnvSweepGraceSeconds, ""), DefaultSweepGrace); err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvSweepGraceSeconds, err)
	}
	if cfg.AdmissionLease, err = seconds(get(EnvAdmissionLeaseSeconds, ""), DefaultAdmissionLease); err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvAdmissionLeaseSeconds, err)
	}
	cfg.MaxActiveReservations = DefaultMaxActive
	if v := get(EnvMaxActiveReservations, ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return Config{}, fmt.Errorf("%s: want a whole number from 0 (no cap) to 100, got %q", EnvMaxActiveReservations, v)
		}
		cfg.MaxActiveReservations = n
	}
	cfg.MaxSeats = DefaultMaxSeats
	if v := get(EnvMaxSeats, ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 99 {
			return Config{}, fmt.Errorf("%s: want a whole number from 1 to 99 (a transaction holds 100 items), got %q", EnvMaxSeats, v)
		}
		cfg.MaxSeats = n
	}
	if p := cfg.LateSuccessPolicy; p != "reacquire" && p != "void" {
		return Config{}, fmt.Errorf("%s: want reacquire or void, got %q", EnvLateSuccessPolicy, p)
	}
	return cfg, nil
}

// MapLookup reads variables from m, as FromLookup wants them: the environment of a function
// that is not this process's.
func MapLookup(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

func seconds(v string, fallback time.Duration) (time.Duration, error) {
	if v == "" {
		return fallback, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive number of seconds, got %q", v)
	}
	return time.Duration(n) * time.Second, nil
}

// LoopbackEndpoint reports whether an endpoint points at this machine (loopback or localhost):
// a local stand-in (DynamoDB Local, the local Step Functions engine) rather than AWS.
func LoopbackEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
