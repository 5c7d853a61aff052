package dynamodblocal

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seatsaga/seatsaga/internal/config"
)

// Region is the region local clients sign for; DynamoDB Local ignores it but the SDK needs one.
const Region = "us-east-1"

// IsLocalEndpoint reports whether an endpoint points at this machine, i.e. at DynamoDB Local
// rather than AWS (config.LoopbackEndpoint).
func IsLocalEndpoint(endpoint string) bool { return config.LoopbackEndpoint(endpoint) }

// NewClient builds a DynamoDB client for endpoint with static dummy credentials. For local
// endpoints it turns off response checksum validation (DynamoDB Local sends no CRC32 with
// cancelled transactions) and uses a retryer without the client-side retry quota, which a
// contention test would otherwise drain; remote endpoints keep the SDK's defaults.
func NewClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	if endpoint == "" {
		return nil, errors.New("dynamodblocal: empty endpoint")
	}
	if _, err := url.ParseRequestURI(endpoint); err != nil {
		return nil, errors.New("dynamodblocal: bad endpoint " + endpoint + ": " + err.Error())
	}
	local := IsLocalEndpoint(endpoint)
	opts := dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "dynamodblocal"}, nil
		}),
	}
	if local {
		opts.DisableValidateResponseChecksum = true
		opts.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 5
			o.MaxBackoff = 2 * time.Second
			o.RateLimiter = ratelimit.None
		})
		// Tests run tens of concurrent requests; keep that many connections alive.
		opts.HTTPClient = awshttp.NewBuildableClient().
			WithTimeout(30 * time.Second).
			WithTransportOptions(func(t *http.Transport) {
				t.MaxIdleConns = 256
				t.MaxIdleConnsPerHost = 256
			})
	}
	return dynamodb.New(opts), nil
}
