package stack

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// Incident is one class of fault that production meets, armed on a running stack, and the
// deployment's alarms it must fire: the rows of the fault-to-alarm matrix, which `demo` and
// `load` can also stage (-incident).
type Incident struct {
	Name        string
	Description string
	// Configure changes the configuration before the stack starts (nil: nothing).
	Configure func(*Config)
	// Arm injects the fault into the running stack before the buyers arrive; the function it
	// returns ends the fault (the stack's Close ends it too).
	Arm func(st *Stack) (stop func(), err error)
	// Observe is how much longer, in stack time, the stack must run after the sale has
	// settled for the alarms that need several periods.
	Observe time.Duration
	// Alarms are exactly the alarms it fires, sorted.
	Alarms []string
}

// ProviderOutage is how long the "provider-down" incident keeps the provider down, in stack
// time: longer than the saga's bounded reconciliation, shorter than the sweeper's patience.
const ProviderOutage = 10 * time.Minute

// StuckFor is how long the "stuck-execution" incident holds the captures, in stack time: past
// StuckThreshold and the alarm period that judges it.
const StuckFor = 20 * time.Minute

// StuckThreshold is the oldest-running-execution threshold the "stuck-execution" incident
// configures: a small sale's executions are minutes old, not the hour a deployment allows.
const StuckThreshold = 10 * time.Minute

// SmallSaleWebhooksNotArriving is the WebhooksNotArriving threshold the webhook incidents
// configure: a small sale has only a handful of payments that wait for their webhook (a card
// authorized at once needs none), fewer than the deployment's default of five.
const SmallSaleWebhooksNotArriving = 2

// SmallSaleUnknownPaymentMethods is the UnknownPaymentMethods threshold the
// "payment-methods-of-another-account" incident configures: a small sale has a dozen buyers
// with a payment method, fewer than the deployment's default of ten in five minutes needs.
const SmallSaleUnknownPaymentMethods = 3

func smallSaleWebhookThreshold(c *Config) {
	c.Thresholds.WebhooksNotArriving = SmallSaleWebhooksNotArriving
}

