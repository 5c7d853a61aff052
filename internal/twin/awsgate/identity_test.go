package awsgate

import (
	"strings"
	"testing"
)

const testSignature = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseAuthorizationReadsTheCredentialScope(t *testing.T) {
	h := "AWS4-HMAC-SHA256 Credential=claim-key/20261201/us-east-1/dynamodb/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + testSignature
	got, err := parseAuthorization(h)
	if err != nil {
		t.Fatalf("parseAuthorization: %v", err)
	}
	want := credential{AccessKeyID: "claim-key", Date: "20261201", Region: "us-east-1", Service: "dynamodb"}
	if got != want {
		t.Fatalf("credential = %+v, want %+v", got, want)
	}
}

func TestParseAuthorizationRefusesMalformedHeaders(t *testing.T) {
	valid := func(scope string) string {
		return "AWS4-HMAC-SHA256 Credential=" + scope + ", SignedHeaders=host, Signature=" + testSignature
	}
	cases := []struct {
		name, header, wantMessage string
	}{
		{"no header", "", "no Authorization header"},
		{"another algorithm", "AWS4-ECDSA-P256-SHA256 Credential=k/20261201/us-east-1/dynamodb/aws4_request", "must use"},
		{"no credential", "AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" + testSignature, "'Credential'"},
		{"no signed headers", "AWS4-HMAC-SHA256 Credential=k/20261201/us-east-1/dynamodb/aws4_request, Signature=" + testSignature, "'SignedHeaders'"},
		{"a short signature", "AWS4-HMAC-SHA256 Credential=k/20261201/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=abc", "'Signature'"},
		{"a scope of four parts", valid("k/20261201/us-east-1/aws4_request"), "must have the form"},
		{"a scope not ending in aws4_request", valid("k/20261201/us-east-1/dynamodb/aws5_request"), "must have the form"},
		{"an empty key", valid("/20261201/us-east-1/dynamodb/aws4_request"), "empty access key"},
		{"a date that is no date", valid("k/2026-12-1/us-east-1/dynamodb/aws4_request"), "not YYYYMMDD"},
		{"no service", valid("k/20261201/us-east-1//aws4_request"), "no region or no service"},
		{"a component without =", "AWS4-HMAC-SHA256 Credential", "not key=value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseAuthorization(c.header)
			if err == nil || !strings.Contains(err.Error(), c.wantMessage) {
				t.Fatalf("parseAuthorization(%q) error = %v, want one containing %q", c.header, err, c.wantMessage)
			}
		})
	}
}
