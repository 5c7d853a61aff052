package inventory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// warmUp runs op a few hundred times first, so that neither benchmark pays for the JVM's
// just-in-time compilation of DynamoDB Local and the order of the two does not bias the ratio.
func warmUp(b *testing.B, f *fixture, op func(i int, event, seat string) error) {
	b.Helper()
	const n = 300
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("W%04d", i)
	}
	if err := f.store.CreateSeats(context.Background(), "warmup", inventory.SeatsAt(2500, "EUR", ids...)); err != nil {
		b.Fatal(err)
	}
	for i, id := range ids {
		if err := op(-1-i, "warmup", id); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSeats(b *testing.B, f *fixture, event string) []string {
	b.Helper()
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%06d", i)
	}
	if err := f.store.CreateSeats(context.Background(), event, inventory.SeatsAt(2500, "EUR", ids...)); err != nil {
		b.Fatal(err)
	}
	return ids
}

// BenchmarkClaim is one single-seat Claim (seat update + reservation put + outbox put in one
// transaction) per iteration, each on a fresh seat.
func BenchmarkClaim(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	claim := func(i int, event, seat string) error {
		_, err := f.store.Claim(ctx, request(fmt.Sprintf("r%d", i), event, seat))
		return err
	}
	warmUp(b, f, claim)
	ids := benchSeats(b, f, "bench")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := claim(i, "bench", ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}

// BenchmarkBareConditionalUpdateItem is the floor: one conditional UpdateItem that takes a
// fresh AVAILABLE seat, on the same DynamoDB Local and client.
func BenchmarkBareConditionalUpdateItem(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	table := aws.String(f.env.Names.Of(tables.SeatsTable))
	update := func(i int, event, seat string) error {
		_, err := f.env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: table,
			Key: map[string]types.AttributeValue{
				tables.AttrSeatKey: &types.AttributeValueMemberS{Value: reservation.SeatKey(event, seat)},
			},
			ConditionExpression:      aws.String("#st = :available"),
			UpdateExpression:         aws.String("SET #st = :held, #rid = :rid"),
			ExpressionAttributeNames: map[string]string{"#st": "state", "#rid": tables.AttrReservationID},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":available": &types.AttributeValueMemberS{Value: string(reservation.Available)},
				":held":      &types.AttributeValueMemberS{Value: string(reservation.Held)},
				":rid":       &types.AttributeValueMemberS{Value: fmt.Sprintf("r%d", i)},
			},
		})
		return err
	}
	warmUp(b, f, update)
	ids := benchSeats(b, f, "bench")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := update(i, "bench", ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
