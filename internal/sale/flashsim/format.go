package flashsim

import (
	"fmt"
	"io"
	"time"
)

// Print writes the result as the lines an operator reads: the sale, each quota's throttles,
// the start queue, the times that matter, and how every buyer was answered.
func (r Result) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "simulated sale: %d buyers arriving within %v for %d seats (%s profile, seed %d)\n",
		c.Buyers, c.Window, c.Seats, c.Profile, c.Seed)
	fmt.Fprintf(w, "  quotas: stage %v per method, account %v; StartExecution %v; state transitions %v\n", c.Stage, c.Account, c.StartExecution, c.StateTransition)
	fmt.Fprintf(w, "throttles\n")
	fmt.Fprintf(w, "  API Gateway stage      %d requests answered 429 (%d seat map reads, %d POSTs, %d status reads let through)\n",
		r.StageThrottled, r.SeatMapReads, r.POSTs, r.StatusReads)
	fmt.Fprintf(w, "  StartExecution         %d of %d calls throttled (each queued, none failed): the api %d calls, %d throttled; the starter %d calls\n",
		r.StartThrottled, r.StartExecutionCalls, r.APIStartCalls, r.StartThrottled, r.StarterStartCalls)
	fmt.Fprintf(w, "  state transitions      %d of %d waited for their token\n", r.TransitionsWaited, r.Transitions)
	fmt.Fprintf(w, "  API function           %d invocations at most at once (Lambda's default account limit: 1,000)\n", r.APIPeakConcurrency)
	fmt.Fprintf(w, "start queue              peak depth %d, oldest start waited %v (if the starter keeps the bucket's pace)\n", r.QueuePeakDepth, round(r.QueuePeakAge))
	fmt.Fprintf(w, "start backlog            %d winners queued without a StartExecution call, the backlog live at the POST's first read (window %v)\n", r.QueuedByBacklog, c.StartBacklogWindow)
	fmt.Fprintf(w, "gate                     %d admitted, %d answered 409 without a Step Functions call\n", r.GateAdmitted, r.GateRefused)
	fmt.Fprintf(w, "times                    last winner's execution started %v; last seat sold %v; last buyer answered %v\n",
		round(r.LastWinnerStarted), round(r.LastSeatSold), round(r.LastAnswered))
	fmt.Fprintf(w, "                         hold p99: %v from the admitted POST, %v from its first try\n", round(r.HoldWaitP99), round(r.FirstPostToHoldP99))
	fmt.Fprintf(w, "figures                  POSTs that lost a seat answered without Step Functions %.1f%%; StartExecution calls per seat sold %.2f\n",
		100*r.LosersTurnedAwayBeforeStart(), r.StartsPerSeatSold())
	fmt.Fprintf(w, "how every buyer was answered (%d)\n", c.Buyers)
	for _, a := range Answers {
		fmt.Fprintf(w, "  %-60s %7d\n", a, r.Answers[a])
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
