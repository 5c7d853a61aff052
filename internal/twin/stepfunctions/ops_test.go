package stepfunctions_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

const role = "arn:aws:iam::123456789012:role/sfn"

// opsEnv is a server whose "flaky" function fails while failures is positive, so that an
// execution fails once and succeeds when redriven.
type opsEnv struct {
	srv      *stepfunctions.Server
	client   *sfn.Client
	endpoint string
	clock    *clock.Fake
	failures atomic.Int32
	calls    atomic.Int32
}

func newOpsEnv(t *testing.T) *opsEnv {
	t.Helper()
	e := &opsEnv{clock: clock.NewFake(epoch)}
	inv := asl.NewFuncInvoker(map[string]asl.Func{
		"echo": func(_ context.Context, p []byte) ([]byte, error) { return p, nil },
		"flaky": func(_ context.Context, p []byte) ([]byte, error) {
			e.calls.Add(1)
			if e.failures.Add(-1) >= 0 {
				return nil, &asl.FunctionError{Type: "Flaky", Message: "try again"}
			}
			return []byte(`{"charged":true}`), nil
		},
	})
	e.srv = stepfunctions.New(stepfunctions.Options{Clock: e.clock, Invoker: inv})
	endpoint, err := e.srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	e.endpoint, e.client = endpoint, newClient(endpoint)
	return e
}

func (e *opsEnv) create(t *testing.T, in *sfn.CreateStateMachineInput) string {
	t.Helper()
	if in.RoleArn == nil {
		in.RoleArn = aws.String(role)
	}
	out, err := e.client.CreateStateMachine(ctxT(t), in)
	if err != nil {
		t.Fatalf("CreateStateMachine: %v", err)
	}
	return *out.StateMachineArn
}

