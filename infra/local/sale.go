package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/sale/report"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// saleFlags are demo's and load's flags; the two differ only in defaults.
type saleFlags struct {
	seats, buyers, perBuyer, concurrency int
	scale                                float64
	hold                                 time.Duration
	// sweepGrace, when positive, replaces Compressed's sweep grace.
	sweepGrace time.Duration
	mix        string
	dupRate    float64
	reorder    bool
	faults     bool
	// incident names one of stack.Incidents to stage during the sale ("" or -faults=false:
	// none); incidentDef is what it names.
	incident                           string
	incidentDef                        *stack.Incident
	providerFailRate, providerLoseRate float64
	lambdaFailRate, lambdaCrashRate    float64
	seed                               int64
	poll, buyerTimeout, settle         time.Duration
	reportPath, outPath, logPath       string
	inspect                            int
	policy                             string
	sample                             time.Duration
	faultCap                           int
	prices                             pricingFlags
	// pricing is what prices parsed to.
	pricing stack.Pricing
	// profile names the arrival profile (load.Profiles) and arrival is what it parsed to;
	// hotShare is the hot profile's share of first choices on the best tenth of the seats.
	profile  string
	arrival  load.Profile
	hotShare float64
	// chaos is -chaos as given ("class=rate[/cap],..."); chaosRates is what it parsed to.
	chaos      string
	chaosRates load.Chaos
}

func defaultsFor(mode string) saleFlags {
	f := saleFlags{
		seats: 60, buyers: 400, perBuyer: 1, concurrency: 64,
		scale: 20, hold: 10 * time.Minute,
		mix:     "pays=55,declines=10,3ds-late=15,3ds-never=10,late-auth=10",
		dupRate: 0.3, reorder: true, faults: true, incident: "dynamodb-throttling",
		providerFailRate: 0.05, providerLoseRate: 0.03, lambdaFailRate: 0.05, lambdaCrashRate: 0.05,
		seed: 1, poll: 100 * time.Millisecond, buyerTimeout: 90 * time.Second, settle: 2 * time.Minute,
		reportPath: "reports/demo.html", logPath: "reports/demo.log", policy: "reacquire", sample: 500 * time.Millisecond,
		faultCap: 2,
		// Three price tiers by row, so that every capture is checked against seats of
		// different prices (invariant capture-equals-seat-prices).
		prices:  pricingFlags{prices: "7500,5000,2500", row: 20, currency: "EUR"},
		profile: string(load.Uniform), hotShare: load.DefaultHotShare,
	}
	if mode == "load" {
		f.incident = ""
		f.seats, f.buyers, f.concurrency = 1000, 10000, 64
		f.mix = "pays=70,declines=10,3ds-late=10,3ds-never=5,late-auth=5"
		f.providerFailRate, f.providerLoseRate, f.lambdaFailRate, f.lambdaCrashRate = 0.02, 0.01, 0.01, 0.01
		f.poll = 250 * time.Millisecond
		f.sample = 2 * time.Second
		f.buyerTimeout, f.settle = 5*time.Minute, 5*time.Minute
		f.reportPath, f.logPath = "reports/load.html", "reports/load.log"
	}
	return f
}

