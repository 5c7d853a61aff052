// Package console is a local Step Functions console for the twin: it lists the state
// machines and their executions, shows one execution as AWS's console does (the state
// machine's graph with the path taken, the event history with each event's input and output,
// durations and retries) and, beside it, what only this system knows about the reservation
// (its items, outbox events and the provider's ledger). It reads the twin through the Step
// Functions API, as any client of the account would, and offers RedriveExecution on a failed
// execution.
//
// The page and its script are embedded: the console needs no network.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// StepFunctions is the part of the Step Functions API the console calls; *sfn.Client is one.
type StepFunctions interface {
	ListStateMachines(context.Context, *sfn.ListStateMachinesInput, ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error)
	ListExecutions(context.Context, *sfn.ListExecutionsInput, ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error)
	DescribeExecution(context.Context, *sfn.DescribeExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	DescribeStateMachineForExecution(context.Context, *sfn.DescribeStateMachineForExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeStateMachineForExecutionOutput, error)
	GetExecutionHistory(context.Context, *sfn.GetExecutionHistoryInput, ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error)
	RedriveExecution(context.Context, *sfn.RedriveExecutionInput, ...func(*sfn.Options)) (*sfn.RedriveExecutionOutput, error)
}

// RecordReader reads what the system keeps about a reservation; *stack.Inspector is one.
type RecordReader interface {
	Records(ctx context.Context, reservationID string) stack.ReservationRecords
}

// redriveHeader must be on a redrive request: a page of another origin cannot set it without
// a CORS preflight the console never answers, so it cannot redrive through a browser.
const redriveHeader = "X-Seatsaga-Console"

// maxNamePages bounds how many ListExecutions pages one filtered page reads: the API has no
// name filter, so the console filters pages itself and hands back where it stopped.
const maxNamePages = 20

//go:embed static
var static embed.FS

// Handler serves the console's page and the JSON it reads. Records may be nil (the page then
// shows only what Step Functions knows).
type Handler struct {
	SFN     StepFunctions
	Records RecordReader
	Log     *slog.Logger
	mux     *http.ServeMux
}

// New returns the console over sfnAPI and records.
func New(sfnAPI StepFunctions, records RecordReader, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{SFN: sfnAPI, Records: records, Log: log, mux: http.NewServeMux()}
	files, _ := fs.Sub(static, "static")
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page, _ := static.ReadFile("static/index.html")
		_, _ = w.Write(page)
	})
	h.mux.HandleFunc("GET /api/state-machines", h.stateMachines)
	h.mux.HandleFunc("GET /api/executions", h.executions)
	h.mux.HandleFunc("GET /api/execution", h.execution)
	h.mux.HandleFunc("POST /api/redrive", h.redrive)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page draws everything from this origin; nothing else may run in it.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

