package stepfunctions_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// scripts/sfn-ops.sh drives every added operation through the AWS CLI against a started
// server, and passes only if each answer is the one it expects.
func TestTheAWSCLIRunsEveryAddedOperation(t *testing.T) {
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the AWS CLI (aws) is not installed")
	}
	srv := stepfunctions.New(stepfunctions.Options{})
	endpoint, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../../scripts/sfn-ops.sh", endpoint)
	out, err := cmd.CombinedOutput()
	t.Logf("sfn-ops.sh:\n%s", out)
	if err != nil {
		t.Fatalf("sfn-ops.sh failed: %v", err)
	}
	if !strings.Contains(string(out), "every operation answered as expected") {
		t.Fatal("sfn-ops.sh did not reach its end")
	}
}
