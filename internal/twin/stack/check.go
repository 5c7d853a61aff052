package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// Sources are the invariant checker's view of this stack: its tables, the provider's books
// with the refunds it has not settled, its executions and, when the relay runs, the bus's
// publications and, when the consumer is the stack's own handler, its side of them.
func (st *Stack) Sources() invariants.Sources {
	src := invariants.Sources{
		Store:  invariants.DynamoDB{Client: st.DynamoDB, Names: st.Names},
		Ledger: refundLedger{sim: st.Payments},
		Engine: invariants.StepFunctions{Client: st.SFN, StateMachineARN: st.StateMachineARN},
		Bus:    busPublications{bus: st.Bus},
		Now:    st.Clock.Now,
		Grace:  st.cfg.SweepGrace,
		// The cap the api enforces, as its environment gives it.
		MaxActive: st.cfg.MaxActiveReservations,
	}
	// The consumer's notifications are seen only from the stack's own handler: a consumer
	// process sends them where the stack cannot read.
	if st.Bus != nil && !st.Lambdas.RunsProcess(FnConsumer) {
		src.Consumer = invariants.ExampleConsumer{
			Store:  invariants.DynamoDB{Client: st.DynamoDB, Names: st.Names},
			Sender: st.Notifications,
		}
	}
	return src
}

// Check runs the invariant checker over the stack as it is now. Call Settle first: a sale in
// flight legitimately has open executions.
func (st *Stack) Check(ctx context.Context) (invariants.Verdict, error) {
	return invariants.Run(ctx, st.Sources())
}

// Quiet reports whether nothing is in flight: no execution running outside the
// reconciliation backlog, no webhook waiting for delivery, and every outbox record published.
func (st *Stack) Quiet(ctx context.Context) (bool, string, error) {
	running, err := st.runningExecutions(ctx)
	if err != nil {
		return false, "", err
	}
	if len(running) > 0 {
		backlog, err := st.backlog(ctx)
		if err != nil {
			return false, "", err
		}
		open := 0
		for _, name := range running {
			if !backlog[name] {
				open++
			}
		}
		if open > 0 {
			return false, fmt.Sprintf("%d executions running", open), nil
		}
	}
	if n := st.Payments.PendingWebhooks(); n > 0 {
		return false, fmt.Sprintf("%d webhooks pending", n), nil
	}
	if st.Bus != nil {
		outbox, err := st.count(ctx, tables.OutboxTable)
		if err != nil {
			return false, "", err
		}
		published := map[string]bool{}
		for _, p := range (busPublications{bus: st.Bus}).Published() {
			published[p.EventID] = true
		}
		// Records the relay's mapping gave up on are parked in its DLQ for a person: they are
		// accounted for, and waiting on them would never end.
		parked := st.parkedOutboxRecords()
		if len(published)+parked < outbox {
			return false, fmt.Sprintf("%d of %d outbox events published, %d parked in %s", len(published), outbox, parked, deploy.RelayDLQ), nil
		}
	}
	return true, "", nil
}

// parkedOutboxRecords counts the stream records whose batch information the relay's mapping
// sent to its DLQ.
func (st *Stack) parkedOutboxRecords() int {
	q := st.Queue(deploy.RelayDLQ)
	if q == nil {
		return 0
	}
	n := 0
	for _, m := range q.Messages() {
		var rec relay.FailureRecord
		if json.Unmarshal([]byte(m.Body), &rec) == nil {
			n += rec.DDBStreamBatchInfo.BatchSize
		}
	}
	return n
}

// Settle waits (polling every interval of wall time) until the stack is Quiet or ctx ends. With
// a fake clock the caller must advance time meanwhile; SettleFake does both.
func (st *Stack) Settle(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	var why string
	for {
		quiet, reason, err := st.Quiet(ctx)
		if err != nil {
			return fmt.Errorf("stack: settle: %w", err)
		}
		if quiet {
			return nil
		}
		why = reason
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: not settled (%s): %w", why, ctx.Err())
		case <-time.After(interval):
		}
	}
}

func (st *Stack) runningExecutions(ctx context.Context) ([]string, error) {
	var names []string
	p := sfn.NewListExecutionsPaginator(st.SFN, &sfn.ListExecutionsInput{
		StateMachineArn: aws.String(st.StateMachineARN),
		StatusFilter:    sfntypes.ExecutionStatusRunning,
		MaxResults:      1000,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list running executions: %w", err)
		}
		for _, e := range page.Executions {
			names = append(names, aws.ToString(e.Name))
		}
	}
	return names, nil
}

