package stack

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
)

const (
	startRegion  = "eu-west-1"
	startAccount = "123456789012"
)

// startDeployment renders a spec's environment and policy as a deployment would, with made-up
// ARNs, except that each secret's ARN is that of a secret held by a local Secrets Manager.
type startDeployment struct{ secretARNs map[string]string }

func (d startDeployment) ARN(fn string, r deploy.Resource) string {
	if r.Kind == deploy.Secret {
		return d.secretARNs[r.Name]
	}
	return "arn:aws:" + string(r.Kind) + ":" + startRegion + ":" + startAccount + ":" + r.Name
}

func (startDeployment) Setting(name string) string {
	return map[string]string{
		EnvStage: "dev", EnvTablePrefix: "Seatsaga-dev-", EnvLateSuccessPolicy: "reacquire",
		EnvHoldSeconds: "600", EnvMaxSeats: "10", EnvSweepGraceSeconds: "120", EnvMetricsNamespace: MetricsNamespace + "/dev",
		EnvStateMachineArn: "arn:aws:states:eu-west-1:123456789012:stateMachine:seatsaga", EnvEventBusName: "seatsaga",
	}[name]
}

// startRig is a local Secrets Manager (the twin's gate) holding every secret a spec can name,
// which each function reads under a role allowed exactly what its spec grants, as on AWS.
type startRig struct {
	gate       *awsgate.Gate
	url        string
	deployment startDeployment
}

func newStartRig(t *testing.T) *startRig {
	t.Helper()
	gate, err := awsgate.New(awsgate.Options{Region: startRegion, AccountID: startAccount})
	if err != nil {
		t.Fatal(err)
	}
	url, err := gate.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gate.Close() })
	r := &startRig{gate: gate, url: url, deployment: startDeployment{secretARNs: map[string]string{}}}
	for name, value := range map[string]string{deploy.StripeSecretKey: "sk_test_spec", deploy.StripeWebhookSecret: "whsec_spec"} {
		if r.deployment.secretARNs[name], err = gate.CreateSecret(name, value); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// start builds spec's function as its Lambda main does (app.FromEnvironment, which app.FromEnv
// hands the process environment to) from exactly the environment spec renders, its AWS calls
// signed as a role allowed exactly spec's policy. A withheld secret is dropped from the spec,
// so the function gets neither its ARN variable nor the grant to read it.
func (r *startRig) start(t *testing.T, spec deploy.Function, withheld ...string) error {
	t.Helper()
	spec.Secrets = slices.DeleteFunc(slices.Clone(spec.Secrets), func(s string) bool { return slices.Contains(withheld, s) })
	accessKeyID := "ASIASTART" + strings.ToUpper(spec.Name)
	r.gate.AddAssumedRole(accessKeyID, "seatsaga-"+spec.Name, spec.Name, spec.Policy(r.deployment))
	_, err := app.FromEnvironment(context.Background(), spec.Name, app.Runtime{
		Lookup: config.MapLookup(spec.Environment(r.deployment)),
		AWS: aws.Config{Region: startRegion, BaseEndpoint: aws.String(r.url),
			Credentials: credentials.NewStaticCredentialsProvider(accessKeyID, "secret", "session")},
		Logger: slog.New(slog.DiscardHandler),
	})
	return err
}

// Every function must build at cold start from what its spec deploys: a function whose spec
// grants no Stripe key must start without one (claim and confirm once exited at cold start on
// AWS because the code wanted a key the template never gave), and a function whose spec grants
// the key must really need it (a grant nothing reads is a permission too many). Each function
// is built by app.FromEnvironment from its spec's environment, reading its secrets from
// Secrets Manager under its spec's policy, with and without the Stripe key.
func TestEveryFunctionStartsWithTheSecretsItsSpecGrants(t *testing.T) {
	rig := newStartRig(t)
	for _, spec := range deploy.Functions() {
		t.Run(spec.Name, func(t *testing.T) {
			if err := rig.start(t, spec); err != nil {
				t.Fatalf("the function does not start from its spec's environment and secrets: %v", err)
			}
			grantsKey := slices.Contains(spec.Secrets, deploy.StripeSecretKey)
			err := rig.start(t, spec, deploy.StripeSecretKey)
			switch {
			case !grantsKey && err != nil:
				t.Fatalf("the spec grants no Stripe key, and the function does not start without one: %v", err)
			case grantsKey && err == nil:
				t.Fatal("the spec grants the Stripe key, but the function starts without it: drop the grant")
			case grantsKey && !strings.Contains(err.Error(), config.EnvStripeSecretARN):
				t.Fatalf("without the Stripe key the function fails for another reason: %v", err)
			}
		})
	}
	// Every secret a function read, it read under its own grants.
	for _, d := range rig.gate.Denials() {
		t.Errorf("denied: %+v", d)
	}
}

// The webhook signing secret likewise: with the Stripe key present, exactly the functions whose
// spec grants the webhook secret fail without it.
func TestOnlyFunctionsGrantedTheWebhookSecretNeedIt(t *testing.T) {
	rig := newStartRig(t)
	for _, spec := range deploy.Functions() {
		t.Run(spec.Name, func(t *testing.T) {
			grantsSecret := slices.Contains(spec.Secrets, deploy.StripeWebhookSecret)
			err := rig.start(t, spec, deploy.StripeWebhookSecret)
			switch {
			case !grantsSecret && err != nil:
				t.Fatalf("the spec grants no webhook secret, and the function does not start without one: %v", err)
			case grantsSecret && (err == nil || !strings.Contains(err.Error(), config.EnvStripeWebhookSecretARN)):
				t.Fatalf("the spec grants the webhook secret, but the function does not need it: %v", err)
			}
		})
	}
}
