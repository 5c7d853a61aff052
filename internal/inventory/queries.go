package inventory

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// ExpiredHolds lists reservations whose hold (HELD or PAYMENT_PENDING) ended before `before`,
// oldest deadline first, at most limit (0 means no limit). It reads the sparse
// activeHoldsByExpiry index, shard by shard; index reads are eventually consistent, so callers
// act through the version-fenced transitions, never on the listing alone.
func (st *Store) ExpiredHolds(ctx context.Context, before time.Time, limit int) ([]reservation.Reservation, error) {
	return st.queryShards(ctx, tables.ActiveHoldsByExpiry, tables.AttrHoldShard, tables.AttrHoldExpiresAt, before, limit,
		func(a, b reservation.Reservation) bool { return a.HoldExpiresAt.Before(b.HoldExpiresAt) })
}

// NeedingReconciliation lists the reservations on the reconcileByAge index
// (Reservation.Unsettled: payment unknown; CONFIRMED seats whose money is not captured; or
// RELEASED seats while money is or may be authorized or taken) that joined it before `before`
// (pass the current time for all),
// oldest first, at most limit (0 means no limit). Their ReconcileSince is when they joined it
// (for an unknown payment: when it became unknown).
func (st *Store) NeedingReconciliation(ctx context.Context, before time.Time, limit int) ([]reservation.Reservation, error) {
	return st.queryShards(ctx, tables.ReconcileByAge, tables.AttrReconShard, tables.AttrReconSince, before, limit,
		func(a, b reservation.Reservation) bool { return a.ReconcileSince.Before(b.ReconcileSince) })
}

func (st *Store) queryShards(ctx context.Context, index, shardAttr, sortAttr string, before time.Time, limit int,
	less func(a, b reservation.Reservation) bool) ([]reservation.Reservation, error) {
	var out []reservation.Reservation
	for shard := 0; shard < tables.WriteShards; shard++ {
		in := &dynamodb.QueryInput{
			TableName:                aws.String(st.reservations),
			IndexName:                aws.String(index),
			KeyConditionExpression:   aws.String("#sh = :sh AND #sk < :before"),
			ExpressionAttributeNames: map[string]string{"#sh": shardAttr, "#sk": sortAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":sh": s(strconv.Itoa(shard)), ":before": s(FormatTime(before)),
			},
		}
		if limit > 0 {
			in.Limit = aws.Int32(int32(limit))
		}
		p := dynamodb.NewQueryPaginator(st.db, in)
		taken := 0
		for p.HasMorePages() && (limit <= 0 || taken < limit) {
			page, err := p.NextPage(ctx)
			if err != nil {
				st.countAPIError("query_"+index, err)
				return nil, fmt.Errorf("inventory: query %s shard %d: %w", index, shard, err)
			}
			for _, item := range page.Items {
				r, err := DecodeReservation(item)
				if err != nil {
					return nil, err
				}
				out = append(out, r)
				taken++
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SeatsOfEvent lists an event's seats by seat id from the byEvent index (eventually
// consistent: for seat maps and admission pre-checks, never for decisions).
func (st *Store) SeatsOfEvent(ctx context.Context, eventID string) ([]reservation.Seat, error) {
	p := dynamodb.NewQueryPaginator(st.db, &dynamodb.QueryInput{
		TableName:                 aws.String(st.seats),
		IndexName:                 aws.String(tables.SeatsByEvent),
		KeyConditionExpression:    aws.String("#e = :e"),
		ExpressionAttributeNames:  map[string]string{"#e": tables.AttrEventID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": s(eventID)},
	})
	var seats []reservation.Seat
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			st.countAPIError("seats_of_event", err)
			return nil, fmt.Errorf("inventory: seats of event %s: %w", eventID, err)
		}
		for _, item := range page.Items {
			seat, err := DecodeSeat(item)
			if err != nil {
				return nil, err
			}
			seats = append(seats, seat)
		}
	}
	return seats, nil
}
