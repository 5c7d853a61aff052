package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// Inspector shows what an operator would look up in the console about one reservation: the
// execution's history as a timeline, the reservation and seat items, the outbox events and the
// provider's ledger. It needs only clients, so it works on a stack in this process or on one
// started by `go run ./infra/local up` in another.
type Inspector struct {
	SFN             *sfn.Client
	DynamoDB        *dynamodb.Client
	Names           tables.Names
	StateMachineARN string
	// Ledger returns the provider's books (nil: the ledger section is left out).
	Ledger func(ctx context.Context) (stripesim.Ledger, error)
}

// Inspector returns an inspector over this stack.
func (st *Stack) Inspector() *Inspector {
	return &Inspector{
		SFN: st.SFN, DynamoDB: st.DynamoDB, Names: st.Names, StateMachineARN: st.StateMachineARN,
		Ledger: func(context.Context) (stripesim.Ledger, error) { return st.Payments.Ledger(), nil },
	}
}

// ExecutionARN is the ARN of the saga's execution for reservationID (executions are named by
// reservation id).
func (in *Inspector) ExecutionARN(reservationID string) string {
	return strings.Replace(in.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + reservationID
}

// ExecutionRecord is one execution as Step Functions describes it: DescribeExecution's answer
// and the whole GetExecutionHistory, oldest event first.
type ExecutionRecord struct {
	ARN         string
	Description *sfn.DescribeExecutionOutput
	Events      []sfntypes.HistoryEvent
}

// ReservationRecords is what only this system knows about one reservation, beside its
// execution: the reservation item, its seat items, the outbox events it published and the
// provider's ledger. Each section carries its own read error; a section whose read failed
// holds what was read before the failure.
type ReservationRecords struct {
	ReservationID     string
	ReservationsTable string
	// Reservation is the reservation item; empty when the claim never wrote one.
	Reservation    map[string]types.AttributeValue
	ReservationErr error
	// EventID and SeatIDs are read from the reservation item.
	EventID string
	SeatIDs []string
	// SeatsTable and Seats are the seat items of SeatIDs, in their order.
	SeatsTable string
	Seats      []SeatItem
	SeatsErr   error
	// Outbox lists the reservation's outbox events by aggregate version.
	Outbox    []outbox.Envelope
	OutboxErr error
	// Ledger is the provider's books on the reservation; nil when the inspector has no Ledger
	// or its read failed (LedgerErr).
	Ledger    *ReservationLedger
	LedgerErr error
}

// SeatItem is one seat item by its key (eventId#seatId); Item is empty when it is missing.
type SeatItem struct {
	Key  string
	Item map[string]types.AttributeValue
}

// ReservationLedger is the provider's books on one reservation: its PaymentIntents and the
// money movements on them, in the order they happened.
type ReservationLedger struct {
	Entries   []stripesim.LedgerEntry
	Movements []stripesim.Movement
}

// Err joins the sections' read errors, in the order the sections are read.
func (r ReservationRecords) Err() error {
	return errors.Join(r.ReservationErr, r.SeatsErr, r.OutboxErr, r.LedgerErr)
}

// Inspect writes the report on reservationID to w.
func (in *Inspector) Inspect(ctx context.Context, w io.Writer, reservationID string) error {
	fmt.Fprintf(w, "reservation %s\n", reservationID)
	var errs []error
	x, err := in.Execution(ctx, in.ExecutionARN(reservationID))
	if x.Description != nil {
		writeExecution(w, x)
	}
	if err != nil {
		errs = append(errs, err)
		fmt.Fprintf(w, "  (no execution history: %v)\n", err)
	} else {
		writeTimeline(w, x)
	}
	rec := in.Records(ctx, reservationID)
	WriteRecords(w, rec)
	errs = append(errs, rec.Err())
	return errors.Join(errs...)
}

// Execution reads an execution's description and its whole history. When the history cannot
// be read after the description was, the record keeps the description.
func (in *Inspector) Execution(ctx context.Context, arn string) (ExecutionRecord, error) {
	x := ExecutionRecord{ARN: arn}
	desc, err := in.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return x, err
	}
	x.Description = desc
	p := sfn.NewGetExecutionHistoryPaginator(in.SFN, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1000})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return x, err
		}
		x.Events = append(x.Events, page.Events...)
	}
	return x, nil
}

