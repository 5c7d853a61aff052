package awsgate

import (
	"encoding/json"
	"slices"
	"strings"
)

// requestDeriver works out which IAM requests a call makes, from its operation and body
// alone: it reads only the fields that name resources, and knows the deployment's region and
// account and how to look up what a body names only indirectly (a task token, a secret's
// name).
type requestDeriver struct {
	region, account string
	// taskStateMachine finds the state machine a task token belongs to.
	taskStateMachine func(taskToken string) (stateMachineARN string, ok bool)
	// secretARN finds the full ARN of a secret by name, partial ARN or ARN.
	secretARN func(secretID string) (arn string, ok bool)
}

// requests is the IAM requests of op in svc, each once, in the order the body names them.
// An error is a body the service could not parse, or an operation the gate serves itself and
// does not know.
func (d requestDeriver) requests(svc *service, op string, body []byte) ([]Request, *apiError) {
	if len(body) == 0 {
		body = []byte("{}")
	}
	var (
		reqs []Request
		err  *apiError
	)
	switch svc {
	case dynamoDB:
		reqs, err = d.dynamoDBRequests(op, body)
	case dynamoDBStreams:
		reqs, err = d.streamsRequests(op, body)
	case stepFunctions:
		reqs, err = d.stepFunctionsRequests(op, body)
	case secretsManager:
		reqs, err = d.secretsRequests(op, body)
	case eventBridge:
		reqs, err = d.eventsRequests(op, body)
	default:
		return nil, unknownOperation(svc.targetPrefix + op)
	}
	if err != nil {
		return nil, err
	}
	return dedupe(reqs), nil
}

func dedupe(reqs []Request) []Request {
	if len(reqs) < 2 {
		return reqs
	}
	out := reqs[:0:0]
	for _, r := range reqs {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// ignored accepts any JSON value and keeps nothing of it, so that decoding an item map costs
// a scan and no allocation.
type ignored struct{}

func (*ignored) UnmarshalJSON([]byte) error { return nil }

type tableRef struct {
	TableName string
}

// dynamoDBBody holds the fields of any DynamoDB request that name a resource.
type dynamoDBBody struct {
	TableName     string
	IndexName     string
	ResourceArn   string
	RequestItems  map[string]ignored
	TransactItems []struct {
		Get, Put, Update, Delete, ConditionCheck *tableRef
	}
}

func decodeBody(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		return serializationError("the request body does not fit the operation: %v", err)
	}
	return nil
}

func (d requestDeriver) dynamoDBRequests(op string, body []byte) ([]Request, *apiError) {
	var in dynamoDBBody
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	action := dynamoDB.action(op)
	switch op {
	case "ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction":
		return nil, partiQLNotModelled(dynamoDB.targetPrefix + op)
	case "BatchGetItem", "BatchWriteItem":
		// One request per table, in name order: a map has no order of its own.
		names := make([]string, 0, len(in.RequestItems))
		for name := range in.RequestItems {
			names = append(names, name)
		}
		slices.Sort(names)
		reqs := make([]Request, 0, len(names))
		for _, name := range names {
			reqs = append(reqs, Request{Action: action, Resource: d.tableARN(name)})
		}
		return reqs, nil
	case "TransactWriteItems", "TransactGetItems":
		// There is no Transact* IAM action: each item needs its own action on its table.
		reqs := make([]Request, 0, len(in.TransactItems))
		for _, item := range in.TransactItems {
			for _, part := range []struct {
				ref    *tableRef
				action string
			}{
				{item.Get, "dynamodb:GetItem"},
				{item.Put, "dynamodb:PutItem"},
				{item.Update, "dynamodb:UpdateItem"},
				{item.Delete, "dynamodb:DeleteItem"},
				{item.ConditionCheck, "dynamodb:ConditionCheckItem"},
			} {
				if part.ref != nil {
					reqs = append(reqs, Request{Action: part.action, Resource: d.tableARN(part.ref.TableName)})
				}
			}
		}
		return reqs, nil
	}
	switch {
	case in.TableName != "" && in.IndexName != "" && (op == "Query" || op == "Scan"):
		return []Request{{Action: action, Resource: d.tableARN(in.TableName) + "/index/" + in.IndexName}}, nil
	case in.TableName != "":
		return []Request{{Action: action, Resource: d.tableARN(in.TableName)}}, nil
	case in.ResourceArn != "":
		return []Request{{Action: action, Resource: d.localARN(in.ResourceArn)}}, nil
	}
	// ListTables, DescribeLimits and DescribeEndpoints name no table.
	return []Request{{Action: action, Resource: AnyResource}}, nil
}

type streamsBody struct {
	StreamArn     string
	ShardIterator string
}

func (d requestDeriver) streamsRequests(op string, body []byte) ([]Request, *apiError) {
	var in streamsBody
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	// A stream is authorized on its ARN as the call names it: DynamoDB Local's, in region
	// "ddblocal", which is the ARN its DescribeTable answers and policies must name.
	action := dynamoDBStreams.action(op)
	switch {
	case in.StreamArn != "":
		return []Request{{Action: action, Resource: in.StreamArn}}, nil
	case in.ShardIterator != "":
		return []Request{{Action: action, Resource: iteratorStream(in.ShardIterator)}}, nil
	}
	return []Request{{Action: action, Resource: AnyResource}}, nil
}

// iteratorStream is the stream a shard iterator reads. DynamoDB Local's iterators open with
// the stream's ARN: "<stream ARN>|<version>|<base64 position>". An iterator of another shape
// names no stream the gate can see, so it is authorized as AnyResource.
func iteratorStream(iterator string) string {
	arn, _, ok := strings.Cut(iterator, "|")
	if !ok || !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, "/stream/") {
		return AnyResource
	}
	return arn
}

