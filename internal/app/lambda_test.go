package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
)

// Variables the product once read and must not any more: endpoint overrides (the harness's
// DYNAMODB_ENDPOINT among them) and secrets in plain text.
const (
	oldDynamoDBEndpoint = "DYNAMODB_ENDPOINT"
	oldSFNEndpoint      = "SFN_ENDPOINT"
	oldStripeKey        = "SEATSAGA_STRIPE_SECRET_KEY"
	oldWebhookSecret    = "SEATSAGA_STRIPE_WEBHOOK_SECRET"
)

// secretsManager is a stand-in for Secrets Manager's GetSecretValue: it answers the secrets it
// holds by ARN, ResourceNotFoundException otherwise, and records what it was asked for.
type secretsManager struct {
	values map[string]string

	mu    sync.Mutex
	asked []string
}

func (s *secretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ SecretId string }
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || json.NewDecoder(r.Body).Decode(&in) != nil {
		http.Error(w, "unexpected call", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.asked = append(s.asked, in.SecretId)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	v, ok := s.values[in.SecretId]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": "ResourceNotFoundException", "Message": "no such secret"})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v})
}

func (s *secretsManager) askedFor() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// awsAt is an SDK configuration whose every client goes to endpoint, as AWS_ENDPOINT_URL
// makes it.
func awsAt(endpoint string) aws.Config {
	return aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
}

const (
	keyARN     = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:StripeSecretKey-AbCdEf"
	webhookARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:StripeWebhookSecret-AbCdEf"
)

// A function's clients reach AWS (or the twin's gate) only where the SDK's configuration says:
// variables of the function's environment, the test harness's DYNAMODB_ENDPOINT among them,
// cannot point them past the gate. DynamoDB Local's checksum workaround follows the endpoint
// the SDK resolved.
func TestClientsGoOnlyWhereTheAWSConfigSends(t *testing.T) {
	overrides := map[string]string{oldDynamoDBEndpoint: "http://127.0.0.1:8000", oldSFNEndpoint: "http://127.0.0.1:8083"}
	cases := []struct {
		name             string
		aws              aws.Config
		wantEndpoint     string // "" means the SDK's own, AWS
		wantNoChecksumOK bool
	}{
		{name: "the local gate", aws: awsAt("http://127.0.0.1:4566"), wantEndpoint: "http://127.0.0.1:4566", wantNoChecksumOK: true},
		{name: "AWS", aws: aws.Config{Region: "eu-west-1"}},
		{name: "a remote endpoint", aws: awsAt("https://vpce.example.com"), wantEndpoint: "https://vpce.example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := runtimeDeps(context.Background(), FnClaim, Runtime{Lookup: config.MapLookup(overrides), AWS: tc.aws})
			if err != nil {
				t.Fatal(err)
			}
			ddb := d.DynamoDB.(*dynamodb.Client).Options()
			if got := aws.ToString(ddb.BaseEndpoint); got != tc.wantEndpoint {
				t.Errorf("DynamoDB goes to %q, want %q", got, tc.wantEndpoint)
			}
			if ddb.DisableValidateResponseChecksum != tc.wantNoChecksumOK {
				t.Errorf("response checksums skipped = %v, want %v", ddb.DisableValidateResponseChecksum, tc.wantNoChecksumOK)
			}
			if got := aws.ToString(d.SFN.(*sfn.Client).Options().BaseEndpoint); got != tc.wantEndpoint {
				t.Errorf("Step Functions goes to %q, want %q", got, tc.wantEndpoint)
			}
		})
	}
}

// The SDK's standard per-service variable is how a process points one client elsewhere, and
// the harness's DYNAMODB_ENDPOINT in the same process changes nothing.
func TestTheSDKsServiceEndpointVariableIsHonoured(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_ENDPOINT_URL": "",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:4566", oldDynamoDBEndpoint: "http://127.0.0.1:8000",
	} {
		t.Setenv(k, v)
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, err := runtimeDeps(context.Background(), FnConsumer, Runtime{Lookup: os.LookupEnv, AWS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ddb := d.DynamoDB.(*dynamodb.Client).Options()
	if got := aws.ToString(ddb.BaseEndpoint); got != "http://127.0.0.1:4566" || !ddb.DisableValidateResponseChecksum {
		t.Fatalf("DynamoDB goes to %q (checksums skipped %v), want AWS_ENDPOINT_URL_DYNAMODB's loopback endpoint", got, ddb.DisableValidateResponseChecksum)
	}
}

// A secret's value never comes from the function's environment, where it could not be
// rotated: a function reads it from Secrets Manager by the ARN its spec gives, and without
// that ARN it does not start, whatever plain value sits beside it.
func TestFunctionsReadSecretsOnlyFromSecretsManager(t *testing.T) {
	sm := &secretsManager{values: map[string]string{keyARN: "sk_test_from_sm", webhookARN: "whsec_from_sm"}}
	srv := httptest.NewServer(sm)
	defer srv.Close()
	plain := map[string]string{oldStripeKey: "sk_test_from_env", oldWebhookSecret: "whsec_from_env"}

	for _, fn := range []string{FnAPI, FnWebhook} {
		_, err := FromEnvironment(context.Background(), fn, Runtime{Lookup: config.MapLookup(plain), AWS: awsAt(srv.URL)})
		if err == nil || !strings.Contains(err.Error(), config.EnvStripeSecretARN) {
			t.Errorf("%s with plain secrets and no ARNs: err = %v, want a failure naming %s", fn, err, config.EnvStripeSecretARN)
		}
	}

	env := map[string]string{config.EnvStripeSecretARN: keyARN, config.EnvStripeWebhookSecretARN: webhookARN}
	for k, v := range plain {
		env[k] = v
	}
	a, err := FromEnvironment(context.Background(), FnWebhook, Runtime{Lookup: config.MapLookup(env), AWS: awsAt(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := a.deps.WebhookSecret.Get(context.Background()); err != nil || v != "whsec_from_sm" {
		t.Fatalf("webhook secret = %q, %v; want Secrets Manager's value", v, err)
	}
	if got := sm.askedFor(); len(got) != 2 || got[0] != keyARN || got[1] != webhookARN {
		t.Fatalf("Secrets Manager was asked for %v, want the key's ARN, then the webhook secret's", got)
	}
}

// An ARN whose secret cannot be read fails the cold start, and the error names the variable
// an operator must check.
func TestAnUnreadableSecretFailsTheColdStartNamingItsVariable(t *testing.T) {
	sm := &secretsManager{values: map[string]string{keyARN: "sk_test_from_sm"}}
	srv := httptest.NewServer(sm)
	defer srv.Close()
	env := map[string]string{config.EnvStripeSecretARN: keyARN, config.EnvStripeWebhookSecretARN: webhookARN}
	_, err := FromEnvironment(context.Background(), FnWebhook, Runtime{Lookup: config.MapLookup(env), AWS: awsAt(srv.URL)})
	var missing *smtypes.ResourceNotFoundException
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), config.EnvStripeWebhookSecretARN) {
		t.Fatalf("err = %v, want Secrets Manager's ResourceNotFoundException naming %s", err, config.EnvStripeWebhookSecretARN)
	}
}
