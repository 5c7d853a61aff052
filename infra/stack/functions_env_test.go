package stack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// startResolver renders a spec's environment as a deployment would, with made-up ARNs, except
// that every secret's ARN is empty: no function can fetch a secret, so one that needs it fails.
type startResolver struct{}

func (startResolver) ARN(fn string, r deploy.Resource) string {
	if r.Kind == deploy.Secret {
		return ""
	}
	return "arn:aws:" + string(r.Kind) + ":eu-west-1:123456789012:" + r.Name
}

func (startResolver) Setting(name string) string {
	return map[string]string{
		EnvStage: "dev", EnvTablePrefix: "Seatsaga-dev-", EnvLateSuccessPolicy: "reacquire",
		EnvHoldSeconds: "600", EnvMaxSeats: "10", EnvSweepGraceSeconds: "120", EnvMetricsNamespace: MetricsNamespace,
		EnvStateMachineArn: "arn:aws:states:eu-west-1:123456789012:stateMachine:seatsaga", EnvEventBusName: "seatsaga",
	}[name]
}

// startWithSpecEnvironment gives the process exactly the environment spec renders (secrets'
// ARNs empty), every other variable any spec or app reads cleared, and extra on top.
func startWithSpecEnvironment(t *testing.T, spec deploy.Function, extra map[string]string) error {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	unset := []string{app.EnvStripeSecretKey, app.EnvStripeWebhookSecret}
	for _, f := range deploy.Functions() {
		unset = append(unset, f.Env...)
	}
	for _, name := range deploy.SecretEnv {
		unset = append(unset, name)
	}
	for _, name := range unset {
		t.Setenv(name, "")
	}
	for k, v := range spec.Environment(startResolver{}) {
		t.Setenv(k, v)
	}
	for k, v := range extra {
		t.Setenv(k, v)
	}
	_, err := app.FromEnv(context.Background(), spec.Name)
	return err
}

// Every function must build at cold start from what its spec deploys: a function whose spec
// grants no Stripe key must start without one (claim and confirm once exited at cold start on
// AWS because the code wanted a key the template never gave), and a function whose spec grants
// the key must really need it (a grant nothing reads is a permission too many). Each function
// is built by app.FromEnv, the mains' own constructor, from its spec's environment and no
// Stripe secret at all.
func TestEveryFunctionStartsWithTheSecretsItsSpecGrants(t *testing.T) {
	for _, spec := range deploy.Functions() {
		t.Run(spec.Name, func(t *testing.T) {
			grantsKey := slices.Contains(spec.Secrets, deploy.StripeSecretKey)
			err := startWithSpecEnvironment(t, spec, nil)
			switch {
			case !grantsKey && err != nil:
				t.Fatalf("the spec grants no Stripe key, and the function does not start from its spec's environment: %v", err)
			case grantsKey && err == nil:
				t.Fatal("the spec grants the Stripe key, but the function starts without it: drop the grant")
			case grantsKey && !strings.Contains(err.Error(), config.EnvStripeSecretARN):
				t.Fatalf("without its secrets the function fails for another reason: %v", err)
			}
		})
	}
}

// The webhook signing secret likewise: with the Stripe key present, exactly the functions whose
// spec grants the webhook secret fail without it.
func TestOnlyFunctionsGrantedTheWebhookSecretNeedIt(t *testing.T) {
	for _, spec := range deploy.Functions() {
		t.Run(spec.Name, func(t *testing.T) {
			grantsSecret := slices.Contains(spec.Secrets, deploy.StripeWebhookSecret)
			err := startWithSpecEnvironment(t, spec, map[string]string{app.EnvStripeSecretKey: "sk_test_dummy"})
			switch {
			case !grantsSecret && err != nil:
				t.Fatalf("the spec grants no webhook secret, and the function does not start without one: %v", err)
			case grantsSecret && (err == nil || !strings.Contains(err.Error(), config.EnvStripeWebhookSecretARN)):
				t.Fatalf("the spec grants the webhook secret, but the function does not need it: %v", err)
			}
		})
	}
}
