package awsgate_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

// localResolver renders deploy's resources as the local stack names them, through the gate's
// ARN helpers, as internal/twin/stack would.
type localResolver struct {
	gate         *gateUnderTest
	names        tables.Names
	secrets      map[string]string // secret name → ARN, from CreateSecret
	stateMachine string
	eventBus     string
}

func (r localResolver) ARN(fn string, res deploy.Resource) string {
	machineName := "seatsaga-reservation"
	switch res.Kind {
	case deploy.Table:
		return r.gate.TableARN(r.names.Of(res.Name))
	case deploy.TableIndex:
		return r.gate.TableARN(r.names.Of(res.Name)) + "/index/" + res.Index
	case deploy.TableStream:
		// Streams are authorized on DynamoDB Local's ARN, in its region "ddblocal".
		return "arn:aws:dynamodb:*:*:table/" + r.names.Of(res.Name) + "/stream/*"
	case deploy.StateMachine:
		return "arn:aws:states:" + region + ":" + account + ":stateMachine:" + machineName
	case deploy.Executions:
		return "arn:aws:states:" + region + ":" + account + ":execution:" + machineName + ":*"
	case deploy.Secret:
		return r.secrets[res.Name]
	case deploy.EventBus:
		return r.gate.EventBusARN(r.eventBus)
	case deploy.Any:
		return "*"
	}
	// Queues and log groups are used by AWS on the function's behalf; nothing local plays them.
	return "arn:aws:local:" + region + ":" + account + ":" + string(res.Kind) + "/" + fn + "/" + res.Name
}

func (localResolver) Setting(string) string { return "" }

func TestDeployedPoliciesAllowWhatEachFunctionDoesAndNoMore(t *testing.T) {
	env := ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox(), tables.Admissions())
	g := startGate(t, awsgate.Options{DynamoDBEndpoint: env.Endpoint})
	stripeKeyARN, err := g.CreateSecret(deploy.StripeSecretKey, "sk_test_1")
	if err != nil {
		t.Fatal(err)
	}
	bus := relay.NewMemoryBus()
	if _, err := g.AddEventBus("seatsaga-local", bus); err != nil {
		t.Fatal(err)
	}
	resolver := localResolver{gate: g, names: env.Names, eventBus: "seatsaga-local",
		secrets: map[string]string{deploy.StripeSecretKey: stripeKeyARN}}
	for _, fn := range []string{deploy.FnClaim, deploy.FnAuthorize, deploy.FnRelay} {
		g.AddAssumedRole(fn+"Key", "seatsaga-"+fn, fn, deploy.ByName(fn).Policy(resolver))
	}
	ctx := context.Background()
	seats, reservations, outbox := env.Names.Of(tables.SeatsTable), env.Names.Of(tables.ReservationsTable), env.Names.Of(tables.OutboxTable)

	// Claim holds a seat (an update of the loaded seat), records the reservation and appends
	// the outbox record in one transaction, and lists an event's seats through the index.
	if _, err := g.dynamoDB(adminKey).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(seats), Item: seatItem("e1#A1", "e1")}); err != nil {
		t.Fatalf("admin PutItem: %v", err)
	}
	claim := g.dynamoDB(deploy.FnClaim + "Key")
	if _, err := claim.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(seats), Key: seatKey("e1#A1"),
			UpdateExpression:          aws.String("SET reservationId = :r"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: "r-1"}}}},
		{Put: &types.Put{TableName: aws.String(reservations), Item: map[string]types.AttributeValue{
			tables.AttrReservationID: &types.AttributeValueMemberS{Value: "r-1"}}}},
		{Put: &types.Put{TableName: aws.String(outbox), Item: map[string]types.AttributeValue{
			tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: "ev-1"}}}},
	}}); err != nil {
		t.Fatalf("claim's TransactWriteItems: %v", err)
	}
	if _, err := claim.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(seats), IndexName: aws.String(tables.SeatsByEvent),
		KeyConditionExpression:    aws.String("eventId = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: "e1"}}}); err != nil {
		t.Fatalf("claim's Query on %s: %v", tables.SeatsByEvent, err)
	}
	// Claim may not delete seats, rewrite the outbox, or read the Stripe key.
	_, err = claim.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1")})
	wantAccessDenied(t, err, "dynamodb:DeleteItem", g.TableARN(seats))
	_, err = claim.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(outbox),
		Key:                       map[string]types.AttributeValue{tables.AttrOutboxEventID: &types.AttributeValueMemberS{Value: "ev-1"}},
		UpdateExpression:          aws.String("SET published = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}}})
	wantAccessDenied(t, err, "dynamodb:UpdateItem", g.TableARN(outbox))
	_, err = g.secrets(deploy.FnClaim+"Key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(stripeKeyARN)})
	wantAccessDenied(t, err, "secretsmanager:GetSecretValue", stripeKeyARN)

	// Authorize reads the Stripe key it is deployed with.
	if _, err := g.secrets(deploy.FnAuthorize+"Key").GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(stripeKeyARN)}); err != nil {
		t.Fatalf("authorize's GetSecretValue: %v", err)
	}

	// The relay publishes to its bus, and touches no table.
	if _, err := g.events(deploy.FnRelay+"Key").PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
		reservationEvent("seatsaga-local")}}); err != nil {
		t.Fatalf("relay's PutEvents: %v", err)
	}
	_, err = g.dynamoDB(deploy.FnRelay+"Key").GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(seats), Key: seatKey("e1#A1")})
	wantAccessDenied(t, err, "dynamodb:GetItem", g.TableARN(seats))
}
