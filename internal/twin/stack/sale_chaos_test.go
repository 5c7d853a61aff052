package stack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/sale/load"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// The DynamoDB hook WithChaos installs answers each class with what DynamoDB answers, counts
// each, and injects nothing for a class that is off (the control). A lost response needs the
// stack that commits the write: before RunSale binds one, none is injected (the others are
// bound to a stack with no clients, which they do not use).
func TestChaosDynamoDBHookAnswersAsDynamoDBDoes(t *testing.T) {
	cases := []struct {
		class load.FaultClass
		op    string
		check func(error) bool
	}{
		{load.DynamoDBThrottle, "GetItem", func(err error) bool {
			var pt *ddbtypes.ProvisionedThroughputExceededException
			var api smithy.APIError
			return errors.As(err, &pt) || errors.As(err, &api) && api.ErrorCode() == "ThrottlingException"
		}},
		{load.DynamoDBInternalError, "TransactWriteItems", func(err error) bool {
			var ise *ddbtypes.InternalServerError
			return errors.As(err, &ise)
		}},
		{load.DynamoDBResponseLost, "TransactWriteItems", func(err error) bool { return err == nil }},
	}
	for _, tc := range cases {
		t.Run(string(tc.class), func(t *testing.T) {
			in := load.NewInjector(load.Chaos{tc.class: {Rate: 1, Cap: 3}}, 1)
			var cfg Config
			WithChaos(&cfg, in)
			want := 3
			if tc.class == load.DynamoDBResponseLost {
				want = 0
			} else {
				cfg.chaos.stack.Store(&Stack{})
			}
			for i := range 5 {
				err := cfg.DynamoDBFault(tc.op, &dynamodb.TransactWriteItemsInput{})
				if i < want && !tc.check(err) || i >= want && err != nil {
					t.Fatalf("call %d (cap 3): answer %v", i, err)
				}
			}
			if got := in.Injected()[tc.class]; got != want {
				t.Fatalf("injected %d, want %d", got, want)
			}
		})
	}
	in := load.NewInjector(load.Chaos{load.CustomerCancel: {Rate: 1}}, 1)
	var cfg Config
	WithChaos(&cfg, in)
	cfg.chaos.stack.Store(&Stack{})
	for range 20 {
		if err := cfg.DynamoDBFault("PutItem", &dynamodb.PutItemInput{}); err != nil {
			t.Fatalf("a DynamoDB class that is off injected %v", err)
		}
	}
	if cfg.StepFunctionsQuotas != nil {
		t.Fatal("quotas tightened with stepfunctions-throttle off")
	}
}

// With stepfunctions-throttle on, the start and the task answers get a small bucket, the
// smaller the higher the rate, and every other action keeps AWS's default.
func TestChaosTightensTheStepFunctionsQuotas(t *testing.T) {
	var low, high Config
	WithChaos(&low, load.NewInjector(load.Chaos{load.StepFunctionsThrottle: {Rate: 0.1}}, 1))
	WithChaos(&high, load.NewInjector(load.Chaos{load.StepFunctionsThrottle: {Rate: 0.9}}, 1))
	for _, action := range chaosThrottledActions {
		l, h := low.StepFunctionsQuotas.API[action], high.StepFunctionsQuotas.API[action]
		if l.Size != 4 || h.RefillPerSecond >= l.RefillPerSecond {
			t.Fatalf("%s: low %+v, high %+v", action, l, h)
		}
	}
	if got := high.StepFunctionsQuotas.API["DescribeExecution"]; got.Size != 300 {
		t.Fatalf("DescribeExecution changed: %+v", got)
	}
}

// A transaction conflict is DynamoDB's cancellation before the write: one reason per item,
// exactly one of them TransactionConflict.
func TestChaosTransactionConflictCancelsTheWholeTransaction(t *testing.T) {
	in := load.NewInjector(load.Chaos{load.DynamoDBTransactionConflict: {Rate: 1, Cap: 1}}, 1)
	var cfg Config
	WithChaos(&cfg, in)
	cfg.chaos.stack.Store(&Stack{})
	items := &dynamodb.TransactWriteItemsInput{TransactItems: make([]ddbtypes.TransactWriteItem, 3)}
	if err := cfg.DynamoDBFault("PutItem", &dynamodb.PutItemInput{}); err != nil {
		t.Fatalf("a single write got %v; only transactions conflict", err)
	}
	err := cfg.DynamoDBFault("TransactWriteItems", items)
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 3 {
		t.Fatalf("got %v; want a cancellation with three reasons", err)
	}
	conflicts := 0
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict":
			conflicts++
		case "None":
		default:
			t.Fatalf("reason %q", aws.ToString(r.Code))
		}
	}
	if conflicts != 1 || in.Injected()[load.DynamoDBTransactionConflict] != 1 {
		t.Fatalf("%d conflicting items, %d counted; want 1 and 1", conflicts, in.Injected()[load.DynamoDBTransactionConflict])
	}
	if err := cfg.DynamoDBFault("TransactWriteItems", items); err != nil {
		t.Fatalf("past its cap: %v", err)
	}
}

