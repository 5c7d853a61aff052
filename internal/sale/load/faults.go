package load

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// FaultClass names one kind of thing that goes wrong in a chaos run.
type FaultClass string

// The fault classes a load run can inject. Each is drawn per opportunity (a DynamoDB call, a
// buyer, a Lambda invocation, a provider call) at its Rate, up to its Cap.
const (
	// DynamoDB, on every function's DynamoDB calls: a throttle (ProvisionedThroughputExceeded
	// or ThrottlingException) or an internal error before anything is written, and a write
	// that commits whose response is lost (the caller then sees the SDK's retry of the same
	// request, or the error if the retries ran out).
	DynamoDBThrottle      FaultClass = "dynamodb-throttle"
	DynamoDBInternalError FaultClass = "dynamodb-internal-error"
	DynamoDBResponseLost  FaultClass = "dynamodb-response-lost"
	// A transaction cancelled because a concurrent writer's transaction touched one of its
	// items (TransactionCanceledException with TransactionConflict reasons), before it wrote.
	DynamoDBTransactionConflict FaultClass = "dynamodb-transaction-conflict"
	// The customer: a DELETE of the reservation at a random moment after its POST, sent one
	// to three times; the same POST sent again with the same Idempotency-Key while the first
	// is in flight.
	CustomerCancel        FaultClass = "customer-cancel"
	CustomerRetryInFlight FaultClass = "customer-retry-in-flight"
	// Lambda, on the saga's functions: a service error before the handler, a crash after it,
	// a timeout after the handler wrote (Sandbox.Timedout), and a cold start that fails its
	// init phase (Sandbox.Timedout before the handler ran).
	LambdaFailBefore FaultClass = "lambda-fail-before"
	LambdaFailAfter  FaultClass = "lambda-crash-after"
	LambdaTimeout    FaultClass = "lambda-timeout"
	LambdaColdStart  FaultClass = "lambda-cold-start-failure"
	// The provider: a 500 before acting, a 429 rate limit before acting, an act whose
	// response is lost, a slow answer, and down (every call a 500) for a window.
	ProviderFailBefore   FaultClass = "provider-fail-before"
	ProviderRateLimited  FaultClass = "provider-rate-limited"
	ProviderLoseResponse FaultClass = "provider-lose-response"
	ProviderSlow         FaultClass = "provider-slow"
	ProviderDown         FaultClass = "provider-down"
	// Webhooks, for a window of two seconds of wall time in which the saga called the
	// provider (counted once per window): every event emitted then is delivered twice,
	// delivered in a shuffled order (each copy delayed within the stack's reorder window),
	// delayed by one to three minutes of stack time, never delivered (its endpoint refuses
	// the connection), or signed with a secret the endpoint does not know (a rotation the
	// endpoint missed).
	WebhookDuplicated    FaultClass = "webhook-duplicated"
	WebhookReordered     FaultClass = "webhook-reordered"
	WebhookDelayed       FaultClass = "webhook-delayed"
	WebhookNotDelivered  FaultClass = "webhook-not-delivered"
	WebhookRotatedSecret FaultClass = "webhook-rotated-secret"
	// Step Functions: StartExecution, SendTaskSuccess and SendTaskFailure throttled by
	// quotas tightened in proportion to the rate (the cap does not apply: a quota has none),
	// counted by the engine's throttles.
	StepFunctionsThrottle FaultClass = "stepfunctions-throttle"
	// The same calls taking effect and their answer lost: the caller sees a broken
	// connection, drawn per call.
	StepFunctionsResponseLost FaultClass = "stepfunctions-response-lost"
	// The sweeper: an invocation killed at a random moment of its batch (its context ends and
	// Lambda reports Runtime.ExitError; counted only when the kill finds it running), and a
	// second sweep running at once with the scheduled one (counted only when it found
	// reservations to settle), each drawn per scheduled sweep.
	SweeperCrash      FaultClass = "sweeper-crash"
	SweeperConcurrent FaultClass = "sweeper-concurrent"
	// The clock: one function's clock ahead or behind the others by one to five seconds for
	// a window of two seconds of wall time, drawn per function per chaos tick.
	ClockSkew FaultClass = "clock-skew"
)

// FaultClasses lists every class in the order results report them.
var FaultClasses = []FaultClass{
	DynamoDBThrottle, DynamoDBInternalError, DynamoDBResponseLost, DynamoDBTransactionConflict,
	CustomerCancel, CustomerRetryInFlight,
	LambdaFailBefore, LambdaFailAfter, LambdaTimeout, LambdaColdStart,
	ProviderFailBefore, ProviderRateLimited, ProviderLoseResponse, ProviderSlow, ProviderDown,
	WebhookDuplicated, WebhookReordered, WebhookDelayed, WebhookNotDelivered, WebhookRotatedSecret,
	StepFunctionsThrottle, StepFunctionsResponseLost,
	SweeperCrash, SweeperConcurrent,
	ClockSkew,
}

// FaultRate is how often a class strikes: the chance per opportunity, and the most times it
// may strike in one run (0: no cap).
type FaultRate struct {
	Rate float64 `json:"rate"`
	Cap  int     `json:"cap,omitempty"`
}

// Chaos is the rate of each class a run injects; a class absent or at rate 0 is off.
type Chaos map[FaultClass]FaultRate

