package dynamodblocal_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

func TestIsLocalEndpoint(t *testing.T) {
	cases := []struct {
		name     string
		endpoint string
		want     bool
	}{
		{"loopback v4", "http://127.0.0.1:8000", true},
		{"localhost", "http://localhost:8000", true},
		{"loopback v6", "http://[::1]:8000", true},
		{"aws", "https://dynamodb.us-east-1.amazonaws.com", false},
		{"lan", "http://10.0.0.5:8000", false},
		{"garbage", "::not a url", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := dynamodblocal.IsLocalEndpoint(c.endpoint); got != c.want {
				t.Fatalf("IsLocalEndpoint(%q) = %v, want %v", c.endpoint, got, c.want)
			}
		})
	}
}

func TestCreateTablesFromDefinitions(t *testing.T) {
	env := ddbtest.New(t)
	ctx := context.Background()
	// Creating again must be harmless.
	if err := dynamodblocal.CreateTables(ctx, env.Client, env.Names); err != nil {
		t.Fatalf("second CreateTables: %v", err)
	}
	for _, def := range tables.All() {
		out, err := env.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.Names.Of(def.Name))})
		if err != nil {
			t.Fatalf("describe %s: %v", def.Name, err)
		}
		d := out.Table
		if d.TableStatus != types.TableStatusActive {
			t.Errorf("%s status %s", def.Name, d.TableStatus)
		}
		if got := aws.ToString(d.KeySchema[0].AttributeName); got != def.PartitionKey.Name {
			t.Errorf("%s partition key %s, want %s", def.Name, got, def.PartitionKey.Name)
		}
		if len(d.GlobalSecondaryIndexes) != len(def.Indexes) {
			t.Errorf("%s has %d GSIs, want %d", def.Name, len(d.GlobalSecondaryIndexes), len(def.Indexes))
		}
		streaming := d.StreamSpecification != nil && aws.ToBool(d.StreamSpecification.StreamEnabled)
		if streaming != def.StreamNewImage {
			t.Errorf("%s stream enabled %v, want %v", def.Name, streaming, def.StreamNewImage)
		}
		if def.TTLAttribute != "" {
			ttl, err := env.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(env.Names.Of(def.Name))})
			if err != nil {
				t.Fatalf("describe TTL %s: %v", def.Name, err)
			}
			if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != def.TTLAttribute {
				t.Errorf("%s TTL attribute %q, want %q", def.Name, got, def.TTLAttribute)
			}
		}
	}
}

// A cancelled transaction must come back as a TransactionCanceledException with reasons, not
// as a checksum failure (DynamoDB Local sends no CRC32 with it).
func TestCancelledTransactionDecodes(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := env.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{
			Put: &types.Put{
				TableName:           aws.String(env.Names.Of(tables.SeatsTable)),
				Item:                map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: "e#1"}},
				ConditionExpression: aws.String("attribute_exists(seatKey)"),
			},
		}},
	})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("want TransactionCanceledException, got %v", err)
	}
	if len(tce.CancellationReasons) != 1 || aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" {
		t.Fatalf("reasons %+v", tce.CancellationReasons)
	}
}

func TestStartFailsClearlyWithoutJar(t *testing.T) {
	t.Setenv(dynamodblocal.EnvEndpoint, "")
	t.Setenv(dynamodblocal.EnvJar, "/nonexistent/DynamoDBLocal.jar")
	_, err := dynamodblocal.Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded without a jar")
	}
	if want := "make tools"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestStartReusesEndpoint(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	t.Setenv(dynamodblocal.EnvEndpoint, ep)
	s, err := dynamodblocal.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Started() || s.Endpoint() != ep {
		t.Fatalf("Start with %s set: started=%v endpoint=%s", dynamodblocal.EnvEndpoint, s.Started(), s.Endpoint())
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	// Stopping a reused endpoint must leave it running.
	c, err := dynamodblocal.NewClient(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("reused endpoint stopped: %v", err)
	}
}
