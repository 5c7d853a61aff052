// Command local runs seatsaga on this machine with no AWS account (internal/twin/stack):
//
//	go run ./infra/local up                      run the stack until interrupted
//	go run ./infra/local demo                    a one-minute flash sale, checked and reported
//	go run ./infra/local load -buyers 10000 -seats 1000 -out result.json
//	go run ./infra/local inspect <reservationId> look one reservation up in a running `up` stack
//	go run ./infra/local claimrace -seats 200 -buyers 2000
//	go run ./infra/local flashsim                200,000 buyers for 10,000 seats, simulated
//
// demo and load exit non-zero when any invariant fails.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: go run ./infra/local <command> [flags]

commands:
  up          run the whole stack until interrupted; print endpoints, a dev token and curl lines
  demo        run a one-minute flash sale with faults, check every invariant, write reports/demo.html
  load        run a larger sale (flags for buyers, seats, fault rates; -out writes a JSON result)
  inspect ID  show one reservation's execution timeline, items, outbox events and ledger
              (reads the stack file that "up" writes)
  claimrace   race buyers straight through the inventory's Claim and audit for double bookings
  flashsim    simulate a sale too large for this machine (default 200,000 buyers, 10,000 seats)
              under AWS's default quotas: throttles, the start queue, how every buyer was answered
  soak        run -seeds N seeded sales with every fault class on; one line per seed and a total

run "go run ./infra/local <command> -h" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "up":
		err = runUp(ctx, args)
	case "demo":
		err = runSale(ctx, "demo", args)
	case "load":
		err = runSale(ctx, "load", args)
	case "inspect":
		err = runInspect(ctx, args)
	case "claimrace":
		err = runClaimRace(ctx, args)
	case "flashsim":
		err = runFlashSim(args)
	case "soak":
		err = runSoak(ctx, args)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	var failed *invariantsFailed
	switch {
	case errors.As(err, &failed):
		fmt.Fprintln(os.Stderr, "seatsaga local:", err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "seatsaga local:", err)
		os.Exit(2)
	}
}

// invariantsFailed ends demo and load with exit status 1.
type invariantsFailed struct{ violations int }

func (e *invariantsFailed) Error() string {
	return fmt.Sprintf("%d invariant violations", e.violations)
}
