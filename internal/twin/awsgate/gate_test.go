package awsgate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestUnknownCredentialsAreRefusedAsAnInvalidSecurityToken(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	ctx := context.Background()

	_, err := g.dynamoDB("nobody").ListTables(ctx, &dynamodb.ListTablesInput{})
	apiErr := wantAPIError(t, err, "UnrecognizedClientException")
	if apiErr.ErrorMessage() != "The security token included in the request is invalid." {
		t.Fatalf("message = %q", apiErr.ErrorMessage())
	}
	_, err = g.secrets("nobody").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("x")})
	wantAPIError(t, err, "UnrecognizedClientException")
	if len(g.Decisions()) != 0 {
		t.Fatalf("an unknown caller got authorization decisions: %+v", g.Decisions())
	}
}

// post sends a raw JSON-protocol call to the gate and decodes the answer.
func post(t *testing.T, url, target, authorization, body string) (int, http.Header, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", target)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer %q is not a JSON object of strings: %v", raw, err)
	}
	return resp.StatusCode, resp.Header, out
}

func authorization(accessKeyID, service string) string {
	return "AWS4-HMAC-SHA256 Credential=" + accessKeyID + "/20261201/us-east-1/" + service + "/aws4_request, " +
		"SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}

func TestRequestsWithoutAValidSignatureShapeAreRefusedInAWSsShape(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	cases := []struct {
		name, target, authorization, wantCode string
	}{
		{"no Authorization header", "secretsmanager.GetSecretValue", "", "UnrecognizedClientException"},
		{"a header of another scheme", "secretsmanager.GetSecretValue", "Bearer abc", "IncompleteSignatureException"},
		{"a credential scope of the wrong shape", "secretsmanager.GetSecretValue",
			"AWS4-HMAC-SHA256 Credential=admin-key/us-east-1, SignedHeaders=host, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"IncompleteSignatureException"},
		{"a credential scoped to another service", "secretsmanager.GetSecretValue", authorization(adminKey, "dynamodb"), "InvalidSignatureException"},
		{"an operation of no service the gate knows", "AmazonSQS.SendMessage", authorization(adminKey, "sqs"), "UnknownOperationException"},
		{"an operation the gate does not serve", "secretsmanager.DeleteSecret", authorization(adminKey, "secretsmanager"), "UnknownOperationException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, header, body := post(t, g.URL, c.target, c.authorization, `{"SecretId":"x"}`)
			if status != http.StatusBadRequest || header.Get("X-Amzn-ErrorType") != c.wantCode ||
				body["__type"] != "com.amazon.coral.service#"+c.wantCode || header.Get("X-Amzn-RequestId") == "" {
				t.Fatalf("answer %d %v %v, want 400 %s", status, header, body, c.wantCode)
			}
		})
	}
}

func TestAccessDeniedIsAnAPIErrorInEveryClient(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint, StepFunctionsEndpoint: startStepFunctions(t)})
	if _, err := g.AddEventBus("default", relay.NewMemoryBus()); err != nil {
		t.Fatal(err)
	}
	g.AddPrincipal("nothing-key", "nothing", nil)
	ctx := context.Background()
	calls := map[string]func() error{
		"dynamodb": func() error {
			_, err := g.dynamoDB("nothing-key").DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.Names.Of(tables.SeatsTable))})
			return err
		},
		"dynamodbstreams": func() error {
			_, err := g.streams("nothing-key").ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
			return err
		},
		"sfn": func() error {
			_, err := g.stepFunctions("nothing-key").ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
			return err
		},
		"secretsmanager": func() error {
			_, err := g.secrets("nothing-key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("x")})
			return err
		},
		"eventbridge": func() error {
			_, err := g.events("nothing-key").PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
				{Source: aws.String("s"), DetailType: aws.String("d"), Detail: aws.String("{}")}}})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			apiErr := wantAPIError(t, call(), "AccessDeniedException")
			if !strings.HasPrefix(apiErr.ErrorMessage(), "User: arn:aws:sts::"+account+":assumed-role/nothing/nothing is not authorized to perform: ") {
				t.Fatalf("message = %q", apiErr.ErrorMessage())
			}
		})
	}
}

