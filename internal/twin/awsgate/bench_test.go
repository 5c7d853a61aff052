package awsgate_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

// BenchmarkGateGetItem measures what the gate adds to a DynamoDB Local GetItem: the same call
// straight to DynamoDB Local and through the gate as a principal with a store-sized policy,
// one at a time and from many goroutines.
func BenchmarkGateGetItem(b *testing.B) {
	env := ddbtest.New(b, tables.Seats())
	g := startGate(b, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	seats := env.Names.Of(tables.SeatsTable)
	// As many statements as a saga step's policy, with the matching one last.
	g.AddPrincipal("claimKey", "claim", []deploy.Statement{
		{Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []string{"arn:aws:logs:us-east-1:000000000000:log-group:/aws/lambda/claim:*"}},
		{Actions: []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}, Resources: []string{"*"}},
		{Actions: []string{"dynamodb:PutItem"}, Resources: []string{g.TableARN("Outbox")}},
		{Actions: []string{"dynamodb:Query"}, Resources: []string{g.TableARN(seats) + "/index/*"}},
		{Actions: []string{"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
			Resources: []string{g.TableARN("Reservations"), g.TableARN(seats)}},
	})
	ctx := context.Background()
	if _, err := g.dynamoDB(adminKey).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")}); err != nil {
		b.Fatal(err)
	}
	client := func(endpoint, accessKeyID string) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{Region: region, BaseEndpoint: aws.String(endpoint),
			Credentials: staticCredentials(accessKeyID), DisableValidateResponseChecksum: true,
			HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
				t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
			})})
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1")}
	targets := []struct {
		name   string
		client *dynamodb.Client
	}{
		{"direct", client(env.Endpoint, "local")},
		{"gate", client(g.URL, "claimKey")},
	}
	// DynamoDB Local's JVM compiles its hot paths over the first thousands of calls; warm it
	// up on both paths so that neither is measured cold.
	for range 2000 {
		for _, target := range targets {
			if _, err := target.client.GetItem(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, target := range targets {
		b.Run(target.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := target.client.GetItem(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(target.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := target.client.GetItem(ctx, in); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGateAuthorizeTransaction measures the gate's own work on a claim-sized
// TransactWriteItems: reading the tables from the body and evaluating each item's request.
func BenchmarkGateAuthorizeTransaction(b *testing.B) {
	statements := []deploy.Statement{
		{Actions: []string{"dynamodb:PutItem"}, Resources: []string{"arn:aws:dynamodb:us-east-1:000000000000:table/p-Outbox"}},
		{Actions: []string{"dynamodb:Query"}, Resources: []string{"arn:aws:dynamodb:us-east-1:000000000000:table/p-Seats/index/*"}},
		{Actions: []string{"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
			Resources: []string{"arn:aws:dynamodb:us-east-1:000000000000:table/p-Reservations", "arn:aws:dynamodb:us-east-1:000000000000:table/p-Seats"}},
	}
	body := []byte(`{"TransactItems":[
		{"Update":{"TableName":"p-Seats","Key":{"seatKey":{"S":"e1#A1"}},"UpdateExpression":"SET #s = :held, holder = :r, version = version + :one","ConditionExpression":"#s = :free","ExpressionAttributeNames":{"#s":"state"},"ExpressionAttributeValues":{":held":{"S":"HELD"},":free":{"S":"FREE"},":r":{"S":"r-1"},":one":{"N":"1"}}}},
		{"Update":{"TableName":"p-Seats","Key":{"seatKey":{"S":"e1#A2"}},"UpdateExpression":"SET #s = :held, holder = :r, version = version + :one","ConditionExpression":"#s = :free","ExpressionAttributeNames":{"#s":"state"},"ExpressionAttributeValues":{":held":{"S":"HELD"},":free":{"S":"FREE"},":r":{"S":"r-1"},":one":{"N":"1"}}}},
		{"Put":{"TableName":"p-Reservations","Item":{"reservationId":{"S":"r-1"},"state":{"S":"HELD"},"seats":{"L":[{"S":"A1"},{"S":"A2"}]},"holdExpiresAt":{"S":"2026-12-01T10:10:00Z"}}}},
		{"Put":{"TableName":"p-Outbox","Item":{"eventId":{"S":"ev-1"},"type":{"S":"SeatsHeld"},"detail":{"S":"{\"reservationId\":\"r-1\"}"}}}}
	]}`)
	b.ReportAllocs()
	for b.Loop() {
		if !awsgate.AuthorizeForBenchmark(statements, "TransactWriteItems", body) {
			b.Fatal("the claim's transaction was denied")
		}
	}
}