func parseSaleFlags(mode string, args []string) (saleFlags, error) {
	f := defaultsFor(mode)
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	fs.IntVar(&f.seats, "seats", f.seats, "seats on sale (N)")
	fs.IntVar(&f.buyers, "buyers", f.buyers, "buyers arriving in one burst (M)")
	fs.IntVar(&f.perBuyer, "seats-per-buyer", f.perBuyer, "seats each buyer asks for")
	fs.IntVar(&f.concurrency, "concurrency", f.concurrency, "HTTP requests in flight at once (every buyer arrives in the burst)")
	fs.Float64Var(&f.scale, "scale", f.scale, "clock compression: stack time runs this many times faster than wall time")
	fs.DurationVar(&f.hold, "hold", f.hold, "hold duration in stack time (10m at -scale 20 expires after 30 s of wall time)")
	fs.DurationVar(&f.sweepGrace, "sweep-grace", 0, "how long past a hold's deadline the sweeper leaves it to its saga, in stack time (0: the stack's 2m)")
	fs.StringVar(&f.mix, "mix", f.mix, "payment behaviours and weights: pays, declines, 3ds-late, 3ds-never, late-auth")
	fs.Float64Var(&f.dupRate, "webhook-dup", f.dupRate, "share of webhooks delivered twice")
	fs.BoolVar(&f.reorder, "webhook-reorder", f.reorder, "deliver webhooks out of order")
	fs.BoolVar(&f.faults, "faults", f.faults, "inject provider and Lambda faults at the rates below, and stage -incident")
	fs.StringVar(&f.incident, "incident", f.incident, "an incident to stage, with the alarms it must fire: one of "+strings.Join(stack.IncidentNames(), ", ")+" (empty: none)")
	fs.Float64Var(&f.providerFailRate, "provider-fail", f.providerFailRate, "provider calls failing with 500 before acting, per seat per endpoint")
	fs.Float64Var(&f.providerLoseRate, "provider-lose", f.providerLoseRate, "provider calls that act and lose their response, per seat per endpoint")
	fs.Float64Var(&f.lambdaFailRate, "lambda-fail", f.lambdaFailRate, "saga invocations failing before the handler runs, per seat per function")
	fs.Float64Var(&f.lambdaCrashRate, "lambda-crash", f.lambdaCrashRate, "saga invocations failing after the handler ran, per seat per function")
	fs.DurationVar(&f.sample, "sample", f.sample, "how often seats are counted by state for the report's timeline")
	fs.IntVar(&f.faultCap, "fault-cap", f.faultCap, "most faults of one kind per function or endpoint (0: no cap); see faultPlan")
	fs.StringVar(&f.policy, "late-success", f.policy, "late-success policy: reacquire or void")
	fs.Int64Var(&f.seed, "seed", f.seed, "seed for buyers, seats and payment behaviours")
	fs.DurationVar(&f.poll, "poll", f.poll, "how often a buyer reads its reservation's status")
	fs.DurationVar(&f.buyerTimeout, "buyer-timeout", f.buyerTimeout, "how long a buyer waits for a final status (wall time)")
	fs.DurationVar(&f.settle, "settle", f.settle, "how long to wait for the stack to go quiet after the last buyer (wall time)")
	fs.StringVar(&f.reportPath, "report", f.reportPath, "HTML report to write (empty: none)")
	fs.StringVar(&f.outPath, "out", f.outPath, "JSON result file to write (empty: none)")
	fs.StringVar(&f.logPath, "log", f.logPath, "file for the stack's JSON logs (empty: discard)")
	fs.IntVar(&f.inspect, "inspect", f.inspect, "print the inspection of this many reservations, one per outcome")
	fs.StringVar(&f.profile, "profile", f.profile, fmt.Sprintf(
		"arrival profile: uniform (random seats, everyone at the start), hot (most buyers want the best rows; see -hot-share), "+
			"burst (everyone within %s, at least %d POSTs in flight: a lower -concurrency is raised)", load.BurstWindow, load.BurstConcurrency))
	fs.Float64Var(&f.hotShare, "hot-share", f.hotShare, "with -profile hot: share of buyers whose first choice is in the best tenth of the seats")
	fs.StringVar(&f.chaos, "chaos", f.chaos, "fault classes to inject, each with a rate per opportunity and an optional cap: class=rate[/cap],... "+
		"(all=rate sets every class; classes: "+faultClassNames()+")")
	f.prices.register(fs)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.scale <= 0 || f.seats <= 0 || f.buyers <= 0 {
		return f, fmt.Errorf("-scale, -seats and -buyers must be positive")
	}
	var err error
	if f.pricing, err = f.prices.pricing(); err != nil {
		return f, err
	}
	if f.chaosRates, err = load.ParseChaos(f.chaos); err != nil {
		return f, fmt.Errorf("-chaos: %w", err)
	}
	if f.arrival, err = load.ParseProfile(f.profile); err != nil {
		return f, fmt.Errorf("-profile: %w", err)
	}
	// A plan of one buyer checks the profile's parameters against the seats now, not after
	// the stack has taken a minute to start.
	if _, err := load.Plan(load.PlanOptions{Buyers: 1, Seats: stack.SeatIDs(f.seats), Profile: f.arrival, HotShare: f.hotShare}); err != nil {
		return f, fmt.Errorf("-profile %s: %w", f.arrival, err)
	}
	if f.faults && f.incident != "" {
		in, ok := stack.IncidentNamed(f.incident)
		if !ok {
			return f, fmt.Errorf("-incident %q: want one of %s", f.incident, strings.Join(stack.IncidentNames(), ", "))
		}
		f.incidentDef = &in
	}
	return f, nil
}

