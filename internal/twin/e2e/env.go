package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// Epoch is where every Env's fake clock starts.
var Epoch = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

// Hold is the hold duration of every Env: long enough that stepping the clock through retries
// never crosses it by accident; tests that need it lapsed advance past it explicitly.
const Hold = 10 * time.Minute

// SeatPrice is the price of every seat Seed creates, in minor units of SeatCurrency; the api
// charges the sum of a reservation's seat prices.
const (
	SeatPrice    int64 = 2500
	SeatCurrency       = "EUR"
)

var sharedDynamoDB string

// Main starts one DynamoDB Local for the package's tests (unless DYNAMODB_ENDPOINT names one)
// and stops it afterwards; call it from TestMain.
func Main(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := dynamodblocal.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer srv.Stop()
	sharedDynamoDB = srv.Endpoint()
	return m.Run()
}

// Options vary an Env.
type Options struct {
	// LateSuccessPolicy is "reacquire" (default) or "void".
	LateSuccessPolicy string
	// ReconcileAttempts bounds the reconcile loop (default 3); ReconcileBackoff is its first
	// wait (default 2 s of fake time).
	ReconcileAttempts int
	ReconcileBackoff  time.Duration
	Payments          stack.PaymentsConfig
	// DynamoDBFault fails the DynamoDB calls it answers non-nil for (stack.Config).
	DynamoDBFault func(op string, params any) error
	// StepFunctionsLoseResponse loses the answers of the functions' Step Functions calls it
	// answers true for (stack.Config).
	StepFunctionsLoseResponse func(role, operation string) bool
	// Verbose sends the stack's logs to stderr.
	Verbose bool
}

// Env is one running stack on a fake clock.
type Env struct {
	T     testing.TB
	Ctx   context.Context
	Stack *stack.Stack
	Clock *clock.Fake
	Store *inventory.Store
}

