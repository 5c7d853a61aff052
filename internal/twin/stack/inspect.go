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

// Inspect writes the report on reservationID to w.
func (in *Inspector) Inspect(ctx context.Context, w io.Writer, reservationID string) error {
	arn := strings.Replace(in.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + reservationID
	fmt.Fprintf(w, "reservation %s\n", reservationID)
	var errs []error
	if err := in.timeline(ctx, w, arn); err != nil {
		errs = append(errs, err)
		fmt.Fprintf(w, "  (no execution history: %v)\n", err)
	}
	seatIDs, eventID, err := in.reservationItem(ctx, w, reservationID)
	if err != nil {
		errs = append(errs, err)
	}
	if len(seatIDs) > 0 {
		if err := in.seats(ctx, w, eventID, seatIDs); err != nil {
			errs = append(errs, err)
		}
	}
	if err := in.outbox(ctx, w, reservationID); err != nil {
		errs = append(errs, err)
	}
	if in.Ledger != nil {
		if err := in.ledger(ctx, w, reservationID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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

func (in *Inspector) timeline(ctx context.Context, w io.Writer, arn string) error {
	desc, err := in.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return err
	}
	start := aws.ToTime(desc.StartDate)
	fmt.Fprintf(w, "\nexecution %s\n  status %s, started %s", arn, desc.Status, start.UTC().Format(time.RFC3339Nano))
	if desc.StopDate != nil {
		fmt.Fprintf(w, ", took %s", aws.ToTime(desc.StopDate).Sub(start).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %s\n", endingLine(saga.EndingOf(string(desc.Status), aws.ToString(desc.Output), aws.ToString(desc.Error)), aws.ToString(desc.Cause)))
	var events []sfntypes.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(in.SFN, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1000})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		events = append(events, page.Events...)
	}
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
	return nil
}

func (in *Inspector) reservationItem(ctx context.Context, w io.Writer, id string) ([]string, string, error) {
	out, err := in.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(in.Names.Of(tables.ReservationsTable)),
		Key:            map[string]types.AttributeValue{tables.AttrReservationID: &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, "", fmt.Errorf("get reservation %s: %w", id, err)
	}
	fmt.Fprintf(w, "\nreservation item (%s)\n", in.Names.Of(tables.ReservationsTable))
	if len(out.Item) == 0 {
		fmt.Fprintln(w, "  (none: the claim never wrote one)")
		return nil, "", nil
	}
	writeItem(w, out.Item, map[string]bool{"taskToken": true})
	var seats []string
	if l, ok := out.Item[tables.AttrSeatIDs].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				seats = append(seats, s.Value)
			}
		}
	}
	eventID := ""
	if v, ok := out.Item[tables.AttrEventID].(*types.AttributeValueMemberS); ok {
		eventID = v.Value
	}
	return seats, eventID, nil
}

func (in *Inspector) seats(ctx context.Context, w io.Writer, eventID string, seatIDs []string) error {
	fmt.Fprintf(w, "\nseat items (%s)\n", in.Names.Of(tables.SeatsTable))
	for _, s := range seatIDs {
		key := eventID + "#" + s
		out, err := in.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(in.Names.Of(tables.SeatsTable)),
			Key:            map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: key}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return fmt.Errorf("get seat %s: %w", key, err)
		}
		fmt.Fprintf(w, "  %s: %s\n", key, inline(out.Item, tables.AttrSeatKey, tables.AttrEventID, tables.AttrSeatID))
	}
	return nil
}

func (in *Inspector) outbox(ctx context.Context, w io.Writer, id string) error {
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
			return fmt.Errorf("scan outbox: %w", err)
		}
		for _, item := range page.Items {
			env, err := outbox.FromItem(item)
			if err != nil {
				return err
			}
			envs = append(envs, env)
		}
	}
	sort.Slice(envs, func(i, j int) bool { return envs[i].AggregateVersion < envs[j].AggregateVersion })
	fmt.Fprintf(w, "\noutbox events (%d)\n", len(envs))
	for _, e := range envs {
		fmt.Fprintf(w, "  v%-3d %-22s %s  %s\n", e.AggregateVersion, e.Type, e.CreatedAt.Format("15:04:05.000"), clip(string(e.Payload), 150))
	}
	return nil
}

func (in *Inspector) ledger(ctx context.Context, w io.Writer, id string) error {
	books, err := in.Ledger(ctx)
	if err != nil {
		return fmt.Errorf("read the provider's ledger: %w", err)
	}
	entries := books.ForReservation(id)
	fmt.Fprintf(w, "\nprovider ledger (%d PaymentIntents)\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(w, "  %s status=%s amount=%d %s authorized=%d captured=%d voided=%d refunded=%d captures=%d refunds=%d declines=%d\n",
			e.PaymentIntentID, e.Status, e.Amount, e.Currency, e.Authorized, e.Captured, e.Voided, e.Refunded, e.Captures, e.Refunds, e.Declines)
	}
	for _, m := range books.Movements {
		if m.ReservationID == id {
			fmt.Fprintf(w, "    %s %-10s %d %s %s\n", m.At.UTC().Format("15:04:05.000"), m.Kind, m.Amount, m.Currency, m.PaymentIntentID)
		}
	}
	return nil
}

func writeItem(w io.Writer, item map[string]types.AttributeValue, hide map[string]bool) {
	keys := make([]string, 0, len(item))
	for k := range item {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := render(item[k])
		if hide[k] && v != "" {
			v = "(set)"
		}
		fmt.Fprintf(w, "  %-18s %s\n", k, v)
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