func parseMix(s string) (load.Mix, error) {
	mix := load.Mix{}
	err := load.EachSetting(s, func(part, name, w string, ok bool) error {
		if !ok {
			return fmt.Errorf("-mix: %q is not name=weight", part)
		}
		weight, err := strconv.ParseFloat(w, 64)
		if err != nil || weight < 0 {
			return fmt.Errorf("-mix: bad weight in %q", part)
		}
		if _, known := load.PaymentMethods[load.Behaviour(name)]; !known {
			return fmt.Errorf("-mix: unknown behaviour %q (pays, declines, 3ds-late, 3ds-never, late-auth)", name)
		}
		mix[load.Behaviour(name)] = weight
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(mix) == 0 {
		return nil, fmt.Errorf("-mix is empty")
	}
	return mix, nil
}

// stackConfig compresses every duration the sale depends on by the clock's scale
// (stack.Compressed) and sets what the flags choose.
func stackConfig(f saleFlags, logger *slog.Logger) stack.Config {
	cfg := stack.Compressed(f.scale, f.hold)
	cfg.LateSuccessPolicy = f.policy
	cfg.Payments.WebhookDuplicateRate = f.dupRate
	cfg.Payments.WebhookReorder = f.reorder
	cfg.Payments.Seed = f.seed
	cfg.Pricing = f.pricing
	cfg.Logger = logger
	if f.sweepGrace > 0 {
		cfg.SweepGrace = f.sweepGrace
	}
	if len(f.chaosRates) > 0 {
		stack.WithChaos(&cfg, load.NewInjector(f.chaosRates, f.seed))
	}
	return cfg
}

func faultClassNames() string {
	names := make([]string, len(load.FaultClasses))
	for i, c := range load.FaultClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

func faultPlan(f saleFlags) stack.FaultPlan {
	if !f.faults {
		return stack.FaultPlan{}
	}
	n := func(rate float64) int {
		if rate <= 0 {
			return 0
		}
		// Faults hit the paying part of the crowd, which the seats bound. Counted faults hit
		// the next calls, so for a rarely called function they pile up on one execution; the
		// cap keeps them within what the state machine's Retry (5 attempts) is specified to
		// absorb. -fault-cap 0 lifts it, to show what happens beyond.
		n := max(1, int(rate*float64(min(f.buyers, f.seats))+0.5))
		if f.faultCap > 0 {
			n = min(n, f.faultCap)
		}
		return n
	}
	return stack.FaultPlan{
		ProviderFailBefore:   n(f.providerFailRate),
		ProviderLoseResponse: n(f.providerLoseRate),
		LambdaFailBefore:     n(f.lambdaFailRate),
		LambdaFailAfter:      n(f.lambdaCrashRate),
		// Faults land across the sale: over the time a hold lasts on the wall clock.
		Spread: time.Duration(float64(f.hold) / f.scale),
		Seed:   f.seed,
	}
}

func runSale(ctx context.Context, mode string, args []string) error {
	f, err := parseSaleFlags(mode, args)
	if err != nil {
		return err
	}
	mix, err := parseMix(f.mix)
	if err != nil {
		return err
	}
	logger, closeLog, err := openLog(f.logPath)
	if err != nil {
		return err
	}
	defer closeLog()

	out := os.Stdout
	fmt.Fprintf(os.Stderr, "starting the local stack (DynamoDB Local, Step Functions engine, Lambda host, payment simulator)…\n")
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	cfg := stackConfig(f, logger)
	var observe time.Duration
	if in := f.incidentDef; in != nil {
		if in.Configure != nil {
			in.Configure(&cfg)
		}
		observe = in.Observe
	}
	st, err := stack.Start(startCtx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the stack:", err)
		}
	}()
	if in := f.incidentDef; in != nil {
		stop, err := in.Arm(st)
		if err != nil {
			return fmt.Errorf("stage %s: %w", in.Name, err)
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "%s: staging the incident %s: %s\n", mode, in.Name, in.Description)
	}
	plan := faultPlan(f)
	fmt.Fprintf(os.Stderr, "%s: %d buyers for %d seats (%d each; %s), clock ×%g, hold %s (%s wall), faults %+v\n",
		mode, f.buyers, f.seats, f.perBuyer, describePricing(f.pricing, f.seats), f.scale, f.hold, time.Duration(float64(f.hold)/f.scale).Round(time.Second), plan)

	if raised := f.arrival.Concurrency(f.concurrency); raised != f.concurrency {
		fmt.Fprintf(os.Stderr, "%s: -profile %s raises -concurrency %d to %d: a burst needs at least %d POSTs in flight\n",
			mode, f.arrival, f.concurrency, raised, load.BurstConcurrency)
	}
	bar := newProgress(os.Stderr, f.buyers)
	res, err := st.RunSale(ctx, stack.SaleOptions{
		EventID: mode + "-sale", Seats: f.seats, Buyers: f.buyers, SeatsPerBuyer: f.perBuyer, Mix: mix,
		Seed: f.seed, Faults: plan, Concurrency: f.concurrency, PollInterval: f.poll,
		Profile: f.arrival, HotShare: f.hotShare,
		BuyerTimeout: f.buyerTimeout, SettleTimeout: f.settle, SampleInterval: f.sample, ClockScale: f.scale,
		Progress: bar.buyer, Settling: bar.settling, AwaitAlarms: true, ObserveAfter: observe,
	})
	bar.done()
	if err != nil {
		return err
	}
	fig := res.Figures()
	printSummary(out, mode, f, res, fig)
	refused := printGrants(out, st)

	if f.inspect > 0 {
		inspectSamples(ctx, out, st, res, f.inspect)
	}
	command := "go run ./infra/local " + strings.Join(append([]string{mode}, args...), " ")
	if f.reportPath != "" {
		g, err := report.GraphFromASL(st.Definition)
		if err != nil {
			return err
		}
		if err := report.WriteFile(f.reportPath, buildReport(mode, command, f, res, fig, g)); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nreport   %s\n", f.reportPath)
	}
	if f.outPath != "" {
		if err := writeJSON(f.outPath, command, f, fig, res.Verdict); err != nil {
			return err
		}
		fmt.Fprintf(out, "result   %s\n", f.outPath)
	}
	if f.logPath != "" {
		fmt.Fprintf(out, "logs     %s\n", f.logPath)
	}
	if !res.Verdict.OK() {
		return &invariantsFailed{violations: len(res.Verdict.Violations)}
	}
	if refused > 0 {
		return fmt.Errorf("the gate refused %d AWS calls a function's grants do not allow (AccessDenied; see the log): a deployed stack would refuse them too", refused)
	}
	return nil
}

// printGrants says how many AWS calls the functions made through the gate and how many their
// grants did not allow, naming each refused action; it returns the number refused.
func printGrants(w io.Writer, st *stack.Stack) int64 {
	var checked, refused int64
	for _, d := range st.Gate.Decisions() {
		checked += d.Count
		if !d.Allowed {
			refused += d.Count
			fmt.Fprintf(w, "denied   %s %s on %s (%d×)\n", d.Principal, d.Action, d.Resource, d.Count)
		}
	}
	fmt.Fprintf(w, "grants   %d AWS calls checked against each function's grants, %d refused\n", checked, refused)
	return refused
}

func openLog(path string) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.DiscardHandler), func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewJSONHandler(file, &slog.HandlerOptions{Level: slog.LevelInfo})), func() { file.Close() }, nil
}

