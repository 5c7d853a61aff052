package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/seatsaga/seatsaga/infra/ops/catalog"
	"github.com/seatsaga/seatsaga/infra/ops/smoke"
)

// smokeTest is `smoke`: create a seat of its own (unless told which to buy), then buy it.
func smokeTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, af := newFlagSet("smoke", stderr)
	cognitoEndpoint := fs.String("cognito-endpoint", "", "Cognito user pools endpoint override")
	secretsEndpoint := fs.String("secretsmanager-endpoint", "", "Secrets Manager endpoint override")
	email := fs.String("email", "seatsaga-smoke@example.com", "the test user, created in the user pool on first use (no email is sent)")
	event := fs.String("event", "seatsaga-smoke", "the event of the seat to buy")
	seat := fs.String("seat", "", "an AVAILABLE seat of --event to buy (default: a new seat created for this run)")
	price := fs.Int64("price", 100, "the new seat's price in minor units")
	currency := fs.String("currency", "EUR", "the new seat's currency")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for CONFIRMED and PAID")
	prefix := fs.String("table-prefix", "", "table name prefix (default: found from the stack)")
	var t smoke.Target
	fs.StringVar(&t.APIURL, "api-url", "", "the API's base URL (default: the stack's "+outApiURL+" output)")
	fs.StringVar(&t.UserPoolID, "user-pool-id", "", "the user pool (default: the stack's "+outUserPoolID+" output)")
	fs.StringVar(&t.ClientID, "client-id", "", "the app client (default: the stack's "+outUserPoolClientID+" output)")
	fs.StringVar(&t.StripeSecretARN, "stripe-secret-arn", "", "the Stripe key's secret (default: the stack's "+outStripeSecretARN+" output)")
	fs.StringVar(&t.StateMachineARN, "state-machine-arn", "", "the saga (default: the stack's "+outStateMachineARN+" output)")
	fs.StringVar(&t.StripeAPIBase, "stripe-api-base", smoke.DefaultStripeAPIBase, "Stripe's API")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("smoke: unexpected arguments %q", fs.Args())
	}
	cfg, err := af.config(ctx)
	if err != nil {
		return err
	}
	fields := []struct {
		dst    *string
		output string
		flag   string
	}{
		{&t.APIURL, outApiURL, "api-url"}, {&t.UserPoolID, outUserPoolID, "user-pool-id"},
		{&t.ClientID, outUserPoolClientID, "client-id"}, {&t.StripeSecretARN, outStripeSecretARN, "stripe-secret-arn"},
		{&t.StateMachineARN, outStateMachineARN, "state-machine-arn"},
	}
	needStack := *seat == "" && *prefix == ""
	for _, f := range fields {
		needStack = needStack || *f.dst == ""
	}
	st, err := af.describe(ctx, cfg, needStack)
	if err != nil {
		return err
	}
	for _, f := range fields {
		if *f.dst == "" {
			*f.dst = st.Outputs[f.output]
		}
		if *f.dst == "" {
			return fmt.Errorf("smoke: stack %s has no %s output: pass --%s", st.Name, f.output, f.flag)
		}
	}

	loader := &catalog.Loader{DB: af.dynamoDB(cfg), Table: seatsTable(*prefix, st)}
	report, err := smoke.Run(ctx, smoke.Config{
		Target:  t,
		Cognito: cip.NewFromConfig(cfg, func(o *cip.Options) { o.BaseEndpoint = endpoint(*cognitoEndpoint) }),
		Secrets: secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = endpoint(*secretsEndpoint) }),
		Email:   *email, EventID: *event, SeatID: *seat, Timeout: *timeout, Progress: stdout,
		NewSeat: func(ctx context.Context) (string, error) {
			return createSmokeSeat(ctx, loader, *event, *price, *currency)
		},
	})
	if report.ExecutionARN != "" {
		fmt.Fprintf(stdout, "execution  %s\n", report.ExecutionARN)
		if report.ConsoleURL != "" {
			fmt.Fprintf(stdout, "console    %s\n", report.ConsoleURL)
		}
	}
	if err != nil {
		return fmt.Errorf("smoke: %w", err)
	}
	fmt.Fprintf(stdout, "smoke test passed: seat %s of event %s sold to %s for %d %s in %s\n",
		report.SeatID, report.EventID, report.Email, report.Amount, report.Currency, report.Took.Round(100*time.Millisecond))
	return nil
}

// createSmokeSeat loads a one-seat file through the same checks and writes as `seats load`,
// so every run buys a seat of its own and never one of a real sale.
func createSmokeSeat(ctx context.Context, l *catalog.Loader, eventID string, price int64, currency string) (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("smoke: name the seat: %w", err)
	}
	seatID := "smoke-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
	raw, err := json.Marshal(map[string]any{
		"eventId": eventID,
		"seats":   []map[string]any{{"seatId": seatID, "priceMinor": price, "currency": currency}},
	})
	if err != nil {
		return "", fmt.Errorf("smoke: %w", err)
	}
	f, err := catalog.Parse("the smoke seat", raw)
	if err != nil {
		return "", fmt.Errorf("smoke: %w", err)
	}
	plan, err := l.Plan(ctx, f)
	if err != nil {
		return "", fmt.Errorf("smoke: create the seat: %w", err)
	}
	if _, err := l.Apply(ctx, f, plan); err != nil {
		return "", fmt.Errorf("smoke: create the seat: %w", err)
	}
	return seatID, nil
}
