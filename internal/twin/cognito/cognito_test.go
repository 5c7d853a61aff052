package cognito_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"

	"github.com/seatsaga/seatsaga/internal/twin/apigateway"
	"github.com/seatsaga/seatsaga/internal/twin/cognito"
)

const goodPassword = "Correct-horse-9-battery"

// start runs a local Cognito and returns the SDK client an operator's tool would build,
// pointed at it.
func start(t *testing.T, opts cognito.Options) (*cognito.Server, *cip.Client, *apigateway.DevAuthorizer) {
	t.Helper()
	if opts.Tokens == nil {
		opts.Tokens = &apigateway.DevAuthorizer{Secret: []byte("shared-with-the-gateway")}
	}
	srv := cognito.New(opts)
	endpoint, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	client := cip.New(cip.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
		}),
		RetryMaxAttempts: 1,
	})
	return srv, client, opts.Tokens
}

func createUser(t *testing.T, srv *cognito.Server, client *cip.Client, email string) *cip.AdminCreateUserOutput {
	t.Helper()
	out, err := client.AdminCreateUser(context.Background(), &cip.AdminCreateUserInput{
		UserPoolId:     aws.String(srv.UserPoolID()),
		Username:       aws.String(email),
		UserAttributes: []types.AttributeType{{Name: aws.String("email"), Value: aws.String(email)}, {Name: aws.String("email_verified"), Value: aws.String("true")}},
		MessageAction:  types.MessageActionTypeSuppress,
	})
	if err != nil {
		t.Fatalf("AdminCreateUser: %v", err)
	}
	return out
}

func setPassword(t *testing.T, srv *cognito.Server, client *cip.Client, email, password string) {
	t.Helper()
	if _, err := client.AdminSetUserPassword(context.Background(), &cip.AdminSetUserPasswordInput{
		UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String(email), Password: aws.String(password), Permanent: true,
	}); err != nil {
		t.Fatalf("AdminSetUserPassword: %v", err)
	}
}

func TestAdminSignInIssuesAnIDTokenTheGatewayAccepts(t *testing.T) {
	srv, client, auth := start(t, cognito.Options{})
	ctx := context.Background()
	created := createUser(t, srv, client, "buyer@example.com")
	if created.User.UserStatus != types.UserStatusTypeForceChangePassword || aws.ToString(created.User.Username) == "buyer@example.com" {
		t.Errorf("created user %+v: want FORCE_CHANGE_PASSWORD under a generated user name", created.User)
	}
	setPassword(t, srv, client, "buyer@example.com", goodPassword)

	got, err := client.AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("buyer@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	if got.UserStatus != types.UserStatusTypeConfirmed || aws.ToString(got.Username) != aws.ToString(created.User.Username) {
		t.Errorf("AdminGetUser %+v: want the same user, CONFIRMED", got)
	}
	if got.UserCreateDate == nil || time.Since(*got.UserCreateDate) > time.Minute {
		t.Errorf("UserCreateDate %v", got.UserCreateDate)
	}

	out, err := client.AdminInitiateAuth(ctx, &cip.AdminInitiateAuthInput{
		UserPoolId: aws.String(srv.UserPoolID()), ClientId: aws.String(srv.ClientID()),
		AuthFlow:       types.AuthFlowTypeAdminUserPasswordAuth,
		AuthParameters: map[string]string{"USERNAME": "buyer@example.com", "PASSWORD": goodPassword},
	})
	if err != nil {
		t.Fatalf("AdminInitiateAuth: %v", err)
	}
	result := out.AuthenticationResult
	if result == nil || aws.ToString(result.TokenType) != "Bearer" || result.ExpiresIn != 3600 {
		t.Fatalf("authentication result %+v", result)
	}
	claims, err := auth.Verify(aws.ToString(result.IdToken))
	if err != nil {
		t.Fatalf("the gateway refuses the ID token: %v", err)
	}
	sub := aws.ToString(created.User.Username)
	if claims.Subject != sub || claims.Username != sub || claims.Email != "buyer@example.com" ||
		claims.TokenUse != "id" || claims.Audience != srv.ClientID() || claims.Issuer != srv.Issuer() {
		t.Errorf("ID token claims %+v", claims)
	}
	// As on AWS, the access token does not pass an authorizer without OAuth scopes.
	if _, err := auth.Verify(aws.ToString(result.AccessToken)); !errors.Is(err, apigateway.ErrNotIDToken) {
		t.Errorf("access token: err = %v, want ErrNotIDToken", err)
	}
}

func TestCreatingAnExistingUserIsUsernameExists(t *testing.T) {
	srv, client, _ := start(t, cognito.Options{})
	createUser(t, srv, client, "buyer@example.com")
	_, err := client.AdminCreateUser(context.Background(), &cip.AdminCreateUserInput{
		UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("Buyer@Example.com"), MessageAction: types.MessageActionTypeSuppress,
	})
	var exists *types.UsernameExistsException
	if !errors.As(err, &exists) {
		t.Fatalf("err = %v, want *types.UsernameExistsException", err)
	}
}

