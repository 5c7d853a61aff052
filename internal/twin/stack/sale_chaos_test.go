package stack

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/sale/load"
)

// The DynamoDB hook WithChaos installs answers each class with what DynamoDB answers, counts
// each, and injects nothing for a class that is off (the control). A lost response needs the
// stack that commits the write: before RunSale binds one, none is injected.
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
