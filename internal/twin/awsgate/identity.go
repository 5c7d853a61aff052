package awsgate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seatsaga/seatsaga/internal/deploy"
)

// sigV4Algorithm opens every SigV4 Authorization header.
const sigV4Algorithm = "AWS4-HMAC-SHA256"

// credential is what a SigV4 Authorization header says about the caller:
// Credential=<AccessKeyID>/<Date>/<Region>/<Service>/aws4_request.
type credential struct {
	AccessKeyID string
	Date        string
	Region      string
	Service     string
}

// errNoAuthorization is parseAuthorization's answer to a request that carries no
// Authorization header at all.
var errNoAuthorization = errors.New("request carries no Authorization header")

// parseAuthorization reads the credential out of a SigV4 Authorization header and checks the
// header's shape: the algorithm, a five-part credential scope, the signed headers and a
// hex signature. It does not verify the signature.
func parseAuthorization(header string) (credential, error) {
	if header == "" {
		return credential{}, errNoAuthorization
	}
	rest, ok := strings.CutPrefix(header, sigV4Algorithm+" ")
	if !ok {
		return credential{}, errors.New("Authorization header must use " + sigV4Algorithm)
	}
	var scope, signedHeaders, signature string
	for part := range strings.SplitSeq(rest, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return credential{}, fmt.Errorf("Authorization header component %q is not key=value", strings.TrimSpace(part))
		}
		switch key {
		case "Credential":
			scope = value
		case "SignedHeaders":
			signedHeaders = value
		case "Signature":
			signature = value
		}
	}
	switch {
	case scope == "":
		return credential{}, errors.New("Authorization header requires 'Credential' parameter")
	case signedHeaders == "":
		return credential{}, errors.New("Authorization header requires 'SignedHeaders' parameter")
	case !isHexSignature(signature):
		return credential{}, errors.New("Authorization header requires a 'Signature' of 64 hex digits")
	}
	parts := strings.Split(scope, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return credential{}, fmt.Errorf("Credential %q must have the form <key>/<date>/<region>/<service>/aws4_request", scope)
	}
	c := credential{AccessKeyID: parts[0], Date: parts[1], Region: parts[2], Service: parts[3]}
	switch {
	case c.AccessKeyID == "":
		return credential{}, errors.New("Credential has an empty access key id")
	case !isDate(c.Date):
		return credential{}, fmt.Errorf("Credential date %q is not YYYYMMDD", c.Date)
	case c.Region == "" || c.Service == "":
		return credential{}, fmt.Errorf("Credential %q names no region or no service", scope)
	}
	return c, nil
}

func isHexSignature(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isDate(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// principal is a registered caller: who its access key id stands for and what it may do.
type principal struct {
	accessKeyID string
	// arn is how AWS names the caller in an AccessDeniedException, e.g.
	// arn:aws:sts::000000000000:assumed-role/<role>/<session>.
	arn string
	// role is the name of the role the caller assumed; empty for the account's root.
	role       string
	statements []deploy.Statement
}

// cloneStatements copies statements so that a caller changing its slices afterwards cannot
// change a registered policy.
func cloneStatements(statements []deploy.Statement) []deploy.Statement {
	out := make([]deploy.Statement, len(statements))
	for i, st := range statements {
		out[i] = deploy.Statement{
			Actions:   append([]string(nil), st.Actions...),
			Resources: append([]string(nil), st.Resources...),
		}
	}
	return out
}
