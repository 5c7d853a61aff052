//go:build tools

package seatsaga

import (
	_ "github.com/aws/aws-cdk-go/awscdk/v2"
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	_ "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	_ "github.com/aws/aws-sdk-go-v2/service/lambda"
	_ "github.com/aws/aws-sdk-go-v2/service/sfn"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	_ "github.com/aws/constructs-go/constructs/v10"
	_ "github.com/aws/jsii-runtime-go"
	_ "github.com/cdklabs/cdk-nag-go/cdknag/v2"
	_ "github.com/stripe/stripe-go/v76"
	_ "github.com/ohler55/ojg/jp"
)