// progress draws a bar on stderr while buyers finish, then the settling reason.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, start: time.Now()}
}

func (p *progress) buyer(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if done < total && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	const width = 40
	filled := width * done / max(total, 1)
	fmt.Fprintf(p.w, "\r  buyers [%s%s] %d/%d  %5.1fs", strings.Repeat("█", filled), strings.Repeat("░", width-filled),
		done, total, time.Since(p.start).Seconds())
}

func (p *progress) settling(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 250*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r  settling: %-60s %5.1fs", reason, time.Since(p.start).Seconds())
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r  done in %.1fs%s\n", time.Since(p.start).Seconds(), strings.Repeat(" ", 70))
}

func printSummary(w io.Writer, mode string, f saleFlags, res *stack.SaleResult, fig stack.Figures) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "\nseatsaga %s — summary\n\n", mode)
	row("profile", "%s", describeProfile(fig))
	row("seats sold", "%d of %d", fig.SeatsSold, fig.Seats)
	row("buyers", "%d; all answered in %.1fs (%.0f POST/s); all settled in %.1fs; %d started an execution",
		fig.Buyers, fig.AdmissionSeconds, fig.AdmissionsPerSecond, fig.DurationSeconds, res.Summary.Started)
	row("bookings", "%d confirmed (%.1f/s over the run)", fig.Outcomes["confirmed"], fig.BookingsPerSecond)
	row("rejected at admission", "%d (409 before StartExecution: %s)", fig.AdmissionRejected, countsLine(res.Summary.AdmissionCodes))
	row("rejected in the saga", "%d (lost the conditional claim)", fig.SagaRejected)
	row("claim failed", "%d (read REJECTED, but an incident: no race lost, not among the losers)", fig.ClaimFailed)
	row("losers turned away early", "%.1f%%", 100*fig.LosersTurnedAwayEarly)
	row("buyer outcomes", "%s", countsLine(fig.Outcomes))
	for i, b := range slices.Sorted(maps.Keys(fig.ByBehaviour)) {
		row(firstLabel(i, "holders by payment"), "%-10s %s", b, countsLine(fig.ByBehaviour[b]))
	}
	row("terminal states", "%s", countsLine(fig.TerminalStates))
	row("execution outcomes", "%s", countsLine(fig.ExecutionOutcomes))
	row("need a person", "%d executions (%d failed, timed out or aborted; business outcomes succeed)",
		fig.ExecutionsNeedingPerson, fig.ExecutionsFailed)
	row("payments by state", "%s; %d refunded", countsLine(fig.Payments), fig.Refunds)
	row("time to hold", "p50 %s  p95 %s  p99 %s  (n=%d) buyer's view: POST sent → first HELD read",
		ms(fig.HoldP50), ms(fig.HoldP95), ms(fig.HoldP99), len(res.Summary.HoldMs))
	row("", "p50 %s  p95 %s  p99 %s  saga's view: StartExecution → claim done", ms(fig.EngineHoldP50), ms(fig.EngineHoldP95), ms(fig.EngineHoldP99))
	row("time to confirm", "p50 %s  p95 %s  p99 %s  (n=%d) buyer's view: POST sent → first CONFIRMED read",
		ms(fig.ConfirmP50), ms(fig.ConfirmP95), ms(fig.ConfirmP99), len(res.Summary.ConfirmMs))
	row("", "p50 %s  p95 %s  p99 %s  saga's view: StartExecution → Confirmed", ms(fig.EngineConfirmP50), ms(fig.EngineConfirmP95), ms(fig.EngineConfirmP99))
	row("POST latency", "p50 %s  p95 %s  p99 %s from arrival; the request itself p50 %s  p95 %s  p99 %s",
		ms(fig.PostP50), ms(fig.PostP95), ms(fig.PostP99), ms(fig.PostServiceP50), ms(fig.PostServiceP95), ms(fig.PostServiceP99))
	row("state transitions", "%d total; %.1f per booking, %.1f per execution, %.1f on the happy path",
		fig.Transitions, fig.TransitionsPerBooking, fig.TransitionsPerExecution, fig.HappyPathTransitions)
	row("Lambda invocations", "%d total (%d status polls ran of %d sent); %.1f per booking without polls (%.1f saga steps)",
		fig.Invocations, fig.APIPolls, fig.StatusPolls, fig.InvocationsPerBooking, fig.SagaInvocationsPerBooking)
	row("invocations by function", "%s", countsLine64(res.Invocations))
	row("StartExecution calls", "%d; %.2f per seat sold", fig.StartExecutions, fig.StartExecutionsPerSeatSold)
	row("Step Functions calls per POST", "%.2f (every call of the api's role, status reads' included, over the %d POSTs it ran)",
		fig.StepFunctionsCallsPerPost, fig.APIPosts)
	row("DynamoDB requests per booking", "%.1f (every function's, status polls included); %.1f without the api's",
		fig.DynamoDBRequestsPerBooking, fig.SagaDynamoDBRequestsPerBooking)
	row("api DynamoDB requests", "%.2f per request it ran (%d POSTs, %d status polls)",
		fig.APIDynamoDBRequestsPerRequest, fig.APIPosts, fig.APIPolls)
	for i, role := range slices.Sorted(maps.Keys(fig.APICalls)) {
		row(firstLabel(i, "AWS calls by role"), "%-28s %s", role, countsLine64(fig.APICalls[role]))
	}
	billRows(row, fig.AWSBill, fig.AWSUsage)
	row("settled", "%v after %.1fs", fig.Settled, fig.SettleSeconds)
	if res.Faults != nil {
		row("faults injected", "%s", load.InjectedLine(res.Faults))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", res.Verdict)
	printAlarms(w, f, res)
}

