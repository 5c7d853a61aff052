// Package stepfunctions serves the Step Functions API (awsJson1.0, X-Amz-Target
// AWSStepFunctions.*) over the local ASL interpreter, so that
// aws-sdk-go-v2/service/sfn works against it with only a base endpoint.
//
// Given Options.Quotas (DefaultQuotas are AWS's), it throttles as Step Functions does: an API
// call past its action's token bucket is refused with ThrottlingException, and a state
// transition past the state-transition bucket waits for its token.
package stepfunctions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// Options configures a Server.
type Options struct {
	Clock     clock.Clock    // default clock.Real{}
	Invoker   asl.Invoker    // Lambda invocations (e.g. lambdainvoke.New(lambdaClient))
	Mocker    asl.TaskMocker // optional: Step Functions Local MockConfigFile test cases
	Region    string         // default us-east-1
	AccountID string         // default 123456789012
	// Substitutions are applied to every definition given to CreateStateMachine,
	// as CloudFormation applies DefinitionSubstitutions (${Name} → value). A
	// placeholder left without a value makes the definition invalid.
	Substitutions map[string]string
	Logger        *slog.Logger
	// Observer, when set, is told when an execution starts and when it closes: what Step
	// Functions publishes as the AWS/States metrics of the state machine. It runs on the
	// goroutine that started or finished the execution and must not block.
	Observer func(ExecutionEvent)
	// Quotas, when set, throttles the API actions and the state transitions as Step Functions
	// does (DefaultQuotas are AWS's defaults); nil throttles nothing. InspectionHandler and
	// StartInspection serve the same API without them.
	Quotas *Quotas
}

// ExecutionEvent is an execution starting (Status RUNNING) or closing (its final status:
// SUCCEEDED, FAILED, TIMED_OUT or ABORTED).
type ExecutionEvent struct {
	StateMachineARN string
	ExecutionARN    string
	Status          string
	// Start is when the execution started; Stop, for a closed one, when it closed (both on
	// the server's clock).
	Start, Stop time.Time
}

// Server is a local Step Functions service.
type Server struct {
	opts   Options
	engine *asl.Engine
	log    *slog.Logger
	// observer is Options.Observer, or the one Observe set later.
	observer atomic.Pointer[func(ExecutionEvent)]
	// throttles are Options.Quotas' buckets.
	throttles *throttles

	mu         sync.Mutex
	machines   map[string]*machine // by ARN
	executions map[string]*asl.Execution
	byMachine  map[string][]*asl.Execution // by state machine ARN, in start order
	names      map[string]*asl.Execution   // by state machine ARN + "\x00" + execution name
	// runs holds what the API says of an execution beyond the engine's view of it: the type of
	// its state machine, the version it was started through, its redrives.
	runs map[string]*runInfo // by execution ARN
	// open counts the Standard executions started and not yet closed, for Quotas'
	// OpenExecutions; counted holds their ARNs, so that each close is counted once.
	open    atomic.Int64
	counted sync.Map

	httpSrv *http.Server
	// inspection serves InspectionHandler when StartInspection started it.
	inspection *http.Server
}

// machine is one state machine, or one published version of it. A value is never changed once
// stored: UpdateStateMachine and TagResource store a changed copy, so that a reader holding a
// value needs no lock.
type machine struct {
	arn, name, definition, roleARN, typ string
	created                             time.Time
	sm                                  *asl.StateMachine
	// revisionID changes with every change of definition, role, logging or tracing.
	revisionID string
	// updated is when UpdateStateMachine last changed the machine (zero: never).
	updated time.Time
	logging json.RawMessage // loggingConfiguration as given; nil: the default (OFF)
	tracing bool
	tags    []tag
	// versions are the published versions, oldest first; description is a version's own.
	versions    []*machine
	description string
	// parent is, for a version, the ARN of its state machine.
	parent string
}

type tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// New returns a server; call Handler or Start to serve it.
func New(o Options) *Server {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:       o,
		log:        o.Logger,
		machines:   map[string]*machine{},
		executions: map[string]*asl.Execution{},
		byMachine:  map[string][]*asl.Execution{},
		names:      map[string]*asl.Execution{},
		runs:       map[string]*runInfo{},
		throttles:  newThrottles(o.Clock, o.Quotas),
	}
	if o.Observer != nil {
		s.observer.Store(&o.Observer)
	}
	// Without a state-transition bucket the engine is given no hook, and pays nothing per
	// transition.
	var beforeTransition func(context.Context) error
	if s.throttles.transition != nil {
		beforeTransition = s.throttles.beforeTransition
	}
	s.engine = asl.NewEngine(asl.Options{Clock: o.Clock, Invoker: o.Invoker, Mocker: o.Mocker, Region: o.Region, Logger: o.Logger,
		OnFinish: s.executionClosed, BeforeTransition: beforeTransition})
	return s
}

// Observe sets the observer Options.Observer names, for a server built elsewhere; executions
// started before it was set are reported from their close on.
func (s *Server) Observe(f func(ExecutionEvent)) {
	if f == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&f)
}

func (s *Server) observe(ev ExecutionEvent) {
	if f := s.observer.Load(); f != nil {
		(*f)(ev)
	}
}

// executionClosed counts a closed execution out of the open ones and reports it to the
// observer.
func (s *Server) executionClosed(x *asl.Execution) {
	if _, ok := s.counted.LoadAndDelete(x.ARN); ok {
		s.open.Add(-1)
	}
	if s.observer.Load() == nil {
		return
	}
	snap := x.Snapshot()
	s.observe(ExecutionEvent{StateMachineARN: x.StateMachineARN, ExecutionARN: x.ARN, Status: snap.Status, Start: snap.Start, Stop: snap.Stop})
}

// Engine exposes the interpreter (task tokens, waiting-task counts).
func (s *Server) Engine() *asl.Engine { return s.engine }

// Start serves Handler on addr (e.g. "127.0.0.1:0") and returns the endpoint URL.
func (s *Server) Start(addr string) (string, error) {
	srv, url, err := listen(addr, s.Handler())
	if err != nil {
		return "", err
	}
	s.httpSrv = srv
	return url, nil
}

// StartInspection serves InspectionHandler on addr and returns its endpoint URL; Close stops
// it with the other.
func (s *Server) StartInspection(addr string) (string, error) {
	srv, url, err := listen(addr, s.InspectionHandler())
	if err != nil {
		return "", err
	}
	s.inspection = srv
	return url, nil
}

func listen(addr string, h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("stepfunctions: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

// Close stops the HTTP servers (executions are not stopped).
func (s *Server) Close() error {
	var errs []error
	for _, srv := range []*http.Server{s.httpSrv, s.inspection} {
		if srv != nil {
			errs = append(errs, srv.Close())
		}
	}
	return errors.Join(errs...)
}

// Execution returns an execution by ARN.
func (s *Server) Execution(arn string) (*asl.Execution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.executions[arn]
	return x, ok
}

// Executions lists a state machine's executions in start order.
func (s *Server) Executions(stateMachineARN string) []*asl.Execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*asl.Execution(nil), s.byMachine[stateMachineARN]...)
}

// StateMachineARN returns the ARN CreateStateMachine gives a state machine named name.
func (s *Server) StateMachineARN(name string) string { return s.machineARN(name) }

// TotalStateTransitions sums the state transitions of every execution started
// on the state machine.
func (s *Server) TotalStateTransitions(stateMachineARN string) int64 {
	var n int64
	for _, x := range s.Executions(stateMachineARN) {
		n += x.StateTransitions()
	}
	return n
}

// StateTransitions returns the number of states an execution has entered
// (the unit of Standard workflow billing).
func (s *Server) StateTransitions(executionARN string) (int64, bool) {
	x, ok := s.Execution(executionARN)
	if !ok {
		return 0, false
	}
	return x.StateTransitions(), true
}

// WaitExecution blocks until the execution finishes or ctx ends.
func (s *Server) WaitExecution(ctx context.Context, executionARN string) error {
	x, ok := s.Execution(executionARN)
	if !ok {
		return fmt.Errorf("stepfunctions: execution %s does not exist", executionARN)
	}
	return x.Wait(ctx)
}

