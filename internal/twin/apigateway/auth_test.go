package apigateway

import (
	"errors"
	"testing"
	"time"
)

func TestVerifyTakesTheBareTokenAndTheBearerForm(t *testing.T) {
	auth := &DevAuthorizer{Secret: []byte("s")}
	token, err := auth.Token("cust-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{token, "Bearer " + token, "  Bearer " + token + " "} {
		c, err := auth.Verify(header)
		if err != nil || c.Subject != "cust-1" || c.TokenUse != TokenUseID {
			t.Errorf("Verify(%q) = %+v, %v", header, c, err)
		}
	}
	for _, header := range []string{"", "Bearer", "Bearer "} {
		if _, err := auth.Verify(header); !errors.Is(err, ErrNoToken) {
			t.Errorf("Verify(%q) err = %v, want ErrNoToken", header, err)
		}
	}
}

// API Gateway's Cognito authorizer on a method without OAuth scopes takes ID tokens only, so
// the local one refuses an access token a client might send by mistake.
func TestVerifyRefusesAnAccessToken(t *testing.T) {
	auth := &DevAuthorizer{Secret: []byte("s")}
	now := time.Now()
	access, err := auth.Sign(Claims{Subject: "u-1", TokenUse: "access", IssuedAt: now.Unix(), Expires: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(access); !errors.Is(err, ErrNotIDToken) {
		t.Errorf("access token: err = %v, want ErrNotIDToken", err)
	}
}

func TestSignedCognitoClaimsReachTheAuthorizerContext(t *testing.T) {
	auth := &DevAuthorizer{Secret: []byte("s")}
	now := time.Now()
	token, err := auth.Sign(Claims{
		Subject: "6f1c-sub", Issuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_local", TokenUse: TokenUseID,
		IssuedAt: now.Unix(), Expires: now.Add(time.Hour).Unix(),
		Username: "6f1c-sub", Email: "buyer@example.com", Audience: "client-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := auth.Verify(token)
	if err != nil {
		t.Fatal(err)
	}
	claims := c.AuthorizerContext()["claims"].(map[string]any)
	for name, want := range map[string]string{
		"sub": "6f1c-sub", "cognito:username": "6f1c-sub", "email": "buyer@example.com", "aud": "client-1", "token_use": "id",
		"iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_local",
	} {
		if claims[name] != want {
			t.Errorf("claims[%q] = %v, want %q", name, claims[name], want)
		}
	}
	// A dev token has no Cognito claims, and the context does not invent them.
	dev, _ := auth.Token("cust-1", time.Hour)
	c, _ = auth.Verify(dev)
	if _, ok := c.AuthorizerContext()["claims"].(map[string]any)["email"]; ok {
		t.Error("dev token context has an email claim")
	}
}

func TestSignRefusesClaimsWithoutSubjectOrExpiry(t *testing.T) {
	auth := &DevAuthorizer{Secret: []byte("s")}
	for _, c := range []Claims{{Expires: 1}, {Subject: "u"}} {
		if _, err := auth.Sign(c); err == nil {
			t.Errorf("Sign(%+v) issued a token", c)
		}
	}
}
