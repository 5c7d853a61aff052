package stack

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// ApiSettings are the first layer of admission control: API Gateway's stage throttling turns a
// flash-sale burst beyond these rates into 429s before any Lambda or table is touched.
type ApiSettings struct {
	// RateLimit is the steady-state requests per second for the stage.
	RateLimit float64
	// BurstLimit is the token bucket size for the stage.
	BurstLimit float64
	// MaxSeatsPerReservation bounds the seat list the request model accepts.
	MaxSeatsPerReservation int
	// MaxActiveReservations caps one customer's reservations in progress at once; 0 is no cap.
	MaxActiveReservations int
	// UserPoolArn, when set, authorizes customers against an existing Cognito user pool
	// instead of the one the stack creates.
	UserPoolArn string
	// AllowedOrigins are the browser origins (scheme://host[:port], or "*" alone) whose pages
	// may call the customer routes. Empty means no CORS at all: the API answers no preflight,
	// so only same-origin pages and non-browser clients can use it.
	AllowedOrigins []string
	// SESFromEmail, when set, makes the stack's user pool send its emails (verification
	// codes, password resets) through Amazon SES from this address instead of Cognito's own
	// sender, which sends at most 50 emails a day per account. The address, or
	// SESVerifiedDomain, must be a verified SES identity in the stack's Region, and SES must
	// be out of its sandbox to write to any buyer.
	SESFromEmail      string
	SESVerifiedDomain string
}

// CORS of the customer routes: the headers a browser client sends and the methods it uses.
var (
	CorsAllowHeaders = []string{"Authorization", "Idempotency-Key", "Content-Type"}
	CorsAllowMethods = []string{"GET", "POST", "DELETE"}
)