// apiError is an error in the shape the awsJson1.0 protocol carries.
type apiError struct {
	status int
	code   string
	msg    string
	// extra holds the error's members beyond its message (ResourceNotFound's resourceName).
	extra map[string]any
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func clientErr(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// Handler returns the HTTP handler for the API, throttled by Options.Quotas: the account's
// endpoint, which the system under test calls.
func (s *Server) Handler() http.Handler { return s.handler(s.throttles) }

// InspectionHandler returns the same API with no API action throttled: the twin's own window on
// the engine (the invariant checker reading every execution's history, a test polling an
// execution's status), which is not the account's traffic and must not spend its quota or
// be refused by it. State transitions stay throttled: they are the engine's, not the caller's.
func (s *Server) InspectionHandler() http.Handler { return s.handler(nil) }

// handler serves the API, admitting each call through t when t is set.
func (s *Server) handler(t *throttles) http.Handler {
	ops := s.operations()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		op, found := strings.CutPrefix(target, "AWSStepFunctions.")
		handle, known := ops[op]
		if r.Method != http.MethodPost || !found || !known {
			writeError(w, &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", msg: fmt.Sprintf("unknown operation %q", target)})
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		if err != nil {
			writeError(w, clientErr("SerializationException", "cannot read request: %v", err))
			return
		}
		if len(body) == 0 {
			body = []byte("{}")
		}
		if t != nil {
			if ae := t.admit(op); ae != nil {
				s.log.Debug("stepfunctions operation throttled", "operation", op)
				writeError(w, ae)
				return
			}
		}
		out, err := handle(r.Context(), body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				s.log.Error("stepfunctions operation failed", "operation", op, "error", err)
				ae = &apiError{status: http.StatusInternalServerError, code: "InternalFailure", msg: err.Error()}
			} else {
				s.log.Debug("stepfunctions operation rejected", "operation", op, "code", ae.code, "message", ae.msg)
			}
			writeError(w, ae)
			return
		}
		s.log.Debug("stepfunctions operation", "operation", op)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(out)
	})
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.WriteHeader(e.status)
	body := map[string]any{"__type": e.code, "message": e.msg}
	for k, v := range e.extra {
		body[k] = v
	}
	_ = json.NewEncoder(w).Encode(body)
}

func decode(body json.RawMessage, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return clientErr("SerializationException", "invalid request body: %v", err)
	}
	return nil
}

func epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

var badName = regexp.MustCompile("[\\s<>{}\\[\\]?*\"#%\\\\^|~`$&,;:/\\x00-\\x1f\\x7f-\\x9f]")

func validName(n string) bool {
	return n != "" && len(n) <= 80 && !badName.MatchString(n)
}

func (s *Server) machineARN(name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", s.opts.Region, s.opts.AccountID, name)
}

// splitMachineARN separates a Step Functions Local test-case selector
// ("stateMachineArn#TestCase") from the ARN and checks the ARN's form.
// splitMachineARN separates a Step Functions Local test-case selector
// ("stateMachineArn#TestCase") from the ARN and checks the ARN's form: a state machine's, or a
// version's (the machine's ARN, a colon and the version number).
func (s *Server) splitMachineARN(arn string) (string, string, error) {
	base, testCase, _ := strings.Cut(arn, "#")
	parts := strings.Split(base, ":")
	valid := (len(parts) == 7 || len(parts) == 8) && parts[0] == "arn" && parts[2] == "states" && parts[5] == "stateMachine" && parts[6] != ""
	if valid && len(parts) == 8 {
		n, err := strconv.Atoi(parts[7])
		valid = err == nil && n > 0
	}
	if !valid {
		return "", "", clientErr("InvalidArn", "Invalid Arn: '%s'", arn)
	}
	return base, testCase, nil
}

func checkExecutionARN(arn string) error {
	parts := strings.Split(arn, ":")
	if len(parts) != 8 || parts[0] != "arn" || parts[2] != "states" || parts[5] != "execution" {
		return clientErr("InvalidArn", "Invalid Arn: '%s'", arn)
	}
	return nil
}

