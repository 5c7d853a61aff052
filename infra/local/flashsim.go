package main

import (
	"encoding/json"
	"flag"
	"os"

	"github.com/seatsaga/seatsaga/internal/sale/flashsim"
)

// runFlashSim simulates a sale the local stack cannot run on one machine, with AWS's default
// quotas unless the flags raise them (to see what a raised quota buys).
func runFlashSim(args []string) error {
	c := flashsim.Defaults()
	fs := flag.NewFlagSet("flashsim", flag.ContinueOnError)
	fs.IntVar(&c.Buyers, "buyers", c.Buyers, "buyers")
	fs.IntVar(&c.Seats, "seats", c.Seats, "seats")
	fs.DurationVar(&c.Window, "window", c.Window, "time over which buyers arrive")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.StringVar(&c.Profile, "profile", c.Profile, "seat choice: uniform or hot")
	fs.Float64Var(&c.Stage.RefillPerSecond, "stage-rate", c.Stage.RefillPerSecond, "API stage rate limit of each method, requests per second")
	fs.IntVar(&c.Stage.Size, "stage-burst", c.Stage.Size, "API stage burst limit")
	fs.Float64Var(&c.Account.RefillPerSecond, "account-rate", c.Account.RefillPerSecond, "API Gateway account rate limit (all APIs of the Region)")
	fs.IntVar(&c.Account.Size, "account-burst", c.Account.Size, "API Gateway account burst limit")
	fs.Float64Var(&c.StartExecution.RefillPerSecond, "start-rate", c.StartExecution.RefillPerSecond, "StartExecution refill per second")
	fs.IntVar(&c.StartExecution.Size, "start-burst", c.StartExecution.Size, "StartExecution bucket size")
	fs.Float64Var(&c.StateTransition.RefillPerSecond, "transition-rate", c.StateTransition.RefillPerSecond, "state transitions refill per second")
	fs.IntVar(&c.StateTransition.Size, "transition-burst", c.StateTransition.Size, "state-transition bucket size")
	fs.DurationVar(&c.StartBacklogWindow, "start-backlog-window", c.StartBacklogWindow, "how long the start backlog lasts after a throttled start or the starter's (0: no backlog signal)")
	fs.DurationVar(&c.StatusPoll, "poll", c.StatusPoll, "how often a buyer answered 202 reads the reservation (0: never)")
	out := fs.String("out", "", "write the result as JSON here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := flashsim.Run(c)
	if err != nil {
		return err
	}
	res.Print(os.Stdout)
	if *out == "" {
		return nil
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}