// ValidateAllowedOrigins refuses origins a browser would never send, so a typo fails
// synthesis instead of silently blocking the front end. "*" is accepted only on its own: the
// API never allows credentials (customers present a bearer token, not a cookie), which is
// what makes a wildcard safe, and mixing it with named origins would mean nothing.
func ValidateAllowedOrigins(origins []string) error {
	seen := map[string]bool{}
	for _, o := range origins {
		switch {
		case o == "*" && len(origins) > 1:
			return fmt.Errorf("allowed origins %q: \"*\" must be the only origin", origins)
		case o == "*":
			continue
		case seen[o]:
			return fmt.Errorf("allowed origin %q is listed twice", o)
		}
		seen[o] = true
		if o != strings.ToLower(o) {
			// Browsers send the origin in lower case and API Gateway compares it exactly.
			return fmt.Errorf("allowed origin %q: write it in lower case", o)
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || o != u.Scheme+"://"+u.Host {
			return fmt.Errorf("allowed origin %q: want scheme://host[:port] with no path, e.g. https://shop.example.com", o)
		}
	}
	return nil
}

// ApiProps configures the REST API.
type ApiProps struct {
	Settings     ApiSettings
	Stage        string
	Production   bool
	LogRetention awslogs.RetentionDays
	Functions    *Functions
}

// Api is the REST API: customer routes to the api function behind a Cognito authorizer, and
// the Stripe webhook route to the webhook function, open but verified by signature in code.
type Api struct {
	constructs.Construct
	RestApi    awsapigateway.RestApi
	UserPool   awscognito.IUserPool
	Client     awscognito.UserPoolClient
	Authorizer awsapigateway.CognitoUserPoolsAuthorizer
	AccessLogs awslogs.LogGroup
	// WebhookURL is the address to register as the Stripe webhook endpoint.
	WebhookURL *string
	// WebhookMethod is the open POST /webhooks/stripe method.
	WebhookMethod awsapigateway.Method
}

// NewApi declares the API, its stage limits, access logs, request validation, authorizer and,
// when origins are configured, CORS. It panics on invalid allowed origins, as CDK does for
// invalid construct configuration.
func NewApi(scope constructs.Construct, id string, p ApiProps) *Api {
	if err := ValidateAllowedOrigins(p.Settings.AllowedOrigins); err != nil {
		panic(fmt.Sprintf("stack: %v", err))
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	a := &Api{Construct: c}

	a.AccessLogs = awslogs.NewLogGroup(c, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: removal,
	})
	a.RestApi = awsapigateway.NewRestApi(c, jsii.String("RestApi"), &awsapigateway.RestApiProps{
		// Named after the stack: API Gateway's metrics are named by the API's name, and two
		// stages in one account must not share their alarms' series.
		RestApiName:   jsii.String(*awscdk.Stack_Of(c).StackName() + "-api"),
		Description:   jsii.String("seatsaga reservations and Stripe webhooks"),
		EndpointTypes: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		// Execution logging needs API Gateway's CloudWatch role, an account-level setting
		// every REST API in the Region shares: deleting one stage's stack must not take it
		// away from the others, so it is always retained.
		CloudWatchRole:              jsii.Bool(true),
		CloudWatchRoleRemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(p.Stage),
			ThrottlingRateLimit:  jsii.Number(p.Settings.RateLimit),
			ThrottlingBurstLimit: jsii.Number(p.Settings.BurstLimit),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(a.AccessLogs),
			AccessLogFormat: awsapigateway.AccessLogFormat_JsonWithStandardFields(&awsapigateway.JsonWithStandardFieldProps{
				Caller: jsii.Bool(false), HttpMethod: jsii.Bool(true), Ip: jsii.Bool(true),
				Protocol: jsii.Bool(true), RequestTime: jsii.Bool(true), ResourcePath: jsii.Bool(true),
				ResponseLength: jsii.Bool(true), Status: jsii.Bool(true), User: jsii.Bool(true),
			}),
			LoggingLevel: awsapigateway.MethodLoggingLevel_ERROR,
			// Request and response bodies carry payment data; never log them.
			DataTraceEnabled: jsii.Bool(false),
			MetricsEnabled:   jsii.Bool(true),
			TracingEnabled:   jsii.Bool(true),
		},
	})

	if p.Settings.UserPoolArn != "" {
		a.UserPool = awscognito.UserPool_FromUserPoolArn(c, jsii.String("UserPool"), jsii.String(p.Settings.UserPoolArn))
	} else {
		pool := awscognito.NewUserPool(c, jsii.String("UserPool"), &awscognito.UserPoolProps{
			// Lite has everything this pool uses (password sign-in, optional TOTP MFA, email
			// verification and recovery) at the lowest price per monthly active user;
			// Essentials would add managed login, passwordless, email MFA and access-token
			// customization, none of which the API or the smoke test needs.
			FeaturePlan:       awscognito.FeaturePlan_LITE,
			SelfSignUpEnabled: jsii.Bool(true),
			SignInAliases:     &awscognito.SignInAliases{Email: jsii.Bool(true)},
			AutoVerify:        &awscognito.AutoVerifiedAttrs{Email: jsii.Bool(true)},
			AccountRecovery:   awscognito.AccountRecovery_EMAIL_ONLY,
			PasswordPolicy: &awscognito.PasswordPolicy{
				MinLength:        jsii.Number(12),
				RequireLowercase: jsii.Bool(true),
				RequireUppercase: jsii.Bool(true),
				RequireDigits:    jsii.Bool(true),
				RequireSymbols:   jsii.Bool(true),
			},
			Mfa:                awscognito.Mfa_OPTIONAL,
			MfaSecondFactor:    &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
			Email:              poolEmail(p.Settings),
			DeletionProtection: jsii.Bool(p.Production),
			RemovalPolicy:      removal,
		})
		a.UserPool = pool
		a.Client = pool.AddClient(jsii.String("WebClient"), &awscognito.UserPoolClientOptions{
			// A browser signs in with SRP, so the password never leaves it. The operator's
			// smoke test signs its own test user in with AdminInitiateAuth, which needs IAM
			// credentials (cognito-idp:AdminInitiateAuth): plain-password sign-in is therefore
			// not open to the internet. Refresh tokens are always allowed.
			AuthFlows: &awscognito.AuthFlow{UserSrp: jsii.Bool(true), AdminUserPassword: jsii.Bool(true)},
			// The front end calls the user pool API directly; without this CDK would turn on
			// the OAuth code and implicit grants with a placeholder callback URL.
			DisableOAuth: jsii.Bool(true),
			// A public client (a browser) cannot keep a secret.
			GenerateSecret:             jsii.Bool(false),
			PreventUserExistenceErrors: jsii.Bool(true),
		})
	}
	a.Authorizer = awsapigateway.NewCognitoUserPoolsAuthorizer(c, jsii.String("Authorizer"), &awsapigateway.CognitoUserPoolsAuthorizerProps{
		CognitoUserPools: &[]awscognito.IUserPool{a.UserPool},
		IdentitySource:   jsii.String("method.request.header.Authorization"),
	})

	bodyValidator := a.RestApi.AddRequestValidator(jsii.String("BodyAndParams"), &awsapigateway.RequestValidatorOptions{
		ValidateRequestBody:       jsii.Bool(true),
		ValidateRequestParameters: jsii.Bool(true),
	})
	paramsValidator := a.RestApi.AddRequestValidator(jsii.String("ParamsOnly"), &awsapigateway.RequestValidatorOptions{
		ValidateRequestParameters: jsii.Bool(true),
	})
	reservationModel := a.RestApi.AddModel(jsii.String("ReservationRequest"), &awsapigateway.ModelOptions{
		ContentType: jsii.String("application/json"),
		Description: jsii.String("Bounds the size of a reservation request; the api function validates its meaning"),
		Schema: &awsapigateway.JsonSchema{
			Schema:        awsapigateway.JsonSchemaVersion_DRAFT4,
			Type:          awsapigateway.JsonSchemaType_OBJECT,
			MaxProperties: jsii.Number(16),
			Properties: &map[string]*awsapigateway.JsonSchema{
				"seatIds": {
					Type:     awsapigateway.JsonSchemaType_ARRAY,
					MinItems: jsii.Number(1),
					MaxItems: jsii.Number(float64(p.Settings.MaxSeatsPerReservation)),
					Items:    &awsapigateway.JsonSchema{Type: awsapigateway.JsonSchemaType_STRING, MaxLength: jsii.Number(128)},
				},
				"amount":        {Type: awsapigateway.JsonSchemaType_INTEGER},
				"currency":      {Type: awsapigateway.JsonSchemaType_STRING, MaxLength: jsii.Number(3)},
				"paymentMethod": {Type: awsapigateway.JsonSchemaType_STRING, MaxLength: jsii.Number(255)},
			},
		},
	})

	customer := func(validator awsapigateway.IRequestValidator, params map[string]*bool, models *map[string]awsapigateway.IModel) *awsapigateway.MethodOptions {
		return &awsapigateway.MethodOptions{
			AuthorizationType: awsapigateway.AuthorizationType_COGNITO,
			Authorizer:        a.Authorizer,
			RequestValidator:  validator,
			RequestParameters: &params,
			RequestModels:     models,
		}
	}
	apiFn := awsapigateway.NewLambdaIntegration(p.Functions.Get("api").Function, nil)
	cors := corsOptions(p.Settings.AllowedOrigins)
	root := a.RestApi.Root()

	reservations := root.AddResource(jsii.String("events"), nil).
		AddResource(jsii.String("{eventId}"), nil).
		AddResource(jsii.String("reservations"), nil)
	reservations.AddMethod(jsii.String("POST"), apiFn, customer(bodyValidator,
		map[string]*bool{
			"method.request.path.eventId":           jsii.Bool(true),
			"method.request.header.Idempotency-Key": jsii.Bool(true),
			"method.request.header.Authorization":   jsii.Bool(true),
		},
		&map[string]awsapigateway.IModel{"application/json": reservationModel}))

	reservation := root.AddResource(jsii.String("reservations"), nil).AddResource(jsii.String("{id}"), nil)
	idParams := map[string]*bool{
		"method.request.path.id":              jsii.Bool(true),
		"method.request.header.Authorization": jsii.Bool(true),
	}
	reservation.AddMethod(jsii.String("GET"), apiFn, customer(paramsValidator, idParams, nil))
	reservation.AddMethod(jsii.String("DELETE"), apiFn, customer(paramsValidator, idParams, nil))
	if cors != nil {
		// Only the customer routes answer preflights; Stripe calls the webhook server to server.
		reservations.AddCorsPreflight(cors)
		reservation.AddCorsPreflight(cors)
		a.addCorsToGatewayErrors(p.Settings.AllowedOrigins)
	}

	webhooks := root.AddResource(jsii.String("webhooks"), nil).AddResource(jsii.String("stripe"), nil)
	a.WebhookMethod = webhooks.AddMethod(jsii.String("POST"),
		awsapigateway.NewLambdaIntegration(p.Functions.Get("webhook").Function, nil),
		&awsapigateway.MethodOptions{
			// Stripe cannot present a customer token; the webhook function verifies the
			// Stripe-Signature header against the signing secret before reading the body.
			AuthorizationType: awsapigateway.AuthorizationType_NONE,
			RequestValidator:  paramsValidator,
			RequestParameters: &map[string]*bool{"method.request.header.Stripe-Signature": jsii.Bool(true)},
		})
	a.WebhookURL = a.RestApi.UrlForPath(jsii.String("/webhooks/stripe"))
	return a
}

