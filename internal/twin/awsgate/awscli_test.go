package awsgate_test

import (
	"context"
	"encoding/json"
	"github.com/seatsaga/seatsaga/internal/twin/testtools"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
)

// awsCLI runs `aws <args>` against the gate as accessKeyID, with no configuration of the
// machine's own in the way.
func awsCLI(t *testing.T, aws, gateURL, accessKeyID string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, aws, append(args, "--endpoint-url", gateURL, "--region", region, "--output", "json")...)
	none := t.TempDir() + "/none"
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"AWS_ACCESS_KEY_ID="+accessKeyID, "AWS_SECRET_ACCESS_KEY=not-checked",
		"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none, "AWS_MAX_ATTEMPTS=1", "AWS_PAGER=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func TestAWSCLIReadsASecretThroughTheGate(t *testing.T) {
	aws, err := exec.LookPath("aws")
	if err != nil {
		testtools.Missing(t, "the aws CLI is not installed (apt-get install awscli); this check needs it")
	}
	g := startGate(t, awsgate.Options{})
	arn, err := g.CreateSecret("StripeSecretKey", "sk_test_cli")
	if err != nil {
		t.Fatal(err)
	}
	g.AddPrincipal("readerKey", "reader", []deploy.Statement{
		{Actions: []string{"secretsmanager:GetSecretValue"}, Resources: []string{arn}},
	})
	g.AddPrincipal("claimKey", "claim", nil)

	stdout, stderr, err := awsCLI(t, aws, g.URL, "readerKey", "secretsmanager", "get-secret-value", "--secret-id", "StripeSecretKey")
	if err != nil {
		t.Fatalf("aws secretsmanager get-secret-value: %v\n%s", err, stderr)
	}
	var out struct {
		ARN, Name, VersionId, SecretString string
		VersionStages                      []string
		CreatedDate                        any
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("the CLI printed %q: %v", stdout, err)
	}
	if out.SecretString != "sk_test_cli" || out.ARN != arn || out.Name != "StripeSecretKey" || out.VersionId == "" ||
		len(out.VersionStages) != 1 || out.VersionStages[0] != "AWSCURRENT" || out.CreatedDate == nil {
		t.Fatalf("the CLI read %+v", out)
	}

	_, stderr, err = awsCLI(t, aws, g.URL, "claimKey", "secretsmanager", "get-secret-value", "--secret-id", "StripeSecretKey")
	if err == nil || !strings.Contains(stderr, "AccessDeniedException") || !strings.Contains(stderr, "secretsmanager:GetSecretValue") {
		t.Fatalf("a denied read: error %v, stderr %q; want AccessDeniedException", err, stderr)
	}
	_, stderr, err = awsCLI(t, aws, g.URL, "nobodyKey", "secretsmanager", "get-secret-value", "--secret-id", "StripeSecretKey")
	if err == nil || !strings.Contains(stderr, "UnrecognizedClientException") {
		t.Fatalf("an unknown key: error %v, stderr %q; want UnrecognizedClientException", err, stderr)
	}
}
