package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// DynamoDB is the part of *dynamodb.Client the loader uses.
type DynamoDB interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Loader puts a checked File into the deployed Seats table.
type Loader struct {
	DB DynamoDB
	// Table is the Seats table's deployed name (tables.Names.Of(tables.SeatsTable)).
	Table string
	// Now dates the seats it creates (default time.Now).
	Now func() time.Time
	// Writers bounds the writes in flight (default 8): seats are independent items, and a
	// few writers load a thousand seats in seconds without provoking throttling.
	Writers int
}

// Kept is a seat the table already holds whose stored price or window differs from the file.
// The loader never changes it: the seat may be held or sold, and a buyer may be paying the
// stored price right now.
type Kept struct {
	SeatID string
	// State is the stored inventory state (AVAILABLE, HELD, ...).
	State string
	// Differences name each differing attribute, stored value first.
	Differences []string
}

// Plan is what loading a file would do, read from the table.
type Plan struct {
	EventID string
	// Create are the seats the table lacks.
	Create []Seat
	// Unchanged are seats already stored as the file says.
	Unchanged []string
	// Kept are seats already stored otherwise; they stay as they are.
	Kept []Kept
}

// Result is what a load did.
type Result struct {
	// Created seats were written by this load.
	Created int
	// Raced seats were absent when planned and present when written: another writer created
	// them in between, and they were left as that writer made them.
	Raced int
}

// planReads are the loader's reads: strongly consistent, so a seat written a moment ago is
// seen, and patient with throttling, since nothing is waiting on them but the operator.
var planReads = inventory.BatchGetOptions{ConsistentRead: true, Rounds: 8, Backoff: 50 * time.Millisecond}

// Plan reads which of the file's seats the table already holds and how.
func (l *Loader) Plan(ctx context.Context, f File) (Plan, error) {
	ids := make([]string, len(f.Seats))
	for i, s := range f.Seats {
		ids[i] = s.SeatID
	}
	items, err := inventory.BatchGetSeats(ctx, l.DB, l.Table, f.EventID, ids, planReads)
	if errors.Is(err, inventory.ErrUnprocessedKeys) {
		return Plan{}, fmt.Errorf("read seats of event %s from %s: %w; try again", f.EventID, l.Table, err)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("read seats of event %s from %s: %w", f.EventID, l.Table, err)
	}
	stored := make(map[string]map[string]types.AttributeValue, len(items))
	for _, item := range items {
		stored[str(item, tables.AttrSeatID)] = item
	}
	p := Plan{EventID: f.EventID}
	for _, s := range f.Seats {
		item, ok := stored[s.SeatID]
		if !ok {
			p.Create = append(p.Create, s)
			continue
		}
		if diffs := differences(item, s, f); len(diffs) > 0 {
			p.Kept = append(p.Kept, Kept{SeatID: s.SeatID, State: str(item, tables.AttrSeatState), Differences: diffs})
		} else {
			p.Unchanged = append(p.Unchanged, s.SeatID)
		}
	}
	return p, nil
}

// Apply creates the plan's seats, each only if it still does not exist, so a seat another
// writer created meanwhile is left alone. On an error it returns what it created: loading the
// file again creates the rest.
func (l *Loader) Apply(ctx context.Context, f File, p Plan) (Result, error) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	writers := l.Writers
	if writers <= 0 {
		writers = 8
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		res      Result
		firstErr error
		wg       sync.WaitGroup
	)
	work := make(chan Seat)
	for range min(writers, len(p.Create)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				created, err := l.put(ctx, f, s, now())
				mu.Lock()
				switch {
				case err != nil && firstErr == nil:
					firstErr = err
					cancel()
				case err == nil && created:
					res.Created++
				case err == nil:
					res.Raced++
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, s := range p.Create {
		select {
		case work <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return res, fmt.Errorf("created %d of %d seats of event %s, then: %w; loading the file again creates the rest",
			res.Created, len(p.Create), f.EventID, firstErr)
	}
	return res, nil
}

// put creates one seat unless it exists; created is false when it did.
func (l *Loader) put(ctx context.Context, f File, s Seat, now time.Time) (created bool, err error) {
	_, err = l.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(l.Table),
		Item:                     SeatItem(f, s, now),
		ConditionExpression:      aws.String("attribute_not_exists(#key)"),
		ExpressionAttributeNames: map[string]string{"#key": tables.AttrSeatKey},
	})
	var exists *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &exists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("create seat %s: %w", reservation.SeatKey(f.EventID, s.SeatID), err)
	}
	return true, nil
}

// SeatItem is the Seats item of a new seat of f: inventory's one encoding of a new seat
// (what inventory.CreateSeats writes) with the file's sale window, which the api's catalog
// reads.
func SeatItem(f File, s Seat, now time.Time) map[string]types.AttributeValue {
	return inventory.SeatItem(f.EventID, s.NewSeat, now, inventory.SaleWindow{OnSaleFrom: f.OpensAt, OnSaleUntil: f.ClosesAt})
}

// differences names what a stored seat has other than the file says.
func differences(item map[string]types.AttributeValue, s Seat, f File) []string {
	var out []string
	if stored := num(item, tables.AttrPriceMinor); stored != strconv.FormatInt(s.PriceMinor, 10) {
		out = append(out, fmt.Sprintf("priceMinor %s stored, %d in the file", orNone(stored), s.PriceMinor))
	}
	if stored := str(item, tables.AttrCurrency); stored != s.Currency {
		out = append(out, fmt.Sprintf("currency %s stored, %s in the file", orNone(stored), s.Currency))
	}
	for _, w := range []struct {
		attr, field string
		want        time.Time
	}{{tables.AttrOnSaleFrom, "opensAt", f.OpensAt}, {tables.AttrOnSaleUntil, "closesAt", f.ClosesAt}} {
		stored := str(item, w.attr)
		t, err := time.Parse(time.RFC3339Nano, stored)
		if stored == "" && w.want.IsZero() || err == nil && t.Equal(w.want) {
			continue
		}
		want := "none"
		if !w.want.IsZero() {
			want = w.want.UTC().Format(time.RFC3339)
		}
		out = append(out, fmt.Sprintf("%s %s stored, %s in the file", w.field, orNone(stored), want))
	}
	return out
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

func seatKey(eventID, seatID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrSeatKey: sv(reservation.SeatKey(eventID, seatID))}
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
