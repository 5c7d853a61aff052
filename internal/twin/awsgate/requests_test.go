package awsgate

import (
	"slices"
	"testing"

	"github.com/seatsaga/seatsaga/internal/deploy"
)

const (
	reservationsARN = "arn:aws:dynamodb:us-east-1:000000000000:table/p-Reservations"
	localStreamARN  = "arn:aws:dynamodb:ddblocal:000000000000:table/p-Outbox/stream/2026-12-01T23:26:03.929"
	secretARN       = "arn:aws:secretsmanager:us-east-1:000000000000:secret:StripeSecretKey-AbC123"
	knownToken      = "token-of-a-waiting-task"
)

func testDeriver() requestDeriver {
	return requestDeriver{
		region: "us-east-1", account: "000000000000",
		taskStateMachine: func(token string) (string, bool) {
			return machineARN, token == knownToken
		},
		secretARN: func(id string) (string, bool) {
			if id == "StripeSecretKey" || id == secretARN {
				return secretARN, true
			}
			return "", false
		},
	}
}

func TestRequestsNameTheActionsAndResourcesAWSAuthorizes(t *testing.T) {
	cases := []struct {
		name string
		svc  *service
		op   string
		body string
		want []Request
	}{
		{"GetItem on its table", dynamoDB, "GetItem",
			`{"TableName":"p-Seats","Key":{"seatKey":{"S":"e#1"}}}`,
			[]Request{{"dynamodb:GetItem", seatsARN}}},
		{"a table named by a DynamoDB Local ARN", dynamoDB, "PutItem",
			`{"TableName":"arn:aws:dynamodb:ddblocal:000000000000:table/p-Seats","Item":{}}`,
			[]Request{{"dynamodb:PutItem", seatsARN}}},
		{"Query on the table", dynamoDB, "Query",
			`{"TableName":"p-Seats","KeyConditionExpression":"seatKey = :k"}`,
			[]Request{{"dynamodb:Query", seatsARN}}},
		{"Query on an index", dynamoDB, "Query",
			`{"TableName":"p-Seats","IndexName":"byEvent","KeyConditionExpression":"eventId = :e"}`,
			[]Request{{"dynamodb:Query", seatsARN + "/index/byEvent"}}},
		{"Scan on an index", dynamoDB, "Scan",
			`{"TableName":"p-Reservations","IndexName":"activeHoldsByExpiry"}`,
			[]Request{{"dynamodb:Scan", reservationsARN + "/index/activeHoldsByExpiry"}}},
		{"BatchGetItem on each table, by name", dynamoDB, "BatchGetItem",
			`{"RequestItems":{"p-Seats":{"Keys":[{"seatKey":{"S":"a"}}]},"p-Outbox":{"Keys":[]}}}`,
			[]Request{{"dynamodb:BatchGetItem", outboxARN}, {"dynamodb:BatchGetItem", seatsARN}}},
		{"BatchWriteItem on each table", dynamoDB, "BatchWriteItem",
			`{"RequestItems":{"p-Seats":[{"PutRequest":{"Item":{}}}]}}`,
			[]Request{{"dynamodb:BatchWriteItem", seatsARN}}},
		{"TransactWriteItems needs each item's action", dynamoDB, "TransactWriteItems",
			`{"TransactItems":[
				{"Update":{"TableName":"p-Seats","Key":{},"UpdateExpression":"SET a = :a"}},
				{"Put":{"TableName":"p-Reservations","Item":{}}},
				{"ConditionCheck":{"TableName":"p-Seats","Key":{},"ConditionExpression":"attribute_exists(a)"}},
				{"Put":{"TableName":"p-Outbox","Item":{}}},
				{"Delete":{"TableName":"p-Outbox","Key":{}}},
				{"Put":{"TableName":"p-Outbox","Item":{}}}
			]}`,
			[]Request{
				{"dynamodb:UpdateItem", seatsARN},
				{"dynamodb:PutItem", reservationsARN},
				{"dynamodb:ConditionCheckItem", seatsARN},
				{"dynamodb:PutItem", outboxARN},
				{"dynamodb:DeleteItem", outboxARN},
			}},
		{"TransactGetItems needs GetItem on each table", dynamoDB, "TransactGetItems",
			`{"TransactItems":[{"Get":{"TableName":"p-Seats","Key":{}}},{"Get":{"TableName":"p-Reservations","Key":{}}}]}`,
			[]Request{{"dynamodb:GetItem", seatsARN}, {"dynamodb:GetItem", reservationsARN}}},
		{"CreateTable on the new table", dynamoDB, "CreateTable",
			`{"TableName":"p-Seats","KeySchema":[]}`,
			[]Request{{"dynamodb:CreateTable", seatsARN}}},
		{"ListTables on no resource", dynamoDB, "ListTables", `{}`,
			[]Request{{"dynamodb:ListTables", AnyResource}}},
		{"an empty body is an empty object", dynamoDB, "ListTables", ``,
			[]Request{{"dynamodb:ListTables", AnyResource}}},
		{"tags on the resource ARN", dynamoDB, "ListTagsOfResource", `{"ResourceArn":"` + seatsARN + `"}`,
			[]Request{{"dynamodb:ListTagsOfResource", seatsARN}}},

		{"DescribeStream on the stream as the call names it", dynamoDBStreams, "DescribeStream",
			`{"StreamArn":"` + localStreamARN + `"}`,
			[]Request{{"dynamodb:DescribeStream", localStreamARN}}},
		{"GetShardIterator on the stream", dynamoDBStreams, "GetShardIterator",
			`{"StreamArn":"` + localStreamARN + `","ShardId":"shardId-1","ShardIteratorType":"TRIM_HORIZON"}`,
			[]Request{{"dynamodb:GetShardIterator", localStreamARN}}},
		{"GetRecords on the stream its iterator opens with", dynamoDBStreams, "GetRecords",
			`{"ShardIterator":"` + localStreamARN + `|001|c2hhcmRJZA=="}`,
			[]Request{{"dynamodb:GetRecords", localStreamARN}}},
		{"GetRecords with an iterator naming no stream", dynamoDBStreams, "GetRecords",
			`{"ShardIterator":"opaque"}`,
			[]Request{{"dynamodb:GetRecords", AnyResource}}},
		{"ListStreams on no resource", dynamoDBStreams, "ListStreams", `{"TableName":"p-Outbox"}`,
			[]Request{{"dynamodb:ListStreams", AnyResource}}},

		{"StartExecution on the machine", stepFunctions, "StartExecution",
			`{"stateMachineArn":"` + machineARN + `","name":"r-1","input":"{}"}`,
			[]Request{{"states:StartExecution", machineARN}}},
		{"DescribeExecution on the execution", stepFunctions, "DescribeExecution",
			`{"executionArn":"arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:r-1"}`,
			[]Request{{"states:DescribeExecution", "arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:r-1"}}},
		{"StopExecution on the execution", stepFunctions, "StopExecution",
			`{"executionArn":"arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:r-1"}`,
			[]Request{{"states:StopExecution", "arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:r-1"}}},
		{"SendTaskSuccess on the machine the token belongs to", stepFunctions, "SendTaskSuccess",
			`{"taskToken":"` + knownToken + `","output":"{}"}`,
			[]Request{{"states:SendTaskSuccess", machineARN}}},
		{"SendTaskFailure with an unknown token on the unknown token", stepFunctions, "SendTaskFailure",
			`{"taskToken":"forged","error":"E"}`,
			[]Request{{"states:SendTaskFailure", UnknownTaskToken}}},
		{"SendTaskHeartbeat without a token on the unknown token", stepFunctions, "SendTaskHeartbeat",
			`{}`,
			[]Request{{"states:SendTaskHeartbeat", UnknownTaskToken}}},
		{"CreateStateMachine on the machine it names", stepFunctions, "CreateStateMachine",
			`{"name":"seatsaga-reservation","definition":"{}","roleArn":"arn:aws:iam::000000000000:role/r"}`,
			[]Request{{"states:CreateStateMachine", machineARN}}},
		{"ListStateMachines on no resource", stepFunctions, "ListStateMachines", `{}`,
			[]Request{{"states:ListStateMachines", AnyResource}}},

		{"GetSecretValue by name on the full ARN", secretsManager, "GetSecretValue",
			`{"SecretId":"StripeSecretKey"}`,
			[]Request{{"secretsmanager:GetSecretValue", secretARN}}},
		{"PutSecretValue by ARN", secretsManager, "PutSecretValue",
			`{"SecretId":"` + secretARN + `","SecretString":"v2"}`,
			[]Request{{"secretsmanager:PutSecretValue", secretARN}}},
		{"a missing secret on the ARN its name would have", secretsManager, "GetSecretValue",
			`{"SecretId":"Missing"}`,
			[]Request{{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-east-1:000000000000:secret:Missing"}}},

		{"PutEvents on the default bus", eventBridge, "PutEvents",
			`{"Entries":[{"Source":"s","DetailType":"d","Detail":"{}"}]}`,
			[]Request{{"events:PutEvents", "arn:aws:events:us-east-1:000000000000:event-bus/default"}}},
		{"PutEvents on each distinct bus, by name or ARN", eventBridge, "PutEvents",
			`{"Entries":[
				{"EventBusName":"seatsaga","Source":"s"},
				{"EventBusName":"arn:aws:events:us-east-1:000000000000:event-bus/seatsaga","Source":"s"},
				{"EventBusName":"audit","Source":"s"}
			]}`,
			[]Request{
				{"events:PutEvents", "arn:aws:events:us-east-1:000000000000:event-bus/seatsaga"},
				{"events:PutEvents", "arn:aws:events:us-east-1:000000000000:event-bus/audit"},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := testDeriver().requests(c.svc, c.op, []byte(c.body))
			if err != nil {
				t.Fatalf("requests: %v", err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("requests =\n  %v\nwant\n  %v", got, c.want)
			}
		})
	}
}

func TestRequestsRefuseWhatTheServiceWouldRefuse(t *testing.T) {
	cases := []struct {
		name, op, body, code string
		svc                  *service
	}{
		{"a body that is not JSON", "GetItem", `{"TableName":`, "SerializationException", dynamoDB},
		{"a field of the wrong type", "GetItem", `{"TableName":7}`, "SerializationException", dynamoDB},
		{"a Secrets Manager operation the gate does not serve", "DeleteSecret", `{}`, "UnknownOperationException", secretsManager},
		{"an EventBridge operation the gate does not serve", "PutRule", `{}`, "UnknownOperationException", eventBridge},
		{"PartiQL ExecuteStatement", "ExecuteStatement", `{"Statement":"SELECT * FROM \"p-Seats\""}`, "UnknownOperationException", dynamoDB},
		{"PartiQL BatchExecuteStatement", "BatchExecuteStatement", `{"Statements":[]}`, "UnknownOperationException", dynamoDB},
		{"PartiQL ExecuteTransaction", "ExecuteTransaction", `{"TransactStatements":[]}`, "UnknownOperationException", dynamoDB},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := testDeriver().requests(c.svc, c.op, []byte(c.body))
			if err == nil || err.code != c.code {
				t.Fatalf("requests error = %v, want %s", err, c.code)
			}
		})
	}
}

// The saga's claim writes the seat, the reservation and the outbox record in one transaction;
// a policy missing the outbox's PutItem must deny the whole call, naming that item.
func TestTransactionIsDeniedWhenOneItemIsNotAllowed(t *testing.T) {
	claim := `{"TransactItems":[
		{"Update":{"TableName":"p-Seats","Key":{}}},
		{"Put":{"TableName":"p-Reservations","Item":{}}},
		{"Put":{"TableName":"p-Outbox","Item":{}}}
	]}`
	seatsAndReservations := deploy.Statement{
		Actions:   []string{"dynamodb:PutItem", "dynamodb:UpdateItem"},
		Resources: []string{seatsARN, reservationsARN},
	}
	outboxAppend := deploy.Statement{Actions: []string{"dynamodb:PutItem"}, Resources: []string{outboxARN}}
	outboxUpdateOnly := deploy.Statement{Actions: []string{"dynamodb:UpdateItem"}, Resources: []string{outboxARN}}
	cases := []struct {
		name       string
		statements []deploy.Statement
		wantDenied *Request
	}{
		{"every item allowed", []deploy.Statement{seatsAndReservations, outboxAppend}, nil},
		{"the outbox not granted at all", []deploy.Statement{seatsAndReservations},
			&Request{"dynamodb:PutItem", outboxARN}},
		{"the outbox granted another action", []deploy.Statement{seatsAndReservations, outboxUpdateOnly},
			&Request{"dynamodb:PutItem", outboxARN}},
		{"TransactWriteItems itself is no grant", []deploy.Statement{{
			Actions: []string{"dynamodb:TransactWriteItems"}, Resources: []string{seatsARN, reservationsARN, outboxARN}}},
			&Request{"dynamodb:UpdateItem", seatsARN}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqs, err := testDeriver().requests(dynamoDB, "TransactWriteItems", []byte(claim))
			if err != nil {
				t.Fatal(err)
			}
			var denied *Request
			for _, r := range reqs {
				if !Allowed(c.statements, r) {
					denied = &r
					break
				}
			}
			switch {
			case c.wantDenied == nil && denied != nil:
				t.Fatalf("denied %+v, want every item allowed", *denied)
			case c.wantDenied != nil && (denied == nil || *denied != *c.wantDenied):
				t.Fatalf("denied %v, want %+v", denied, *c.wantDenied)
			}
		})
	}
}

// Without a resolver every task token is unknown to the gate.
func TestTaskTokensWithoutAResolverAreUnknown(t *testing.T) {
	d := testDeriver()
	d.taskStateMachine = nil
	got, err := d.requests(stepFunctions, "SendTaskSuccess", []byte(`{"taskToken":"`+knownToken+`","output":"{}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Request{{"states:SendTaskSuccess", UnknownTaskToken}}; !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}
