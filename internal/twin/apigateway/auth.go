package apigateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DevAuthorizer issues and checks the bearer tokens of the local stack. It stands in for the
// Cognito user-pool authorizer of the deployed API: a token names a customer (sub), expires,
// and is signed with a per-stack secret, so a handler can trust the claims it receives exactly
// as it trusts API Gateway's. It is not an identity provider: anyone who can reach the local
// stack can ask it for a token. The local Cognito (internal/twin/cognito) signs the ID tokens
// it issues with Sign, so the gateway accepts them as API Gateway accepts a user pool's.
//
// Like API Gateway's Cognito authorizer on a method without OAuth scopes, Verify accepts ID
// tokens only (token_use "id"), sent as the whole Authorization header or after "Bearer ".
type DevAuthorizer struct {
	Secret []byte
	Issuer string
	Now    func() time.Time
}

// Claims are what the authorizer passes to the handler in requestContext.authorizer.claims.
// Username, Email and Audience are set in tokens of the local Cognito, as in a user pool's ID
// token (cognito:username, email, aud: the app client id).
type Claims struct {
	Subject  string `json:"sub"`
	Issuer   string `json:"iss"`
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
	TokenUse string `json:"token_use"`
	Username string `json:"cognito:username,omitempty"`
	Email    string `json:"email,omitempty"`
	Audience string `json:"aud,omitempty"`
}

// TokenUseID marks an ID token, the only kind a Cognito authorizer without OAuth scopes takes.
const TokenUseID = "id"

// Errors a token can fail with.
var (
	ErrNoToken      = errors.New("apigateway: no bearer token")
	ErrBadToken     = errors.New("apigateway: malformed bearer token")
	ErrBadSignature = errors.New("apigateway: bearer token signature does not match")
	ErrExpired      = errors.New("apigateway: bearer token expired")
	ErrNotIDToken   = errors.New("apigateway: bearer token is not an ID token")
)

// TokenPrefix marks the local stack's tokens so they are recognisable in logs and curl lines.
const TokenPrefix = "dev."

func (a *DevAuthorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Token returns a bearer token for customer valid for ttl.
func (a *DevAuthorizer) Token(customer string, ttl time.Duration) (string, error) {
	if customer == "" || strings.ContainsAny(customer, " \t\r\n") {
		return "", fmt.Errorf("apigateway: customer id %q must be non-empty without spaces", customer)
	}
	now := a.now()
	return a.Sign(Claims{Subject: customer, Issuer: a.issuer(), IssuedAt: now.Unix(), Expires: now.Add(ttl).Unix(), TokenUse: TokenUseID})
}

// Sign returns a token carrying exactly c, for issuers of their own claims (the local Cognito).
func (a *DevAuthorizer) Sign(c Claims) (string, error) {
	if c.Subject == "" || c.Expires == 0 {
		return "", errors.New("apigateway: a token needs a subject and an expiry")
	}
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("apigateway: encode claims: %w", err)
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return TokenPrefix + payload + "." + a.sign(payload), nil
}

// Verify checks an Authorization header value ("Bearer <token>" or the bare token) and
// returns its claims.
func (a *DevAuthorizer) Verify(header string) (Claims, error) {
	header = strings.TrimSpace(header)
	token := strings.TrimSpace(strings.TrimPrefix(header, "Bearer "))
	if token == "" || token == "Bearer" {
		return Claims{}, ErrNoToken
	}
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return Claims{}, ErrBadToken
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || payload == "" || sig == "" {
		return Claims{}, ErrBadToken
	}
	if !hmac.Equal([]byte(sig), []byte(a.sign(payload))) {
		return Claims{}, ErrBadSignature
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrBadToken
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil || c.Subject == "" {
		return Claims{}, ErrBadToken
	}
	if a.now().Unix() >= c.Expires {
		return Claims{}, ErrExpired
	}
	if c.TokenUse != TokenUseID {
		return Claims{}, ErrNotIDToken
	}
	return c, nil
}

func (a *DevAuthorizer) issuer() string {
	if a.Issuer != "" {
		return a.Issuer
	}
	return "seatsaga-local"
}

func (a *DevAuthorizer) sign(payload string) string {
	m := hmac.New(sha256.New, a.Secret)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// AuthorizerContext renders claims as API Gateway REST passes a Cognito authorizer's result to
// the integration: requestContext.authorizer = {"claims": {...string values}, "principalId"}.
func (c Claims) AuthorizerContext() map[string]any {
	claims := map[string]any{
		"sub":       c.Subject,
		"iss":       c.Issuer,
		"iat":       fmt.Sprint(c.IssuedAt),
		"exp":       fmt.Sprint(c.Expires),
		"token_use": c.TokenUse,
	}
	for name, v := range map[string]string{"cognito:username": c.Username, "email": c.Email, "aud": c.Audience} {
		if v != "" {
			claims[name] = v
		}
	}
	return map[string]any{"principalId": c.Subject, "claims": claims}
}