// Records reads what the system keeps about reservationID: the seat items only when the
// reservation item names seats, the ledger only when the inspector has one.
func (in *Inspector) Records(ctx context.Context, reservationID string) ReservationRecords {
	r := ReservationRecords{
		ReservationID:     reservationID,
		ReservationsTable: in.Names.Of(tables.ReservationsTable),
		SeatsTable:        in.Names.Of(tables.SeatsTable),
	}
	r.Reservation, r.ReservationErr = in.reservationItem(ctx, reservationID)
	r.SeatIDs, r.EventID = seatsOf(r.Reservation)
	if len(r.SeatIDs) > 0 {
		r.Seats, r.SeatsErr = in.seats(ctx, r.EventID, r.SeatIDs)
	}
	r.Outbox, r.OutboxErr = in.outbox(ctx, reservationID)
	if in.Ledger != nil {
		r.Ledger, r.LedgerErr = in.ledger(ctx, reservationID)
	}
	return r
}

// endingLine says how an execution ended: its outcome, whether a person must look (the only
// executions that fail), and why (a business ending's sentence, else the execution's cause).
func endingLine(e saga.Ending, cause string) string {
	if !e.Finished {
		return "running"
	}
	line := "ended " + e.Outcome
	if e.NeedsPerson {
		line += " — needs a person"
	}
	if e.Cause != "" {
		cause = e.Cause
	}
	if cause != "" {
		line += ": " + clip(cause, 160)
	}
	return line
}

// taskError writes a timeline line for a task's failure or timeout (mark "✗" or "⏱").
func taskError(w io.Writer, rel, mark string, errName, cause *string) {
	fmt.Fprintf(w, "  %s      %s %s: %s\n", rel, mark, aws.ToString(errName), clip(aws.ToString(cause), 140))
}