func TestDecisionsCountEachRequestOfEachCall(t *testing.T) {
	env := ddbtest.New(t, tables.Seats(), tables.Outbox())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats, outbox := env.Names.Of(tables.SeatsTable), env.Names.Of(tables.OutboxTable)
	g.AddPrincipal("reader-key", "reader", []deploy.Statement{
		{Actions: []string{"dynamodb:GetItem"}, Resources: []string{g.TableARN(seats)}},
	})
	ctx := context.Background()
	reader := g.dynamoDB("reader-key")
	for range 2 {
		if _, err := reader.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("a")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := reader.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(seats), Key: seatKey("a")}},
		{Get: &types.Get{TableName: aws.String(outbox), Key: map[string]types.AttributeValue{tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: "e"}}}},
	}})
	wantAccessDenied(t, err, "dynamodb:GetItem", g.TableARN(outbox))

	principal := "arn:aws:sts::" + account + ":assumed-role/reader/reader"
	want := []awsgate.Decision{
		{Principal: principal, AccessKeyID: "reader-key", Operation: "DynamoDB_20120810.GetItem", Action: "dynamodb:GetItem", Resource: g.TableARN(seats), Allowed: true, Count: 2},
		{Principal: principal, AccessKeyID: "reader-key", Operation: "DynamoDB_20120810.TransactGetItems", Action: "dynamodb:GetItem", Resource: g.TableARN(outbox), Allowed: false, Count: 1},
		{Principal: principal, AccessKeyID: "reader-key", Operation: "DynamoDB_20120810.TransactGetItems", Action: "dynamodb:GetItem", Resource: g.TableARN(seats), Allowed: true, Count: 1},
	}
	got := g.Decisions()
	if len(got) != len(want) {
		t.Fatalf("decisions = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("decision %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A transaction of three items needs three authorization requests but is one call, as AWS
// bills and throttles it; a denied call reached no service, so it is not counted at all.
func TestCallsCountEachCallOnceByRoleAndOperation(t *testing.T) {
	env := ddbtest.New(t, tables.Seats(), tables.Outbox())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats, outbox := env.Names.Of(tables.SeatsTable), env.Names.Of(tables.OutboxTable)
	grants := []deploy.Statement{
		{Actions: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"}, Resources: []string{g.TableARN(seats)}},
		{Actions: []string{"dynamodb:PutItem"}, Resources: []string{g.TableARN(outbox)}},
	}
	// Two sessions of one role count together, as one role's calls.
	g.AddAssumedRole("claim-key-1", "seatsaga-claim", "claim", grants)
	g.AddAssumedRole("claim-key-2", "seatsaga-claim", "claim", grants)
	ctx := context.Background()

	_, err := g.dynamoDB("claim-key-1").TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(seats), Key: seatKey("e1#A2"),
			ConditionExpression: aws.String("attribute_not_exists(" + tables.AttrSeatKey + ")")}},
		{Put: &types.Put{TableName: aws.String(outbox), Item: map[string]types.AttributeValue{
			tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: "e"}}}},
	}})
	if err != nil {
		t.Fatalf("TransactWriteItems: %v", err)
	}
	for _, key := range []string{"claim-key-1", "claim-key-2"} {
		if _, err := g.dynamoDB(key).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = g.dynamoDB("claim-key-1").DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1")})
	wantAccessDenied(t, err, "dynamodb:DeleteItem", g.TableARN(seats))

	want := []awsgate.Call{
		{Role: "seatsaga-claim", Service: awsgate.ServiceDynamoDB, Operation: "GetItem", Count: 2},
		{Role: "seatsaga-claim", Service: awsgate.ServiceDynamoDB, Operation: "TransactWriteItems", Count: 1},
	}
	if got := g.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %+v, want %+v", got, want)
	}
}

func TestCloseReturnsWithinItsBoundWhileACallHangs(t *testing.T) {
	t.Parallel() // It waits out the bound; let the other tests run meanwhile.
	hung := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer upstream.Close()
	defer close(hung)
	g, err := awsgate.New(awsgate.Options{StepFunctionsEndpoint: upstream.URL})
	if err != nil {
		t.Fatal(err)
	}
	url, err := g.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.AddAdmin(adminKey)
	go func() {
		_, _ = sfn.New(sfn.Options{Region: region, BaseEndpoint: aws.String(url), Credentials: staticCredentials(adminKey), RetryMaxAttempts: 1}).
			ListStateMachines(context.Background(), &sfn.ListStateMachinesInput{})
	}()
	time.Sleep(200 * time.Millisecond) // Let the call reach the upstream.

	start := time.Now()
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 7*time.Second {
		t.Fatalf("Close took %s with a call in flight", took)
	}
	if _, err := http.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("the gate still answers after Close")
	}
}

func TestNewRefusesAnEndpointThatIsNoURL(t *testing.T) {
	for _, endpoint := range []string{"127.0.0.1:8000", "ftp://127.0.0.1", "http://"} {
		if _, err := awsgate.New(awsgate.Options{DynamoDBEndpoint: endpoint}); err == nil {
			t.Errorf("New accepted DynamoDB endpoint %q", endpoint)
		}
	}
}

// PartiQL needs grants the gate does not model (dynamodb:PartiQLSelect, ... on each statement's
// table), so it refuses the operations outright, even to the admin, instead of authorizing
// them on something else.
func TestPartiQLIsRefusedAsAnOperationTheGateDoesNotModel(t *testing.T) {
	g := startGate(t, awsgate.Options{})
	ctx := context.Background()
	admin := g.dynamoDB(adminKey)
	_, err := admin.ExecuteStatement(ctx, &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT * FROM "p-Seats"`)})
	apiErr := wantAPIError(t, err, "UnknownOperationException")
	if !strings.Contains(apiErr.ErrorMessage(), "PartiQL") || !strings.Contains(apiErr.ErrorMessage(), "dynamodb:PartiQLSelect") {
		t.Fatalf("message = %q, want one saying the gate does not model PartiQL", apiErr.ErrorMessage())
	}
	_, err = admin.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`DELETE FROM "p-Seats" WHERE seatKey = 'a'`)}}})
	wantAPIError(t, err, "UnknownOperationException")
	_, err = admin.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
		{Statement: aws.String(`UPDATE "p-Seats" SET a = 1 WHERE seatKey = 'a'`)}}})
	wantAPIError(t, err, "UnknownOperationException")
	if d := g.Decisions(); len(d) != 0 {
		t.Fatalf("PartiQL calls were authorized: %+v", d)
	}
}