func (e *opsEnv) finish(t *testing.T, arn string) *sfn.DescribeExecutionOutput {
	t.Helper()
	if err := e.srv.WaitExecution(ctxT(t), arn); err != nil {
		t.Fatalf("execution did not finish: %v", err)
	}
	out, err := e.client.DescribeExecution(ctxT(t), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *opsEnv) history(t *testing.T, arn string) []types.HistoryEvent {
	t.Helper()
	out, err := e.client.GetExecutionHistory(ctxT(t), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return out.Events
}

const resultPassDef = `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"v":1},"ResultPath":"$.p","End":true}}}`

const chargeDef = `{"StartAt":"Prepare","States":{
  "Prepare":{"Type":"Pass","Result":"prepared","ResultPath":"$.prep","Next":"Charge"},
  "Charge":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:flaky","ResultPath":"$.charge","Next":"Done"},
  "Done":{"Type":"Succeed"}}}`

// The server serves 23 operations, 13 before this work; the count is the dispatch table's.
func TestTheServerServesTwentyThreeOperations(t *testing.T) {
	before := []string{"CreateStateMachine", "DeleteStateMachine", "DescribeExecution", "DescribeStateMachine",
		"DescribeStateMachineForExecution", "GetExecutionHistory", "ListExecutions", "ListStateMachines",
		"SendTaskFailure", "SendTaskHeartbeat", "SendTaskSuccess", "StartExecution", "StopExecution"}
	added := []string{"ListStateMachineVersions", "ListTagsForResource", "PublishStateMachineVersion", "RedriveExecution",
		"StartSyncExecution", "TagResource", "TestState", "UntagResource", "UpdateStateMachine", "ValidateStateMachineDefinition"}
	e := newOpsEnv(t)
	got := e.srv.Operations()
	t.Logf("operations served: %d before, %d now: %v", len(before), len(got), got)
	served := map[string]bool{}
	for _, op := range got {
		served[op] = true
	}
	for _, op := range append(append([]string{}, before...), added...) {
		if !served[op] {
			t.Errorf("%s is not served", op)
		}
	}
	if len(got) != len(before)+len(added) {
		t.Fatalf("%d operations served, want %d", len(got), len(before)+len(added))
	}
	// Control: an operation outside the table is refused as unknown.
	if status, code, _ := call(t, e.endpoint, "CreateStateMachineAlias", map[string]string{}); status != http.StatusBadRequest || code != "UnknownOperationException" {
		t.Fatalf("CreateStateMachineAlias = %d %s, want UnknownOperationException", status, code)
	}
}

func TestUpdateStateMachineChangesTheDefinitionForNewExecutionsOnly(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	waitDef := `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":10,"Next":"P"},"P":{"Type":"Pass","Result":"old","ResultPath":"$.v","End":true}}}`
	arn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("upd"), Definition: aws.String(waitDef),
		TracingConfiguration: &types.TracingConfiguration{Enabled: true},
		LoggingConfiguration: &types.LoggingConfiguration{Level: types.LogLevelAll, IncludeExecutionData: false,
			Destinations: []types.LogDestination{{CloudWatchLogsLogGroup: &types.CloudWatchLogsLogGroup{LogGroupArn: aws.String("arn:aws:logs:us-east-1:123456789012:log-group:sfn:*")}}}}})
	before, err := e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if before.RevisionId == nil || before.TracingConfiguration == nil || !before.TracingConfiguration.Enabled ||
		before.LoggingConfiguration.Level != types.LogLevelAll || len(before.LoggingConfiguration.Destinations) != 1 {
		t.Fatalf("DescribeStateMachine = revision %v tracing %+v logging %+v", before.RevisionId, before.TracingConfiguration, before.LoggingConfiguration)
	}
	running, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("old")})
	if err != nil {
		t.Fatal(err)
	}
	newDef := strings.Replace(waitDef, `"old"`, `"new"`, 1)
	cases := []struct {
		name  string
		in    *sfn.UpdateStateMachineInput
		check func(t *testing.T, out *sfn.UpdateStateMachineOutput, err error)
	}{
		{"nothing to update", &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn)},
			func(t *testing.T, _ *sfn.UpdateStateMachineOutput, err error) {
				wantAPIError[*types.MissingRequiredParameter](t, err)
			}},
		{"invalid definition", &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(`{"StartAt":"X","States":{}}`)},
			func(t *testing.T, _ *sfn.UpdateStateMachineOutput, err error) {
				wantAPIError[*types.InvalidDefinition](t, err)
			}},
		{"unknown machine", &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn + "x"), RoleArn: aws.String(role)},
			func(t *testing.T, _ *sfn.UpdateStateMachineOutput, err error) {
				wantAPIError[*types.StateMachineDoesNotExist](t, err)
			}},
		{"version description without publish", &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), RoleArn: aws.String(role), VersionDescription: aws.String("v")},
			func(t *testing.T, _ *sfn.UpdateStateMachineOutput, err error) {
				wantAPIError[*types.ValidationException](t, err)
			}},
		{"new definition, published", &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(newDef), Publish: true, VersionDescription: aws.String("second")},
			func(t *testing.T, out *sfn.UpdateStateMachineOutput, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if out.UpdateDate == nil || aws.ToString(out.RevisionId) == aws.ToString(before.RevisionId) || aws.ToString(out.StateMachineVersionArn) != arn+":1" {
					t.Fatalf("UpdateStateMachine = %+v", out)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.client.UpdateStateMachine(ctx, tc.in)
			tc.check(t, out, err)
		})
	}
	after, err := e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil || *after.Definition != newDef || *after.RevisionId == *before.RevisionId {
		t.Fatalf("after update: %v %v", after, err)
	}
	version, err := e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn + ":1")})
	if err != nil || aws.ToString(version.Description) != "second" || *version.RevisionId != *after.RevisionId || *version.StateMachineArn != arn+":1" {
		t.Fatalf("version = %+v, %v", version, err)
	}
	fresh, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("new")})
	if err != nil {
		t.Fatal(err)
	}
	// Both executions must be in their Wait state, timer set, before the clock moves: a start
	// is asynchronous, and a timer set after the advance would never fire.
	if err := e.clock.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second)
	if out := e.finish(t, *running.ExecutionArn); *out.Output != `{"v":"old"}` {
		t.Fatalf("the execution running during the update output %s, want the old definition's", *out.Output)
	}
	if out := e.finish(t, *fresh.ExecutionArn); *out.Output != `{"v":"new"}` {
		t.Fatalf("the execution started after the update output %s, want the new definition's", *out.Output)
	}
}

func TestVersionsArePublishedOncePerRevisionAndListedNewestFirst(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	arn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("ver"), Definition: aws.String(resultPassDef), Publish: true})
	desc, _ := e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	again, err := e.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn)})
	if err != nil || *again.StateMachineVersionArn != arn+":1" {
		t.Fatalf("republishing an unchanged revision = %v, %v, want version 1", again, err)
	}
	_, err = e.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn), RevisionId: aws.String("stale")})
	wantAPIError[*types.ConflictException](t, err)
	if _, err := e.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), RoleArn: aws.String(role + "2")}); err != nil {
		t.Fatal(err)
	}
	second, err := e.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn), Description: aws.String("role 2")})
	if err != nil || *second.StateMachineVersionArn != arn+":2" {
		t.Fatalf("publish after update = %v, %v", second, err)
	}
	list, err := e.client.ListStateMachineVersions(ctx, &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(arn)})
	if err != nil || len(list.StateMachineVersions) != 2 || *list.StateMachineVersions[0].StateMachineVersionArn != arn+":2" {
		t.Fatalf("ListStateMachineVersions = %+v, %v", list, err)
	}
	v1, err := e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn + ":1")})
	if err != nil || *v1.RoleArn != role || *v1.RevisionId != *desc.RevisionId {
		t.Fatalf("version 1 = %+v, %v (it keeps the role it was published with)", v1, err)
	}
	x, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn + ":1")})
	if err != nil {
		t.Fatal(err)
	}
	if out := e.finish(t, *x.ExecutionArn); *out.StateMachineArn != arn || aws.ToString(out.StateMachineVersionArn) != arn+":1" {
		t.Fatalf("execution of a version: stateMachineArn %s version %v", *out.StateMachineArn, out.StateMachineVersionArn)
	}
	_, err = e.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn + ":3")})
	wantAPIError[*types.StateMachineDoesNotExist](t, err)
}