// writeExecution writes the execution's status line and how it ended.
func writeExecution(w io.Writer, x ExecutionRecord) {
	desc := x.Description
	start := aws.ToTime(desc.StartDate)
	fmt.Fprintf(w, "\nexecution %s\n  status %s, started %s", x.ARN, desc.Status, start.UTC().Format(time.RFC3339Nano))
	if desc.StopDate != nil {
		fmt.Fprintf(w, ", took %s", aws.ToTime(desc.StopDate).Sub(start).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %s\n", endingLine(saga.EndingOf(string(desc.Status), aws.ToString(desc.Output), aws.ToString(desc.Error)), aws.ToString(desc.Cause)))
}

// writeTimeline writes the history as a timeline relative to the execution's start.
func writeTimeline(w io.Writer, x ExecutionRecord) {
	start := aws.ToTime(x.Description.StartDate)
	events := x.Events
	fmt.Fprintf(w, "\ntimeline (%d events; times from the execution's start)\n", len(events))
	entered := map[string]time.Time{}
	attempts := map[string]int{}
	current := ""
	transitions := 0
	for _, ev := range events {
		at := aws.ToTime(ev.Timestamp)
		rel := fmt.Sprintf("%+9.3fs", at.Sub(start).Seconds())
		switch {
		case ev.StateEnteredEventDetails != nil:
			current = aws.ToString(ev.StateEnteredEventDetails.Name)
			entered[current] = at
			attempts[current] = 0
			transitions++
			fmt.Fprintf(w, "  %s  ▶ %s (%s)\n", rel, current, strings.TrimSuffix(string(ev.Type), "StateEntered"))
		case ev.StateExitedEventDetails != nil:
			name := aws.ToString(ev.StateExitedEventDetails.Name)
			extra := ""
			if n := attempts[name]; n > 1 {
				extra = fmt.Sprintf(", %d attempts", n)
			}
			fmt.Fprintf(w, "  %s  ◀ %s  %s%s\n", rel, name, at.Sub(entered[name]).Round(time.Millisecond), extra)
		case ev.LambdaFunctionScheduledEventDetails != nil || ev.TaskScheduledEventDetails != nil:
			attempts[current]++
			if attempts[current] > 1 {
				fmt.Fprintf(w, "  %s      ↻ retry %d of %s\n", rel, attempts[current]-1, current)
			}
		case ev.LambdaFunctionFailedEventDetails != nil:
			d := ev.LambdaFunctionFailedEventDetails
			taskError(w, rel, "✗", d.Error, d.Cause)
		case ev.TaskFailedEventDetails != nil:
			d := ev.TaskFailedEventDetails
			taskError(w, rel, "✗", d.Error, d.Cause)
		case ev.TaskTimedOutEventDetails != nil:
			d := ev.TaskTimedOutEventDetails
			taskError(w, rel, "⏱", d.Error, d.Cause)
		case ev.LambdaFunctionTimedOutEventDetails != nil:
			d := ev.LambdaFunctionTimedOutEventDetails
			taskError(w, rel, "⏱", d.Error, d.Cause)
		case ev.TaskSubmittedEventDetails != nil:
			fmt.Fprintf(w, "  %s      … waiting for the task token\n", rel)
		case ev.ExecutionFailedEventDetails != nil:
			d := ev.ExecutionFailedEventDetails
			fmt.Fprintf(w, "  %s  ■ ExecutionFailed %s: %s\n", rel, aws.ToString(d.Error), clip(aws.ToString(d.Cause), 140))
		case ev.Type == sfntypes.HistoryEventTypeExecutionStarted || ev.Type == sfntypes.HistoryEventTypeExecutionSucceeded ||
			ev.Type == sfntypes.HistoryEventTypeExecutionAborted || ev.Type == sfntypes.HistoryEventTypeExecutionTimedOut:
			fmt.Fprintf(w, "  %s  ■ %s\n", rel, ev.Type)
		}
	}
	fmt.Fprintf(w, "  %d state transitions\n", transitions)
}

// WriteRecords writes the records as inspect prints them; a section whose read failed before
// anything of it was read is left out.
func WriteRecords(w io.Writer, r ReservationRecords) {
	if r.ReservationErr == nil {
		fmt.Fprintf(w, "\nreservation item (%s)\n", r.ReservationsTable)
		if len(r.Reservation) == 0 {
			fmt.Fprintln(w, "  (none: the claim never wrote one)")
		} else {
			writeItem(w, r.Reservation, "taskToken")
		}
	}
	if len(r.SeatIDs) > 0 {
		fmt.Fprintf(w, "\nseat items (%s)\n", r.SeatsTable)
		for _, s := range r.Seats {
			fmt.Fprintf(w, "  %s: %s\n", s.Key, inline(s.Item, tables.AttrSeatKey, tables.AttrEventID, tables.AttrSeatID))
		}
	}
	if r.OutboxErr == nil {
		fmt.Fprintf(w, "\noutbox events (%d)\n", len(r.Outbox))
		for _, e := range r.Outbox {
			fmt.Fprintf(w, "  v%-3d %-22s %s  %s\n", e.AggregateVersion, e.Type, e.CreatedAt.Format("15:04:05.000"), clip(string(e.Payload), 150))
		}
	}
	if l := r.Ledger; l != nil {
		fmt.Fprintf(w, "\nprovider ledger (%d PaymentIntents)\n", len(l.Entries))
		for _, e := range l.Entries {
			fmt.Fprintf(w, "  %s status=%s amount=%d %s authorized=%d captured=%d voided=%d refunded=%d captures=%d refunds=%d declines=%d\n",
				e.PaymentIntentID, e.Status, e.Amount, e.Currency, e.Authorized, e.Captured, e.Voided, e.Refunded, e.Captures, e.Refunds, e.Declines)
		}
		for _, m := range l.Movements {
			fmt.Fprintf(w, "    %s %-10s %d %s %s\n", m.At.UTC().Format("15:04:05.000"), m.Kind, m.Amount, m.Currency, m.PaymentIntentID)
		}
	}
}

func (in *Inspector) reservationItem(ctx context.Context, id string) (map[string]types.AttributeValue, error) {
	out, err := in.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(in.Names.Of(tables.ReservationsTable)),
		Key:            map[string]types.AttributeValue{tables.AttrReservationID: &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get reservation %s: %w", id, err)
	}
	return out.Item, nil
}

// seatsOf reads the seat ids and the event id a reservation item names.
func seatsOf(item map[string]types.AttributeValue) (seatIDs []string, eventID string) {
	if l, ok := item[tables.AttrSeatIDs].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				seatIDs = append(seatIDs, s.Value)
			}
		}
	}
	if v, ok := item[tables.AttrEventID].(*types.AttributeValueMemberS); ok {
		eventID = v.Value
	}
	return seatIDs, eventID
}

