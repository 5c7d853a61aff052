package app

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// noDynamoDB satisfies inventory.DynamoDB; NewSteps only stores it.
type noDynamoDB struct{ *dynamodb.Client }

type noPayments struct{ payment.Provider }

func TestNewSteps(t *testing.T) {
	base := config.Config{LateSuccessPolicy: "void", Hold: 90 * time.Second, MaxSeats: 4}
	cases := []struct {
		name    string
		cfg     config.Config
		deps    SagaDeps
		wantErr bool
		check   func(t *testing.T, cfg config.Config, deps SagaDeps)
	}{
		{name: "settings reach the steps", cfg: base, deps: SagaDeps{DynamoDB: noDynamoDB{}, Payments: noPayments{}, ReconcileAttempts: 7}},
		{name: "missing clients", cfg: base, deps: SagaDeps{}, wantErr: true},
		{name: "unknown late-success policy", cfg: config.Config{LateSuccessPolicy: "keep"}, deps: SagaDeps{DynamoDB: noDynamoDB{}, Payments: noPayments{}}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := NewSteps(tc.cfg, tc.deps)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if steps.Store == nil || steps.Payments == nil || steps.Now == nil || steps.Log == nil || steps.Metrics == nil {
				t.Fatalf("steps not wired: %+v", steps)
			}
			// The saga talks to the DynamoDB inventory itself, with no adapter in between that
			// could drop what the saga asks it to store.
			if _, ok := steps.Store.(*inventory.Store); !ok {
				t.Fatalf("steps.Store is a %T, want *inventory.Store", steps.Store)
			}
			if tc.cfg.LateSuccessPolicy == "void" {
				if steps.Policy != reservation.LateSuccessVoid || steps.Hold != 90*time.Second || steps.Limits.MaxSeats != 4 || steps.ReconcileAttempts != 7 {
					t.Fatalf("settings lost: %+v", steps)
				}
			}
		})
	}
}

func TestStripeKeyFromEnvironment(t *testing.T) {
	t.Setenv(EnvStripeSecretKey, "sk_test_x")
	key, err := StripeKey(context.Background(), config.Config{}, aws.Config{})
	if err != nil || key != "sk_test_x" {
		t.Fatalf("%q %v", key, err)
	}
	t.Setenv(EnvStripeSecretKey, "")
	if _, err := StripeKey(context.Background(), config.Config{}, aws.Config{}); err == nil {
		t.Fatal("no key and no secret ARN accepted")
	}
}

func TestBuilders(t *testing.T) {
	full := func() *Base {
		return &Base{
			Config: config.Config{StateMachineARN: "arn:aws:states:eu-west-1:000000000000:stateMachine:reservation",
				LateSuccessPolicy: "reacquire", EventBusName: "bus", Tables: tables.Names{Prefix: "t-"}},
			DynamoDB: dynamodb.New(dynamodb.Options{Region: "eu-west-1"}),
			SFN:      sfn.New(sfn.Options{Region: "eu-west-1"}),
			Payments: noPayments{},
		}
	}
	build := map[string]func(b *Base) error{
		"steps":   func(b *Base) error { _, err := Steps(b); return err },
		"api":     func(b *Base) error { _, err := API(b); return err },
		"webhook": func(b *Base) error { _, err := Webhook(b, "whsec_x", 0); return err },
		"sweeper": func(b *Base) error {
			steps, err := Steps(b)
			if err != nil {
				return err
			}
			_, err = Sweeper(b, steps)
			return err
		},
	}
	cases := []struct {
		name    string
		mutate  func(b *Base)
		wantErr map[string]bool
	}{
		{name: "every client given", mutate: func(*Base) {}, wantErr: map[string]bool{}},
		{name: "no DynamoDB", mutate: func(b *Base) { b.DynamoDB = nil },
			wantErr: map[string]bool{"steps": true, "api": true, "webhook": true, "sweeper": true}},
		{name: "no Step Functions", mutate: func(b *Base) { b.SFN = nil },
			wantErr: map[string]bool{"api": true, "webhook": true, "sweeper": true}},
		{name: "no payments", mutate: func(b *Base) { b.Payments = nil },
			wantErr: map[string]bool{"steps": true, "webhook": true, "sweeper": true}},
		{name: "no state machine", mutate: func(b *Base) { b.Config.StateMachineARN = "" },
			wantErr: map[string]bool{"api": true}},
	}
	for _, tc := range cases {
		for name, f := range build {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				b := full()
				tc.mutate(b)
				if err := f(b); (err != nil) != tc.wantErr[name] {
					t.Fatalf("err = %v, want error %v", err, tc.wantErr[name])
				}
			})
		}
	}
}

func TestConsumerAndRelay(t *testing.T) {
	b := &Base{Config: config.Config{EventBusName: "bus", Tables: tables.Names{Prefix: "t-"}}}
	n := Consumer(b, consumer.LogSender{})
	if n.Table != b.Config.Tables.Of(tables.ProcessedEventsTable) {
		t.Fatalf("consumer table %q", n.Table)
	}
	if _, err := Relay(b, nil); err == nil {
		t.Fatal("relay without a bus accepted")
	}
	r, err := Relay(b, relay.NewMemoryBus())
	if err != nil || r.EventBusName != "bus" {
		t.Fatalf("relay %+v %v", r, err)
	}
}

func TestWebhookSecretFromEnvironment(t *testing.T) {
	t.Setenv(EnvStripeWebhookSecret, "whsec_x")
	secret, err := WebhookSecret(context.Background(), config.Config{}, aws.Config{})
	if err != nil || secret != "whsec_x" {
		t.Fatalf("%q %v", secret, err)
	}
	t.Setenv(EnvStripeWebhookSecret, "")
	if _, err := WebhookSecret(context.Background(), config.Config{}, aws.Config{}); err == nil {
		t.Fatal("no secret and no secret ARN accepted")
	}
}