// The fault classes that strike the sweeper, the clock, the Step Functions answers, the
// provider's rate limit, transactions and the webhooks' order each hit a small chaos sale,
// which still ends with every rule holding.
func TestASmallSaleUnderTheSweeperClockAndLostAnswerFaultsKeepsEveryRule(t *testing.T) {
	// A webhook window takes the first class that strikes, in FaultClasses order, and opens
	// only on a tick in which the saga called the provider: a small sale has few such ticks,
	// so both classes strike on the first they get (at a rate of one half, a sale with two or
	// three went by without a duplicated window now and then). Capping the duplicated windows
	// at one leaves the later ones to the reordered class.
	chaos, err := load.ParseChaos("dynamodb-transaction-conflict=0.05,provider-rate-limited=0.3," +
		"webhook-duplicated=1/1,webhook-reordered=1,stepfunctions-response-lost=0.2," +
		"sweeper-crash=1/2,sweeper-concurrent=1/3,clock-skew=0.05")
	if err != nil {
		t.Fatal(err)
	}
	in := load.NewInjector(chaos, 3)
	cfg := Compressed(20, 3*time.Minute)
	// A sweep every ten seconds of stack time: several within the sale. With a grace of a
	// second the sweeps find holds as they expire and payments as they wait for
	// reconciliation, so that the second sweep has reservations to race the first on.
	cfg.SweepInterval = 10 * time.Second
	cfg.SweepGrace = time.Second
	WithChaos(&cfg, in)
	st := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := st.RunSale(ctx, SaleOptions{
		EventID: "chaos", Seats: 16, Buyers: 48, SeatsPerBuyer: 1, Seed: 3,
		Mix:         load.Mix{load.Pays: 0.6, load.Declines: 0.1, load.ThreeDS: 0.2, load.ThreeDSNo: 0.1},
		Concurrency: 16, PollInterval: 50 * time.Millisecond, BuyerTimeout: 2 * time.Minute, SettleTimeout: 2 * time.Minute,
		ClockScale: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	for class := range chaos {
		// A second sweep counts only when it found reservations to settle, which in a sale
		// this small depends on whether a sweep lands on a hold just past its deadline:
		// TestASecondSweepIsCountedOnlyWhenItFoundReservationsToSettle proves that class, and
		// the soak counts it.
		if res.Faults[class] == 0 && class != load.SweeperConcurrent {
			t.Errorf("%s was never injected: %s", class, load.InjectedLine(res.Faults))
		}
	}
	if !res.Settled || !res.Verdict.OK() {
		t.Fatalf("settled %v, verdict %+v", res.Settled, res.Verdict)
	}
	t.Logf("faults: %s", load.InjectedLine(res.Faults))
}

// The DynamoDB classes strike only while a sale binds the chaos: before RunSale, and once it
// unbinds it so that the stack settles again without faults and the checker judges a stack at
// rest, a throttle, an internal error or a transaction conflict would be a fault nobody
// counted (RunSale reads the counts before that second settle).
func TestChaosDynamoDBFaultsStrikeOnlyWhileASaleRuns(t *testing.T) {
	in := load.NewInjector(load.Chaos{
		load.DynamoDBThrottle: {Rate: 1}, load.DynamoDBInternalError: {Rate: 1}, load.DynamoDBTransactionConflict: {Rate: 1},
	}, 1)
	var cfg Config
	WithChaos(&cfg, in)
	items := &dynamodb.TransactWriteItemsInput{TransactItems: make([]ddbtypes.TransactWriteItem, 2)}
	for _, op := range []string{"GetItem", "PutItem", "TransactWriteItems"} {
		if err := cfg.DynamoDBFault(op, items); err != nil {
			t.Fatalf("%s outside a sale got %v", op, err)
		}
	}
	if n := in.Injected(); n[load.DynamoDBThrottle]+n[load.DynamoDBInternalError]+n[load.DynamoDBTransactionConflict] != 0 {
		t.Fatalf("counted outside a sale: %s", load.InjectedLine(n))
	}
	// The control: bound to a sale's stack, the same call is faulted.
	cfg.chaos.stack.Store(&Stack{})
	if err := cfg.DynamoDBFault("TransactWriteItems", items); err == nil {
		t.Fatal("nothing injected during the sale")
	}
}

// The quotas stepfunctions-throttle tightens for the sale are AWS's again once its chaos is
// cleared: the stack settles and is judged without throttles nobody counts.
func TestTheStepFunctionsQuotasTheChaosTightenedAreGivenBackWhenItEnds(t *testing.T) {
	cfg := Compressed(20, 3*time.Minute)
	cfg.SweepInterval = -1
	WithChaos(&cfg, load.NewInjector(load.Chaos{load.StepFunctionsThrottle: {Rate: 0.9}}, 1))
	st := start(t, cfg)
	st.cfg.chaos.stack.Store(st) // as RunSale binds it
	defaults := stepfunctions.DefaultQuotas().API
	for _, action := range chaosThrottledActions {
		if got := st.sfnServer.Quotas().API[action]; got == defaults[action] {
			t.Fatalf("%s during the chaos: %s; want it tightened", action, got)
		}
	}
	st.clearChaos()
	for _, action := range chaosThrottledActions {
		if got := st.sfnServer.Quotas().API[action]; got != defaults[action] {
			t.Fatalf("%s after the chaos: %s; want AWS's %s", action, got, defaults[action])
		}
	}
}