func TestTagsAreAddedReplacedListedAndRemoved(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	arn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("tagged"), Definition: aws.String(resultPassDef),
		Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("seats")}}})
	tags := func(t *testing.T) map[string]string {
		t.Helper()
		out, err := e.client.ListTagsForResource(ctx, &sfn.ListTagsForResourceInput{ResourceArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, tg := range out.Tags {
			m[*tg.Key] = *tg.Value
		}
		return m
	}
	if got := tags(t); !reflect.DeepEqual(got, map[string]string{"team": "seats"}) {
		t.Fatalf("tags from CreateStateMachine = %v", got)
	}
	many := make([]types.Tag, 50)
	for i := range many {
		many[i] = types.Tag{Key: aws.String("k" + string(rune('A'+i%26)) + string(rune('a'+i/26))), Value: aws.String("v")}
	}
	cases := []struct {
		name  string
		call  func() error
		check func(t *testing.T, err error)
		want  map[string]string
	}{
		{"add and replace", func() error {
			_, err := e.client.TagResource(ctx, &sfn.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{
				{Key: aws.String("team"), Value: aws.String("payments")}, {Key: aws.String("env"), Value: aws.String("local")}}})
			return err
		}, nil, map[string]string{"team": "payments", "env": "local"}},
		{"untag", func() error {
			_, err := e.client.UntagResource(ctx, &sfn.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{"env", "absent"}})
			return err
		}, nil, map[string]string{"team": "payments"}},
		{"too many", func() error {
			_, err := e.client.TagResource(ctx, &sfn.TagResourceInput{ResourceArn: aws.String(arn), Tags: many})
			return err
		}, func(t *testing.T, err error) {
			var tm *types.TooManyTags
			if !errors.As(err, &tm) || aws.ToString(tm.ResourceName) != arn {
				t.Fatalf("want TooManyTags naming %s, got %v", arn, err)
			}
		}, map[string]string{"team": "payments"}},
		{"unknown machine", func() error {
			_, err := e.client.ListTagsForResource(ctx, &sfn.ListTagsForResourceInput{ResourceArn: aws.String(arn + "x")})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.ResourceNotFound](t, err) }, map[string]string{"team": "payments"}},
		{"not an ARN", func() error {
			_, err := e.client.TagResource(ctx, &sfn.TagResourceInput{ResourceArn: aws.String("machine"), Tags: many[:1]})
			return err
		}, func(t *testing.T, err error) { wantAPIError[*types.InvalidArn](t, err) }, map[string]string{"team": "payments"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if tc.check == nil && err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
			if got := tags(t); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("tags = %v, want %v", got, tc.want)
			}
		})
	}
}

