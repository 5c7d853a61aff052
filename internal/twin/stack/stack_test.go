package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/awsgate"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
	"github.com/seatsaga/seatsaga/statemachine"
)

// endpoint is the DynamoDB Local every stack of this package shares (each with its own tables).
var endpoint string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	srv, err := dynamodblocal.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	endpoint = srv.Endpoint()
	code := m.Run()
	_ = srv.Stop()
	os.Exit(code)
}

func start(t *testing.T, cfg Config) *Stack {
	t.Helper()
	cfg.DynamoDBEndpoint = endpoint
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		begin := time.Now()
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if d := time.Since(begin); d > 15*time.Second {
			t.Errorf("Close took %s", d)
		}
	})
	return st
}

// A small flash sale with every fault the stack can inject: provider 500s before acting, lost
// provider responses, Lambda service errors before the handler and crashes after it, webhooks
// duplicated and reordered, declines, 3-D Secure completed late or never, authorizations that
// arrive after the hold lapsed, and holds that expire within the run on a compressed clock. The
// saga must keep every promise.
func TestSaleWithEveryFaultKeepsEveryInvariant(t *testing.T) {
	const scale = 60
	st := start(t, Config{
		Clock:            clock.NewScaled(clock.Real{}, scale),
		Hold:             10 * time.Minute, // 10 s of wall time
		SweepGrace:       time.Minute,
		SweepInterval:    time.Minute,
		ReconcileBackoff: 30 * time.Second,
		PaymentsTimeout:  2 * time.Second,
		WebhookTolerance: scale * 5 * time.Minute,
		Payments: PaymentsConfig{
			ThreeDSDelay:           2 * time.Minute,
			LateAuthorizationDelay: 12 * time.Minute,
			WebhookDuplicateRate:   0.5,
			WebhookReorder:         true,
			WebhookReorderWindow:   scale * time.Second,
			Seed:                   7,
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := st.RunSale(ctx, SaleOptions{
		EventID: "faulty-sale", Seats: 12, Buyers: 30, Seed: 3,
		Mix:         load.Mix{load.Pays: 2, load.Declines: 1, load.ThreeDS: 1, load.ThreeDSNo: 1, load.LateAuth: 1},
		Faults:      FaultPlan{ProviderFailBefore: 2, ProviderLoseResponse: 1, LambdaFailBefore: 1, LambdaFailAfter: 1},
		Concurrency: 10, PollInterval: 100 * time.Millisecond, BuyerTimeout: time.Minute, SettleTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	fig := res.Figures()
	t.Logf("figures: %+v", fig)
	if !res.Settled {
		t.Errorf("the stack did not settle")
	}
	if !res.Verdict.OK() {
		t.Fatalf("invariants broken under faults:\n%s", res.Verdict)
	}
	// The sale really happened and really met its faults.
	if fig.SeatsSold == 0 || fig.Executions == 0 {
		t.Fatalf("nothing sold: %+v", fig)
	}
	var injected int64
	for _, fn := range SagaFunctions {
		injected += st.Lambdas.Stats(fn).FaultsInjected
	}
	if injected == 0 {
		t.Errorf("no Lambda fault was injected")
	}
	// The api's runs per route are read from its own count of the requests it answered, and
	// the starts from the gate: a renamed count or an uncounted call would read as zero. Every
	// execution took a start; a replayed POST may take one more that Step Functions refuses.
	if fig.APIPosts == 0 || fig.APIPolls == 0 || fig.StartExecutions < int64(fig.Executions) {
		t.Errorf("api ran %d POSTs and %d polls, %d StartExecution calls for %d executions: want them counted",
			fig.APIPosts, fig.APIPolls, fig.StartExecutions, fig.Executions)
	}
	if fig.TerminalStates["Confirmed"] == 0 || fig.TerminalStates["Rejected: seats taken"]+fig.AdmissionRejected == 0 {
		t.Errorf("terminal states %v, admission rejections %d: want winners and losers", fig.TerminalStates, fig.AdmissionRejected)
	}
	// Business endings succeed: an execution fails exactly when a person must look at it, and
	// the outcomes counted from the outputs agree with the endings reached.
	if fig.ExecutionsFailed != fig.ExecutionsNeedingPerson {
		t.Errorf("%d executions failed, %d need a person: outcomes %v", fig.ExecutionsFailed, fig.ExecutionsNeedingPerson, fig.ExecutionOutcomes)
	}
	if fig.ExecutionOutcomes[saga.EndConfirmed] != fig.TerminalStates["Confirmed"] ||
		fig.ExecutionOutcomes[saga.EndSeatUnavailable] != fig.TerminalStates["Rejected: seats taken"] {
		t.Errorf("outcomes %v, terminal states %v", fig.ExecutionOutcomes, fig.TerminalStates)
	}
	for _, tr := range res.Traces {
		if _, business := saga.VerdictOf(tr.Ending.Outcome); business && tr.Status != "SUCCEEDED" {
			t.Errorf("execution %s ended %s with status %s", tr.Name, tr.Ending.Outcome, tr.Status)
		}
	}
	// The seat holders paid in different ways, not only the happy path.
	if len(fig.ByBehaviour) < 3 || len(fig.TerminalStates) < 2 {
		t.Errorf("holders by behaviour %v, terminal states %v: want a mix", fig.ByBehaviour, fig.TerminalStates)
	}
	if fig.SeatsSold != res.Verdict.PaidSeats {
		t.Errorf("sold %d, paid %d", fig.SeatsSold, res.Verdict.PaidSeats)
	}
}

// The control: the same checker over the same stack must fail when one step is broken. The
// claim Lambda is replaced by one that skips the claim's condition (it forces the seats back
// to AVAILABLE before the real claim runs), and a second buyer reaches the saga for a seat
// the first already bought, as one whose admission pre-check read a stale seat would. First
// the same sequence runs with the real claim: the second buyer is rejected and the checker
// passes; then with the broken claim the seat is sold twice and the checker names it.
func TestControlBrokenClaimIsCaught(t *testing.T) {
	st := start(t, Config{Hold: 10 * time.Minute, SweepInterval: -1, PaymentsTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sellTwice := func(eventID string) (first, second string) {
		if _, err := st.SeedEvent(ctx, eventID, 2); err != nil {
			t.Fatal(err)
		}
		first = buyThroughAPI(ctx, t, st, eventID, "alice", "S1")
		second = api.ReservationID("bob", eventID+"-bob")
		in, _ := json.Marshal(saga.Input{
			ReservationID: second, EventID: eventID, SeatIDs: []string{"S1"}, CustomerID: "bob",
			Amount: 5000, Currency: "eur", IdempotencyKey: eventID + "-bob", PaymentMethod: "pm_card_visa",
		})
		if _, err := st.SFN.StartExecution(ctx, &sfn.StartExecutionInput{
			StateMachineArn: aws.String(st.StateMachineARN), Name: aws.String(second), Input: aws.String(string(in)),
		}); err != nil {
			t.Fatal(err)
		}
		if err := st.Settle(ctx, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		return first, second
	}

	_, bob := sellTwice("honest")
	v, err := st.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Fatalf("with the real claim the checker must pass:\n%s", v)
	}
	// Losing the race is a business ending: the execution succeeds and names it.
	if e := endingOf(ctx, t, st, bob); e.Outcome != saga.EndSeatUnavailable || e.NeedsPerson {
		t.Fatalf("second buyer's execution ended %+v, want %s (seat taken)", e, saga.EndSeatUnavailable)
	}

	real := st.Handler(FnClaim).(func(context.Context, saga.State) (saga.Hold, error))
	st.Lambdas.Register(FnClaim, func(ctx context.Context, in saga.State) (saga.Hold, error) {
		for _, seat := range in.SeatIDs {
			_, err := st.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(st.Names.Of(tables.SeatsTable)),
				Key:       map[string]types.AttributeValue{tables.AttrSeatKey: &types.AttributeValueMemberS{Value: in.EventID + "#" + seat}},
				// No condition: whatever holds the seat is overwritten.
				UpdateExpression:          aws.String("SET #s = :a REMOVE " + tables.AttrReservationID + ", " + tables.AttrHoldExpiresAt),
				ExpressionAttributeNames:  map[string]string{"#s": "state"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: invariants.Available}},
			})
			if err != nil {
				return saga.Hold{}, err
			}
		}
		return real(ctx, in)
	})
	alice, bob := sellTwice("broken")
	v, err = st.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() {
		t.Fatalf("the checker passed a seat sold twice (alice %s, bob %s)", alice, bob)
	}
	t.Logf("verdict with the broken claim:\n%s", v)
	for _, rule := range []invariants.Rule{invariants.RuleConfirmedOwnsSeats, invariants.RuleSoldEqualsCaptured} {
		if !v.Broken(rule) {
			t.Errorf("rule %s not reported", rule)
		}
	}
	named := false
	for _, x := range v.Violations {
		if x.Seat == "broken#S1" && (x.ReservationID == alice || x.ReservationID == bob) {
			named = true
		}
		if strings.HasPrefix(x.Seat, "honest#") {
			t.Errorf("violation on the honest event: %s", x)
		}
	}
	if !named {
		t.Errorf("no violation names seat broken#S1 and one of its buyers")
	}
}

// buyThroughAPI books seat for customer through the HTTP API and waits until it is paid.
func buyThroughAPI(ctx context.Context, t *testing.T, st *Stack, eventID, customer, seat string) string {
	t.Helper()
	token, err := st.Token(customer)
	if err != nil {
		t.Fatal(err)
	}
	created := postReservation(ctx, t, st, eventID, customer, seat)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.Endpoints.API+"/reservations/"+created, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var cur struct{ Status, PaymentState string }
		_ = json.NewDecoder(resp.Body).Decode(&cur)
		resp.Body.Close()
		if cur.Status == "CONFIRMED" && cur.PaymentState == "PAID" {
			return created
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never got paid (last %+v)", created, cur)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// postReservation asks the API, as customer, for one seat paid with pm_card_visa and returns the
// reservation's id.
func postReservation(ctx context.Context, t *testing.T, st *Stack, eventID, customer, seat string) string {
	t.Helper()
	token, err := st.Token(customer)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"seatIds":[%q],"amount":5000,"currency":"eur","paymentMethod":"pm_card_visa"}`, seat)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, st.Endpoints.API+"/events/"+eventID+"/reservations", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", eventID+"-"+customer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d %s", resp.StatusCode, raw)
	}
	var created struct {
		ReservationID string `json:"reservationId"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatal(err)
	}
	return created.ReservationID
}

// endingOf is how the reservation's execution ended, as every reader of executions sees it.
func endingOf(ctx context.Context, t *testing.T, st *Stack, reservationID string) saga.Ending {
	t.Helper()
	out, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(reservationID))})
	if err != nil {
		t.Fatal(err)
	}
	return saga.EndingOf(string(out.Status), aws.ToString(out.Output), aws.ToString(out.Error))
}

func describe(ctx context.Context, t *testing.T, st *Stack, reservationID string) string {
	t.Helper()
	out, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(reservationID))})
	if err != nil {
		t.Fatal(err)
	}
	return string(out.Status)
}