// ParseChaos reads "class=rate[/cap],..." (e.g. "dynamodb-throttle=0.01/20,customer-cancel=0.1").
// "all=rate[/cap]" sets every class first; later entries override it.
func ParseChaos(s string) (Chaos, error) {
	out := Chaos{}
	err := EachSetting(s, func(part, name, value string, ok bool) error {
		if !ok {
			return fmt.Errorf("load: fault %q is not class=rate[/cap]", part)
		}
		rateText, capText, hasCap := strings.Cut(value, "/")
		rate, err := strconv.ParseFloat(rateText, 64)
		if err != nil || rate < 0 || rate > 1 {
			return fmt.Errorf("load: fault %q: the rate must be a number from 0 to 1", part)
		}
		r := FaultRate{Rate: rate}
		if hasCap {
			if r.Cap, err = strconv.Atoi(capText); err != nil || r.Cap < 0 {
				return fmt.Errorf("load: fault %q: the cap must be a whole number, 0 for none", part)
			}
		}
		if name == "all" {
			for _, c := range FaultClasses {
				out[c] = r
			}
			return nil
		}
		if !knownClass(FaultClass(name)) {
			return fmt.Errorf("load: unknown fault class %q (want all or one of %s)", name, classNames())
		}
		out[FaultClass(name)] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachSetting calls fn for each part of a comma-separated "name=value" list, empty parts
// skipped, with the part split at its first '=' (ok false when it has none); the first error
// fn returns ends the walk.
func EachSetting(s string, fn func(part, name, value string, ok bool) error) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if err := fn(part, name, value, ok); err != nil {
			return err
		}
	}
	return nil
}

func knownClass(c FaultClass) bool { return slices.Contains(FaultClasses, c) }

func classNames() string {
	names := make([]string, len(FaultClasses))
	for i, c := range FaultClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// String renders the chaos as ParseChaos reads it, classes in FaultClasses order.
func (c Chaos) String() string {
	var parts []string
	for _, class := range FaultClasses {
		r, ok := c[class]
		if !ok || r.Rate <= 0 {
			continue
		}
		p := string(class) + "=" + strconv.FormatFloat(r.Rate, 'g', -1, 64)
		if r.Cap > 0 {
			p += "/" + strconv.Itoa(r.Cap)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

// Injector draws faults from a seeded stream and counts what it injected by class. It is
// safe for concurrent use; the order in which goroutines ask decides who gets a fault, so a
// seed fixes the rates' stream, not which call is hit.
type Injector struct {
	mu       sync.Mutex
	chaos    Chaos
	rng      *rand.Rand
	injected map[FaultClass]int
}

// NewInjector returns an injector for chaos seeded with seed.
func NewInjector(chaos Chaos, seed int64) *Injector {
	return &Injector{chaos: chaos, rng: rand.New(rand.NewSource(seed)), injected: map[FaultClass]int{}}
}

// On reports whether class is on at all.
func (in *Injector) On(class FaultClass) bool {
	if in == nil {
		return false
	}
	return in.chaos[class].Rate > 0
}

// Rate is class's chance per opportunity (0: off).
func (in *Injector) Rate(class FaultClass) float64 {
	if in == nil {
		return 0
	}
	return in.chaos[class].Rate
}

// Strike draws one opportunity for class: true (and counted) when the fault hits. A class
// at its cap never hits again.
func (in *Injector) Strike(class FaultClass) bool {
	if in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	r := in.chaos[class]
	if r.Rate <= 0 || (r.Cap > 0 && in.injected[class] >= r.Cap) {
		return false
	}
	if in.rng.Float64() >= r.Rate {
		return false
	}
	in.injected[class]++
	return true
}

// Allow reserves one injection of class without a draw, for a fault armed now that hits
// later (a Lambda failure queued for an invocation): false once the cap is reached. The
// injection is counted only when Count is called, when the fault really hits.
func (in *Injector) Allow(class FaultClass) bool {
	if in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	r := in.chaos[class]
	return r.Rate > 0 && (r.Cap <= 0 || in.injected[class] < r.Cap)
}

// Armed draws one opportunity for a fault of class armed now that hits later: true when it
// should be armed, which Allow permits and the class's rate draws. Like Allow it counts
// nothing; the fault counts (Count) when it really hits.
func (in *Injector) Armed(class FaultClass) bool {
	return in.Allow(class) && in.Draw() < in.Rate(class)
}

// Count records one injection of class that Allow let through or that hit on its own.
func (in *Injector) Count(class FaultClass) { in.Add(class, 1) }

// Add records n injections of class that a service counted itself (a quota's throttles).
func (in *Injector) Add(class FaultClass, n int) {
	if in == nil || n <= 0 {
		return
	}
	in.mu.Lock()
	in.injected[class] += n
	in.mu.Unlock()
}

// Draw returns a number in [0,1) from the injector's stream, for choices within a fault (which
// error, how long).
func (in *Injector) Draw() float64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rng.Float64()
}

// Injected returns the count of every class, zero included, so a result always names each
// class of the chaos.
func (in *Injector) Injected() map[FaultClass]int {
	out := map[FaultClass]int{}
	if in == nil {
		return out
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for class, r := range in.chaos {
		if r.Rate > 0 {
			out[class] = in.injected[class]
		}
	}
	return out
}

// InjectedLine renders counts as "class n, ..." in FaultClasses order.
func InjectedLine(counts map[FaultClass]int) string {
	var parts []string
	for _, c := range FaultClasses {
		if n, ok := counts[c]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	var extra []string
	for c, n := range counts {
		if !knownClass(c) {
			extra = append(extra, fmt.Sprintf("%s %d", c, n))
		}
	}
	sort.Strings(extra)
	parts = append(parts, extra...)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