// awsExamples reads a testdata file of requests and the answers AWS gave them.
func awsExamples(t *testing.T, file string) []struct {
	Name     string          `json:"name"`
	Request  map[string]any  `json:"request"`
	Response json.RawMessage `json:"response"`
} {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name     string          `json:"name"`
			Request  map[string]any  `json:"request"`
			Response json.RawMessage `json:"response"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cases
}

// sameFields compares two JSON objects field by field: the same fields, each of equal value,
// where a string holding JSON (TestState's output and inspection data) is compared as the JSON
// it holds, since the engine writes object keys sorted where AWS keeps the input's order.
func sameFields(t *testing.T, path string, got, want any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: got %v, want an object", path, got)
			return
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				t.Errorf("%s.%s: missing", path, k)
			}
		}
		for k, gv := range g {
			wv, ok := w[k]
			if !ok {
				t.Errorf("%s.%s: present (%v), AWS's answer has no such field", path, k, gv)
				continue
			}
			sameFields(t, path+"."+k, gv, wv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", path, got, want)
			return
		}
		for i := range w {
			sameFields(t, path, g[i], w[i])
		}
	case string:
		g, _ := got.(string)
		var gj, wj any
		if json.Unmarshal([]byte(g), &gj) == nil && json.Unmarshal([]byte(w), &wj) == nil {
			if !reflect.DeepEqual(gj, wj) {
				t.Errorf("%s: got %s, want %s", path, g, w)
			}
		} else if g != w {
			t.Errorf("%s: got %q, want %q", path, g, w)
		}
	default:
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
}

// answersAsAWS sends each request of testdata file to op and compares the answer with AWS's,
// field by field.
func answersAsAWS(t *testing.T, op, file string) {
	t.Helper()
	e := newOpsEnv(t)
	for _, ex := range awsExamples(t, file) {
		t.Run(ex.Name, func(t *testing.T) {
			status, code, body := call(t, e.endpoint, op, ex.Request)
			if status != http.StatusOK {
				t.Fatalf("%s = %d %s %s", op, status, code, body)
			}
			var got, want any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ex.Response, &want); err != nil {
				t.Fatal(err)
			}
			sameFields(t, op, got, want)
		})
	}
}

// TestState answers AWS's documented examples field for field (testdata/teststate_aws_examples.json,
// from https://aws.amazon.com/blogs/aws/accelerate-workflow-development-with-enhanced-local-testing-in-aws-step-functions/).
func TestTestStateAnswersAWSsDocumentedExamplesFieldByField(t *testing.T) {
	answersAsAWS(t, "TestState", "teststate_aws_examples.json")
	// Control: the comparison fails on an answer that differs from AWS's in one field.
	probe := &testing.T{}
	sameFields(probe, "probe", map[string]any{"status": "FAILED"}, map[string]any{"status": "SUCCEEDED"})
	if !probe.Failed() {
		t.Fatal("sameFields accepted differing answers")
	}
}

// ValidateStateMachineDefinition answers as AWS answered the same definitions
// (testdata/validate_aws_recorded.json, recorded from AWS in LocalStack's snapshot
// https://github.com/localstack/localstack/blob/a8604e4056d5f6c98c39ef32a188fc5df55a9172/tests/aws/services/stepfunctions/v2/test_sfn_api_validation.snapshot.json).
func TestValidateStateMachineDefinitionAnswersAsAWSRecordedFieldByField(t *testing.T) {
	answersAsAWS(t, "ValidateStateMachineDefinition", "validate_aws_recorded.json")
}

func TestValidateStateMachineDefinitionReportsTheEnginesProblems(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	cases := []struct {
		name, def string
		typ       types.StateMachineType
		max       int32
		result    types.ValidateStateMachineDefinitionResultCode
		codes     []string
		locations []string
		truncated bool
	}{
		{"valid", resultPassDef, "", 0, "OK", nil, nil, false},
		{"not JSON", `{"StartAt":`, "", 0, "FAIL", []string{"INVALID_JSON_DESCRIPTION"}, []string{"/"}, false},
		{"missing target", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`, "", 0, "FAIL", []string{"MISSING_TRANSITION_TARGET"}, []string{"/States/A"}, false},
		{"bad path is a schema failure", `{"StartAt":"A","States":{"A":{"Type":"Pass","InputPath":"nope","End":true}}}`, "", 0, "FAIL", []string{"SCHEMA_VALIDATION_FAILED"}, []string{"/States/A/InputPath"}, false},
		{"callback task in EXPRESS", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","End":true}}}`, types.StateMachineTypeExpress, 0, "FAIL",
			[]string{"SCHEMA_VALIDATION_FAILED"}, []string{"/States/A/Resource"}, false},
		{"callback task in STANDARD", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","End":true}}}`, types.StateMachineTypeStandard, 0, "OK", nil, nil, false},
		{"truncated", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B","Bogus":1},"C":{"Type":"Pass","End":true}}}`, "", 1, "FAIL", []string{"SCHEMA_VALIDATION_FAILED"}, []string{"/States/A/Bogus"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.client.ValidateStateMachineDefinition(ctx, &sfn.ValidateStateMachineDefinitionInput{Definition: aws.String(tc.def), Type: tc.typ, MaxResults: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			var codes, locations []string
			for _, d := range out.Diagnostics {
				if d.Severity != types.ValidateStateMachineDefinitionSeverityError || aws.ToString(d.Message) == "" {
					t.Errorf("diagnostic %+v", d)
				}
				codes, locations = append(codes, *d.Code), append(locations, aws.ToString(d.Location))
			}
			if out.Result != tc.result || !reflect.DeepEqual(codes, tc.codes) || !reflect.DeepEqual(locations, tc.locations) || aws.ToBool(out.Truncated) != tc.truncated {
				t.Fatalf("= %s %v %v truncated %v, want %s %v %v %v", out.Result, codes, locations, aws.ToBool(out.Truncated), tc.result, tc.codes, tc.locations, tc.truncated)
			}
		})
	}
}

