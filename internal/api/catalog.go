package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Seat item attributes the catalog reads. state, reservationId, holdExpiresAt and version are
// written by internal/inventory (same names, times in inventory.TimeLayout), and so are
// priceMinor and currency (the seat's price in minor units, currency ISO 4217 upper case),
// written once by inventory.CreateSeats and never changed; a seat without them is not on sale.
// The sale window is optional and written by whoever loads an event's seats:
//
//	onSaleFrom, onSaleUntil  RFC 3339 instants bounding the sale (absent: unbounded)
const (
	attrSeatState   = tables.AttrSeatState
	attrSeatVersion = tables.AttrVersion
	AttrOnSaleFrom  = tables.AttrOnSaleFrom
	AttrOnSaleUntil = tables.AttrOnSaleUntil
	AttrPriceMinor  = tables.AttrPriceMinor
	AttrCurrency    = tables.AttrCurrency
)

// DynamoReader is the part of the DynamoDB API the catalog uses; *dynamodb.Client satisfies it.
type DynamoReader interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// DynamoCatalog answers the admission pre-check from the Seats table with eventually
// consistent reads (half the cost of strong ones; the Claim step's conditional write decides).
type DynamoCatalog struct {
	Client DynamoReader
	// Table is the deployed Seats table name.
	Table string
	// AdmissionsTable, when set, is the deployed Admissions table name: the catalog then also
	// reads a reservation's admission in the same request as its seats (AdmissionAndSeats).
	AdmissionsTable string
}

// catalogReads are the admission pre-check's reads: eventually consistent (the Claim step's
// conditional write decides), retrying unprocessed keys for at most 5 rounds.
var catalogReads = inventory.BatchGetOptions{Rounds: 5, Backoff: 20 * time.Millisecond}

// Seats implements SeatCatalog with one BatchGetItem (at most reservation.MaxSeatsPerTransaction
// keys, under the 100-key limit).
func (c *DynamoCatalog) Seats(ctx context.Context, eventID string, seatIDs []string) (map[string]CatalogSeat, error) {
	items, err := inventory.BatchGetSeats(ctx, c.Client, c.Table, eventID, seatIDs, catalogReads)
	if err != nil {
		return nil, fmt.Errorf("read seats of event %s: %w", eventID, err)
	}
	return catalogSeats(eventID, seatIDs, items)
}

// AdmissionAndSeats implements AdmissionAndSeats with one BatchGetItem over both tables: the
// admission and the start backlog strongly consistent, as Admissions.GetAdmission reads it, the
// seats eventually consistent, as Seats reads them. Without AdmissionsTable it reads nothing and
// says so.
func (c *DynamoCatalog) AdmissionAndSeats(ctx context.Context, reservationID, eventID string, seatIDs []string) (FirstRead, error) {
	var first FirstRead
	if c.AdmissionsTable == "" || len(seatIDs) >= 99 {
		return first, errNoAdmissionAndSeats
	}
	items, err := inventory.BatchGet(ctx, c.Client, map[string]types.KeysAndAttributes{
		c.Table: inventory.SeatKeys(eventID, seatIDs),
		c.AdmissionsTable: {
			Keys: []map[string]types.AttributeValue{
				{tables.AttrReservationID: &types.AttributeValueMemberS{Value: reservationID}},
				{tables.AttrReservationID: &types.AttributeValueMemberS{Value: inventory.StartBacklogKey}},
			},
			ConsistentRead: aws.Bool(true),
		},
	}, c.firstReads())
	if err != nil {
		return first, fmt.Errorf("read admission %s and seats of event %s: %w", reservationID, eventID, err)
	}
	for _, item := range items[c.AdmissionsTable] {
		if inventory.IsStartBacklog(item) {
			if first.StartBacklogUntil, err = inventory.DecodeStartBacklog(item); err != nil {
				return first, err
			}
			continue
		}
		if first.Admission, err = inventory.DecodeAdmission(item); err != nil {
			return first, fmt.Errorf("read admission %s: %w", reservationID, err)
		}
		first.Found = true
	}
	if first.Seats, err = catalogSeats(eventID, seatIDs, items[c.Table]); err != nil {
		return first, err
	}
	return first, nil
}

