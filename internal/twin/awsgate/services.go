package awsgate

import "strings"

// service is one AWS JSON-protocol API the gate answers, recognized by its X-Amz-Target prefix.
type service struct {
	// name is the service's SDK id (one of the Service* constants), what Call.Service reports.
	name string
	// targetPrefix opens X-Amz-Target, e.g. "DynamoDB_20120810." for DynamoDB_20120810.GetItem.
	targetPrefix string
	// signingName is the service a SigV4 credential scope must name.
	signingName string
	// actionPrefix opens the service's IAM actions, e.g. "dynamodb" for dynamodb:GetItem.
	actionPrefix string
	// contentType is the protocol's: awsJson1.0 or awsJson1.1.
	contentType string
}

const (
	awsJSON10 = "application/x-amz-json-1.0"
	awsJSON11 = "application/x-amz-json-1.1"
)

// The services' SDK ids, as Call.Service names them. DynamoDB Streams is a service of its own:
// its reads are billed apart from the tables'.
const (
	ServiceDynamoDB        = "dynamodb"
	ServiceDynamoDBStreams = "dynamodbstreams"
	ServiceStepFunctions   = "sfn"
	ServiceSecretsManager  = "secretsmanager"
	ServiceEventBridge     = "eventbridge"
)

var (
	dynamoDB        = &service{name: ServiceDynamoDB, targetPrefix: "DynamoDB_20120810.", signingName: "dynamodb", actionPrefix: "dynamodb", contentType: awsJSON10}
	dynamoDBStreams = &service{name: ServiceDynamoDBStreams, targetPrefix: "DynamoDBStreams_20120810.", signingName: "dynamodb", actionPrefix: "dynamodb", contentType: awsJSON10}
	stepFunctions   = &service{name: ServiceStepFunctions, targetPrefix: "AWSStepFunctions.", signingName: "states", actionPrefix: "states", contentType: awsJSON10}
	secretsManager  = &service{name: ServiceSecretsManager, targetPrefix: "secretsmanager.", signingName: "secretsmanager", actionPrefix: "secretsmanager", contentType: awsJSON11}
	eventBridge     = &service{name: ServiceEventBridge, targetPrefix: "AWSEvents.", signingName: "events", actionPrefix: "events", contentType: awsJSON11}
)

var services = []*service{dynamoDB, dynamoDBStreams, stepFunctions, secretsManager, eventBridge}

// serviceFor finds the service and operation an X-Amz-Target names; nil when none matches.
func serviceFor(target string) (*service, string) {
	for _, s := range services {
		if op, ok := strings.CutPrefix(target, s.targetPrefix); ok && op != "" {
			return s, op
		}
	}
	return nil, ""
}

func (s *service) contentTypeOrDefault() string {
	if s == nil {
		return awsJSON10
	}
	return s.contentType
}

// action is the IAM action of op in this service, e.g. "dynamodb:GetItem".
func (s *service) action(op string) string { return s.actionPrefix + ":" + op }