func (s *Server) createStateMachine(body json.RawMessage) (any, error) {
	var in struct {
		Name                 string          `json:"name"`
		Definition           string          `json:"definition"`
		RoleArn              string          `json:"roleArn"`
		Type                 string          `json:"type"`
		Tags                 []tag           `json:"tags"`
		LoggingConfiguration json.RawMessage `json:"loggingConfiguration"`
		TracingConfiguration *struct {
			Enabled bool `json:"enabled"`
		} `json:"tracingConfiguration"`
		Publish            bool    `json:"publish"`
		VersionDescription *string `json:"versionDescription"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if !validName(in.Name) {
		return nil, clientErr("InvalidName", "Invalid Name: '%s'", in.Name)
	}
	if in.Type == "" {
		in.Type = "STANDARD"
	}
	if in.Type != "STANDARD" && in.Type != "EXPRESS" {
		return nil, clientErr("ValidationException", "type must be STANDARD or EXPRESS")
	}
	if in.VersionDescription != nil && !in.Publish {
		return nil, clientErr("ValidationException", "Version description can only be set when publish is true")
	}
	def, sm, err := s.parseDefinition(in.Definition, in.Type)
	if err != nil {
		return nil, err
	}
	arn := s.machineARN(in.Name)
	if err := checkTags(arn, nil, in.Tags); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.machines[arn]; ok {
		if m.definition == string(def) && m.roleARN == in.RoleArn && m.typ == in.Type {
			return map[string]any{"stateMachineArn": arn, "creationDate": epoch(m.created)}, nil
		}
		return nil, clientErr("StateMachineAlreadyExists", "State Machine Already Exists: '%s'", arn)
	}
	m := &machine{arn: arn, name: in.Name, definition: string(def), roleARN: in.RoleArn, typ: in.Type, created: s.opts.Clock.Now(), sm: sm,
		revisionID: newExecutionName(), logging: in.LoggingConfiguration, tracing: in.TracingConfiguration != nil && in.TracingConfiguration.Enabled,
		tags: mergeTags(nil, in.Tags)}
	out := map[string]any{"stateMachineArn": arn, "creationDate": epoch(m.created)}
	if in.Publish {
		m = m.publish(aws2str(in.VersionDescription), m.created)
		out["stateMachineVersionArn"] = m.versions[len(m.versions)-1].arn
	}
	s.machines[arn] = m
	s.log.Info("state machine created", "stateMachine", arn)
	return out, nil
}

// parseDefinition applies the server's substitutions to a definition and validates it for a
// state machine of type typ.
func (s *Server) parseDefinition(definition, typ string) ([]byte, *asl.StateMachine, error) {
	def, missing := asl.Substitute([]byte(definition), s.opts.Substitutions)
	if len(missing) > 0 {
		return nil, nil, clientErr("InvalidDefinition", "Invalid State Machine Definition: definition substitutions missing for %s", strings.Join(missing, ", "))
	}
	sm, err := asl.Parse(def)
	if err != nil {
		return nil, nil, clientErr("InvalidDefinition", "%v", err)
	}
	if typ == "EXPRESS" {
		if problems := sm.ExpressProblems(); len(problems) > 0 {
			return nil, nil, clientErr("InvalidDefinition", "%v", &asl.ValidationError{Problems: problems})
		}
	}
	return def, sm, nil
}

// lookupMachine finds the state machine, or the version, an ARN names.
func (s *Server) lookupMachine(arn string) (*machine, string, error) {
	base, testCase, err := s.splitMachineARN(arn)
	if err != nil {
		return nil, "", err
	}
	parts := strings.Split(base, ":")
	s.mu.Lock()
	m, ok := s.machines[strings.Join(parts[:7], ":")]
	s.mu.Unlock()
	if ok && len(parts) == 8 {
		n, _ := strconv.Atoi(parts[7])
		if ok = n <= len(m.versions); ok {
			m = m.versions[n-1]
		}
	}
	if !ok {
		return nil, "", clientErr("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", base)
	}
	return m, testCase, nil
}

func (s *Server) describeStateMachineForExecution(body json.RawMessage) (any, error) {
	x, err := s.executionOf(body)
	if err != nil {
		return nil, err
	}
	m := x.Snapshot().Machine
	out := map[string]any{"stateMachineArn": x.StateMachineARN, "name": x.StateMachineName, "definition": m.Definition,
		"roleArn": x.RoleARN, "updateDate": epoch(x.StartDate)}
	if info := s.run(x.ARN); info != nil {
		out["revisionId"] = info.revisionID
		out["loggingConfiguration"] = info.machine.loggingConfiguration()
		out["tracingConfiguration"] = map[string]any{"enabled": info.machine.tracing}
		if info.versionARN != "" {
			out["stateMachineVersionArn"] = info.versionARN
		}
	}
	return out, nil
}

func (s *Server) describeStateMachine(body json.RawMessage) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	m, _, err := s.lookupMachine(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"stateMachineArn": m.arn, "name": m.name, "status": "ACTIVE", "definition": m.definition,
		"roleArn": m.roleARN, "type": m.typ, "creationDate": epoch(m.created), "revisionId": m.revisionID,
		"loggingConfiguration": m.loggingConfiguration(), "tracingConfiguration": map[string]any{"enabled": m.tracing}}
	if m.description != "" {
		out["description"] = m.description
	}
	return out, nil
}

// loggingConfiguration is the machine's logging configuration as DescribeStateMachine shows it.
func (m *machine) loggingConfiguration() any {
	if len(m.logging) == 0 {
		return map[string]any{"level": "OFF", "includeExecutionData": false}
	}
	return m.logging
}

// page slices items by an opaque offset token.
func page[T any](items []T, maxResults int, token string) ([]T, string, error) {
	start := 0
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		n, cerr := strconv.Atoi(string(b))
		if err != nil || cerr != nil || n < 0 || n > len(items) {
			return nil, "", clientErr("InvalidToken", "Invalid Token: '%s'", token)
		}
		start = n
	}
	if maxResults <= 0 || maxResults > 1000 {
		maxResults = 100
	}
	end := min(start+maxResults, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return items[start:end], next, nil
}

func (s *Server) listStateMachines(body json.RawMessage) (any, error) {
	var in struct {
		MaxResults int    `json:"maxResults"`
		NextToken  string `json:"nextToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	list := make([]*machine, 0, len(s.machines))
	for _, m := range s.machines {
		list = append(list, m)
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	pg, next, err := page(list, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(pg))
	for i, m := range pg {
		out[i] = map[string]any{"stateMachineArn": m.arn, "name": m.name, "type": m.typ, "creationDate": epoch(m.created)}
	}
	resp := map[string]any{"stateMachines": out}
	if next != "" {
		resp["nextToken"] = next
	}
	return resp, nil
}

func (s *Server) deleteStateMachine(body json.RawMessage) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	base, _, err := s.splitMachineARN(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.machines, base)
	s.mu.Unlock()
	// Like AWS, deleting a state machine that does not exist succeeds, and
	// running executions carry on.
	return map[string]any{}, nil
}

// startRequest is what StartExecution and StartSyncExecution are asked: the machine (or
// version) to run, the execution's name (one is made up when none is given) and its input
// ("{}" when none is given).
type startRequest struct {
	m        *machine
	testCase string
	name     string
	input    string
}

func (s *Server) decodeStart(body json.RawMessage) (startRequest, error) {
	var in struct {
		StateMachineArn string  `json:"stateMachineArn"`
		Name            string  `json:"name"`
		Input           *string `json:"input"`
	}
	if err := decode(body, &in); err != nil {
		return startRequest{}, err
	}
	m, testCase, err := s.lookupMachine(in.StateMachineArn)
	if err != nil {
		return startRequest{}, err
	}
	req := startRequest{m: m, testCase: testCase, name: in.Name, input: "{}"}
	if req.name == "" {
		req.name = newExecutionName()
	} else if !validName(req.name) {
		return startRequest{}, clientErr("InvalidName", "Invalid Name: '%s'", req.name)
	}
	if in.Input != nil {
		req.input = *in.Input
	}
	return req, nil
}

func (s *Server) startExecution(body json.RawMessage) (any, error) {
	req, err := s.decodeStart(body)
	if err != nil {
		return nil, err
	}
	m, testCase, input := req.m, req.testCase, req.input
	if testCase != "" && s.opts.Mocker == nil {
		return nil, clientErr("ValidationException", "test case %q given but no mock configuration is loaded", testCase)
	}
	if !json.Valid([]byte(input)) {
		return nil, clientErr("InvalidExecutionInput", "Invalid State Machine Execution Input: 'the input is not valid JSON'")
	}
	arn := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", s.opts.Region, s.opts.AccountID, m.name, req.name)
	machineARN, versionARN := m.arn, ""
	if m.parent != "" {
		machineARN, versionARN = m.parent, m.arn
	}
	key := machineARN + "\x00" + req.name

	x, started, err := s.startNamed(key, m.sm, asl.ExecutionSpec{ARN: arn, Name: req.name, StateMachineARN: machineARN,
		StateMachineName: m.name, RoleARN: m.roleARN, TestCase: testCase, Input: []byte(input)},
		&runInfo{machine: m, versionARN: versionARN, revisionID: m.revisionID})
	if err != nil {
		return nil, err
	}
	if started {
		// Reported outside the lock, so that an observer may call the server.
		s.observe(ExecutionEvent{StateMachineARN: machineARN, ExecutionARN: x.ARN, Status: asl.StatusRunning, Start: x.StartDate})
	}
	return map[string]any{"executionArn": x.ARN, "startDate": epoch(x.StartDate)}, nil
}

// startNamed starts the execution spec names unless one of that name exists: it returns the
// running execution of the same name and input (StartExecution is idempotent) with started
// false, and refuses any other.
func (s *Server) startNamed(key string, sm *asl.StateMachine, spec asl.ExecutionSpec, info *runInfo) (*asl.Execution, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.names[key]; ok {
		snap := prev.Snapshot()
		if snap.Status == asl.StatusRunning && string(prev.Input) == string(spec.Input) {
			return prev, false, nil
		}
		return nil, false, clientErr("ExecutionAlreadyExists", "Execution Already Exists: '%s'", spec.ARN)
	}
	if q := s.opts.Quotas; q != nil && q.OpenExecutions > 0 && s.open.Load() >= int64(q.OpenExecutions) {
		return nil, false, clientErr("ExecutionLimitExceeded", "The maximum number of running executions has been reached. Running executions must end or be stopped before a new execution can be started.")
	}
	// Counted before the start, so that an execution closing at once is counted out.
	s.counted.Store(spec.ARN, struct{}{})
	s.open.Add(1)
	x, err := s.engine.Start(sm, spec)
	if err != nil {
		if _, ok := s.counted.LoadAndDelete(spec.ARN); ok {
			s.open.Add(-1)
		}
		if errors.Is(err, asl.ErrInvalidInput) {
			return nil, false, clientErr("InvalidExecutionInput", "%v", err)
		}
		return nil, false, err
	}
	s.names[key] = x
	s.runs[spec.ARN] = info
	s.executions[spec.ARN] = x
	s.byMachine[spec.StateMachineARN] = append(s.byMachine[spec.StateMachineARN], x)
	return x, true, nil
}

func newExecutionName() string {
	var b [16]byte
	_, _ = randRead(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// executionOf looks up the execution a request names by its executionArn alone.
func (s *Server) executionOf(body json.RawMessage) (*asl.Execution, error) {
	var in struct {
		ExecutionArn string `json:"executionArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return s.lookupExecution(in.ExecutionArn)
}

func (s *Server) lookupExecution(arn string) (*asl.Execution, error) {
	if err := checkExecutionARN(arn); err != nil {
		return nil, err
	}
	x, ok := s.Execution(arn)
	if !ok {
		return nil, clientErr("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", arn)
	}
	return x, nil
}

func (s *Server) describeExecution(body json.RawMessage) (any, error) {
	x, err := s.executionOf(body)
	if err != nil {
		return nil, err
	}
	snap := x.Snapshot()
	out := map[string]any{"executionArn": x.ARN, "stateMachineArn": x.StateMachineARN, "name": x.Name,
		"status": snap.Status, "startDate": epoch(snap.Start), "input": string(snap.Input),
		"inputDetails": map[string]any{"included": true}}
	if snap.Status != asl.StatusRunning {
		out["stopDate"] = epoch(snap.Stop)
	}
	if snap.Status == asl.StatusSucceeded {
		out["output"] = string(snap.Output)
		out["outputDetails"] = map[string]any{"included": true}
	}
	if snap.Error != "" {
		out["error"] = snap.Error
	}
	if snap.Cause != "" {
		out["cause"] = snap.Cause
	}
	info := s.run(x.ARN)
	if info == nil {
		return out, nil
	}
	if info.versionARN != "" {
		out["stateMachineVersionArn"] = info.versionARN
	}
	out["redriveCount"] = info.redriveCount
	if !info.redriveDate.IsZero() {
		out["redriveDate"] = epoch(info.redriveDate)
	}
	if reason := s.redriveRefusal(x, info); reason != "" {
		out["redriveStatus"], out["redriveStatusReason"] = "NOT_REDRIVABLE", reason
	} else {
		out["redriveStatus"] = "REDRIVABLE"
	}
	return out, nil
}

var statuses = map[string]bool{asl.StatusRunning: true, asl.StatusSucceeded: true, asl.StatusFailed: true,
	asl.StatusTimedOut: true, asl.StatusAborted: true, "PENDING_REDRIVE": true}

var redriveFilters = map[string]bool{"": true, "REDRIVEN": true, "NOT_REDRIVEN": true}

func (s *Server) listExecutions(body json.RawMessage) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		StatusFilter    string `json:"statusFilter"`
		RedriveFilter   string `json:"redriveFilter"`
		MapRunArn       string `json:"mapRunArn"`
		MaxResults      int    `json:"maxResults"`
		NextToken       string `json:"nextToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.StatusFilter != "" && !statuses[in.StatusFilter] {
		return nil, clientErr("ValidationException", "invalid statusFilter %q", in.StatusFilter)
	}
	if !redriveFilters[in.RedriveFilter] {
		return nil, clientErr("ValidationException", "invalid redriveFilter %q", in.RedriveFilter)
	}
	if in.StatusFilter == "PENDING_REDRIVE" && in.MapRunArn == "" {
		return nil, clientErr("ValidationException", "statusFilter PENDING_REDRIVE requires a mapRunArn")
	}
	m, _, err := s.lookupMachine(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	machineARN := m.arn
	if m.parent != "" {
		machineARN = m.parent
	}
	all := s.Executions(machineARN)
	type listed struct {
		snap asl.Snapshot
		info runInfo
	}
	var list []listed
	for i := len(all) - 1; i >= 0; i-- { // newest first, as AWS lists them
		snap := all[i].Snapshot()
		var info runInfo
		if p := s.run(snap.Spec.ARN); p != nil {
			info = *p
		}
		if m.parent != "" && info.versionARN != m.arn {
			continue
		}
		if (in.StatusFilter == "" || snap.Status == in.StatusFilter) && redriveFilterMatches(in.RedriveFilter, info.redriveCount) {
			list = append(list, listed{snap, info})
		}
	}
	pg, next, err := page(list, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(pg))
	for i, l := range pg {
		e := map[string]any{"executionArn": l.snap.Spec.ARN, "stateMachineArn": l.snap.Spec.StateMachineARN,
			"name": l.snap.Spec.Name, "status": l.snap.Status, "startDate": epoch(l.snap.Start)}
		if l.snap.Status != asl.StatusRunning {
			e["stopDate"] = epoch(l.snap.Stop)
		}
		if l.info.versionARN != "" {
			e["stateMachineVersionArn"] = l.info.versionARN
		}
		if l.info.redriveCount > 0 {
			e["redriveCount"], e["redriveDate"] = l.info.redriveCount, epoch(l.info.redriveDate)
		}
		out[i] = e
	}
	resp := map[string]any{"executions": out}
	if next != "" {
		resp["nextToken"] = next
	}
	return resp, nil
}

// redriveFilterMatches applies ListExecutions' redriveFilter to an execution redriven count times.
func redriveFilterMatches(filter string, count int64) bool {
	switch filter {
	case "REDRIVEN":
		return count > 0
	case "NOT_REDRIVEN":
		return count == 0
	}
	return true
}

var dataFields = map[string]bool{"input": true, "output": true, "parameters": true}

func (s *Server) getExecutionHistory(body json.RawMessage) (any, error) {
	var in struct {
		ExecutionArn         string `json:"executionArn"`
		MaxResults           int    `json:"maxResults"`
		NextToken            string `json:"nextToken"`
		ReverseOrder         bool   `json:"reverseOrder"`
		IncludeExecutionData *bool  `json:"includeExecutionData"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	x, err := s.lookupExecution(in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	events := x.History()
	if in.ReverseOrder {
		for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
			events[i], events[j] = events[j], events[i]
		}
	}
	pg, next, err := page(events, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	include := in.IncludeExecutionData == nil || *in.IncludeExecutionData
	out := make([]map[string]any, len(pg))
	for i, ev := range pg {
		e := map[string]any{"id": ev.ID, "previousEventId": previousEventID(ev), "timestamp": epoch(ev.Timestamp), "type": ev.Type}
		if ev.DetailsKey != "" {
			details := ev.Details
			if !include {
				details = make(map[string]any, len(ev.Details))
				for k, v := range ev.Details {
					if !dataFields[k] {
						details[k] = v
					}
				}
			}
			e[ev.DetailsKey] = details
		}
		out[i] = e
	}
	resp := map[string]any{"events": out}
	if next != "" {
		resp["nextToken"] = next
	}
	return resp, nil
}

// previousEventID is an event's previousEventId as Step Functions reports it: the event that
// follows ExecutionStarted (the first state's) has 0, as ExecutionStarted itself has; the engine
// chains it to ExecutionStarted.
func previousEventID(ev asl.HistoryEvent) int64 {
	if ev.PreviousEventID == 1 {
		return 0
	}
	return ev.PreviousEventID
}

func (s *Server) stopExecution(body json.RawMessage) (any, error) {
	var in struct {
		ExecutionArn string `json:"executionArn"`
		Error        string `json:"error"`
		Cause        string `json:"cause"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	x, err := s.lookupExecution(in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	x.Stop(in.Error, in.Cause)
	snap := x.Snapshot()
	stop := snap.Stop
	if stop.IsZero() {
		stop = s.opts.Clock.Now()
	}
	return map[string]any{"stopDate": epoch(stop)}, nil
}

// tokenErr turns an engine error about token into the API's error. A token the engine issued
// whose task has closed gets TaskTimedOut, as Step Functions answers for "a task token that has
// either expired or whose task has already been closed"; only a token never issued (or long
// forgotten) gets TaskDoesNotExist.
func (s *Server) tokenErr(err error, token string) error {
	switch {
	case errors.Is(err, asl.ErrInvalidToken):
		return clientErr("InvalidToken", "Invalid Token: the task token is malformed")
	case errors.Is(err, asl.ErrTaskTimedOut):
		return clientErr("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'")
	case errors.Is(err, asl.ErrTaskDoesNotExist):
		if _, issued := s.engine.TokenStateMachine(token); issued {
			return clientErr("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'")
		}
		return clientErr("TaskDoesNotExist", "Task Does Not Exist: no task is waiting on this token")
	case errors.Is(err, asl.ErrInvalidOutput):
		return clientErr("InvalidOutput", "Invalid Output: %v", err)
	}
	return err
}

func (s *Server) sendTaskSuccess(body json.RawMessage) (any, error) {
	var in struct {
		TaskToken string `json:"taskToken"`
		Output    string `json:"output"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := s.engine.SendTaskSuccess(in.TaskToken, []byte(in.Output)); err != nil {
		return nil, s.tokenErr(err, in.TaskToken)
	}
	return map[string]any{}, nil
}

func (s *Server) sendTaskFailure(body json.RawMessage) (any, error) {
	var in struct {
		TaskToken string `json:"taskToken"`
		Error     string `json:"error"`
		Cause     string `json:"cause"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := s.engine.SendTaskFailure(in.TaskToken, in.Error, in.Cause); err != nil {
		return nil, s.tokenErr(err, in.TaskToken)
	}
	return map[string]any{}, nil
}

func (s *Server) sendTaskHeartbeat(body json.RawMessage) (any, error) {
	var in struct {
		TaskToken string `json:"taskToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := s.engine.SendTaskHeartbeat(in.TaskToken); err != nil {
		return nil, s.tokenErr(err, in.TaskToken)
	}
	return map[string]any{}, nil
}