// firstReads are catalogReads for AdmissionAndSeats: the start backlog is a hint every POST
// reads, one item on one partition, so when DynamoDB leaves it unprocessed (that partition's
// read throughput is spent) the read goes on without it, as if no backlog were marked, instead
// of retrying the hot key and answering the buyer 500.
func (c *DynamoCatalog) firstReads() inventory.BatchGetOptions {
	opts := catalogReads
	opts.Optional = func(table string, key map[string]types.AttributeValue) bool {
		return table == c.AdmissionsTable && inventory.IsStartBacklog(key)
	}
	return opts
}

// errNoAdmissionAndSeats says a catalog cannot read both at once: the handler reads them apart.
var errNoAdmissionAndSeats = errors.New("api: the catalog does not read admissions")

// catalogSeats decodes the items of a seats read, keyed by seat id.
func catalogSeats(eventID string, seatIDs []string, items []map[string]types.AttributeValue) (map[string]CatalogSeat, error) {
	out := make(map[string]CatalogSeat, len(seatIDs))
	for _, item := range items {
		cs, err := catalogSeatFromItem(item)
		if err != nil {
			return nil, fmt.Errorf("read seats of event %s: %w", eventID, err)
		}
		if cs.Seat.EventID == eventID {
			out[cs.Seat.SeatID] = cs
		}
	}
	return out, nil
}

// EventExists implements SeatCatalog: an event exists iff the byEvent index has a seat for it.
func (c *DynamoCatalog) EventExists(ctx context.Context, eventID string) (bool, error) {
	out, err := c.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(c.Table),
		IndexName:                 aws.String(tables.SeatsByEvent),
		KeyConditionExpression:    aws.String("#e = :e"),
		ExpressionAttributeNames:  map[string]string{"#e": tables.AttrEventID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: eventID}},
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return false, fmt.Errorf("look up event %s: %w", eventID, err)
	}
	return len(out.Items) > 0, nil
}

func catalogSeatFromItem(item map[string]types.AttributeValue) (CatalogSeat, error) {
	str := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	num := func(name string) (int64, error) {
		v, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0, nil
		}
		return strconv.ParseInt(v.Value, 10, 64)
	}
	var cs CatalogSeat
	var err error
	cs.Seat.EventID, cs.Seat.SeatID, cs.Seat.ReservationID = str(tables.AttrEventID), str(tables.AttrSeatID), str(tables.AttrReservationID)
	if cs.Seat.State, err = reservation.ParseInventoryState(str(attrSeatState)); err != nil {
		return cs, fmt.Errorf("seat %s: %w", str(tables.AttrSeatKey), err)
	}
	cs.AdmittedBy = str(tables.AttrAdmittedBy)
	if v := str(tables.AttrAdmittedUntil); v != "" {
		if cs.AdmittedUntil, err = time.Parse(inventory.TimeLayout, v); err != nil {
			return cs, fmt.Errorf("seat %s: admission lease: %w", str(tables.AttrSeatKey), err)
		}
	}
	if v := str(tables.AttrHoldExpiresAt); v != "" {
		if cs.Seat.HoldExpiresAt, err = time.Parse(inventory.TimeLayout, v); err != nil {
			return cs, fmt.Errorf("seat %s: %s: %w", str(tables.AttrSeatKey), tables.AttrHoldExpiresAt, err)
		}
	}
	if cs.Seat.Version, err = num(attrSeatVersion); err != nil {
		return cs, fmt.Errorf("seat %s: version: %w", str(tables.AttrSeatKey), err)
	}
	for name, dst := range map[string]*time.Time{AttrOnSaleFrom: &cs.OnSaleFrom, AttrOnSaleUntil: &cs.OnSaleUntil} {
		if v := str(name); v != "" {
			if *dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return cs, fmt.Errorf("seat %s: %s: %w", str(tables.AttrSeatKey), name, err)
			}
		}
	}
	if cs.Seat.PriceMinor, err = num(AttrPriceMinor); err != nil {
		return cs, fmt.Errorf("seat %s: %s: %w", str(tables.AttrSeatKey), AttrPriceMinor, err)
	}
	cs.Seat.Currency = strings.ToUpper(str(AttrCurrency))
	return cs, nil
}