// Incidents are the fault classes, by name.
func Incidents() []Incident {
	allEndpoints := []stripesim.Endpoint{stripesim.EndpointCreateIntent, stripesim.EndpointRetrieveIntent, stripesim.EndpointConfirmIntent,
		stripesim.EndpointCaptureIntent, stripesim.EndpointCancelIntent, stripesim.EndpointCreateRefund, stripesim.EndpointRetrieveRefund}
	out := []Incident{
		{Name: "provider-down", Description: fmt.Sprintf("every provider call fails with a 5xx for %s of stack time", ProviderOutage),
			Arm: func(st *Stack) (func(), error) {
				for _, ep := range allEndpoints {
					st.Payments.InjectFault(ep, stripesim.Fault{Kind: stripesim.FaultFailBeforeActing, Times: -1})
				}
				timer := st.Clock.AfterFunc(ProviderOutage, st.Payments.ClearFaults)
				return func() { timer.Stop(); st.Payments.ClearFaults() }, nil
			},
			Alarms: []string{"ProviderUnavailable"}},
		{Name: "webhooks-lost", Description: "the provider delivers no webhook",
			Configure: smallSaleWebhookThreshold,
			Arm: func(st *Stack) (func(), error) {
				cfg := st.webhookConfig()
				cfg.URL = ""
				st.Payments.SetWebhook(cfg)
				return func() { st.Payments.SetWebhook(st.webhookConfig()) }, nil
			},
			Alarms: []string{"WebhooksNotArriving"}},
		{Name: "wrong-webhook-secret", Description: "the provider signs webhooks with a secret Secrets Manager does not hold",
			Configure: smallSaleWebhookThreshold,
			Arm: func(st *Stack) (func(), error) {
				cfg := st.webhookConfig()
				cfg.Secret = "whsec_not_the_one_in_secrets_manager"
				st.Payments.SetWebhook(cfg)
				return func() { st.Payments.SetWebhook(st.webhookConfig()) }, nil
			},
			// Every wait then ends by its timeout although the provider decided.
			Alarms: []string{"WebhookRejected", "WebhooksNotArriving"}},
		{Name: "payment-methods-of-another-account", Description: "the provider knows none of the buyers' payment methods, as when the checkout creates them with another account's publishable key",
			Configure: func(c *Config) { c.Thresholds.UnknownPaymentMethods = SmallSaleUnknownPaymentMethods },
			Arm: func(st *Stack) (func(), error) {
				st.Payments.ForgetPaymentMethods(true)
				return func() { st.Payments.ForgetPaymentMethods(false) }, nil
			},
			// Each buyer is declined at once and the seats go back: only the rate tells.
			Alarms: []string{"UnknownPaymentMethods"}},
		{Name: "sweeper-failing", Description: "every sweeper invocation crashes",
			Arm: func(st *Stack) (func(), error) {
				if err := st.Lambdas.FailBefore(FnSweeper, 1_000_000, lambdahost.Crash()); err != nil {
					return nil, err
				}
				return func() { st.Lambdas.ClearFaults(FnSweeper) }, nil
			},
			// Its gauges go silent, and silence breaches: three periods for the slowest.
			Observe: 3 * alarms.Period,
			Alarms: []string{"AuthorizationsNearCaptureDeadline", "ExpiredHoldOldestAgeSeconds", "ExpiredHoldsUnreleased",
				"OldestRunningExecutionAge", "ReconciliationBacklog", "SweeperErrors", "UnresolvedPaymentOldestAgeSeconds", "UnresolvedPayments"}},
		{Name: "dynamodb-throttling", Description: "every other one of the first sixteen DynamoDB transactions (the buyers' admissions at the gate, answered 429 to retry) is throttled",
			Configure: func(c *Config) {
				var n atomic.Int64
				c.DynamoDBFault = func(op string, _ any) error {
					if op != "TransactWriteItems" {
						return nil
					}
					if i := n.Add(1); i <= 16 && i%2 == 0 {
						return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate of requests exceeds the allowed throughput (injected)."}
					}
					return nil
				}
			},
			Arm:    func(st *Stack) (func(), error) { return func() {}, nil },
			Alarms: []string{"Throttled"}},
		{Name: "lambda-throttling", Description: "Lambda throttles six invocations of the claim function",
			Arm: func(st *Stack) (func(), error) {
				if err := st.Lambdas.FailBefore(FnClaim, 6, lambdahost.TooManyRequests()); err != nil {
					return nil, err
				}
				return func() { st.Lambdas.ClearFaults(FnClaim) }, nil
			},
			// The state machine retries them; only the throttle alarm tells.
			Alarms: []string{"ClaimThrottles"}},
		{Name: "stuck-execution", Description: fmt.Sprintf("the capture function hangs for %s of stack time", StuckFor),
			Configure: func(c *Config) { c.Thresholds.OldestRunningExecutionAgeSeconds = StuckThreshold.Seconds() },
			Arm: func(st *Stack) (func(), error) {
				open, _, err := st.Lambdas.Gate(FnCapture)
				if err != nil {
					return nil, err
				}
				timer := st.Clock.AfterFunc(StuckFor, open)
				return func() { timer.Stop(); open() }, nil
			},
			// The sweeper leaves the confirmed seats to the running saga until it counts as
			// stuck, so only the age of the oldest running execution tells.
			Alarms: []string{"OldestRunningExecutionAge"}},
		{Name: "consumer-failing", Description: "the event consumer fails every invocation, so its events end in its DLQ",
			Arm: func(st *Stack) (func(), error) {
				if err := st.Lambdas.FailBefore(FnConsumer, 1_000_000, lambdahost.FunctionError("Runtime.Error", "the consumer cannot process anything")); err != nil {
					return nil, err
				}
				return func() { st.Lambdas.ClearFaults(FnConsumer) }, nil
			},
			// Lambda retries an event twice, a minute and then two after it failed, before it
			// parks it: the last event's DLQ message may land after the sale settled.
			Observe: alarms.Period,
			Alarms:  []string{"ConsumerDLQDepth", "ConsumerErrors"}},
	}
	for _, in := range out {
		sort.Strings(in.Alarms)
	}
	return out
}

// IncidentNamed returns the incident called name.
func IncidentNamed(name string) (Incident, bool) {
	for _, in := range Incidents() {
		if in.Name == name {
			return in, true
		}
	}
	return Incident{}, false
}

// IncidentNames lists the incidents' names.
func IncidentNames() []string {
	var names []string
	for _, in := range Incidents() {
		names = append(names, in.Name)
	}
	return names
}
