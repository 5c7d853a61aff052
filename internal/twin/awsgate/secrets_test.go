package awsgate_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
)

func TestCreateSecretReturnsAnARNWithSixRandomCharacters(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	arn, err := g.CreateSecret("StripeSecretKey", "sk_test_1")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^arn:aws:secretsmanager:us-east-1:000000000000:secret:StripeSecretKey-[A-Za-z0-9]{6}$`)
	if !want.MatchString(arn) {
		t.Fatalf("ARN %q does not match %s", arn, want)
	}
	if _, err := g.CreateSecret("StripeSecretKey", "again"); err == nil {
		t.Fatal("a second secret of the same name was created")
	}
	if _, err := g.CreateSecret("no spaces allowed", "x"); err == nil {
		t.Fatal("a secret with an invalid name was created")
	}
}

func TestGetSecretValueIsAllowedOnlyOnGrantedSecrets(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	g := startGate(t, awsgate.Options{Clock: clock.NewFake(created)})
	keyARN, err := g.CreateSecret("StripeSecretKey", "sk_test_1")
	if err != nil {
		t.Fatal(err)
	}
	g.AddPrincipal("capture-key", "capture", []deploy.Statement{
		{Actions: []string{"secretsmanager:GetSecretValue"}, Resources: []string{keyARN}},
	})
	g.AddPrincipal("claim-key", "claim", nil)
	ctx := context.Background()

	for _, id := range []string{"StripeSecretKey", keyARN} {
		out, err := g.secrets("capture-key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			t.Fatalf("GetSecretValue(%s): %v", id, err)
		}
		if aws.ToString(out.SecretString) != "sk_test_1" || aws.ToString(out.ARN) != keyARN ||
			aws.ToString(out.Name) != "StripeSecretKey" || aws.ToString(out.VersionId) == "" ||
			!slices.Equal(out.VersionStages, []string{"AWSCURRENT"}) || !aws.ToTime(out.CreatedDate).Equal(created) {
			t.Fatalf("GetSecretValue(%s) = %+v", id, out)
		}
	}

	_, err = g.secrets("claim-key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("StripeSecretKey")})
	wantAccessDenied(t, err, "secretsmanager:GetSecretValue", keyARN)
}

func TestGetSecretValueOfAMissingSecretIsNotFoundOnlyForWhoMayReadIt(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	g.AddPrincipal("reader-key", "reader", []deploy.Statement{
		{Actions: []string{"secretsmanager:GetSecretValue"}, Resources: []string{"arn:aws:secretsmanager:" + region + ":" + account + ":secret:*"}},
	})
	g.AddPrincipal("claim-key", "claim", nil)
	ctx := context.Background()

	_, err := g.secrets("reader-key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("Missing")})
	apiErr := wantAPIError(t, err, "ResourceNotFoundException")
	if apiErr.ErrorMessage() != "Secrets Manager can't find the specified secret." {
		t.Fatalf("message = %q", apiErr.ErrorMessage())
	}
	_, err = g.secrets("claim-key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("Missing")})
	wantAccessDenied(t, err, "secretsmanager:GetSecretValue", "arn:aws:secretsmanager:"+region+":"+account+":secret:Missing")
}

func TestPutSecretValueRotatesTheCurrentVersion(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	arn, err := g.CreateSecret("StripeWebhookSecret", "whsec_old")
	if err != nil {
		t.Fatal(err)
	}
	g.AddPrincipal("rotator-key", "rotator", []deploy.Statement{
		{Actions: []string{"secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"}, Resources: []string{arn}},
	})
	g.AddPrincipal("webhook-key", "webhook", []deploy.Statement{
		{Actions: []string{"secretsmanager:GetSecretValue"}, Resources: []string{arn}},
	})
	ctx := context.Background()
	rotator := g.secrets("rotator-key")
	before, err := rotator.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}

	put, err := rotator.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String("StripeWebhookSecret"), SecretString: aws.String("whsec_new")})
	if err != nil {
		t.Fatalf("PutSecretValue: %v", err)
	}
	if aws.ToString(put.VersionId) == aws.ToString(before.VersionId) || !slices.Equal(put.VersionStages, []string{"AWSCURRENT"}) || aws.ToString(put.ARN) != arn {
		t.Fatalf("PutSecretValue = %+v, want a new AWSCURRENT version of %s", put, arn)
	}

	current, err := g.secrets("webhook-key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(current.SecretString) != "whsec_new" || aws.ToString(current.VersionId) != aws.ToString(put.VersionId) {
		t.Fatalf("current = %q version %s, want whsec_new version %s", aws.ToString(current.SecretString), aws.ToString(current.VersionId), aws.ToString(put.VersionId))
	}
	previous, err := rotator.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn), VersionStage: aws.String("AWSPREVIOUS")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(previous.SecretString) != "whsec_old" || aws.ToString(previous.VersionId) != aws.ToString(before.VersionId) {
		t.Fatalf("AWSPREVIOUS = %q version %s, want the old value and version", aws.ToString(previous.SecretString), aws.ToString(previous.VersionId))
	}

	_, err = g.secrets("webhook-key").PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(arn), SecretString: aws.String("mine")})
	wantAccessDenied(t, err, "secretsmanager:PutSecretValue", arn)
}

func TestPutSecretValueWithTheSameRequestTokenIsOneVersion(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	if _, err := g.CreateSecret("StripeSecretKey", "v1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin := g.secrets(adminKey)
	token := "00000000-0000-4000-8000-000000000001"
	put := func(value string) (*secretsmanager.PutSecretValueOutput, error) {
		return admin.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String("StripeSecretKey"),
			ClientRequestToken: aws.String(token), SecretString: aws.String(value)})
	}
	first, err := put("v2")
	if err != nil {
		t.Fatal(err)
	}
	again, err := put("v2")
	if err != nil || aws.ToString(again.VersionId) != token || aws.ToString(first.VersionId) != token {
		t.Fatalf("repeated PutSecretValue = %+v, %v; want version %s", again, err, token)
	}
	_, err = put("v3")
	wantAPIError(t, err, "ResourceExistsException")
}
