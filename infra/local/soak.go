package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// soakChaos is every fault class the soak turns on, uncapped. Rates are per opportunity: a
// DynamoDB call, a buyer, a saga invocation, a provider call, or (provider-down) a quarter
// second of wall time in which the saga called the provider, a webhook window the same), a
// scheduled sweep, or a function in a quarter second (clock-skew), and for
// stepfunctions-throttle how far its quotas shrink.
const soakChaos = "dynamodb-throttle=0.004,dynamodb-internal-error=0.002,dynamodb-response-lost=0.006," +
	"dynamodb-transaction-conflict=0.004," +
	"customer-cancel=0.1,customer-retry-in-flight=0.1," +
	"lambda-fail-before=0.02,lambda-crash-after=0.02,lambda-timeout=0.01,lambda-cold-start-failure=0.01," +
	"provider-fail-before=0.03,provider-rate-limited=0.03,provider-lose-response=0.04,provider-slow=0.03,provider-down=0.02," +
	"webhook-duplicated=0.02,webhook-reordered=0.02,webhook-delayed=0.02,webhook-not-delivered=0.02,webhook-rotated-secret=0.02," +
	"stepfunctions-throttle=0.9,stepfunctions-response-lost=0.02," +
	"sweeper-crash=0.3,sweeper-concurrent=0.4,clock-skew=0.005"

// soakSeed is what one seed's sale came to.
type soakSeed struct {
	Seed               int64
	Sold, Paid         int
	Refunded, Backlog  int
	RulesPassed, Rules int
	Faults             map[load.FaultClass]int
	Pass               bool
	Wall               time.Duration
	Err                string
}

// runSoak runs one seeded sale after another, each on a fresh stack with every fault class on,
// prints a line per seed and a total, and writes a failed seed's JSON result, its broken
// reservations and their inspection under -dir.
func runSoak(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	seeds := fs.Int("seeds", 5, "how many seeded sales to run")
	first := fs.Int64("first-seed", 1, "the first seed; the others follow it")
	dir := fs.String("dir", "reports/soak", "where a failed seed's result and inspection go")
	chaos := fs.String("chaos", soakChaos, "the fault classes and rates (see load -chaos)")
	buyers := fs.Int("buyers", 300, "buyers per sale")
	seats := fs.Int("seats", 60, "seats per sale")
	scale := fs.Float64("scale", 20, "clock compression")
	hold := fs.Duration("hold", 5*time.Minute, "hold duration in stack time (5m at -scale 20 expires after 15 s of wall time)")
	// A short grace makes the sweeps race the sagas on holds just past their deadline, so
	// that the sweeper faults (a crash mid-batch, a second sweeper) strike sweeps with work.
	grace := fs.Duration("sweep-grace", time.Second, "how long past a hold's deadline the sweeper leaves it to its saga, in stack time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seeds <= 0 {
		return fmt.Errorf("-seeds must be positive")
	}
	out := os.Stdout
	fmt.Fprintf(out, "soak: %d seeds from %d, %d buyers for %d seats each, clock ×%g, hold %s, sweep grace %s, chaos %s\n\n",
		*seeds, *first, *buyers, *seats, *scale, *hold, *grace, *chaos)
	var results []soakSeed
	failed := 0
	for i := 0; i < *seeds; i++ {
		seed := *first + int64(i)
		saleArgs := []string{"-seed", fmt.Sprint(seed), "-buyers", fmt.Sprint(*buyers), "-seats", fmt.Sprint(*seats),
			"-scale", fmt.Sprint(*scale), "-hold", hold.String(), "-sweep-grace", grace.String(), "-chaos", *chaos, "-faults=false", "-fault-cap", "0",
			"-report", "", "-log", filepath.Join(*dir, fmt.Sprintf("seed-%d.log", seed))}
		r := soakOne(ctx, saleArgs, seed, *dir)
		results = append(results, r)
		if !r.Pass {
			failed++
		}
		fmt.Fprintln(out, soakLine(r))
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, soakTotal(results))
	if failed > 0 {
		return fmt.Errorf("soak: %d of %d seeds failed; see %s", failed, len(results), *dir)
	}
	return nil
}