// poolEmail is how the user pool sends email: through SES when a sender is configured, else
// Cognito's default sender (nil).
func poolEmail(s ApiSettings) awscognito.UserPoolEmail {
	if s.SESFromEmail == "" {
		return nil
	}
	// The stack is environment-agnostic, so CDK cannot tell the SES Region itself: the
	// identity is the one in the stack's own Region.
	opts := &awscognito.UserPoolSESOptions{FromEmail: jsii.String(s.SESFromEmail), SesRegion: awscdk.Aws_REGION()}
	if s.SESVerifiedDomain != "" {
		opts.SesVerifiedDomain = jsii.String(s.SESVerifiedDomain)
	}
	return awscognito.UserPoolEmail_WithSES(opts)
}

// corsOptions is the preflight answer for the configured origins, nil when there are none.
// Credentials are never allowed: customers authenticate with a bearer token.
func corsOptions(origins []string) *awsapigateway.CorsOptions {
	if len(origins) == 0 {
		return nil
	}
	return &awsapigateway.CorsOptions{
		AllowOrigins: jsii.Strings(origins...),
		AllowMethods: jsii.Strings(CorsAllowMethods...),
		AllowHeaders: jsii.Strings(CorsAllowHeaders...),
		MaxAge:       awscdk.Duration_Minutes(jsii.Number(10)),
	}
}

// addCorsToGatewayErrors lets the front end read the answers API Gateway gives itself (401
// from the authorizer, 429 from throttling, 5xx), so that a throttled buyer is told to retry
// instead of seeing a network error. A gateway response can carry one fixed origin only, so
// with several origins these answers stay without CORS headers rather than open to all.
func (a *Api) addCorsToGatewayErrors(origins []string) {
	if len(origins) != 1 {
		return
	}
	headers := map[string]*string{"Access-Control-Allow-Origin": jsii.String("'" + origins[0] + "'")}
	if origins[0] != "*" {
		// Caches must not hand one origin's answer to another.
		headers["Vary"] = jsii.String("'Origin'")
	}
	for _, r := range []struct {
		id  string
		typ awsapigateway.ResponseType
	}{
		{"Default4xx", awsapigateway.ResponseType_DEFAULT_4XX()},
		{"Default5xx", awsapigateway.ResponseType_DEFAULT_5XX()},
	} {
		a.RestApi.AddGatewayResponse(jsii.String(r.id), &awsapigateway.GatewayResponseOptions{
			Type: r.typ, ResponseHeaders: &headers,
		})
	}
}
