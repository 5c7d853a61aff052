package awsgate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func seatKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: key}}
}

func seatItem(key, eventID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tables.AttrSeatKey: &types.AttributeValueMemberS{Value: key},
		tables.AttrEventID: &types.AttributeValueMemberS{Value: eventID},
		tables.AttrSeatID:  &types.AttributeValueMemberS{Value: key},
	}
}

func TestAllowedGetItemReachesDynamoDBLocal(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats := env.Names.Of(tables.SeatsTable)
	g.AddPrincipal("reader-key", "reader", []deploy.Statement{
		{Actions: []string{"dynamodb:GetItem"}, Resources: []string{g.TableARN(seats)}},
	})
	ctx := context.Background()
	if _, err := g.dynamoDB(adminKey).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")}); err != nil {
		t.Fatalf("admin PutItem: %v", err)
	}

	out, err := g.dynamoDB("reader-key").GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1")})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if got := out.Item[tables.AttrEventID]; got == nil || got.(*types.AttributeValueMemberS).Value != "e1" {
		t.Fatalf("item = %v, want the seat the admin wrote", out.Item)
	}
}

func TestPutItemOnATableGrantedOnlyGetItemIsDeniedAndWritesNothing(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats := env.Names.Of(tables.SeatsTable)
	g.AddAssumedRole("reader-key", "seatsaga-api", "api", []deploy.Statement{
		{Actions: []string{"dynamodb:GetItem"}, Resources: []string{g.TableARN(seats)}},
	})
	ctx := context.Background()

	_, err := g.dynamoDB("reader-key").PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")})
	wantAccessDenied(t, err, "dynamodb:PutItem", g.TableARN(seats))
	wantPrefix := "User: arn:aws:sts::" + account + ":assumed-role/seatsaga-api/api is not authorized"
	if msg := wantAPIError(t, err, "AccessDeniedException").ErrorMessage(); !strings.HasPrefix(msg, wantPrefix) {
		t.Fatalf("message %q does not open with %q", msg, wantPrefix)
	}

	out, err := g.dynamoDB(adminKey).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("admin GetItem: %v", err)
	}
	if out.Item != nil {
		t.Fatalf("the denied PutItem wrote %v", out.Item)
	}

	denial := awsgate.Decision{
		Principal: "arn:aws:sts::" + account + ":assumed-role/seatsaga-api/api", AccessKeyID: "reader-key",
		Operation: "DynamoDB_20120810.PutItem", Action: "dynamodb:PutItem", Resource: g.TableARN(seats),
		Allowed: false, Count: 1,
	}
	if got := g.Denials(); len(got) != 1 || got[0] != denial {
		t.Fatalf("denials = %+v, want [%+v]", got, denial)
	}
	warnings := g.logs.warnings()
	if len(warnings) != 1 || warnings[0]["principal"] != denial.Principal ||
		warnings[0]["action"] != "dynamodb:PutItem" || warnings[0]["resource"] != g.TableARN(seats) {
		t.Fatalf("warnings = %v, want one naming the principal, the action and the resource", warnings)
	}
}

