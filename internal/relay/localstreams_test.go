package relay_test

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// localStreamsClient builds a DynamoDB Streams client for a DynamoDB Local endpoint (which
// serves the Streams API on the same port), with dummy credentials. Only these tests talk to
// DynamoDB Local directly; the local stack reads the stream through its gate.
func localStreamsClient(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "relay"}, nil
		}),
	})
}