// describeProfile says how the buyers arrived: the profile and what it promises, with what the
// run measured next to it, so that a burst that was not one shows.
func describeProfile(fig stack.Figures) string {
	line := fig.Profile
	if fig.Profile == string(load.Hot) {
		line += fmt.Sprintf(" (%.0f%% of first choices on the best tenth of the seats)", 100*fig.HotShare)
	}
	return line + fmt.Sprintf("; last buyer arrived after %s (client up to %s late); %d POSTs in flight at most (bound %d); POST attempts 5xx %d, 429 %d, unanswered %d; buyers never answered %d",
		ms(1000*fig.ArrivalSeconds), ms(1000*fig.ClientLagSeconds), fig.PeakPostsInFlight, fig.Concurrency, fig.Posts5xx, fig.Posts429, fig.PostsUnanswered, fig.PostsNeverAnswered)
}

// printAlarms lists every alarm state change of the sale (the deployment's alarms, evaluated
// on the stack's clock), with when it happened and CloudWatch's reason.
func printAlarms(w io.Writer, f saleFlags, res *stack.SaleResult) {
	fired := res.FiredAlarms()
	if in := f.incidentDef; in != nil {
		verdict := "as expected"
		if !slices.Equal(fired, in.Alarms) {
			verdict = "NOT the alarms it must fire"
		}
		fmt.Fprintf(w, "\nincident %s (%s): must fire %s; %s\n", in.Name, in.Description, strings.Join(in.Alarms, ", "), verdict)
	}
	if len(fired) == 0 {
		fmt.Fprintf(w, "\nalarms: none fired\n")
	} else {
		fmt.Fprintf(w, "\nalarms: %d fired: %s\n", len(fired), strings.Join(fired, ", "))
	}
	for _, tr := range res.Alarms {
		if !firing(tr) {
			continue
		}
		fmt.Fprintf(w, "  +%-8s %-34s %s → %s  %s\n", stackOffset(res, tr.Time), tr.Alarm, tr.From, tr.To, tr.Reason)
	}
}

