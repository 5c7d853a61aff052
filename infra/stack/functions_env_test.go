package stack

import (
	"context"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
)

// Every function must build at cold start from what its spec deploys: a function whose spec
// grants no Stripe key must start without one (claim and confirm once exited at cold start on
// AWS because the code wanted a key the template never gave), and a function whose spec
// grants the key must really need it (a grant nothing reads is a permission too many). Each
// function is built by app.FromEnv, the mains' own constructor, with no Stripe secret at all.
func TestEveryFunctionStartsWithTheSecretsItsSpecGrants(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, name := range []string{app.EnvStripeSecretKey, app.EnvStripeWebhookSecret,
		config.EnvStripeSecretARN, config.EnvStripeWebhookSecretARN} {
		t.Setenv(name, "")
	}
	t.Setenv(config.EnvStateMachineARN, "arn:aws:states:eu-west-1:123456789012:stateMachine:seatsaga")
	t.Setenv(config.EnvEventBusName, "seatsaga")
	for _, spec := range Specs() {
		t.Run(spec.Name, func(t *testing.T) {
			_, err := app.FromEnv(context.Background(), spec.Name)
			switch {
			case !spec.StripeKey && err != nil:
				t.Fatalf("the spec grants no Stripe key, and the function does not start without one: %v", err)
			case spec.StripeKey && err == nil:
				t.Fatal("the spec grants the Stripe key, but the function starts without it: drop the grant")
			case spec.StripeKey && !strings.Contains(err.Error(), config.EnvStripeSecretARN):
				t.Fatalf("without its secrets the function fails for another reason: %v", err)
			}
		})
	}
}

// The webhook signing secret likewise: with the Stripe key present, exactly the functions whose
// spec grants the webhook secret fail without it.
func TestOnlyFunctionsGrantedTheWebhookSecretNeedIt(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv(app.EnvStripeSecretKey, "sk_test_dummy")
	for _, name := range []string{app.EnvStripeWebhookSecret, config.EnvStripeSecretARN, config.EnvStripeWebhookSecretARN} {
		t.Setenv(name, "")
	}
	t.Setenv(config.EnvStateMachineARN, "arn:aws:states:eu-west-1:123456789012:stateMachine:seatsaga")
	t.Setenv(config.EnvEventBusName, "seatsaga")
	for _, spec := range Specs() {
		t.Run(spec.Name, func(t *testing.T) {
			_, err := app.FromEnv(context.Background(), spec.Name)
			switch {
			case !spec.WebhookSecret && err != nil:
				t.Fatalf("the spec grants no webhook secret, and the function does not start without one: %v", err)
			case spec.WebhookSecret && (err == nil || !strings.Contains(err.Error(), config.EnvStripeWebhookSecretARN)):
				t.Fatalf("the spec grants the webhook secret, but the function does not need it: %v", err)
			}
		})
	}
}
