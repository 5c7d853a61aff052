package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

const machineARN = "arn:aws:states:us-east-1:1:stateMachine:m"

// fakeSFN answers from fixed executions and records what it was asked.
type fakeSFN struct {
	names      []string // executions, newest first
	listCalls  []sfn.ListExecutionsInput
	redrives   []string
	redriveErr error
	historyErr error
	definition string
}

func (f *fakeSFN) ListStateMachines(context.Context, *sfn.ListStateMachinesInput, ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	return &sfn.ListStateMachinesOutput{StateMachines: []sfntypes.StateMachineListItem{{StateMachineArn: aws.String(machineARN),
		Name: aws.String("m"), Type: sfntypes.StateMachineTypeStandard, CreationDate: aws.Time(t0)}}}, nil
}

// ListExecutions pages names by an offset token, as the twin does.
func (f *fakeSFN) ListExecutions(_ context.Context, in *sfn.ListExecutionsInput, _ ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error) {
	f.listCalls = append(f.listCalls, *in)
	start := 0
	if in.NextToken != nil {
		fmt.Sscanf(*in.NextToken, "at-%d", &start)
	}
	end := min(start+int(in.MaxResults), len(f.names))
	out := &sfn.ListExecutionsOutput{}
	for _, n := range f.names[start:end] {
		out.Executions = append(out.Executions, sfntypes.ExecutionListItem{Name: aws.String(n), ExecutionArn: aws.String("arn:x:" + n),
			Status: sfntypes.ExecutionStatusSucceeded, StartDate: aws.Time(t0), StopDate: aws.Time(t0.Add(1500_000_000))})
	}
	if end < len(f.names) {
		out.NextToken = aws.String(fmt.Sprintf("at-%d", end))
	}
	return out, nil
}

func (f *fakeSFN) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	if aws.ToString(in.ExecutionArn) == "missing" {
		return nil, apiErr("DescribeExecution", 400, "ExecutionDoesNotExist", "Execution Does Not Exist: 'missing'")
	}
	d := described(sfntypes.ExecutionStatusFailed, 10)
	d.Error = aws.String("ClaimFailed")
	return d, nil
}

func (f *fakeSFN) DescribeStateMachineForExecution(context.Context, *sfn.DescribeStateMachineForExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeStateMachineForExecutionOutput, error) {
	return &sfn.DescribeStateMachineForExecutionOutput{Definition: aws.String(f.definition)}, nil
}

func (f *fakeSFN) GetExecutionHistory(context.Context, *sfn.GetExecutionHistoryInput, ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error) {
	if f.historyErr != nil {
		return nil, f.historyErr
	}
	h := (&history{}).add(0, sfntypes.HistoryEventTypeExecutionStarted, nil).enter(0, "Claim").schedule(1).fail(2, "Boom").
		exit(3, "Claim").enter(3, "Claim failed").add(4, sfntypes.HistoryEventTypeExecutionFailed, nil)
	return &sfn.GetExecutionHistoryOutput{Events: h.events}, nil
}

func (f *fakeSFN) RedriveExecution(_ context.Context, in *sfn.RedriveExecutionInput, _ ...func(*sfn.Options)) (*sfn.RedriveExecutionOutput, error) {
	f.redrives = append(f.redrives, aws.ToString(in.ExecutionArn))
	if f.redriveErr != nil {
		return nil, f.redriveErr
	}
	return &sfn.RedriveExecutionOutput{RedriveDate: aws.Time(t0)}, nil
}

// apiErr is an error as the SDK returns one the service answered.
func apiErr(op string, status int, code, msg string) error {
	return &smithy.OperationError{ServiceID: "SFN", OperationName: op, Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err: &smithy.GenericAPIError{Code: code, Message: msg}}}}
}

type fakeRecords struct{ asked []string }

func (f *fakeRecords) Records(_ context.Context, id string) stack.ReservationRecords {
	f.asked = append(f.asked, id)
	return stack.ReservationRecords{ReservationID: id, ReservationsTable: "t-Reservations", OutboxErr: errors.New("scan outbox: down")}
}

const sagaLike = `{"StartAt":"Claim","States":{"Claim":{"Type":"Task","Resource":"r","Next":"Done",
	"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Claim failed"}]},"Done":{"Type":"Succeed"},"Claim failed":{"Type":"Fail"}}}`

func serve(t *testing.T, h http.Handler, method, target string, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d %q is no JSON: %v", method, target, rec.Code, rec.Body.String(), err)
	}
	return rec.Code, out
}

func errorCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// The page and its assets come from the binary and name no other origin, so the console
// works offline; the policy header keeps any other origin's script out.
func TestPageIsServedFromTheBinaryAndNamesNoOtherOrigin(t *testing.T) {
	h := New(&fakeSFN{}, nil, nil)
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, path := range []string{"/", "/static/app.js", "/static/app.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || rec.Body.Len() < 500 {
			t.Fatalf("GET %s: %d, %d bytes", path, rec.Code, rec.Body.Len())
		}
		// The SVG namespace is a name, not a place the page loads from.
		body := strings.ReplaceAll(rec.Body.String(), "http://www.w3.org/2000/svg", "")
		if m := external.FindString(body); m != "" {
			t.Errorf("%s names another origin: %s", path, m)
		}
		if !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s has no content security policy", path)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if !strings.Contains(rec.Body.String(), `src="/static/app.js"`) || !strings.Contains(rec.Body.String(), "data-console-state") {
		t.Errorf("the page does not load its script or lacks its state attribute")
	}
}

// The list passes the status filter and the page's token to ListExecutions and hands back the
// next token; what is no status is refused before Step Functions is asked.
func TestExecutionsPageThroughListExecutions(t *testing.T) {
	f := &fakeSFN{names: []string{"r_5", "r_4", "r_3", "r_2", "r_1"}}
	h := New(f, nil, nil)
	code, out := serve(t, h, http.MethodGet, "/api/executions?stateMachineArn="+machineARN+"&status=FAILED&pageSize=2&nextToken=at-2", "", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %v", code, out)
	}
	in := f.listCalls[0]
	if in.StatusFilter != sfntypes.ExecutionStatusFailed || aws.ToString(in.NextToken) != "at-2" || in.MaxResults != 2 || aws.ToString(in.StateMachineArn) != machineARN {
		t.Errorf("ListExecutions asked %+v", in)
	}
	if names := lineNames(out); !equal(names, []string{"r_3", "r_2"}) || out["nextToken"] != "at-4" {
		t.Errorf("page %v, next %v", names, out["nextToken"])
	}
	lines := out["executions"].([]any)
	if d := lines[0].(map[string]any)["durationMs"]; d != 1500.0 {
		t.Errorf("duration %v, want 1500 ms", d)
	}
	for _, bad := range []string{"?stateMachineArn=" + machineARN + "&status=BROKEN", "?status=FAILED", "?stateMachineArn=x&pageSize=0"} {
		calls := len(f.listCalls)
		if code, out := serve(t, h, http.MethodGet, "/api/executions"+bad, "", nil); code != http.StatusBadRequest || errorCode(out) != "BadRequest" {
			t.Errorf("%s: %d %v", bad, code, out)
		}
		if len(f.listCalls) != calls {
			t.Errorf("%s reached ListExecutions", bad)
		}
	}
}

// The API has no name filter: the console reads pages until it has a page of matches or the
// list ends, and hands back the token to go on from.
func TestNameFilterReadsPagesUntilAPageIsFull(t *testing.T) {
	f := &fakeSFN{names: []string{"a-x1", "b", "c", "d-x2", "e", "f", "g-x3", "h-x4", "i"}}
	h := New(f, nil, nil)
	_, out := serve(t, h, http.MethodGet, "/api/executions?stateMachineArn="+machineARN+"&name=x&pageSize=2", "", nil)
	if names := lineNames(out); !equal(names, []string{"a-x1", "d-x2"}) || out["nextToken"] != "at-4" || out["scanned"] != 2.0 {
		t.Errorf("first page %v, next %v, scanned %v", names, out["nextToken"], out["scanned"])
	}
	_, out = serve(t, h, http.MethodGet, "/api/executions?stateMachineArn="+machineARN+"&name=x&pageSize=2&nextToken=at-4", "", nil)
	if names := lineNames(out); !equal(names, []string{"g-x3", "h-x4"}) || out["nextToken"] != "at-8" {
		t.Errorf("second page %v, next %v", names, out["nextToken"])
	}
	_, out = serve(t, h, http.MethodGet, "/api/executions?stateMachineArn="+machineARN+"&name=x&pageSize=2&nextToken=at-8", "", nil)
	if names := lineNames(out); len(names) != 0 || out["nextToken"] != nil {
		t.Errorf("last page %v, next %v", names, out["nextToken"])
	}
}