// stackOffset is how long into the sale t is, on the stack's clock.
func stackOffset(res *stack.SaleResult, t time.Time) string {
	return t.Sub(res.Start).Round(time.Second).String()
}

func ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.0fms", v)
}

func countsLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		if k == "" {
			parts[i] = fmt.Sprintf("(none) %d", m[k])
			continue
		}
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// firing reports a transition into or out of ALARM: the ones a sale's summary and report show.
func firing(tr cloudwatch.Transition) bool {
	return tr.To == cloudwatch.StateAlarm || tr.From == cloudwatch.StateAlarm
}

// firstLabel labels only the first of a block of rows, which the rest continue.
func firstLabel(i int, label string) string {
	if i == 0 {
		return label
	}
	return ""
}

func countsLine64(m map[string]int64) string {
	c := make(map[string]int, len(m))
	for k, v := range m {
		if v > 0 {
			c[k] = int(v)
		}
	}
	return countsLine(c)
}

// inspectSamples prints the inspection of one reservation per terminal state, headed by the
// state and the outcome it reports.
func inspectSamples(ctx context.Context, w io.Writer, st *stack.Stack, res *stack.SaleResult, n int) {
	seen := map[string]bool{}
	in := st.Inspector()
	for _, t := range res.Traces {
		if n == 0 {
			return
		}
		last := ""
		if len(t.States) > 0 {
			last = t.States[len(t.States)-1]
		}
		if seen[last] {
			continue
		}
		seen[last] = true
		n--
		fmt.Fprintf(w, "\n──── %s (%s) ────\n", last, t.Ending.Outcome)
		if err := in.Inspect(ctx, w, t.Name); err != nil {
			fmt.Fprintf(w, "inspect: %v\n", err)
		}
	}
}