func TestTestStateRunsOneStateWithItsRetryAndCatch(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	task := `{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"charge","Payload.$":"$.order"},
	  "ResultSelector":{"status.$":"$.s"},"ResultPath":"$.res","OutputPath":"$.res","Next":"After",
	  "Retry":[{"ErrorEquals":["Busy"],"MaxAttempts":2,"IntervalSeconds":3,"BackoffRate":2}],
	  "Catch":[{"ErrorEquals":["Declined"],"ResultPath":"$.err","Next":"Refund"}]}`
	mockErr := func(name string) *types.MockInput {
		return &types.MockInput{ErrorOutput: &types.MockErrorOutput{Error: aws.String(name), Cause: aws.String("because")}}
	}
	cases := []struct {
		name    string
		in      sfn.TestStateInput
		status  types.TestExecutionStatus
		output  string
		next    string
		errName string
		data    map[string]string
		details *types.InspectionErrorDetails
	}{
		{"mocked success through every step", sfn.TestStateInput{Definition: aws.String(task), Input: aws.String(`{"order":{"id":1}}`),
			Mock: &types.MockInput{Result: aws.String(`{"s":"ok","x":1}`)}, InspectionLevel: types.InspectionLevelDebug},
			types.TestExecutionStatusSucceeded, `{"status":"ok"}`, "After", "", map[string]string{
				"input": `{"order":{"id":1}}`, "afterInputPath": `{"order":{"id":1}}`, "afterParameters": `{"FunctionName":"charge","Payload":{"id":1}}`,
				"result": `{"s":"ok","x":1}`, "afterResultSelector": `{"status":"ok"}`, "afterResultPath": `{"order":{"id":1},"res":{"status":"ok"}}`}, nil},
		{"INFO shows no inspection data", sfn.TestStateInput{Definition: aws.String(task), Input: aws.String(`{"order":{}}`),
			Mock: &types.MockInput{Result: aws.String(`{"s":"ok"}`)}}, types.TestExecutionStatusSucceeded, `{"status":"ok"}`, "After", "", nil, nil},
		{"retriable error", sfn.TestStateInput{Definition: aws.String(task), Input: aws.String(`{"order":1}`), Mock: mockErr("Busy"), InspectionLevel: types.InspectionLevelDebug,
			StateConfiguration: &types.TestStateConfiguration{RetrierRetryCount: aws.Int32(1)}},
			types.TestExecutionStatusRetriable, "", "", "Busy", map[string]string{"input": `{"order":1}`, "afterInputPath": `{"order":1}`, "afterParameters": `{"FunctionName":"charge","Payload":1}`},
			&types.InspectionErrorDetails{RetryIndex: aws.Int32(0), RetryBackoffIntervalSeconds: aws.Int32(6)}},
		{"retries exhausted", sfn.TestStateInput{Definition: aws.String(task), Input: aws.String(`{"order":1}`), Mock: mockErr("Busy"),
			StateConfiguration: &types.TestStateConfiguration{RetrierRetryCount: aws.Int32(2)}},
			types.TestExecutionStatusFailed, "", "", "Busy", nil, nil},
		{"caught error", sfn.TestStateInput{Definition: aws.String(task), Input: aws.String(`{"order":1}`), Mock: mockErr("Declined"), InspectionLevel: types.InspectionLevelDebug},
			types.TestExecutionStatusCaughtError, `{"err":{"Cause":"because","Error":"Declined"},"order":1}`, "Refund", "Declined",
			map[string]string{"input": `{"order":1}`, "afterInputPath": `{"order":1}`, "afterParameters": `{"FunctionName":"charge","Payload":1}`, "afterResultPath": `{"err":{"Cause":"because","Error":"Declined"},"order":1}`},
			&types.InspectionErrorDetails{CatchIndex: aws.Int32(0)}},
		{"parameters that do not resolve", sfn.TestStateInput{Definition: aws.String(task), Mock: mockErr("Busy")},
			types.TestExecutionStatusFailed, "", "", asl.ErrRuntime, nil, nil},
		{"real Lambda invocation", sfn.TestStateInput{Definition: aws.String(`{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:echo","End":true}`),
			Input: aws.String(`{"seat":"A1"}`)}, types.TestExecutionStatusSucceeded, `{"seat":"A1"}`, "", "", nil, nil},
		{"choice", sfn.TestStateInput{Definition: aws.String(`{"Type":"Choice","Choices":[{"Variable":"$.n","NumericGreaterThan":1,"Next":"Big"}],"Default":"Small"}`),
			Input: aws.String(`{"n":5}`), InspectionLevel: types.InspectionLevelTrace}, types.TestExecutionStatusSucceeded, `{"n":5}`, "Big", "",
			map[string]string{"input": `{"n":5}`, "afterInputPath": `{"n":5}`}, nil},
		{"fail state", sfn.TestStateInput{Definition: aws.String(`{"Type":"Fail","Error":"SomeFailure","Cause":"why"}`), InspectionLevel: types.InspectionLevelDebug},
			types.TestExecutionStatusFailed, "", "", "SomeFailure", map[string]string{"input": `{}`, "afterInputPath": `{}`}, nil},
		{"pass with a result", sfn.TestStateInput{Definition: aws.String(`{"Type":"Pass","Result":{"k":"v"},"End":true}`), InspectionLevel: types.InspectionLevelDebug},
			types.TestExecutionStatusSucceeded, `{"k":"v"}`, "", "", map[string]string{"input": `{}`, "result": `{"k":"v"}`, "afterResultSelector": `{"k":"v"}`, "afterResultPath": `{"k":"v"}`}, nil},
		{"a state within a machine", sfn.TestStateInput{Definition: aws.String(chargeDef), StateName: aws.String("Prepare"), Input: aws.String(`{}`)},
			types.TestExecutionStatusSucceeded, `{"prep":"prepared"}`, "Charge", "", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.client.TestState(ctx, &tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tc.status || aws.ToString(out.Output) != tc.output || aws.ToString(out.NextState) != tc.next || aws.ToString(out.Error) != tc.errName {
				t.Fatalf("= status %s output %q next %q error %q, want %s %q %q %q", out.Status, aws.ToString(out.Output), aws.ToString(out.NextState), aws.ToString(out.Error), tc.status, tc.output, tc.next, tc.errName)
			}
			if tc.data == nil {
				if out.InspectionData != nil && tc.in.InspectionLevel == "" {
					t.Fatalf("INFO returned inspection data %+v", out.InspectionData)
				}
				return
			}
			d := out.InspectionData
			got := map[string]string{}
			for k, v := range map[string]*string{"input": d.Input, "afterInputPath": d.AfterInputPath, "afterParameters": d.AfterParameters,
				"result": d.Result, "afterResultSelector": d.AfterResultSelector, "afterResultPath": d.AfterResultPath} {
				if v != nil {
					got[k] = *v
				}
			}
			if !reflect.DeepEqual(got, tc.data) {
				t.Fatalf("inspection data\n got %v\nwant %v", got, tc.data)
			}
			if !reflect.DeepEqual(d.ErrorDetails, tc.details) {
				t.Fatalf("error details %+v, want %+v", d.ErrorDetails, tc.details)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		in    sfn.TestStateInput
		check func(t *testing.T, err error)
	}{
		{"invalid definition", sfn.TestStateInput{Definition: aws.String(`{"Type":"Pass"}`)}, func(t *testing.T, err error) { wantAPIError[*types.InvalidDefinition](t, err) }},
		{"invalid input", sfn.TestStateInput{Definition: aws.String(`{"Type":"Succeed"}`), Input: aws.String(`{`)}, func(t *testing.T, err error) { wantAPIError[*types.InvalidExecutionInput](t, err) }},
		{"parallel without a mock", sfn.TestStateInput{Definition: aws.String(`{"Type":"Parallel","Branches":[{"StartAt":"B","States":{"B":{"Type":"Pass","End":true}}}],"End":true}`)},
			func(t *testing.T, err error) { wantAPIError[*types.ValidationException](t, err) }},
		{"mock on a pass state", sfn.TestStateInput{Definition: aws.String(`{"Type":"Pass","End":true}`), Mock: &types.MockInput{Result: aws.String(`{}`)}},
			func(t *testing.T, err error) { wantAPIError[*types.ValidationException](t, err) }},
		{"unknown state name", sfn.TestStateInput{Definition: aws.String(chargeDef), StateName: aws.String("Nope")}, func(t *testing.T, err error) { wantAPIError[*types.InvalidDefinition](t, err) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.TestState(ctx, &tc.in)
			tc.check(t, err)
		})
	}
}

func TestRedriveResumesAFailedExecutionAtTheStateThatFailed(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	arn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("charge"), Definition: aws.String(chargeDef)})
	e.failures.Store(1)
	x, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("once"), Input: aws.String(`{"order":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	failed := e.finish(t, *x.ExecutionArn)
	if failed.Status != types.ExecutionStatusFailed || failed.RedriveCount == nil || *failed.RedriveCount != 0 ||
		failed.RedriveStatus != types.ExecutionRedriveStatusRedrivable || failed.RedriveStatusReason != nil || failed.RedriveDate != nil {
		t.Fatalf("failed execution: status %s redrive %v %s %v %v", failed.Status, failed.RedriveCount, failed.RedriveStatus, failed.RedriveStatusReason, failed.RedriveDate)
	}
	// The update must not reach the redrive, which runs the definition the execution started with.
	if _, err := e.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn),
		Definition: aws.String(strings.Replace(chargeDef, `"prepared"`, `"updated"`, 1))}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	red, err := e.client.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: x.ExecutionArn, ClientToken: aws.String("tok-1")})
	if err != nil || red.RedriveDate == nil || !red.RedriveDate.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("RedriveExecution = %+v, %v", red, err)
	}
	// The same client token answers the same redrive without a second one.
	if again, err := e.client.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: x.ExecutionArn, ClientToken: aws.String("tok-1")}); err != nil || !again.RedriveDate.Equal(*red.RedriveDate) {
		t.Fatalf("repeated RedriveExecution = %+v, %v", again, err)
	}
	done := e.finish(t, *x.ExecutionArn)
	if done.Status != types.ExecutionStatusSucceeded || *done.Output != `{"charge":{"charged":true},"order":7,"prep":"prepared"}` ||
		*done.RedriveCount != 1 || !done.RedriveDate.Equal(*red.RedriveDate) || !done.StartDate.Equal(*failed.StartDate) ||
		done.RedriveStatus != types.ExecutionRedriveStatusNotRedrivable || aws.ToString(done.RedriveStatusReason) != "Execution is SUCCEEDED and cannot be redriven" {
		t.Fatalf("redriven execution: %s output %s count %v date %v start %v status %s reason %v", done.Status, aws.ToString(done.Output),
			done.RedriveCount, done.RedriveDate, done.StartDate, done.RedriveStatus, aws.ToString(done.RedriveStatusReason))
	}
	if n := e.calls.Load(); n != 2 {
		t.Fatalf("the flaky function ran %d times, want 2 (once failing, once redriven)", n)
	}
	hist := e.history(t, *x.ExecutionArn)
	var entered []string
	var redriven *types.ExecutionRedrivenEventDetails
	for i, ev := range hist {
		if ev.StateEnteredEventDetails != nil {
			entered = append(entered, *ev.StateEnteredEventDetails.Name)
		}
		if ev.Type == types.HistoryEventTypeExecutionRedriven {
			redriven = ev.ExecutionRedrivenEventDetails
			if ev.PreviousEventId != hist[i-1].Id {
				t.Errorf("ExecutionRedriven previous %d, want %d", ev.PreviousEventId, hist[i-1].Id)
			}
		}
	}
	if strings.Join(entered, ",") != "Prepare,Charge,Charge,Done" || redriven == nil || redriven.RedriveCount == nil || *redriven.RedriveCount != 1 {
		t.Fatalf("states entered %v, redriven event %+v", entered, redriven)
	}

	other, _ := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("plain")})
	e.finish(t, *other.ExecutionArn)
	for _, tc := range []struct {
		filter types.ExecutionRedriveFilter
		want   string
	}{{types.ExecutionRedriveFilterRedriven, "once"}, {types.ExecutionRedriveFilterNotRedriven, "plain"}, {"", "plain,once"}} {
		le, err := e.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), RedriveFilter: tc.filter})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, item := range le.Executions {
			names = append(names, *item.Name)
			if *item.Name == "once" && (aws.ToInt32(item.RedriveCount) != 1 || item.RedriveDate == nil) {
				t.Errorf("listed redriven execution without its redrive: %+v", item)
			}
		}
		if strings.Join(names, ",") != tc.want {
			t.Fatalf("ListExecutions(redriveFilter %q) = %v, want %s", tc.filter, names, tc.want)
		}
	}
}

func TestRedriveRefusesWhatAWSRefuses(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	arn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("charge"), Definition: aws.String(chargeDef)})
	waitArn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("wait"), Definition: aws.String(`{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}`)})
	expressArn := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("fast"), Type: types.StateMachineTypeExpress,
		Definition: aws.String(`{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"E"}}}`)})
	start := func(sm, name string) string {
		out, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(sm), Name: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return *out.ExecutionArn
	}
	succeeded := start(arn, "ok")
	e.finish(t, succeeded)
	running := start(waitArn, "running")
	e.failures.Store(1)
	old := start(arn, "old")
	e.finish(t, old)
	expressX := start(expressArn, "express")
	e.finish(t, expressX)
	// The old failure closed just now; the clock moves past its 14 days only after the
	// succeeded and running ones are checked, which do not depend on time.
	for _, tc := range []struct {
		name, arn string
		advance   time.Duration
		check     func(t *testing.T, err error)
		reason    string
	}{
		{"succeeded", succeeded, 0, func(t *testing.T, err error) { wantAPIError[*types.ExecutionNotRedrivable](t, err) }, "Execution is SUCCEEDED and cannot be redriven"},
		{"running", running, 0, func(t *testing.T, err error) { wantAPIError[*types.ExecutionNotRedrivable](t, err) }, "Execution is RUNNING and cannot be redriven"},
		{"express", expressX, 0, func(t *testing.T, err error) { wantAPIError[*types.ExecutionNotRedrivable](t, err) }, "Execution of an EXPRESS state machine cannot be redriven"},
		{"past 14 days", old, 15 * 24 * time.Hour, func(t *testing.T, err error) { wantAPIError[*types.ExecutionNotRedrivable](t, err) }, "Execution redrivable period exceeded"},
		{"unknown", strings.Replace(old, ":old", ":nope", 1), 0, func(t *testing.T, err error) { wantAPIError[*types.ExecutionDoesNotExist](t, err) }, ""},
		{"not an ARN", "nope", 0, func(t *testing.T, err error) { wantAPIError[*types.InvalidArn](t, err) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.advance > 0 {
				e.clock.Advance(tc.advance)
			}
			_, err := e.client.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(tc.arn)})
			tc.check(t, err)
			if tc.reason == "" {
				return
			}
			d, err := e.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(tc.arn)})
			if err != nil || d.RedriveStatus != types.ExecutionRedriveStatusNotRedrivable || aws.ToString(d.RedriveStatusReason) != tc.reason {
				t.Fatalf("DescribeExecution redrive status %s %q, want NOT_REDRIVABLE %q (%v)", d.RedriveStatus, aws.ToString(d.RedriveStatusReason), tc.reason, err)
			}
		})
	}
}

func TestStartSyncExecutionAnswersWithTheResultForExpressOnly(t *testing.T) {
	e := newOpsEnv(t)
	ctx := ctxT(t)
	express := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("sync"), Type: types.StateMachineTypeExpress, Definition: aws.String(resultPassDef)})
	failing := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("syncfail"), Type: types.StateMachineTypeExpress,
		Definition: aws.String(`{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Nope","Cause":"bad"}}}`)})
	standard := e.create(t, &sfn.CreateStateMachineInput{Name: aws.String("std"), Definition: aws.String(resultPassDef)})
	for _, tc := range []struct {
		name, arn, input string
		check            func(t *testing.T, out *sfn.StartSyncExecutionOutput, err error)
	}{
		{"succeeds", express, `{"a":1}`, func(t *testing.T, out *sfn.StartSyncExecutionOutput, err error) {
			if err != nil || out.Status != types.SyncExecutionStatusSucceeded || *out.Output != `{"a":1,"p":{"v":1}}` || *out.StateMachineArn != express ||
				!strings.Contains(*out.ExecutionArn, ":express:sync:") || out.BillingDetails == nil || out.BillingDetails.BilledDurationInMilliseconds < 100 || out.StopDate == nil {
				t.Fatalf("= %+v, %v", out, err)
			}
		}},
		{"fails with its error", failing, `{}`, func(t *testing.T, out *sfn.StartSyncExecutionOutput, err error) {
			if err != nil || out.Status != types.SyncExecutionStatusFailed || *out.Error != "Nope" || *out.Cause != "bad" || out.Output != nil {
				t.Fatalf("= %+v, %v", out, err)
			}
		}},
		{"refused for STANDARD", standard, `{}`, func(t *testing.T, _ *sfn.StartSyncExecutionOutput, err error) {
			wantAPIError[*types.StateMachineTypeNotSupported](t, err)
		}},
		{"invalid input", express, `{`, func(t *testing.T, _ *sfn.StartSyncExecutionOutput, err error) {
			wantAPIError[*types.InvalidExecutionInput](t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.client.StartSyncExecution(ctx, &sfn.StartSyncExecutionInput{StateMachineArn: aws.String(tc.arn), Input: aws.String(tc.input)})
			tc.check(t, out, err)
		})
	}
}

// A callback task in an EXPRESS machine is refused at creation, as the validator reports it.
func TestCreateStateMachineRefusesCallbackTasksInExpress(t *testing.T) {
	e := newOpsEnv(t)
	_, err := e.client.CreateStateMachine(ctxT(t), &sfn.CreateStateMachineInput{Name: aws.String("x"), RoleArn: aws.String(role), Type: types.StateMachineTypeExpress,
		Definition: aws.String(`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","End":true}}}`)})
	wantAPIError[*types.InvalidDefinition](t, err)
}