func lineNames(out map[string]any) []string {
	var names []string
	for _, l := range out["executions"].([]any) {
		names = append(names, l.(map[string]any)["name"].(string))
	}
	return names
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// One execution comes with its definition's graph, the states' statuses, its events and the
// reservation's records (asked by the execution's name, the reservation id); a section of the
// records that could not be read says why.
func TestExecutionViewJoinsGraphHistoryAndRecords(t *testing.T) {
	f := &fakeSFN{definition: sagaLike}
	records := &fakeRecords{}
	h := New(f, records, nil)
	code, out := serve(t, h, http.MethodGet, "/api/execution?arn=arn:x:r_1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %v", code, out)
	}
	status := out["stateStatus"].(map[string]any)
	if status["Claim"] != StateCaught || status["Claim failed"] != StateFailed || status["Done"] != nil {
		t.Errorf("statuses %v", status)
	}
	if g := out["graph"].(map[string]any); len(g["nodes"].([]any)) != 4 {
		t.Errorf("graph %v", g)
	}
	if n := len(out["events"].([]any)); n != 7 {
		t.Errorf("%d events, want 7", n)
	}
	rec := out["records"].(map[string]any)
	if !equal(records.asked, []string{"r_1"}) || rec["reservationsTable"] != "t-Reservations" || rec["outboxError"] != "scan outbox: down" {
		t.Errorf("records asked for %v: %v", records.asked, rec)
	}
	if out["redrivable"] != true {
		t.Errorf("a failed execution is not offered for redrive")
	}
	// Without a definition to draw, the history still shows.
	f.definition = "{"
	code, out = serve(t, h, http.MethodGet, "/api/execution?arn=arn:x:r_1", "", nil)
	if code != http.StatusOK || out["graph"] != nil || !strings.Contains(fmt.Sprint(out["graphError"]), "ASL") || len(out["events"].([]any)) != 7 {
		t.Errorf("without a graph: %d, graph error %v", code, out["graphError"])
	}
}

// Step Functions' errors reach the page with their code and status; others are the console's
// own 500.
func TestServiceErrorsKeepTheirCode(t *testing.T) {
	f := &fakeSFN{definition: sagaLike}
	h := New(f, nil, nil)
	code, out := serve(t, h, http.MethodGet, "/api/execution?arn=missing", "", nil)
	if code != http.StatusBadRequest || errorCode(out) != "ExecutionDoesNotExist" {
		t.Errorf("missing execution: %d %v", code, out)
	}
	f.historyErr = errors.New("connection refused")
	code, out = serve(t, h, http.MethodGet, "/api/execution?arn=arn:x:r_1", "", nil)
	if code != http.StatusInternalServerError || errorCode(out) != "InternalError" || out["error"].(map[string]any)["operation"] != "GetExecutionHistory" {
		t.Errorf("history failure: %d %v", code, out)
	}
}

// Redrive calls RedriveExecution on the execution named, and only for a request carrying the
// console's header; the service's refusal (UnknownOperationException while the twin lacks the
// operation) is answered with its code.
func TestRedriveCallsRedriveExecution(t *testing.T) {
	f := &fakeSFN{}
	h := New(f, nil, nil)
	body := `{"executionArn":"arn:x:r_1"}`
	if code, out := serve(t, h, http.MethodPost, "/api/redrive", body, nil); code != http.StatusForbidden || len(f.redrives) != 0 {
		t.Errorf("without the header: %d %v, %d calls", code, out, len(f.redrives))
	}
	header := map[string]string{redriveHeader: "1", "Content-Type": "application/json"}
	code, out := serve(t, h, http.MethodPost, "/api/redrive", body, header)
	if code != http.StatusOK || !equal(f.redrives, []string{"arn:x:r_1"}) || out["redriveDate"] == nil {
		t.Errorf("redrive: %d %v, calls %v", code, out, f.redrives)
	}
	f.redriveErr = apiErr("RedriveExecution", 400, "UnknownOperationException", `unknown operation "AWSStepFunctions.RedriveExecution"`)
	code, out = serve(t, h, http.MethodPost, "/api/redrive", body, header)
	if code != http.StatusBadRequest || errorCode(out) != "UnknownOperationException" {
		t.Errorf("unknown operation: %d %v", code, out)
	}
	if code, _ := serve(t, h, http.MethodPost, "/api/redrive", `{}`, header); code != http.StatusBadRequest {
		t.Errorf("no arn: %d", code)
	}
}

// The client the console is given in `up` is the SDK's: it must satisfy the interface.
var _ StepFunctions = (*sfn.Client)(nil)
var _ RecordReader = (*stack.Inspector)(nil)