// tableARN is the ARN of a table named by name or by ARN.
func (d requestDeriver) tableARN(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		return d.localARN(nameOrARN)
	}
	return "arn:aws:dynamodb:" + d.region + ":" + d.account + ":table/" + nameOrARN
}

// localARN rewrites a DynamoDB ARN into the gate's region and account, so that a table named
// by DynamoDB Local's ARN (region "ddblocal") is authorized as the same table named by name.
func (d requestDeriver) localARN(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "dynamodb" {
		return arn
	}
	return "arn:" + parts[1] + ":dynamodb:" + d.region + ":" + d.account + ":" + parts[5]
}

// stepFunctionsBody holds the fields of any Step Functions request that name a resource.
type stepFunctionsBody struct {
	StateMachineArn string `json:"stateMachineArn"`
	ExecutionArn    string `json:"executionArn"`
	ActivityArn     string `json:"activityArn"`
	MapRunArn       string `json:"mapRunArn"`
	ResourceArn     string `json:"resourceArn"`
	TaskToken       string `json:"taskToken"`
	Name            string `json:"name"`
}

func (d requestDeriver) stepFunctionsRequests(op string, body []byte) ([]Request, *apiError) {
	var in stepFunctionsBody
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	resource := AnyResource
	switch op {
	case "SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat":
		// A task token names its state machine only to the engine that issued it; for one it
		// does not know, any grant of the action lets the engine answer its own error.
		resource = UnknownTaskToken
		if d.taskStateMachine != nil {
			if arn, ok := d.taskStateMachine(in.TaskToken); ok {
				resource = arn
			}
		}
	case "CreateStateMachine":
		resource = "arn:aws:states:" + d.region + ":" + d.account + ":stateMachine:" + in.Name
	case "CreateActivity":
		resource = "arn:aws:states:" + d.region + ":" + d.account + ":activity:" + in.Name
	default:
		for _, arn := range []string{in.StateMachineArn, in.ExecutionArn, in.ActivityArn, in.MapRunArn, in.ResourceArn} {
			if arn != "" {
				resource = arn
				break
			}
		}
	}
	return []Request{{Action: stepFunctions.action(op), Resource: resource}}, nil
}

type secretsBody struct {
	SecretID string `json:"SecretId"`
}

func (d requestDeriver) secretsRequests(op string, body []byte) ([]Request, *apiError) {
	if op != "GetSecretValue" && op != "PutSecretValue" {
		return nil, unknownOperation(secretsManager.targetPrefix + op)
	}
	var in secretsBody
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	return []Request{{Action: secretsManager.action(op), Resource: d.secretResource(in.SecretID)}}, nil
}

// secretResource is the ARN IAM checks for a secret: its full ARN when it exists. For one that
// does not, it is the ARN the id names (or would name, for a name), so that the caller learns
// that the secret is missing only if it may read it.
func (d requestDeriver) secretResource(secretID string) string {
	if d.secretARN != nil {
		if arn, ok := d.secretARN(secretID); ok {
			return arn
		}
	}
	if strings.HasPrefix(secretID, "arn:") {
		return secretID
	}
	return "arn:aws:secretsmanager:" + d.region + ":" + d.account + ":secret:" + secretID
}

type putEventsBuses struct {
	Entries []struct {
		EventBusName string
	}
}

func (d requestDeriver) eventsRequests(op string, body []byte) ([]Request, *apiError) {
	if op != "PutEvents" {
		return nil, unknownOperation(eventBridge.targetPrefix + op)
	}
	var in putEventsBuses
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	reqs := make([]Request, 0, 1)
	for _, e := range in.Entries {
		reqs = append(reqs, Request{Action: "events:PutEvents", Resource: d.eventBusARN(e.EventBusName)})
	}
	return reqs, nil
}

// eventBusARN is the ARN of the bus an entry's EventBusName names: a name, an ARN, or nothing
// for the default bus.
func (d requestDeriver) eventBusARN(nameOrARN string) string {
	switch {
	case nameOrARN == "":
		nameOrARN = defaultEventBus
	case strings.HasPrefix(nameOrARN, "arn:"):
		return nameOrARN
	}
	return eventBusARN(d.region, d.account, nameOrARN)
}