func TestQueryOnAnIndexNeedsAGrantOnTheIndex(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats := env.Names.Of(tables.SeatsTable)
	g.AddPrincipal("table-query-key", "table-query", []deploy.Statement{
		{Actions: []string{"dynamodb:Query"}, Resources: []string{g.TableARN(seats)}},
	})
	g.AddPrincipal("index-query-key", "index-query", []deploy.Statement{
		{Actions: []string{"dynamodb:Query"}, Resources: []string{g.TableARN(seats) + "/index/*"}},
	})
	ctx := context.Background()
	if _, err := g.dynamoDB(adminKey).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")}); err != nil {
		t.Fatalf("admin PutItem: %v", err)
	}
	onTable := &dynamodb.QueryInput{TableName: aws.String(seats),
		KeyConditionExpression:    aws.String("seatKey = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: "e1#A1"}}}
	onIndex := &dynamodb.QueryInput{TableName: aws.String(seats), IndexName: aws.String(tables.SeatsByEvent),
		KeyConditionExpression:    aws.String("eventId = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: "e1"}}}

	if out, err := g.dynamoDB("table-query-key").Query(ctx, onTable); err != nil || out.Count != 1 {
		t.Fatalf("Query on the table = %v, %v; want one seat", out, err)
	}
	_, err := g.dynamoDB("table-query-key").Query(ctx, onIndex)
	wantAccessDenied(t, err, "dynamodb:Query", g.TableARN(seats)+"/index/"+tables.SeatsByEvent)

	if out, err := g.dynamoDB("index-query-key").Query(ctx, onIndex); err != nil || out.Count != 1 {
		t.Fatalf("Query on the index = %v, %v; want one seat", out, err)
	}
	_, err = g.dynamoDB("index-query-key").Query(ctx, onTable)
	wantAccessDenied(t, err, "dynamodb:Query", g.TableARN(seats))
}

func TestTransactionWithOneItemNotAllowedIsDeniedAndWritesNothing(t *testing.T) {
	env := ddbtest.New(t, tables.Seats(), tables.Outbox())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats, outbox := env.Names.Of(tables.SeatsTable), env.Names.Of(tables.OutboxTable)
	g.AddPrincipal("seats-only-key", "seats-only", []deploy.Statement{
		{Actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, Resources: []string{g.TableARN(seats)}},
		// The outbox is granted UpdateItem, not the PutItem an append needs.
		{Actions: []string{"dynamodb:UpdateItem"}, Resources: []string{g.TableARN(outbox)}},
	})
	ctx := context.Background()
	claim := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")}},
		{Put: &types.Put{TableName: aws.String(outbox), Item: map[string]types.AttributeValue{
			tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: "ev-1"}}}},
	}}

	_, err := g.dynamoDB("seats-only-key").TransactWriteItems(ctx, claim)
	wantAccessDenied(t, err, "dynamodb:PutItem", g.TableARN(outbox))
	out, err := g.dynamoDB(adminKey).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("admin GetItem: %v", err)
	}
	if out.Item != nil {
		t.Fatalf("the denied transaction wrote %v", out.Item)
	}

	// The same transaction passes once every item is allowed.
	g.AddPrincipal("claim-key", "claim", []deploy.Statement{
		{Actions: []string{"dynamodb:PutItem"}, Resources: []string{g.TableARN(seats), g.TableARN(outbox)}},
	})
	if _, err := g.dynamoDB("claim-key").TransactWriteItems(ctx, claim); err != nil {
		t.Fatalf("allowed TransactWriteItems: %v", err)
	}
}

func TestStreamCallsAreAuthorizedOnTheStreamTheyRead(t *testing.T) {
	env := ddbtest.New(t, tables.Outbox(), tables.Seats())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	outbox, seats := env.Names.Of(tables.OutboxTable), env.Names.Of(tables.SeatsTable)
	ctx := context.Background()
	admin := g.dynamoDB(adminKey)
	desc, err := admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(outbox)})
	if err != nil {
		t.Fatalf("admin DescribeTable: %v", err)
	}
	// DynamoDB Local names the stream in its own region, "ddblocal"; policies name it so.
	streamARN := aws.ToString(desc.Table.LatestStreamArn)
	streamActions := []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
	g.AddPrincipal("relay-key", "relay", []deploy.Statement{
		{Actions: streamActions, Resources: []string{streamARN}},
		{Actions: []string{"dynamodb:ListStreams"}, Resources: []string{"*"}},
	})
	g.AddPrincipal("seats-reader-key", "seats-reader", []deploy.Statement{
		{Actions: streamActions, Resources: []string{"arn:aws:dynamodb:*:*:table/" + seats + "/stream/*"}},
	})
	if _, err := admin.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(outbox), Item: map[string]types.AttributeValue{
		tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: "ev-1"}}}); err != nil {
		t.Fatalf("admin PutItem: %v", err)
	}

	relay := g.streams("relay-key")
	if _, err := relay.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(outbox)}); err != nil {
		t.Fatalf("relay ListStreams: %v", err)
	}
	stream, err := relay.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
	if err != nil {
		t.Fatalf("relay DescribeStream: %v", err)
	}
	it, err := relay.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(streamARN),
		ShardId: stream.StreamDescription.Shards[0].ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatalf("relay GetShardIterator: %v", err)
	}
	records, err := relay.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatalf("relay GetRecords: %v", err)
	}
	if len(records.Records) != 1 {
		t.Fatalf("relay read %d records, want the one the admin wrote", len(records.Records))
	}
	// The iterator GetRecords hands back names the stream too.
	if _, err := relay.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: records.NextShardIterator}); err != nil {
		t.Fatalf("relay GetRecords with the next iterator: %v", err)
	}

	other := g.streams("seats-reader-key")
	_, err = other.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
	wantAccessDenied(t, err, "dynamodb:DescribeStream", streamARN)
	_, err = other.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	wantAccessDenied(t, err, "dynamodb:GetRecords", streamARN)
	_, err = other.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
	wantAccessDenied(t, err, "dynamodb:ListStreams", awsgate.AnyResource)
}