// New starts a stack for t and stops it when t ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	if sharedDynamoDB == "" {
		t.Fatal("e2e: call e2e.Main from TestMain")
	}
	if o.ReconcileAttempts == 0 {
		o.ReconcileAttempts = 3
	}
	if o.ReconcileBackoff == 0 {
		o.ReconcileBackoff = 2 * time.Second
	}
	logger := slog.New(slog.DiscardHandler)
	if o.Verbose || os.Getenv("SEATSAGA_E2E_VERBOSE") != "" {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	clk := clock.NewFake(Epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	st, err := stack.Start(ctx, stack.Config{
		Clock: clk, DynamoDBEndpoint: sharedDynamoDB, Hold: Hold, Pricing: stack.Flat(SeatPrice, SeatCurrency),
		LateSuccessPolicy: o.LateSuccessPolicy, SweepInterval: -1,
		ReconcileAttempts: o.ReconcileAttempts, ReconcileBackoff: o.ReconcileBackoff,
		Payments: o.Payments, PaymentsTimeout: 2 * time.Second, DisableRelay: true, Logger: logger,
		DynamoDBFault: o.DynamoDBFault, StepFunctionsLoseResponse: o.StepFunctionsLoseResponse,
	})
	if err != nil {
		t.Fatalf("e2e: start the local stack: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// Every scenario runs with the deployed grants: a call the gate refused would be refused
	// on AWS too, whatever the scenario's own assertions say.
	t.Cleanup(func() {
		for _, d := range st.Gate.Denials() {
			t.Errorf("e2e: the gate refused %s %s on %s (%d×): the function's grants do not allow a call its code makes",
				d.Principal, d.Action, d.Resource, d.Count)
		}
	})
	store, err := inventory.New(inventory.Config{Client: st.DynamoDB, Names: st.Names, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{T: t, Ctx: ctx, Stack: st, Clock: clk, Store: store}
}

// Gate holds every invocation of the named function before its handler until open is called
// (when the test ends at the latest); waiting tells how many are held.
func (e *Env) Gate(fn string) (open func(), waiting func() int) {
	e.T.Helper()
	open, waiting, err := e.Stack.Lambdas.Gate(fn)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(open)
	return open, waiting
}

// Seed creates an event with n seats, each priced SeatPrice SeatCurrency, and returns their ids.
func (e *Env) Seed(eventID string, n int) []string {
	e.T.Helper()
	seats, err := e.Stack.SeedEvent(e.Ctx, eventID, n)
	if err != nil {
		e.T.Fatalf("seed %s: %v", eventID, err)
	}
	return seats
}

// Input is an execution input as the api builds it: the reservation id derives from the
// customer and the idempotency key, the amount is the seats' price.
func Input(customer, key, eventID, paymentMethod string, seats ...string) saga.Input {
	return saga.Input{
		ReservationID: api.ReservationID(customer, key), EventID: eventID, SeatIDs: seats,
		CustomerID: customer, Amount: SeatPrice * int64(len(seats)), Currency: "eur", IdempotencyKey: key,
		PaymentMethod: paymentMethod, CorrelationID: "corr-" + key,
	}
}

// StartSaga starts the reservation's execution directly, named by its id, as the api does
// after its admission pre-check: tests of a race lost at the claim itself use it.
func (e *Env) StartSaga(in saga.Input) string {
	e.T.Helper()
	raw, _ := json.Marshal(in)
	out, err := e.Stack.SFN.StartExecution(e.Ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(e.Stack.StateMachineARN), Name: aws.String(in.ReservationID), Input: aws.String(string(raw)),
	})
	if err != nil {
		e.T.Fatalf("start execution %s: %v", in.ReservationID, err)
	}
	return aws.ToString(out.ExecutionArn)
}

// Reserve sends the reservation's POST /events/{eventId}/reservations through the API
// Gateway stand-in as its customer, with its idempotency key, and returns the ARN of the
// execution the api started (named by the reservation id). The body states no price: the api
// charges the seats' prices, which tests compare with in.Amount.
func (e *Env) Reserve(in saga.Input) string {
	e.T.Helper()
	body, _ := json.Marshal(api.CreateRequest{SeatIDs: in.SeatIDs, PaymentMethod: in.PaymentMethod})
	status, raw := e.call(http.MethodPost, "/events/"+in.EventID+"/reservations", in.CustomerID, in.IdempotencyKey, string(body))
	if status != http.StatusAccepted {
		e.T.Fatalf("POST reservation %s: %d %s", in.ReservationID, status, raw)
	}
	var out struct {
		ReservationID string `json:"reservationId"`
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil || out.ReservationID != in.ReservationID {
		e.T.Fatalf("POST reservation: answered %s, want reservation %s", raw, in.ReservationID)
	}
	return e.Stack.ExecutionARN(in.ReservationID)
}

// Cancel sends DELETE /reservations/{id} as the customer and returns the HTTP status.
func (e *Env) Cancel(customer, id string) (int, string) {
	e.T.Helper()
	return e.call(http.MethodDelete, "/reservations/"+id, customer, "", "")
}

// call sends one authenticated request to the API Gateway stand-in and returns the status and
// body.
func (e *Env) call(method, path, customer, key, body string) (int, string) {
	e.T.Helper()
	resp, raw := e.send(method, path, customer, key, body)
	return resp.StatusCode, string(raw)
}

// send sends one request through the API Gateway stand-in as customer ("" sends no token; key
// "" sends no Idempotency-Key header) and returns the response with its body read.
func (e *Env) send(method, path, customer, key, body string) (*http.Response, []byte) {
	e.T.Helper()
	req, err := http.NewRequestWithContext(e.Ctx, method, e.Stack.Endpoints.API+path, strings.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	if customer != "" {
		token, err := e.Stack.Token(customer)
		if err != nil {
			e.T.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set(api.IdempotencyKeyHeader, key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// WaitFor waits (real time) until cond holds. While the stack is idle (no Lambda invocation
// for a moment) it steps the fake clock one second, so retries' backoff and Wait states run;
// it never steps past limit (zero: no limit), so a hold cannot lapse unless the test says so.
func (e *Env) WaitFor(what string, limit time.Time, cond func() bool) {
	e.T.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last, idleSince := int64(-1), time.Now()
	for !cond() {
		if time.Now().After(deadline) {
			e.T.Fatalf("e2e: timed out waiting for %s (fake time %s)", what, e.Clock.Now().Format(time.RFC3339))
		}
		n := e.Stack.Lambdas.TotalInvocations()
		switch {
		case n != last:
			last, idleSince = n, time.Now()
		case time.Since(idleSince) > 60*time.Millisecond && (limit.IsZero() || e.Clock.Now().Add(time.Second).Before(limit)):
			e.Clock.Advance(time.Second)
			idleSince = time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Deadline is the latest the clock may be stepped to while the reservation's hold must stay
// live.
func (e *Env) Deadline(id string) time.Time {
	e.T.Helper()
	return e.Reservation(id).HoldExpiresAt.Add(-time.Second)
}

// Execution is a finished execution as the Step Functions API reports it.
type Execution struct {
	Status string
	// Ending is how it ended, as saga.EndingOf reads the status, the output and the error:
	// a business ending succeeds, and its outcome and cause are here, not in Error and Cause.
	Ending saga.Ending
	// Error and Cause are DescribeExecution's, set only for an execution that did not
	// succeed.
	Error  string
	Cause  string
	Output string
	// Path lists the states entered, in order; Transitions is their number.
	Path        []string
	Transitions int
}

// String says how the execution ended, for failure messages.
func (x Execution) String() string {
	s := x.Status + " " + x.Ending.Outcome
	if x.Ending.NeedsPerson {
		s += " (needs a person)"
	}
	if cause := x.Ending.Cause + x.Cause; cause != "" {
		s += ": " + cause
	}
	return fmt.Sprintf("%s; path %q", s, x.Path)
}

// ExpectEnding fails the test unless the execution ended with outcome (saga.End*). A
// business ending or Confirmed must have succeeded and an incident failed: the output
// contract every reader relies on.
func (e *Env) ExpectEnding(x Execution, outcome string) {
	e.T.Helper()
	if x.Ending.Outcome != outcome {
		e.T.Fatalf("execution %s, want it to end %s", x, outcome)
	}
	if x.Ending.NeedsPerson != (x.Status != string(sfntypes.ExecutionStatusSucceeded)) {
		e.T.Fatalf("execution %s: a person is needed exactly when it did not succeed", x)
	}
}

// Finish waits for the execution to end, stepping the clock while idle (no limit), and
// returns it.
func (e *Env) Finish(arn string) Execution {
	e.T.Helper()
	var d *sfn.DescribeExecutionOutput
	e.WaitFor("execution "+arn+" to finish", time.Time{}, func() bool {
		var err error
		d, err = e.Stack.SFN.DescribeExecution(e.Ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			e.T.Fatalf("describe %s: %v", arn, err)
		}
		return d.Status != sfntypes.ExecutionStatusRunning
	})
	x := Execution{Status: string(d.Status), Error: aws.ToString(d.Error), Cause: aws.ToString(d.Cause), Output: aws.ToString(d.Output),
		Ending: saga.EndingOf(string(d.Status), aws.ToString(d.Output), aws.ToString(d.Error))}
	x.Path = e.Path(arn)
	x.Transitions = len(x.Path)
	return x
}

// Path lists the states the execution entered, from GetExecutionHistory.
func (e *Env) Path(arn string) []string {
	e.T.Helper()
	events, err := e.Stack.History(e.Ctx, arn)
	if err != nil {
		e.T.Fatal(err)
	}
	var path []string
	for _, ev := range events {
		if ev.StateEnteredEventDetails != nil && strings.HasSuffix(string(ev.Type), "StateEntered") {
			path = append(path, aws.ToString(ev.StateEnteredEventDetails.Name))
		}
	}
	return path
}

// ExpectPath fails the test unless the execution took exactly want.
func (e *Env) ExpectPath(x Execution, want ...string) {
	e.T.Helper()
	if !slices.Equal(x.Path, want) {
		e.T.Fatalf("execution path\n got %q\nwant %q", x.Path, want)
	}
}

// Reservation reads a reservation.
func (e *Env) Reservation(id string) reservation.Reservation {
	e.T.Helper()
	r, err := e.Store.Get(e.Ctx, id)
	if err != nil {
		e.T.Fatalf("read reservation %s: %v", id, err)
	}
	return r
}

// ExpectReservation fails unless the reservation is in the given states.
func (e *Env) ExpectReservation(id string, inv reservation.InventoryState, pay reservation.PaymentState) reservation.Reservation {
	e.T.Helper()
	r := e.Reservation(id)
	if r.Inventory != inv || r.Payment != pay {
		e.T.Fatalf("reservation %s is %s/%s, want %s/%s", id, r.Inventory, r.Payment, inv, pay)
	}
	return r
}

// Seat reads a seat.
func (e *Env) Seat(eventID, seatID string) reservation.Seat {
	e.T.Helper()
	s, ok, err := e.Store.GetSeat(e.Ctx, eventID, seatID)
	if err != nil || !ok {
		e.T.Fatalf("read seat %s/%s: ok=%v %v", eventID, seatID, ok, err)
	}
	return s
}

// ExpectSeat fails unless the seat is in state st and (for a taken seat) owned by owner.
func (e *Env) ExpectSeat(eventID, seatID string, st reservation.InventoryState, owner string) {
	e.T.Helper()
	s := e.Seat(eventID, seatID)
	if s.State != st || s.ReservationID != owner {
		e.T.Fatalf("seat %s/%s is %s owned by %q, want %s owned by %q", eventID, seatID, s.State, s.ReservationID, st, owner)
	}
}

// Outbox returns the reservation's outbox events in version order.
func (e *Env) Outbox(id string) []outbox.Envelope {
	e.T.Helper()
	var out []outbox.Envelope
	p := dynamodb.NewScanPaginator(e.Stack.DynamoDB, &dynamodb.ScanInput{
		TableName:                 aws.String(e.Stack.Names.Of(tables.OutboxTable)),
		FilterExpression:          aws.String("#r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": outbox.AttrReservationID},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":r": &ddbtypes.AttributeValueMemberS{Value: id}},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(e.Ctx)
		if err != nil {
			e.T.Fatalf("scan outbox: %v", err)
		}
		for _, item := range page.Items {
			env, err := outbox.FromItem(item)
			if err != nil {
				e.T.Fatalf("outbox item: %v", err)
			}
			out = append(out, env)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AggregateVersion < out[j].AggregateVersion })
	return out
}

// OutboxTypes lists the types of the reservation's outbox events in version order.
func (e *Env) OutboxTypes(id string) []outbox.Type {
	e.T.Helper()
	var types []outbox.Type
	for _, ev := range e.Outbox(id) {
		types = append(types, ev.Type)
	}
	return types
}

// ExpectOutbox fails unless the reservation's outbox events have exactly these types, in
// version order, with versions strictly increasing.
func (e *Env) ExpectOutbox(id string, want ...outbox.Type) {
	e.T.Helper()
	events := e.Outbox(id)
	var got []outbox.Type
	for i, ev := range events {
		got = append(got, ev.Type)
		if i > 0 && ev.AggregateVersion <= events[i-1].AggregateVersion {
			e.T.Fatalf("outbox versions not increasing: %+v", events)
		}
	}
	if !slices.Equal(got, want) {
		e.T.Fatalf("outbox of %s\n got %v\nwant %v", id, got, want)
	}
}

// ExpectOutboxUnwound fails unless the reservation's outbox announces, in version order, the
// given types (other records may stand between them: the webhook records the provider's
// truth when it gets there first) and its last record shows the seats RELEASED, whether a
// release of its own or a payment record that released them in the same write.
func (e *Env) ExpectOutboxUnwound(id string, want ...outbox.Type) {
	e.T.Helper()
	events := e.Outbox(id)
	got := make([]outbox.Type, len(events))
	next := 0
	for i, ev := range events {
		got[i] = ev.Type
		if next < len(want) && ev.Type == want[next] {
			next++
		}
	}
	if next < len(want) {
		e.T.Fatalf("outbox of %s\n got %v\nwant, in this order, %v", id, got, want)
	}
	if len(events) == 0 {
		e.T.Fatalf("outbox of %s is empty", id)
	}
	var snap outbox.ReservationSnapshot
	if err := json.Unmarshal(events[len(events)-1].Payload, &snap); err != nil || snap.InventoryState != string(reservation.Released) {
		e.T.Fatalf("outbox of %s %v: the last record does not show the seats released (%s, %v)", id, got, snap.InventoryState, err)
	}
}

// LapseAuthorization cancels the reservation's PaymentIntent at the payment simulator, as the
// provider does when an authorization's capture window closes: the next capture is refused and
// the provider's truth shows the authorization gone. A test cannot wait the window (seven days)
// out inside an execution: the definition's TimeoutSeconds ends any execution long before, so
// no legitimate path holds a capture that long.
func (e *Env) LapseAuthorization(id string) {
	e.T.Helper()
	pi := e.Reservation(id).PaymentIntentID
	req, err := http.NewRequestWithContext(e.Ctx, http.MethodPost, e.Stack.Payments.URL()+"/v1/payment_intents/"+pi+"/cancel", nil)
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+stack.LocalStripeKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("cancel %s at the provider: %v", pi, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.T.Fatalf("cancel %s at the provider: %d %s", pi, resp.StatusCode, raw)
	}
}

// Ledger returns the simulator's one ledger entry for the reservation (failing if it created
// more than one PaymentIntent), or ok=false when no payment object exists.
func (e *Env) Ledger(id string) (stripesim.LedgerEntry, bool) {
	e.T.Helper()
	entries := e.Stack.Payments.Ledger().ForReservation(id)
	switch len(entries) {
	case 0:
		return stripesim.LedgerEntry{}, false
	case 1:
		return entries[0], true
	}
	e.T.Fatalf("reservation %s has %d PaymentIntents: %+v", id, len(entries), entries)
	return stripesim.LedgerEntry{}, false
}

// WaitingForPayment waits until the saga waits on the reservation's payment: PAYMENT_PENDING,
// AUTHORIZING, with a task token and a PaymentIntent recorded, and the payment method handed to
// the provider (hold kept live).
func (e *Env) WaitingForPayment(id string) reservation.Reservation {
	e.T.Helper()
	var r reservation.Reservation
	// The reservation's hold ends no earlier than Hold from now; keep well inside it.
	e.WaitFor("reservation "+id+" to wait for payment", e.Clock.Now().Add(Hold-time.Minute), func() bool {
		got, err := e.Store.Get(e.Ctx, id)
		if err != nil {
			return false
		}
		r = got
		if r.Inventory != reservation.PaymentPending || r.Payment != reservation.Authorizing || r.TaskToken == "" || r.PaymentIntentID == "" {
			return false
		}
		// The authorize step confirms the payment method after recording the intent; wait
		// until the provider has it, as a buyer's next move would.
		l, ok := e.Ledger(id)
		return ok && l.Status != "requires_payment_method" && l.Status != "requires_confirmation"
	})
	return r
}

// Sweep invokes the sweeper Lambda once, as its schedule does, and returns its report.
func (e *Env) Sweep() sweeper.Result {
	e.T.Helper()
	out, err := e.Stack.Lambda.Invoke(e.Ctx, &lambda.InvokeInput{FunctionName: aws.String(stack.FnSweeper), Payload: []byte(`{}`)})
	if err != nil {
		e.T.Fatalf("invoke the sweeper: %v", err)
	}
	if out.FunctionError != nil {
		e.T.Fatalf("the sweeper failed: %s", out.Payload)
	}
	var res sweeper.Result
	if err := json.Unmarshal(out.Payload, &res); err != nil {
		e.T.Fatalf("sweeper result %s: %v", out.Payload, err)
	}
	return res
}

// Invariants fails the test if any of seatsaga's invariants is broken in this stack.
func (e *Env) Invariants() {
	e.T.Helper()
	v, err := e.Stack.Check(e.Ctx)
	if err != nil {
		e.T.Fatalf("invariants: %v", err)
	}
	if !v.OK() {
		e.T.Fatalf("invariants broken: %s", v)
	}
}
