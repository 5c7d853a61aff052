package wiring

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
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
		{name: "local Step Functions endpoint builds the task reporter", cfg: config.Config{SFNEndpoint: "http://127.0.0.1:1"},
			deps: SagaDeps{DynamoDB: noDynamoDB{}, Payments: noPayments{}}},
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
			if tc.cfg.SFNEndpoint != "" && steps.Tasks == nil {
				t.Fatal("no task reporter for a local Step Functions endpoint")
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

func TestReasonMarksNotifications(t *testing.T) {
	if got := reason("late_payment", true); got != "late_payment; notify_customer" {
		t.Fatal(got)
	}
	if got := reason("hold_expired", false); got != "hold_expired" {
		t.Fatal(got)
	}
}
