package smoke

import (
	"strings"
	"testing"
	"unicode"
)

func TestExecutionLinkNamesTheReservationsExecutionInItsRegion(t *testing.T) {
	arn := ExecutionARN("arn:aws:states:eu-west-1:111122223333:stateMachine:Reservation-abc", "r_x")
	if arn != "arn:aws:states:eu-west-1:111122223333:execution:Reservation-abc:r_x" {
		t.Errorf("execution ARN %s", arn)
	}
	want := "https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/" + arn
	if got := ConsoleURL(arn); got != want {
		t.Errorf("console URL %s, want %s", got, want)
	}
	// Other partitions have consoles of their own; no link beats a wrong one.
	if got := ConsoleURL("arn:aws-cn:states:cn-north-1:1:execution:m:r"); got != "" {
		t.Errorf("aws-cn link %s", got)
	}
}

func TestGeneratedPasswordsMeetTheStackPolicy(t *testing.T) {
	for range 200 {
		pw, err := newPassword()
		if err != nil {
			t.Fatal(err)
		}
		var lower, upper, digit, symbol bool
		for _, r := range pw {
			lower = lower || unicode.IsLower(r)
			upper = upper || unicode.IsUpper(r)
			digit = digit || unicode.IsDigit(r)
			symbol = symbol || strings.ContainsRune("!#%+-=_", r)
		}
		if len(pw) < 12 || !lower || !upper || !digit || !symbol {
			t.Fatalf("password %q misses the policy (12+ characters, lower, upper, digit, symbol)", pw)
		}
	}
}

func TestSubjectIsReadFromAJWTAndFromALocalToken(t *testing.T) {
	// header {"alg":"RS256"} . payload {"sub":"abc-123","token_use":"id"} . signature
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhYmMtMTIzIiwidG9rZW5fdXNlIjoiaWQifQ.c2ln"
	if got := subjectOf(jwt); got != "abc-123" {
		t.Errorf("JWT subject %q", got)
	}
	if got := subjectOf("dev.eyJzdWIiOiJhYmMtMTIzIn0.c2ln"); got != "abc-123" {
		t.Errorf("local token subject %q", got)
	}
	if got := subjectOf("opaque"); got != "" {
		t.Errorf("opaque token subject %q", got)
	}
}