// soakOne runs one seed's sale as load would with saleArgs.
func soakOne(ctx context.Context, saleArgs []string, seed int64, dir string) soakSeed {
	r := soakSeed{Seed: seed}
	start := time.Now()
	fail := func(err error) soakSeed {
		r.Err, r.Wall = err.Error(), time.Since(start)
		return r
	}
	f, err := parseSaleFlags("load", saleArgs)
	if err != nil {
		return fail(err)
	}
	mix, err := parseMix(f.mix)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	logger, closeLog, err := openLog(f.logPath)
	if err != nil {
		return fail(err)
	}
	defer closeLog()
	// A seed's sale is small; its waits are the compressed clock's, not the load command's.
	f.buyerTimeout, f.settle = 3*time.Minute, 3*time.Minute
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	st, err := stack.Start(startCtx, stackConfig(f, logger))
	cancel()
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	res, err := st.RunSale(ctx, stack.SaleOptions{
		EventID: fmt.Sprintf("soak-%d", seed), Seats: f.seats, Buyers: f.buyers, SeatsPerBuyer: f.perBuyer, Mix: mix,
		Seed: f.seed, Concurrency: f.concurrency, PollInterval: f.poll, Profile: f.arrival, HotShare: f.hotShare,
		BuyerTimeout: f.buyerTimeout, SettleTimeout: f.settle, SampleInterval: f.sample, ClockScale: f.scale,
	})
	if err != nil {
		return fail(err)
	}
	fig := res.Figures()
	r.Sold, r.Paid, r.Refunded, r.Backlog = res.Verdict.SoldSeats, res.Verdict.PaidSeats, fig.RefundedReservations, fig.Backlog
	r.RulesPassed, r.Rules, r.Faults = fig.RulesPassed, fig.RulesTotal, res.Faults
	r.Wall = time.Since(start)
	r.Pass = res.Verdict.OK() && res.Settled
	if !res.Settled {
		r.Err = "the stack did not settle"
	}
	if r.Pass {
		return r
	}
	// A failed seed leaves what inspect shows for each broken reservation, read from the
	// stack before it closes, and the JSON result with the command that replays it.
	command := "go run ./infra/local load " + strings.Join(quoteArgs(saleArgs), " ")
	if err := writeJSON(filepath.Join(dir, fmt.Sprintf("seed-%d.json", seed)), command, f, fig, res.Verdict); err != nil {
		r.Err = err.Error()
	}
	file, err := os.Create(filepath.Join(dir, fmt.Sprintf("seed-%d.inspect.txt", seed)))
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer file.Close()
	fmt.Fprintf(file, "%s\n\nreplay: %s\n", res.Verdict, command)
	for _, id := range brokenReservations(res.Verdict) {
		fmt.Fprintf(file, "\n──── %s ────\n", id)
		if err := st.Inspector().Inspect(ctx, file, id); err != nil {
			fmt.Fprintf(file, "inspect: %v\n", err)
		}
	}
	return r
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " ,=/") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func soakLine(r soakSeed) string {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	line := fmt.Sprintf("seed %-4d %s  sold %3d  paid %3d  refunded %3d  backlog %2d  rules %d/%d  %5.0fs  faults: %s",
		r.Seed, verdict, r.Sold, r.Paid, r.Refunded, r.Backlog, r.RulesPassed, r.Rules, r.Wall.Seconds(), load.InjectedLine(r.Faults))
	if r.Err != "" {
		line += "  error: " + r.Err
	}
	return line
}

func soakTotal(rs []soakSeed) string {
	var t soakSeed
	t.Faults = map[load.FaultClass]int{}
	passed := 0
	for _, r := range rs {
		t.Sold += r.Sold
		t.Paid += r.Paid
		t.Refunded += r.Refunded
		t.Backlog += r.Backlog
		t.Wall += r.Wall
		for c, n := range r.Faults {
			t.Faults[c] += n
		}
		if r.Pass {
			passed++
		}
	}
	return fmt.Sprintf("total: %d of %d seeds passed  sold %d  paid %d  refunded %d  backlog %d  %.0fs\nfaults: %s",
		passed, len(rs), t.Sold, t.Paid, t.Refunded, t.Backlog, t.Wall.Seconds(), load.InjectedLine(t.Faults))
}