func buildReport(mode, command string, f saleFlags, res *stack.SaleResult, fig stack.Figures, g *report.Graph) report.Report {
	var paths [][]string
	for _, t := range res.Traces {
		p := append([]string(nil), t.States...)
		if t.Status != invariants.ExecRunning {
			p = append(p, report.EndNode)
		}
		paths = append(paths, p)
	}
	g.CountPaths(paths)
	states := []string{invariants.Available, invariants.Held, invariants.PaymentPending, invariants.Confirmed}
	timeline := make([]report.Sample, len(res.Samples))
	for i, s := range res.Samples {
		timeline[i] = report.Sample{At: s.At.Seconds(), Counts: s.Counts}
	}
	verdict := report.Verdict{Pass: res.Verdict.OK()}
	scale := f.scale
	if scale <= 0 {
		scale = 1
	}
	var marks []report.AlarmMark
	for _, tr := range res.Alarms {
		// Firing and clearing; an alarm's first evaluation (INSUFFICIENT_DATA → OK) is noise.
		if !firing(tr) {
			continue
		}
		marks = append(marks, report.AlarmMark{At: tr.Time.Sub(res.Start).Seconds() / scale, StackTime: "+" + stackOffset(res, tr.Time),
			Alarm: tr.Alarm, From: string(tr.From), To: string(tr.To), Reason: tr.Reason})
	}
	for _, line := range strings.Split(res.Verdict.String(), "\n") {
		verdict.Lines = append(verdict.Lines, strings.TrimSpace(line))
	}
	summary := []report.Row{
		{Label: "arrival profile", Value: describeProfile(fig)},
		{Label: "seats sold", Value: fmt.Sprintf("%d of %d", fig.SeatsSold, fig.Seats)},
		{Label: "buyers", Value: fmt.Sprintf("%d; POSTs answered in %.1fs (%.0f/s); settled in %.1fs", fig.Buyers, fig.AdmissionSeconds, fig.AdmissionsPerSecond, fig.DurationSeconds)},
		{Label: "rejected at admission", Value: strconv.Itoa(fig.AdmissionRejected)},
		{Label: "rejected in the saga", Value: strconv.Itoa(fig.SagaRejected)},
		{Label: "claim failed (an incident, not a lost race)", Value: strconv.Itoa(fig.ClaimFailed)},
		{Label: "executions that need a person", Value: fmt.Sprintf("%d (%d failed, timed out or aborted)", fig.ExecutionsNeedingPerson, fig.ExecutionsFailed)},
		{Label: "losers turned away before StartExecution", Value: fmt.Sprintf("%.1f%%", 100*fig.LosersTurnedAwayEarly)},
		{Label: "time to hold p50/p95/p99", Value: fmt.Sprintf("%s / %s / %s", ms(fig.HoldP50), ms(fig.HoldP95), ms(fig.HoldP99))},
		{Label: "time to confirm p50/p95/p99", Value: fmt.Sprintf("%s / %s / %s", ms(fig.ConfirmP50), ms(fig.ConfirmP95), ms(fig.ConfirmP99))},
		{Label: "saga: start → hold p50/p95/p99", Value: fmt.Sprintf("%s / %s / %s", ms(fig.EngineHoldP50), ms(fig.EngineHoldP95), ms(fig.EngineHoldP99))},
		{Label: "saga: start → confirmed p50/p95/p99", Value: fmt.Sprintf("%s / %s / %s", ms(fig.EngineConfirmP50), ms(fig.EngineConfirmP95), ms(fig.EngineConfirmP99))},
		{Label: "state transitions per booking", Value: fmt.Sprintf("%.1f (happy path %.1f)", fig.TransitionsPerBooking, fig.HappyPathTransitions)},
		{Label: "Lambda invocations per booking (without status polls)", Value: fmt.Sprintf("%.1f (saga steps %.1f)", fig.InvocationsPerBooking, fig.SagaInvocationsPerBooking)},
		{Label: "StartExecution calls per seat sold", Value: fmt.Sprintf("%.2f (%d calls)", fig.StartExecutionsPerSeatSold, fig.StartExecutions)},
		{Label: "Step Functions calls per POST", Value: fmt.Sprintf("%.2f (the api's, over %d POSTs it ran)", fig.StepFunctionsCallsPerPost, fig.APIPosts)},
		{Label: "DynamoDB requests per booking", Value: fmt.Sprintf("%.1f (status polls included; %.1f without the api's)", fig.DynamoDBRequestsPerBooking, fig.SagaDynamoDBRequestsPerBooking)},
		{Label: "api DynamoDB requests per request", Value: fmt.Sprintf("%.2f (%d POSTs, %d status polls ran)", fig.APIDynamoDBRequestsPerRequest, fig.APIPosts, fig.APIPolls)},
		{Label: "payments", Value: countsLine(fig.Payments)},
		{Label: "clock", Value: fmt.Sprintf("×%g, hold %s", f.scale, f.hold)},
	}
	bars := []report.BarChart{
		{Title: "Buyer outcomes", Bars: toBars(fig.Outcomes)},
		{Title: "Executions by terminal state", Bars: toBars(fig.TerminalStates)},
		{Title: "Executions by outcome", Bars: toBars(fig.ExecutionOutcomes)},
		{Title: "Payments by provider status", Bars: toBars(fig.Payments)},
	}
	engineHold, engineConfirm := res.EngineLatencies()
	return report.Report{
		Title:      "seatsaga " + mode + ": " + fmt.Sprintf("%d buyers, %d seats", fig.Buyers, fig.Seats),
		Command:    command,
		Generated:  time.Now(),
		Summary:    summary,
		Verdict:    verdict,
		SeatStates: states,
		Timeline:   timeline,
		Alarms:     marks,
		Histograms: []report.Histogram{
			report.NewHistogram("Time to hold (POST sent → first HELD)", res.Summary.HoldMs),
			report.NewHistogram("Time to confirm (POST sent → first CONFIRMED)", res.Summary.ConfirmMs),
			report.NewHistogram("Saga: StartExecution → seats held", engineHold),
			report.NewHistogram("Saga: StartExecution → Confirmed", engineConfirm),
			report.NewHistogram("POST latency from arrival", res.Summary.PostMs),
			report.NewHistogram("POST request latency", res.Summary.PostServiceMs),
		},
		Bars:  bars,
		Graph: g,
		Bill:  &fig.AWSBill,
		Usage: &fig.AWSUsage,
	}
}

