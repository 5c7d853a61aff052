package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// SecretsProps configures the Stripe secrets.
type SecretsProps struct {
	// Production keeps the secrets when the stack is deleted.
	Production bool
}

// Secrets holds the Stripe API secret key and the webhook signing secret. The stack creates
// them with a random placeholder value; an operator puts the real values after the first
// deploy (see infra/README.md). Functions receive only the ARNs and read the values once per
// cold start, so a secret never appears in the template, the environment or a log.
type Secrets struct {
	constructs.Construct
	StripeSecretKey     awssecretsmanager.Secret
	StripeWebhookSecret awssecretsmanager.Secret
}

// NewSecrets declares both secrets.
func NewSecrets(scope constructs.Construct, id string, p SecretsProps) *Secrets {
	c := constructs.NewConstruct(scope, jsii.String(id))
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	secret := func(id, description string) awssecretsmanager.Secret {
		return awssecretsmanager.NewSecret(c, jsii.String(id), &awssecretsmanager.SecretProps{
			Description:   jsii.String(description),
			RemovalPolicy: removal,
		})
	}
	return &Secrets{
		Construct:           c,
		StripeSecretKey:     secret("StripeSecretKey", "Stripe API secret key (sk_...) used by the api, the payment steps, the webhook and the sweeper"),
		StripeWebhookSecret: secret("StripeWebhookSecret", "Stripe webhook endpoint signing secret (whsec_...) used only by the webhook"),
	}
}
