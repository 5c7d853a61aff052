package stripeadapter

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"

	"github.com/seatsaga/seatsaga/internal/secrets"
)

// DefaultMaxNetworkRetries is how often stripe-go itself retries a request that failed in
// transit (connection error, timeout, 409 idempotency_key_in_use, 503, lock_timeout 429).
// Its retries resend the same idempotency key, so they cannot act twice; one retry absorbs a
// network blip inside the Lambda for about half a second, while longer waits belong to the
// state machine's Retry with backoff, where they do not burn Lambda time. Anything left
// unresolved after that comes back as *payment.Uncertain.
const DefaultMaxNetworkRetries int64 = 1

// DefaultHTTPTimeout bounds one HTTP exchange with Stripe. stripe-go's own default is 80 s,
// longer than a saga step should block; a request that times out is Uncertain, never failed.
const DefaultHTTPTimeout = 10 * time.Second

// ClientConfig describes the *client.API that callers (Lambda wiring, tests, the local
// stack) build once and hand to New.
type ClientConfig struct {
	// Key is the secret API key (sk_test_… / sk_live_… / rk_…), used when KeySource is nil.
	// Never logged.
	Key string
	// KeySource, when set, supplies the key for every request instead of Key, so that a
	// rotated key is picked up without a cold start (see secrets.Cache). A request Stripe
	// refuses for its key (HTTP 401) invalidates the source and is sent once more if the
	// source then yields another key.
	KeySource secrets.Source
	// BaseURL is the API endpoint: https://api.stripe.com, stripe-mock or the simulator.
	BaseURL string
	// HTTPClient carries the timeout; nil means an http.Client with DefaultHTTPTimeout.
	HTTPClient *http.Client
	// MaxNetworkRetries is used as given (0 disables stripe-go's retries).
	MaxNetworkRetries int64
	// Logger receives stripe-go's own warnings and errors; nil means slog.Default().
	// Its debug output (full response bodies, which hold client secrets) is dropped.
	Logger *slog.Logger
}

// NewClientAPI builds a Stripe client for key against baseURL with
// DefaultMaxNetworkRetries. It never touches stripe.Key or the package's global backends.
func NewClientAPI(key, baseURL string, httpClient *http.Client) *client.API {
	return NewClientAPIWithConfig(ClientConfig{
		Key:               key,
		BaseURL:           baseURL,
		HTTPClient:        httpClient,
		MaxNetworkRetries: DefaultMaxNetworkRetries,
	})
}

// NewClientAPIWithConfig builds a Stripe client from cfg.
func NewClientAPIWithConfig(cfg ClientConfig) *client.API {
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	backendConfig := func() *stripe.BackendConfig {
		return &stripe.BackendConfig{
			HTTPClient:        httpClient,
			URL:               stripe.String(cfg.BaseURL),
			MaxNetworkRetries: stripe.Int64(cfg.MaxNetworkRetries),
			LeveledLogger:     slogLeveled{log: logger.With("component", "stripe-go")},
			EnableTelemetry:   stripe.Bool(false),
		}
	}
	// Connect and Uploads are never called here; pointing them at the same base URL keeps
	// a stray call off the real network when the client targets a local server.
	backends := &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, backendConfig()),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, backendConfig()),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, backendConfig()),
	}
	if cfg.KeySource != nil {
		log := logger.With("component", "payment.stripe")
		for _, b := range []*stripe.Backend{&backends.API, &backends.Connect, &backends.Uploads} {
			*b = &keyedBackend{Backend: *b, keys: cfg.KeySource, log: log}
		}
	}
	return client.New(cfg.Key, backends)
}

// slogLeveled adapts slog to stripe-go's logger interface. stripe-go logs every request at
// info level and response bodies at debug level; both are demoted or dropped so an
// operator's log holds our own structured lines, not the SDK's chatter or client secrets.
type slogLeveled struct{ log *slog.Logger }

func (l slogLeveled) Debugf(string, ...interface{}) {}

func (l slogLeveled) Infof(format string, v ...interface{}) {
	l.log.Debug(fmt.Sprintf(format, v...))
}

func (l slogLeveled) Warnf(format string, v ...interface{}) {
	l.log.Warn(fmt.Sprintf(format, v...))
}

// Errorf is demoted to warn: stripe-go calls every 4xx an error, including declined cards,
// which are ordinary business outcomes that the adapter logs itself.
func (l slogLeveled) Errorf(format string, v ...interface{}) {
	l.log.Warn(fmt.Sprintf(format, v...))
}