func (in *Inspector) seats(ctx context.Context, eventID string, seatIDs []string) ([]SeatItem, error) {
	var seats []SeatItem
	for _, s := range seatIDs {
		key := eventID + "#" + s
		out, err := in.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(in.Names.Of(tables.SeatsTable)),
			Key:            map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: key}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return seats, fmt.Errorf("get seat %s: %w", key, err)
		}
		seats = append(seats, SeatItem{Key: key, Item: out.Item})
	}
	return seats, nil
}

func (in *Inspector) outbox(ctx context.Context, id string) ([]outbox.Envelope, error) {
	var envs []outbox.Envelope
	p := dynamodb.NewScanPaginator(in.DynamoDB, &dynamodb.ScanInput{
		TableName:                 aws.String(in.Names.Of(tables.OutboxTable)),
		FilterExpression:          aws.String("#r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": outbox.AttrReservationID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: id}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan outbox: %w", err)
		}
		for _, item := range page.Items {
			env, err := outbox.FromItem(item)
			if err != nil {
				return nil, err
			}
			envs = append(envs, env)
		}
	}
	sort.Slice(envs, func(i, j int) bool { return envs[i].AggregateVersion < envs[j].AggregateVersion })
	return envs, nil
}

func (in *Inspector) ledger(ctx context.Context, id string) (*ReservationLedger, error) {
	books, err := in.Ledger(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the provider's ledger: %w", err)
	}
	l := &ReservationLedger{Entries: books.ForReservation(id)}
	for _, m := range books.Movements {
		if m.ReservationID == id {
			l.Movements = append(l.Movements, m)
		}
	}
	return l, nil
}

// ItemFields renders an item's attributes as inspect prints them, sorted by name, with the
// attributes in hide shown as "(set)" when they hold a value.
func ItemFields(item map[string]types.AttributeValue, hide ...string) [][2]string {
	keys := make([]string, 0, len(item))
	for k := range item {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields := make([][2]string, 0, len(keys))
	for _, k := range keys {
		v := render(item[k])
		if contains(hide, k) && v != "" {
			v = "(set)"
		}
		fields = append(fields, [2]string{k, v})
	}
	return fields
}

func writeItem(w io.Writer, item map[string]types.AttributeValue, hide ...string) {
	for _, f := range ItemFields(item, hide...) {
		fmt.Fprintf(w, "  %-18s %s\n", f[0], f[1])
	}
}

func inline(item map[string]types.AttributeValue, skip ...string) string {
	if len(item) == 0 {
		return "(missing)"
	}
	keys := make([]string, 0, len(item))
	for k := range item {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if contains(skip, k) {
			continue
		}
		parts = append(parts, k+"="+render(item[k]))
	}
	return strings.Join(parts, " ")
}

func render(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint(x.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(x.Value))
		for i, e := range x.Value {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberSS:
		return "[" + strings.Join(x.Value, ",") + "]"
	case *types.AttributeValueMemberM:
		return "{" + inline(x.Value) + "}"
	case *types.AttributeValueMemberNULL:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