func TestUnknownUsersAreNotFoundForAdminsAndNotAuthorizedAtSignIn(t *testing.T) {
	srv, client, _ := start(t, cognito.Options{})
	ctx := context.Background()
	var notFound *types.UserNotFoundException
	if _, err := client.AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("nobody@example.com")}); !errors.As(err, &notFound) {
		t.Errorf("AdminGetUser: err = %v, want *types.UserNotFoundException", err)
	}
	if _, err := client.AdminSetUserPassword(ctx, &cip.AdminSetUserPasswordInput{
		UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("nobody@example.com"), Password: aws.String(goodPassword), Permanent: true,
	}); !errors.As(err, &notFound) {
		t.Errorf("AdminSetUserPassword: err = %v, want *types.UserNotFoundException", err)
	}

	createUser(t, srv, client, "buyer@example.com")
	setPassword(t, srv, client, "buyer@example.com", goodPassword)
	for name, params := range map[string]map[string]string{
		"unknown user":   {"USERNAME": "nobody@example.com", "PASSWORD": goodPassword},
		"wrong password": {"USERNAME": "buyer@example.com", "PASSWORD": goodPassword + "x"},
	} {
		_, err := client.AdminInitiateAuth(ctx, &cip.AdminInitiateAuthInput{
			UserPoolId: aws.String(srv.UserPoolID()), ClientId: aws.String(srv.ClientID()),
			AuthFlow: types.AuthFlowTypeAdminUserPasswordAuth, AuthParameters: params,
		})
		var notAuthorized *types.NotAuthorizedException
		if !errors.As(err, &notAuthorized) || notAuthorized.ErrorMessage() != "Incorrect username or password." {
			t.Errorf("%s: err = %v, want NotAuthorizedException (the same answer either way)", name, err)
		}
	}
}

func TestATemporaryPasswordSignInIsChallengedForANewPassword(t *testing.T) {
	srv, client, _ := start(t, cognito.Options{})
	ctx := context.Background()
	if _, err := client.AdminCreateUser(ctx, &cip.AdminCreateUserInput{
		UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("buyer@example.com"),
		TemporaryPassword: aws.String(goodPassword), MessageAction: types.MessageActionTypeSuppress,
	}); err != nil {
		t.Fatal(err)
	}
	out, err := client.AdminInitiateAuth(ctx, &cip.AdminInitiateAuthInput{
		UserPoolId: aws.String(srv.UserPoolID()), ClientId: aws.String(srv.ClientID()),
		AuthFlow:       types.AuthFlowTypeAdminUserPasswordAuth,
		AuthParameters: map[string]string{"USERNAME": "buyer@example.com", "PASSWORD": goodPassword},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.ChallengeName != types.ChallengeNameTypeNewPasswordRequired || out.AuthenticationResult != nil {
		t.Errorf("challenge %q result %+v, want NEW_PASSWORD_REQUIRED and no tokens", out.ChallengeName, out.AuthenticationResult)
	}
}

func TestPasswordsFollowThePoolPolicy(t *testing.T) {
	srv, client, _ := start(t, cognito.Options{})
	createUser(t, srv, client, "buyer@example.com")
	for _, pw := range []string{"Short-1a", "no-upper-case-1", "NO-LOWER-CASE-1", "No-digits-at-all", "NoSymbols12345"} {
		_, err := client.AdminSetUserPassword(context.Background(), &cip.AdminSetUserPasswordInput{
			UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("buyer@example.com"), Password: aws.String(pw), Permanent: true,
		})
		var invalid *types.InvalidPasswordException
		if !errors.As(err, &invalid) {
			t.Errorf("%q: err = %v, want *types.InvalidPasswordException", pw, err)
		}
	}
}

// The stack's client does not allow USER_PASSWORD_AUTH; a client that does signs in with
// InitiateAuth, which needs no AWS credentials.
func TestUserPasswordSignInOnlyWhereTheClientAllowsIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flows   []string
		allowed bool
	}{
		{"the deployed client", nil, false},
		{"a client allowing USER_PASSWORD_AUTH", []string{cognito.FlowUserPassword, cognito.FlowRefreshToken}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client, auth := start(t, cognito.Options{ClientAuthFlows: tc.flows})
			createUser(t, srv, client, "buyer@example.com")
			setPassword(t, srv, client, "buyer@example.com", goodPassword)
			out, err := client.InitiateAuth(context.Background(), &cip.InitiateAuthInput{
				ClientId: aws.String(srv.ClientID()), AuthFlow: types.AuthFlowTypeUserPasswordAuth,
				AuthParameters: map[string]string{"USERNAME": "buyer@example.com", "PASSWORD": goodPassword},
			})
			if !tc.allowed {
				var invalid *types.InvalidParameterException
				if !errors.As(err, &invalid) {
					t.Fatalf("err = %v, want *types.InvalidParameterException", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := auth.Verify(aws.ToString(out.AuthenticationResult.IdToken)); err != nil {
				t.Errorf("gateway refuses the ID token: %v", err)
			}
		})
	}
}

func TestRequestsNameTheOnePoolAndClient(t *testing.T) {
	srv, client, _ := start(t, cognito.Options{})
	ctx := context.Background()
	var missing *types.ResourceNotFoundException
	if _, err := client.AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String("us-east-1_other"), Username: aws.String("a@example.com")}); !errors.As(err, &missing) {
		t.Errorf("unknown pool: err = %v, want *types.ResourceNotFoundException", err)
	}
	if _, err := client.AdminInitiateAuth(ctx, &cip.AdminInitiateAuthInput{
		UserPoolId: aws.String(srv.UserPoolID()), ClientId: aws.String("other-client"), AuthFlow: types.AuthFlowTypeAdminUserPasswordAuth,
		AuthParameters: map[string]string{"USERNAME": "a@example.com", "PASSWORD": goodPassword},
	}); !errors.As(err, &missing) {
		t.Errorf("unknown client: err = %v, want *types.ResourceNotFoundException", err)
	}
	var invalid *types.InvalidParameterException
	if _, err := client.AdminCreateUser(ctx, &cip.AdminCreateUserInput{UserPoolId: aws.String(srv.UserPoolID()), Username: aws.String("not-an-email")}); !errors.As(err, &invalid) {
		t.Errorf("non-email user name: err = %v, want *types.InvalidParameterException", err)
	}
}
