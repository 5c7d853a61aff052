package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/console"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// stackFile is what `up` writes so that `inspect` (another process) finds the running stack.
type stackFile struct {
	Endpoints       stack.Endpoints `json:"endpoints"`
	TablePrefix     string          `json:"tablePrefix"`
	StateMachineARN string          `json:"stateMachineArn"`
	// Admin serves the payment simulator's ledger (GET /ledger), which has no Stripe API.
	Admin string `json:"admin"`
	// Console is the local Step Functions console (internal/twin/console).
	Console string `json:"console,omitempty"`
}

const defaultStackFile = "reports/local-stack.json"

func runUp(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	seats := fs.Int("seats", 100, "seats of the event created at start")
	eventID := fs.String("event", "demo-event", "event created at start")
	customer := fs.String("customer", "customer-1", "customer the printed dev token is for")
	scale := fs.Float64("scale", 1, "clock compression (1: wall clock)")
	hold := fs.Duration("hold", 10*time.Minute, "hold duration in stack time")
	statePath := fs.String("state", defaultStackFile, "where to write the endpoints for `inspect`")
	logPath := fs.String("log", "reports/up.log", "file for the stack's JSON logs (empty: discard)")
	consoleAddr := fs.String("console", "127.0.0.1:0", "loopback address of the Step Functions console (empty: none)")
	prices := pricingFlags{prices: "9000,6500,4000", row: 10, currency: "EUR"}
	prices.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	pricing, err := prices.pricing()
	if err != nil {
		return err
	}
	logger, closeLog, err := openLog(*logPath)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg := stack.Config{Hold: *hold, Logger: logger, Pricing: pricing}
	if *scale != 1 {
		cfg.Clock = clock.NewScaled(clock.Real{}, *scale)
		cfg.WebhookTolerance = time.Duration(*scale) * 5 * time.Minute
	}
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	st, err := stack.Start(startCtx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer st.Close()
	ids, err := st.SeedEvent(ctx, *eventID, *seats)
	if err != nil {
		return err
	}
	admin, closeAdmin, err := serveAdmin(st)
	if err != nil {
		return err
	}
	defer closeAdmin()
	consoleURL, consoleLine := "", "(not started: -console is empty)"
	if *consoleAddr != "" {
		if host, _, err := net.SplitHostPort(*consoleAddr); err != nil || !(host == "localhost" || net.ParseIP(host).IsLoopback()) {
			return fmt.Errorf("up: -console %q: the console redrives executions and must listen on loopback only", *consoleAddr)
		}
		// The console reads the twin through the stack's own Step Functions client (the
		// unthrottled inspection endpoint): a person looking is not the account's traffic.
		url, closeConsole, err := console.Serve(*consoleAddr, console.New(st.SFN, st.Inspector(), logger))
		if err != nil {
			return err
		}
		defer func() { _ = closeConsole() }()
		consoleURL, consoleLine = url, url+"/#/executions"
	}
	if err := writeStackFile(*statePath, stackFile{Endpoints: st.Endpoints, TablePrefix: st.Names.Prefix,
		StateMachineARN: st.StateMachineARN, Admin: admin, Console: consoleURL}); err != nil {
		return err
	}
	token, err := st.Token(*customer)
	if err != nil {
		return err
	}
	e := st.Endpoints
	cur := strings.ToLower(pricing.CurrencyOrDefault())
	fmt.Printf(`seatsaga local stack is up (Ctrl-C stops it)

  API (API Gateway)      %s
  Step Functions         %s   state machine %s
  Lambda                 %s
  DynamoDB Local         %s   table prefix %q
  AWS (functions' gate)  %s   enforces each function's grants; Secrets Manager, EventBridge
  Cognito (user pool)    %s
  payment simulator      %s
  ledger (admin)         %s/ledger
  console                %s   state machines, executions, Redrive
  logs                   %s
  stack file             %s

event %q has %d seats (%s … %s), priced %s

The server charges the sum of the seats' prices. "amount" and "currency" are optional: send
them to state the price you showed the buyer, and a different price is refused with
409 price_changed (the answer carries the current "amount" and "currency").

dev token for %q (valid 24 h):
  export TOKEN=%s

book a seat (charged its price, %d minor units of %s):
  curl -s -X POST %s/events/%s/reservations \
    -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: my-first-booking" \
    -H "Content-Type: application/json" \
    -d '{"seatIds":["%s"],"paymentMethod":"pm_card_visa"}'

book one, stating the price you expect (refused with 409 price_changed if it differs):
  curl -s -X POST %s/events/%s/reservations \
    -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: my-second-booking" \
    -H "Content-Type: application/json" \
    -d '{"seatIds":["%s"],"amount":%d,"currency":"%s","paymentMethod":"pm_card_visa"}'

follow it (use the reservationId from the answer):
  curl -s %s/reservations/<reservationId> -H "Authorization: Bearer $TOKEN"
  go run ./infra/local inspect <reservationId>
  or open %s/#/execution/%s<reservationId>

cancel while paying (e.g. with "paymentMethod":"pm_sim_threeDSecureAbandoned"):
  curl -s -X DELETE %s/reservations/<reservationId> -H "Authorization: Bearer $TOKEN"
`, e.API, e.StepFunctions, st.StateMachineARN, e.Lambda, e.DynamoDB, st.Names.Prefix, e.AWS, e.Cognito, e.Payments, admin, consoleLine, *logPath, *statePath,
		*eventID, len(ids), ids[0], ids[len(ids)-1], describePricing(pricing, len(ids)), *customer, token,
		pricing.PriceOf(0), cur, e.API, *eventID, ids[0],
		e.API, *eventID, ids[len(ids)-1], pricing.PriceOf(len(ids)-1), cur,
		e.API, consoleOr(consoleURL), st.ExecutionARN(""), e.API)
	<-ctx.Done()
	fmt.Println("\nstopping…")
	return nil
}

// consoleOr names the console's URL in the printout, or says how to get one.
func consoleOr(url string) string {
	if url == "" {
		return "(start up with -console)"
	}
	return url
}

func serveAdmin(st *stack.Stack) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ledger", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st.Payments.Ledger())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

func writeStackFile(path string, s stackFile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