// Serve serves the console on addr (e.g. "127.0.0.1:0") until close is called, and returns
// its URL.
func Serve(addr string, h http.Handler) (url string, close func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("console: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv.Close, nil
}

// apiError is an error as the page shows it: the service's error code when there is one.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Operation is the Step Functions action that answered it, if any.
	Operation string `json:"operation,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with the Step Functions error's code and status when err carries one
// (UnknownOperationException stays UnknownOperationException), else 500.
func (h *Handler) writeError(w http.ResponseWriter, operation string, err error) {
	status := http.StatusInternalServerError
	e := apiError{Code: "InternalError", Message: err.Error(), Operation: operation}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		e.Code, e.Message = ae.ErrorCode(), ae.ErrorMessage()
		status = http.StatusBadGateway
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
		status = re.HTTPStatusCode()
	}
	h.Log.Debug("console: request failed", "operation", operation, "code", e.Code, "error", err.Error())
	writeJSON(w, status, map[string]apiError{"error": e})
}

func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]apiError{"error": {Code: "BadRequest", Message: msg}})
}

// StateMachine is one line of the state machines' list.
type StateMachine struct {
	ARN     string    `json:"stateMachineArn"`
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Created time.Time `json:"creationDate"`
}

func (h *Handler) stateMachines(w http.ResponseWriter, r *http.Request) {
	list := []StateMachine{}
	p := sfn.NewListStateMachinesPaginator(h.SFN, &sfn.ListStateMachinesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(r.Context())
		if err != nil {
			h.writeError(w, "ListStateMachines", err)
			return
		}
		for _, m := range page.StateMachines {
			list = append(list, StateMachine{ARN: aws.ToString(m.StateMachineArn), Name: aws.ToString(m.Name),
				Type: string(m.Type), Created: aws.ToTime(m.CreationDate).UTC()})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"stateMachines": list})
}

// ExecutionLine is one line of the executions' list.
type ExecutionLine struct {
	ARN        string     `json:"executionArn"`
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	Start      time.Time  `json:"startDate"`
	Stop       *time.Time `json:"stopDate,omitempty"`
	DurationMs *float64   `json:"durationMs,omitempty"`
	// RedriveCount is how many times the execution was redriven.
	RedriveCount int32 `json:"redriveCount,omitempty"`
}

// ExecutionPage is one page of executions and the token of the next (empty: the last page).
type ExecutionPage struct {
	Executions []ExecutionLine `json:"executions"`
	NextToken  string          `json:"nextToken,omitempty"`
	// Scanned counts the ListExecutions pages read for a name filter.
	Scanned int `json:"scanned,omitempty"`
}

var listStatuses = map[string]bool{"": true, "RUNNING": true, "SUCCEEDED": true, "FAILED": true, "TIMED_OUT": true,
	"ABORTED": true, "PENDING_REDRIVE": true}

func (h *Handler) executions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	machine, status, name := q.Get("stateMachineArn"), q.Get("status"), q.Get("name")
	if machine == "" {
		badRequest(w, "stateMachineArn is required")
		return
	}
	if !listStatuses[status] {
		badRequest(w, fmt.Sprintf("status %q is none of Step Functions' execution statuses", status))
		return
	}
	size := 25
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			badRequest(w, "pageSize must be between 1 and 1000")
			return
		}
		size = n
	}
	page, err := h.listExecutions(r.Context(), machine, status, name, q.Get("nextToken"), size)
	if err != nil {
		h.writeError(w, "ListExecutions", err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// listExecutions reads one page of executions, newest first as ListExecutions gives them. A
// name filter (a substring of the execution's name) reads ListExecutions pages until it has
// size matches, the list ends or maxNamePages were read, and hands back the token to go on.
func (h *Handler) listExecutions(ctx context.Context, machine, status, name, token string, size int) (ExecutionPage, error) {
	page := ExecutionPage{Executions: []ExecutionLine{}}
	in := &sfn.ListExecutionsInput{StateMachineArn: aws.String(machine), MaxResults: int32(size)}
	if status != "" {
		in.StatusFilter = sfntypes.ExecutionStatus(status)
	}
	if token != "" {
		in.NextToken = aws.String(token)
	}
	for {
		out, err := h.SFN.ListExecutions(ctx, in)
		if err != nil {
			return page, err
		}
		page.Scanned++
		for _, x := range out.Executions {
			if name != "" && !strings.Contains(aws.ToString(x.Name), name) {
				continue
			}
			line := ExecutionLine{ARN: aws.ToString(x.ExecutionArn), Name: aws.ToString(x.Name), Status: string(x.Status),
				Start: aws.ToTime(x.StartDate).UTC(), RedriveCount: aws.ToInt32(x.RedriveCount)}
			if x.StopDate != nil {
				stop := x.StopDate.UTC()
				ms := float64(stop.Sub(line.Start)) / float64(time.Millisecond)
				line.Stop, line.DurationMs = &stop, &ms
			}
			page.Executions = append(page.Executions, line)
		}
		page.NextToken = aws.ToString(out.NextToken)
		if name == "" || page.NextToken == "" || len(page.Executions) >= size || page.Scanned >= maxNamePages {
			break
		}
		in.NextToken = out.NextToken
	}
	if name == "" {
		page.Scanned = 0
	}
	return page, nil
}

func (h *Handler) execution(w http.ResponseWriter, r *http.Request) {
	arn := r.URL.Query().Get("arn")
	if arn == "" {
		badRequest(w, "arn is required")
		return
	}
	ctx := r.Context()
	desc, err := h.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		h.writeError(w, "DescribeExecution", err)
		return
	}
	var events []sfntypes.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(h.SFN, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1000})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			h.writeError(w, "GetExecutionHistory", err)
			return
		}
		events = append(events, page.Events...)
	}
	// The graph is of the definition this execution ran, as the AWS console draws it; without
	// it the page still shows the history.
	var graph *Graph
	graphErr := ""
	sm, err := h.SFN.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(arn)})
	if err == nil {
		graph, err = Layout([]byte(aws.ToString(sm.Definition)))
	}
	if err != nil {
		graphErr = err.Error()
	}
	view := BuildView(desc, events, graph)
	view.GraphErr = graphErr
	if h.Records != nil {
		// Executions of the saga are named by reservation id.
		view.Records = recordsOf(h.Records.Records(ctx, aws.ToString(desc.Name)))
	}
	writeJSON(w, http.StatusOK, view)
}

func (h *Handler) redrive(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(redriveHeader) == "" {
		writeJSON(w, http.StatusForbidden, map[string]apiError{"error": {Code: "Forbidden",
			Message: "a redrive must come from the console's page (header " + redriveHeader + ")"}})
		return
	}
	var in struct {
		ExecutionArn string `json:"executionArn"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil || in.ExecutionArn == "" {
		badRequest(w, "the body must be {\"executionArn\": …}")
		return
	}
	out, err := h.SFN.RedriveExecution(r.Context(), &sfn.RedriveExecutionInput{ExecutionArn: aws.String(in.ExecutionArn)})
	if err != nil {
		h.writeError(w, "RedriveExecution", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"redriveDate": aws.ToTime(out.RedriveDate).UTC()})
}