func toBars(m map[string]int) []report.Count {
	out := make([]report.Count, 0, len(m))
	for k, v := range m {
		out = append(out, report.Count{Label: k, N: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Label < out[j].Label
	})
	return out
}

func writeJSON(path, command string, f saleFlags, fig stack.Figures, v invariants.Verdict) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	violations := make([]string, len(v.Violations))
	for i, x := range v.Violations {
		violations[i] = x.String()
	}
	broken := brokenReservations(v)
	b, err := json.MarshalIndent(map[string]any{
		"command":    command,
		"finishedAt": time.Now().UTC(),
		"options": map[string]any{
			"seats": f.seats, "buyers": f.buyers, "seatsPerBuyer": f.perBuyer, "concurrency": f.concurrency,
			"clockScale": f.scale, "hold": f.hold.String(), "mix": f.mix, "webhookDuplicateRate": f.dupRate,
			"webhookReorder": f.reorder, "faults": faultPlan(f), "seed": f.seed, "lateSuccessPolicy": f.policy,
			"profile": f.arrival, "chaos": f.chaosRates.String(),
		},
		"figures":    fig,
		"violations": violations,
		// The reservations a rule names, for inspect.
		"brokenReservations": broken,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// brokenReservations lists, sorted and once each, the reservations the violations name.
func brokenReservations(v invariants.Verdict) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, x := range v.Violations {
		if x.ReservationID != "" && !seen[x.ReservationID] {
			seen[x.ReservationID] = true
			out = append(out, x.ReservationID)
		}
	}
	sort.Strings(out)
	return out
}
