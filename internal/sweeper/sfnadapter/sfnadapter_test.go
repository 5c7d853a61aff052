package sfnadapter_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/sweeper/sfnadapter"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

const machineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:reservation"

var epoch = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeClient answers ListExecutions with out and records each request.
type fakeClient struct {
	out  *sfn.ListExecutionsOutput
	err  error
	reqs []*sfn.ListExecutionsInput
}

func (f *fakeClient) ListExecutions(_ context.Context, in *sfn.ListExecutionsInput, _ ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error) {
	f.reqs = append(f.reqs, in)
	return f.out, f.err
}

func TestAPageAsksForRunningExecutionsOfTheMachineAndKeepsTheirStarts(t *testing.T) {
	started := epoch.Add(-time.Hour)
	c := &fakeClient{out: &sfn.ListExecutionsOutput{NextToken: aws.String("next"), Executions: []sfntypes.ExecutionListItem{
		{Status: sfntypes.ExecutionStatusRunning, StartDate: aws.Time(started)},
		// Not running, or without a start: the server's filter let it through, it says nothing.
		{Status: sfntypes.ExecutionStatusSucceeded, StartDate: aws.Time(epoch.Add(-48 * time.Hour))},
		{Status: sfntypes.ExecutionStatusRunning},
	}}}
	page, err := sfnadapter.New(c).RunningExecutions(context.Background(), machineARN, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Started) != 1 || !page.Started[0].Equal(started) || page.Next != "next" {
		t.Fatalf("page %+v", page)
	}
	in := c.reqs[0]
	if aws.ToString(in.StateMachineArn) != machineARN || in.StatusFilter != sfntypes.ExecutionStatusRunning ||
		in.MaxResults != sfnadapter.MaxPageSize || in.NextToken != nil {
		t.Fatalf("request %+v", in)
	}

	c.out = &sfn.ListExecutionsOutput{}
	page, err = (&sfnadapter.Running{Client: c, PageSize: 5}).RunningExecutions(context.Background(), machineARN, "next")
	if err != nil || page.Next != "" || len(page.Started) != 0 {
		t.Fatalf("last page %+v %v", page, err)
	}
	if in := c.reqs[1]; aws.ToString(in.NextToken) != "next" || in.MaxResults != 5 {
		t.Fatalf("second request %+v", in)
	}
}

func TestAFailedListingIsReturned(t *testing.T) {
	denied := errors.New("AccessDeniedException")
	_, err := sfnadapter.New(&fakeClient{err: denied}).RunningExecutions(context.Background(), machineARN, "")
	if !errors.Is(err, denied) {
		t.Fatalf("error %v, want it to wrap %v", err, denied)
	}
}

// TestTheSweeperPublishesTheOldestRunningExecutionOfALocalStepFunctions runs the sweeper over
// the adapter, the AWS SDK and the twin's Step Functions server, which lists newest first and
// pages as AWS does: the oldest execution is on the last page, and executions that ended or
// belong to another state machine do not count.
func TestTheSweeperPublishesTheOldestRunningExecutionOfALocalStepFunctions(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	srv := stepfunctions.New(stepfunctions.Options{Clock: clk})
	endpoint, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	client := sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	create := func(name, def string) string {
		out, err := client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(name), Definition: aws.String(def),
			RoleArn: aws.String("arn:aws:iam::123456789012:role/sfn")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.StateMachineArn)
	}
	start := func(arn, name string) {
		if _, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	const waitADay = `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":86400,"End":true}}}`
	reservation := create("reservation", waitADay)
	other := create("other", waitADay)
	done := create("done", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)

	start(other, "older-but-another-machine")
	clk.Advance(10 * time.Minute)
	start(reservation, "oldest")
	for _, name := range []string{"b", "c", "d", "e"} {
		clk.Advance(time.Minute)
		start(reservation, name)
	}
	start(done, "ended")
	clk.Advance(time.Minute) // the oldest started 5 minutes ago

	mem := metrics.NewMemory()
	store := sagatest.NewIndexedStore(clk.Now)
	s, err := sweeper.New(sweeper.Deps{Backlog: store, Expirer: store, Reconciler: nopReconciler{}, SFN: sagatest.NewStepFunctions(),
		Running: &sfnadapter.Running{Client: client, PageSize: 2}, StateMachineARN: reservation,
		Now: clk.Now, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: mem})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.RunningExecutionsUnknown || res.OldestRunningExecutionAgeSeconds != 300 {
		t.Fatalf("result %+v, want the oldest 300s old", res)
	}
	if g, ok := mem.Last(sweeper.MetricOldestRunningExecutionAgeSeconds); !ok || g != (metrics.Reading{Value: 300, Unit: metrics.UnitSeconds}) {
		t.Fatalf("published %+v %v", g, ok)
	}
}

// nopReconciler is never asked: the store holds no reservation.
type nopReconciler struct{}

func (nopReconciler) Resolve(context.Context, saga.Input) (string, error) {
	return saga.OutcomeRetry, nil
}
