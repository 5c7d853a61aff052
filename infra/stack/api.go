package stack

import (
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
	// UserPoolArn, when set, authorizes customers against an existing Cognito user pool
	// instead of the one the stack creates.
	UserPoolArn string
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

// NewApi declares the API, its stage limits, access logs, request validation and authorizer.
func NewApi(scope constructs.Construct, id string, p ApiProps) *Api {
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
			DeletionProtection: jsii.Bool(p.Production),
			RemovalPolicy:      removal,
		})
		a.UserPool = pool
		a.Client = pool.AddClient(jsii.String("WebClient"), &awscognito.UserPoolClientOptions{
			AuthFlows:                  &awscognito.AuthFlow{UserSrp: jsii.Bool(true)},
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
