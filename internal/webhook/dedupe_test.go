package webhook

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

// TestDynamoDedupe runs the dedupe store against DynamoDB Local: callback claims, lease
// takeover, the event that sent a callback and TTL attributes.
func TestDynamoDedupe(t *testing.T) {
	env := ddbtest.New(t, tables.ProcessedEvents())
	clk := clock.NewFake(t0)
	d := &DynamoDedupe{Client: env.Client, Table: env.Names.Of(tables.ProcessedEventsTable), Retention: 72 * time.Hour,
		Now: clk.Now}
	ctx := context.Background()

	steps := []struct {
		name    string
		advance time.Duration
		want    Claim
	}{
		{"first claim", 0, Claimed},
		{"second claim inside the lease", 5 * time.Second, InProgress},
		{"claim after the lease ran out", 30 * time.Second, Claimed},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		got, err := d.ClaimCallback(ctx, "r1#tok", "evt_1", 30*time.Second)
		if err != nil || got != s.want {
			t.Fatalf("%s: %v %v, want %v", s.name, got, err, s.want)
		}
	}
	if err := d.CompleteCallback(ctx, "r1#tok", "authorized"); err != nil {
		t.Fatal(err)
	}
	out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: key("webhook-callback#r1#tok")})
	if err != nil {
		t.Fatal(err)
	}
	if ttl := out.Item[tables.AttrExpiresAtTTL]; ttl == nil {
		t.Fatalf("no TTL attribute: %v", out.Item)
	}
	clk.Advance(time.Hour)
	if got, err := d.ClaimCallback(ctx, "r1#tok", "evt_2", 30*time.Second); err != nil || got != AlreadySent {
		t.Fatalf("another event after completion: %v %v", got, err)
	}
	if got, err := d.ClaimCallback(ctx, "r1#tok", "evt_1", 30*time.Second); err != nil || got != SentByThisEvent {
		t.Fatalf("the sending event again after completion: %v %v", got, err)
	}
	if got, err := d.ClaimCallback(ctx, "r1#tok2", "evt_1", 30*time.Second); err != nil || got != Claimed {
		t.Fatalf("another token: %v %v", got, err)
	}
}