// backlog returns the reservations in the reconciliation backlog.
func (st *Stack) backlog(ctx context.Context) (map[string]bool, error) {
	res, err := (invariants.DynamoDB{Client: st.DynamoDB, Names: st.Names}).Reservations(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, r := range res {
		if r.InReconciliation {
			out[r.ID] = true
		}
	}
	return out, nil
}

func (st *Stack) count(ctx context.Context, logical string) (int, error) {
	total := 0
	p := dynamodb.NewScanPaginator(st.DynamoDB, &dynamodb.ScanInput{
		TableName: aws.String(st.Names.Of(logical)),
		Select:    "COUNT",
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("count %s: %w", logical, err)
		}
		total += int(page.Count)
	}
	return total, nil
}

// ExecutionTrace is what one execution's history says about its path.
type ExecutionTrace struct {
	Name   string
	ARN    string
	Status string
	// Ending is how the execution ended (saga.EndingOf over its last event's status, output
	// and error); Ending.Finished is false while it runs.
	Ending saga.Ending
	// States are the names of the states entered, in order; Entered and Exited their times
	// on the stack's clock (Exited is zero while a state runs).
	States          []string
	Entered, Exited []time.Time
	// Transitions counts the states entered. Retries counts the task attempts scheduled after
	// a state's first one, its Retry rules at work: Step Functions bills each as a state
	// transition too, though no state is entered. Events counts the history's events, one
	// CloudWatch Logs record each at the deployed logging level (ALL).
	Transitions int
	Retries     int
	Events      int
	Start, Stop time.Time
}

// Traces reads every execution's history (parallel bounded by workers).
func (st *Stack) Traces(ctx context.Context, workers int) ([]ExecutionTrace, error) {
	if workers <= 0 {
		workers = 8
	}
	execs, err := (invariants.StepFunctions{Client: st.SFN, StateMachineARN: st.StateMachineARN}).Executions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ExecutionTrace, len(execs))
	errs := make([]error, len(execs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				out[i], errs[i] = st.trace(ctx, execs[i])
			}
		}()
	}
	for i := range execs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return out, errors.Join(errs...)
}

func (st *Stack) trace(ctx context.Context, e invariants.Execution) (ExecutionTrace, error) {
	t := ExecutionTrace{Name: e.Name, ARN: e.ARN, Status: e.Status}
	events, err := st.History(ctx, e.ARN)
	if err != nil {
		return t, err
	}
	var output, errName string
	t.Events = len(events)
	scheduled := 0 // task attempts scheduled since the last state was entered
	for _, ev := range events {
		if ev.StateEnteredEventDetails != nil && strings.HasSuffix(string(ev.Type), "StateEntered") {
			t.States = append(t.States, aws.ToString(ev.StateEnteredEventDetails.Name))
			t.Entered = append(t.Entered, aws.ToTime(ev.Timestamp))
			t.Exited = append(t.Exited, time.Time{})
			t.Transitions++
			scheduled = 0
		}
		if ev.Type == sfntypes.HistoryEventTypeTaskScheduled || ev.Type == sfntypes.HistoryEventTypeLambdaFunctionScheduled {
			if scheduled > 0 {
				t.Retries++
			}
			scheduled++
		}
		if ev.StateExitedEventDetails != nil && len(t.States) > 0 {
			t.Exited[len(t.Exited)-1] = aws.ToTime(ev.Timestamp)
		}
		switch ev.Type {
		case sfntypes.HistoryEventTypeExecutionStarted:
			t.Start = aws.ToTime(ev.Timestamp)
		case sfntypes.HistoryEventTypeExecutionSucceeded, sfntypes.HistoryEventTypeExecutionFailed,
			sfntypes.HistoryEventTypeExecutionAborted, sfntypes.HistoryEventTypeExecutionTimedOut:
			t.Stop = aws.ToTime(ev.Timestamp)
		}
		// The last event says how it ended, even if it ended after the listing said RUNNING.
		switch {
		case ev.ExecutionSucceededEventDetails != nil:
			t.Status, output = string(sfntypes.ExecutionStatusSucceeded), aws.ToString(ev.ExecutionSucceededEventDetails.Output)
		case ev.ExecutionFailedEventDetails != nil:
			t.Status, errName = string(sfntypes.ExecutionStatusFailed), aws.ToString(ev.ExecutionFailedEventDetails.Error)
		case ev.ExecutionTimedOutEventDetails != nil:
			t.Status, errName = string(sfntypes.ExecutionStatusTimedOut), aws.ToString(ev.ExecutionTimedOutEventDetails.Error)
		case ev.ExecutionAbortedEventDetails != nil:
			t.Status, errName = string(sfntypes.ExecutionStatusAborted), aws.ToString(ev.ExecutionAbortedEventDetails.Error)
		}
	}
	t.Ending = saga.EndingOf(t.Status, output, errName)
	return t, nil
}

// History returns an execution's whole history, oldest first.
func (st *Stack) History(ctx context.Context, executionARN string) ([]sfntypes.HistoryEvent, error) {
	var events []sfntypes.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(st.SFN, &sfn.GetExecutionHistoryInput{
		ExecutionArn: aws.String(executionARN),
		MaxResults:   1000,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", executionARN, err)
		}
		events = append(events, page.Events...)
	}
	return events, nil
}

// ExecutionARN is the ARN of the execution of a reservation.
func (st *Stack) ExecutionARN(reservationID string) string {
	return strings.Replace(st.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + reservationID
}