// Inspect shows a reservation's timeline, items, outbox events and ledger.
func TestInspectShowsAWholeBooking(t *testing.T) {
	st := start(t, Config{SweepInterval: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := st.SeedEvent(ctx, "show", 1); err != nil {
		t.Fatal(err)
	}
	id := buyThroughAPI(ctx, t, st, "show", "carol", "S1")
	if err := st.Settle(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := st.Inspector().Inspect(ctx, &out, id); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"▶ Claim seats", "◀ Capture payment", "ended Confirmed", "SeatsHeld", "ReservationConfirmed",
		"show#S1: ", "state=CONFIRMED", "captured=5000", "state transitions"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspection lacks %q:\n%s", want, text)
		}
	}
}

// saleOfFourEndings is a sale's result with one execution per kind of ending: Confirmed, a
// lost race (a business ending: it succeeded), an incident (it failed) and one still running.
func saleOfFourEndings(t *testing.T) *SaleResult {
	t.Helper()
	types, err := stateTypes(statemachine.Definition())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	trace := func(name, status, output, errName string, states ...string) ExecutionTrace {
		tr := ExecutionTrace{Name: name, Status: status, States: states, Transitions: len(states), Start: t0,
			Ending: saga.EndingOf(status, output, errName)}
		for i := range states {
			tr.Entered = append(tr.Entered, t0.Add(time.Duration(i)*time.Second))
			tr.Exited = append(tr.Exited, t0.Add(time.Duration(i+1)*time.Second))
		}
		return tr
	}
	return &SaleResult{Run: &load.Run{}, stateTypes: types, Traces: []ExecutionTrace{
		trace("sold", "SUCCEEDED", `{"reservationId":"sold","capture":{"amountCaptured":5000}}`, "",
			"Claim seats", "Wait for payment authorization", "Confirm seats", "Capture payment", "Confirmed"),
		trace("lost", "SUCCEEDED", `{"Error":"SeatUnavailable","Cause":"seat S1 is taken"}`, "", "Claim seats", "Rejected: seats taken"),
		trace("stuck", "FAILED", "", saga.EndNeedsReconciliation,
			"Claim seats", "Wait for payment authorization", "Reconcile payment", "What did reconciliation find?", "Needs reconciliation"),
		trace("paying", "RUNNING", "", "", "Claim seats", "Wait for payment authorization"),
	}}
}

// The figures count outcomes from the executions' endings (saga.EndingOf), not from their
// statuses: the lost race succeeded and is counted as SeatUnavailable, only the incident
// failed and needs a person, and the saga's latencies read "Confirmed" and a claim that held,
// not any Succeed state.
func TestFiguresCountOutcomesFromTheEndings(t *testing.T) {
	r := saleOfFourEndings(t)
	fig := r.Figures()
	want := map[string]int{saga.EndConfirmed: 1, saga.EndSeatUnavailable: 1, saga.EndNeedsReconciliation: 1}
	if !maps.Equal(fig.ExecutionOutcomes, want) {
		t.Errorf("outcomes %v, want %v", fig.ExecutionOutcomes, want)
	}
	if fig.ExecutionsFailed != 1 || fig.ExecutionsNeedingPerson != 1 {
		t.Errorf("%d failed, %d need a person; want the incident alone", fig.ExecutionsFailed, fig.ExecutionsNeedingPerson)
	}
	if fig.HappyPathTransitions != 5 || fig.TerminalStates["(running)"] != 1 || fig.TerminalStates["Rejected: seats taken"] != 1 {
		t.Errorf("happy path %.1f, terminal states %v", fig.HappyPathTransitions, fig.TerminalStates)
	}
	hold, confirm := r.EngineLatencies()
	// The lost race never held; the others left the claim after a second. Only the sale was
	// confirmed, when it entered its fifth state.
	if len(hold) != 3 || hold[0] != 1000 || !slices.Equal(confirm, []float64{4000}) {
		t.Errorf("hold %v, confirm %v", hold, confirm)
	}
}

// A buyer reads REJECTED both when its claim lost the race and when the claim failed; the
// figures tell them apart by the execution's ending, so that a failed claim is not counted as
// a loser the admission gate let through.
func TestFiguresCountAFailedClaimApartFromTheLostRaces(t *testing.T) {
	r := saleOfFourEndings(t)
	r.Traces = append(r.Traces, ExecutionTrace{Name: "broken", Status: "FAILED", States: []string{"Claim seats", "Claim failed"},
		Transitions: 2, Ending: saga.EndingOf("FAILED", "", saga.EndClaimFailed)})
	r.Run.Results = []load.Result{
		{ReservationID: "sold", Outcome: load.Confirmed},
		{ReservationID: "lost", Outcome: load.SagaRejected},
		{ReservationID: "broken", Outcome: load.SagaRejected},
		{Outcome: load.AdmissionRejected},
		{Outcome: load.AdmissionRejected},
		{Outcome: load.AdmissionRejected},
	}
	r.markClaimFailures()
	fig := r.Figures()
	if fig.SagaRejected != 1 || fig.ClaimFailed != 1 || fig.AdmissionRejected != 3 {
		t.Errorf("saga rejected %d, claim failed %d, admission rejected %d; want 1, 1, 3",
			fig.SagaRejected, fig.ClaimFailed, fig.AdmissionRejected)
	}
	// Three of the four buyers who lost a race were turned away before StartExecution; with
	// the failed claim counted as a loser it would read three of five.
	if fig.LosersTurnedAwayEarly != 0.75 {
		t.Errorf("losers turned away early %v, want 0.75", fig.LosersTurnedAwayEarly)
	}
}

// The figures count what ran and what was called: a poll a throttle refused invoked nothing,
// so it is not taken off the invocations; the gate's counts are calls, divided by the POSTs
// and bookings that reached the system; the stack's own calls are no part of the bill.
func TestFiguresCountInvocationsThatRanAndCallsMade(t *testing.T) {
	apiRole, claimRole := RoleName(FnAPI), RoleName(FnClaim)
	r := &SaleResult{Run: &load.Run{},
		// Eight buyers confirmed; they sent 10 POSTs and 40 polls, of which 30 reached the api
		// and 10 were throttled before it.
		Summary: load.Summary{ByOutcome: map[load.Outcome]int{load.Confirmed: 8}, Posts: 10, Polls: 40},
		Snapshot: invariants.Snapshot{Seats: []invariants.Seat{
			{State: invariants.Confirmed}, {State: invariants.Confirmed}, {State: invariants.Confirmed}, {State: invariants.Confirmed},
			{State: invariants.Confirmed}, {State: invariants.Confirmed}, {State: invariants.Confirmed}, {State: invariants.Confirmed},
		}},
		Invocations: map[string]int64{FnAPI: 40, FnClaim: 10, FnConfirm: 8},
		APIRuns:     map[string]int64{RouteCreate: 10, RouteStatus: 30},
		Calls: []awsgate.Call{
			{Role: "", Service: awsgate.ServiceDynamoDB, Operation: "Scan", Count: 500},
			{Role: apiRole, Service: awsgate.ServiceDynamoDB, Operation: "GetItem", Count: 60},
			{Role: apiRole, Service: awsgate.ServiceStepFunctions, Operation: "DescribeExecution", Count: 2},
			{Role: apiRole, Service: awsgate.ServiceStepFunctions, Operation: "StartExecution", Count: 10},
			{Role: claimRole, Service: awsgate.ServiceDynamoDB, Operation: "TransactWriteItems", Count: 10},
			{Role: claimRole, Service: awsgate.ServiceDynamoDBStreams, Operation: "GetRecords", Count: 99},
			{Role: RoleName(FnConfirm), Service: awsgate.ServiceDynamoDB, Operation: "UpdateItem", Count: 14},
		},
	}
	fig := r.Figures()
	cases := []struct {
		name      string
		got, want float64
	}{
		// (58 invocations − 30 polls that ran) ÷ 8; subtracting the 40 polls sent gave 2.25.
		{"Lambda invocations per booking without polls", fig.InvocationsPerBooking, 3.5},
		{"StartExecution calls per seat sold", fig.StartExecutionsPerSeatSold, 1.25},
		{"Step Functions calls per POST", fig.StepFunctionsCallsPerPost, 1.2},
		// (60 api + 10 claim + 14 confirm) ÷ 8: the root's scans and the stream's reads apart.
		{"DynamoDB requests per booking", fig.DynamoDBRequestsPerBooking, 10.5},
		{"DynamoDB requests per booking without the api", fig.SagaDynamoDBRequestsPerBooking, 3},
		{"api DynamoDB requests per request", fig.APIDynamoDBRequestsPerRequest, 1.5},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if fig.StartExecutions != 10 || fig.APIPosts != 10 || fig.APIPolls != 30 || fig.StatusPolls != 40 {
		t.Errorf("start executions %d, POSTs run %d, polls run %d, polls sent %d", fig.StartExecutions, fig.APIPosts, fig.APIPolls, fig.StatusPolls)
	}
	want := map[string]map[string]int64{
		apiRole:             {"GetItem": 60, "DescribeExecution": 2, "StartExecution": 10},
		claimRole:           {"TransactWriteItems": 10, "GetRecords": 99},
		RoleName(FnConfirm): {"UpdateItem": 14},
	}
	if !maps.EqualFunc(fig.APICalls, want, maps.Equal) {
		t.Errorf("AWS calls %v, want %v", fig.APICalls, want)
	}
}

// callsSince keeps what happened between two readings of the gate's counts.
func TestCallsSinceKeepsOnlyTheCallsBetweenTwoReadings(t *testing.T) {
	before := []awsgate.Call{
		{Role: "r", Service: awsgate.ServiceDynamoDB, Operation: "GetItem", Count: 5},
		{Role: "r", Service: awsgate.ServiceDynamoDB, Operation: "Query", Count: 2},
	}
	after := []awsgate.Call{
		{Role: "r", Service: awsgate.ServiceDynamoDB, Operation: "GetItem", Count: 9},
		{Role: "r", Service: awsgate.ServiceDynamoDB, Operation: "Query", Count: 2},
		{Role: "s", Service: awsgate.ServiceStepFunctions, Operation: "StartExecution", Count: 3},
	}
	want := []awsgate.Call{
		{Role: "r", Service: awsgate.ServiceDynamoDB, Operation: "GetItem", Count: 4},
		{Role: "s", Service: awsgate.ServiceStepFunctions, Operation: "StartExecution", Count: 3},
	}
	if got := callsSince(before, after); !slices.Equal(got, want) {
		t.Errorf("calls since = %+v, want %+v", got, want)
	}
}
