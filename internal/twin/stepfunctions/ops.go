package stepfunctions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// operation serves one API action: the request's context and its JSON body in, the response
// body (encoded as JSON) or an error out.
type operation func(context.Context, json.RawMessage) (any, error)

// plain adapts an operation that needs no request context.
func plain(f func(json.RawMessage) (any, error)) operation {
	return func(_ context.Context, body json.RawMessage) (any, error) { return f(body) }
}

// operations is the dispatch table: every action the server serves.
func (s *Server) operations() map[string]operation {
	return map[string]operation{
		"CreateStateMachine":               plain(s.createStateMachine),
		"DescribeStateMachine":             plain(s.describeStateMachine),
		"DescribeStateMachineForExecution": plain(s.describeStateMachineForExecution),
		"ListStateMachines":                plain(s.listStateMachines),
		"DeleteStateMachine":               plain(s.deleteStateMachine),
		"UpdateStateMachine":               plain(s.updateStateMachine),
		"PublishStateMachineVersion":       plain(s.publishStateMachineVersion),
		"ListStateMachineVersions":         plain(s.listStateMachineVersions),
		"ValidateStateMachineDefinition":   plain(s.validateStateMachineDefinition),
		"TagResource":                      plain(s.tagResource),
		"UntagResource":                    plain(s.untagResource),
		"ListTagsForResource":              plain(s.listTagsForResource),
		"StartExecution":                   plain(s.startExecution),
		"StartSyncExecution":               s.startSyncExecution,
		"DescribeExecution":                plain(s.describeExecution),
		"ListExecutions":                   plain(s.listExecutions),
		"GetExecutionHistory":              plain(s.getExecutionHistory),
		"StopExecution":                    plain(s.stopExecution),
		"RedriveExecution":                 plain(s.redriveExecution),
		"TestState":                        s.testState,
		"SendTaskSuccess":                  plain(s.sendTaskSuccess),
		"SendTaskFailure":                  plain(s.sendTaskFailure),
		"SendTaskHeartbeat":                plain(s.sendTaskHeartbeat),
	}
}

// Operations lists the API actions the server serves, sorted.
func (s *Server) Operations() []string {
	ops := s.operations()
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// runInfo is the server's record of one execution.
type runInfo struct {
	machine    *machine // the state machine, or version, it was started on
	versionARN string
	revisionID string
	// redriveCount and redriveDate count and date its redrives; redriveTokens are the client
	// tokens of the last redrives, which make a repeated RedriveExecution idempotent.
	redriveCount  int64
	redriveDate   time.Time
	redriveTokens []string
}

// run returns a copy of the record of an execution, or nil.
func (s *Server) run(arn string) *runInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.runs[arn]
	if !ok {
		return nil
	}
	c := *info
	return &c
}

func aws2str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// publish returns a copy of m with its current configuration published as a new version.
func (m *machine) publish(description string, now time.Time) *machine {
	c := *m
	v := *m
	v.versions, v.tags = nil, nil
	v.arn = fmt.Sprintf("%s:%d", m.arn, len(m.versions)+1)
	v.parent, v.description, v.created = m.arn, description, now
	c.versions = append(append([]*machine(nil), m.versions...), &v)
	return &c
}

// Tag limits, as Step Functions sets them.
const maxTags = 50

var tagChars = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)

// checkTags validates tags to be added to a resource already holding have.
func checkTags(arn string, have, add []tag) error {
	for _, t := range add {
		if len(t.Key) < 1 || len(t.Key) > 128 || len(t.Value) > 256 || !tagChars.MatchString(t.Key) || !tagChars.MatchString(t.Value) {
			return clientErr("ValidationException", "invalid tag %q=%q: keys are 1 to 128 and values up to 256 letters, digits, spaces or _ . : / = + - @", t.Key, t.Value)
		}
	}
	if len(mergeTags(have, add)) > maxTags {
		return &apiError{status: 400, code: "TooManyTags", msg: fmt.Sprintf("Too many tags on resource '%s': at most %d are allowed", arn, maxTags),
			extra: map[string]any{"resourceName": arn}}
	}
	return nil
}

// mergeTags adds tags to have, a later value replacing an earlier one of the same key.
func mergeTags(have, add []tag) []tag {
	out := append([]tag(nil), have...)
	for _, t := range add {
		replaced := false
		for i := range out {
			if out[i].Key == t.Key {
				out[i].Value, replaced = t.Value, true
			}
		}
		if !replaced {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) updateStateMachine(body json.RawMessage) (any, error) {
	var in struct {
		StateMachineArn      string          `json:"stateMachineArn"`
		Definition           *string         `json:"definition"`
		RoleArn              *string         `json:"roleArn"`
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
	if in.Definition == nil && in.RoleArn == nil && in.LoggingConfiguration == nil && in.TracingConfiguration == nil {
		return nil, clientErr("MissingRequiredParameter", "Either the definition, the role ARN, the LoggingConfiguration, or the TracingConfiguration must be specified")
	}
	if in.VersionDescription != nil && !in.Publish {
		return nil, clientErr("ValidationException", "Version description can only be set when publish is true")
	}
	base, _, err := s.splitMachineARN(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	if strings.Count(base, ":") != 6 {
		return nil, clientErr("ValidationException", "A published version cannot be updated: '%s'", base)
	}
	cur, _, err := s.lookupMachine(base)
	if err != nil {
		return nil, err
	}
	var def []byte
	var sm *asl.StateMachine
	if in.Definition != nil {
		if def, sm, err = s.parseDefinition(*in.Definition, cur.typ); err != nil {
			return nil, err
		}
	}
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[base]
	if !ok {
		return nil, clientErr("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", base)
	}
	c := *m
	if sm != nil {
		c.definition, c.sm = string(def), sm
	}
	if in.RoleArn != nil {
		c.roleARN = *in.RoleArn
	}
	if in.LoggingConfiguration != nil {
		c.logging = in.LoggingConfiguration
	}
	if in.TracingConfiguration != nil {
		c.tracing = in.TracingConfiguration.Enabled
	}
	if c.definition != m.definition || c.roleARN != m.roleARN || string(c.logging) != string(m.logging) || c.tracing != m.tracing {
		c.revisionID, c.updated = newExecutionName(), now
	}
	out := map[string]any{"updateDate": epoch(now), "revisionId": c.revisionID}
	next := &c
	if in.Publish {
		next = c.publish(aws2str(in.VersionDescription), now)
		out["stateMachineVersionArn"] = next.versions[len(next.versions)-1].arn
	}
	// Running executions hold the *asl.StateMachine they started with, so they carry on with
	// the old definition, as Step Functions' do.
	s.machines[base] = next
	s.log.Info("state machine updated", "stateMachine", base, "revisionId", c.revisionID)
	return out, nil
}

func (s *Server) publishStateMachineVersion(body json.RawMessage) (any, error) {
	var in struct {
		StateMachineArn string  `json:"stateMachineArn"`
		RevisionID      *string `json:"revisionId"`
		Description     string  `json:"description"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if _, _, err := s.lookupMachine(in.StateMachineArn); err != nil {
		return nil, err
	}
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[in.StateMachineArn]
	if !ok {
		return nil, clientErr("ValidationException", "only a state machine ARN can be published: '%s'", in.StateMachineArn)
	}
	if in.RevisionID != nil && *in.RevisionID != m.revisionID {
		return nil, clientErr("ConflictException", "Failed to publish the State Machine version for revision %s. The current State Machine revision is %s.", *in.RevisionID, m.revisionID)
	}
	// Publishing a revision already published returns that version rather than a copy of it.
	if n := len(m.versions); n > 0 && m.versions[n-1].revisionID == m.revisionID {
		v := m.versions[n-1]
		return map[string]any{"creationDate": epoch(v.created), "stateMachineVersionArn": v.arn}, nil
	}
	next := m.publish(in.Description, now)
	s.machines[m.arn] = next
	v := next.versions[len(next.versions)-1]
	return map[string]any{"creationDate": epoch(v.created), "stateMachineVersionArn": v.arn}, nil
}

func (s *Server) listStateMachineVersions(body json.RawMessage) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		MaxResults      int    `json:"maxResults"`
		NextToken       string `json:"nextToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	m, _, err := s.lookupMachine(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	if m.parent != "" {
		return nil, clientErr("ValidationException", "versions are listed for a state machine, not a version: '%s'", m.arn)
	}
	newest := make([]*machine, len(m.versions))
	for i, v := range m.versions {
		newest[len(m.versions)-1-i] = v
	}
	pg, next, err := page(newest, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(pg))
	for i, v := range pg {
		out[i] = map[string]any{"stateMachineVersionArn": v.arn, "creationDate": epoch(v.created)}
	}
	resp := map[string]any{"stateMachineVersions": out}
	if next != "" {
		resp["nextToken"] = next
	}
	return resp, nil
}

// taggedMachine finds the state machine a tagging request names.
func (s *Server) taggedMachine(arn string) (string, error) {
	base, _, err := s.splitMachineARN(arn)
	if err != nil || strings.Count(base, ":") != 6 {
		return "", clientErr("InvalidArn", "Invalid Arn: '%s'", arn)
	}
	s.mu.Lock()
	_, ok := s.machines[base]
	s.mu.Unlock()
	if !ok {
		return "", &apiError{status: 400, code: "ResourceNotFound", msg: fmt.Sprintf("Resource not found: '%s'", base),
			extra: map[string]any{"resourceName": base}}
	}
	return base, nil
}

func (s *Server) tagResource(body json.RawMessage) (any, error) {
	var in struct {
		ResourceArn string `json:"resourceArn"`
		Tags        []tag  `json:"tags"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	arn, err := s.taggedMachine(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[arn]
	if !ok {
		return nil, &apiError{status: 400, code: "ResourceNotFound", msg: fmt.Sprintf("Resource not found: '%s'", arn), extra: map[string]any{"resourceName": arn}}
	}
	if err := checkTags(arn, m.tags, in.Tags); err != nil {
		return nil, err
	}
	c := *m
	c.tags = mergeTags(m.tags, in.Tags)
	s.machines[arn] = &c
	return map[string]any{}, nil
}

func (s *Server) untagResource(body json.RawMessage) (any, error) {
	var in struct {
		ResourceArn string   `json:"resourceArn"`
		TagKeys     []string `json:"tagKeys"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	arn, err := s.taggedMachine(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	drop := make(map[string]bool, len(in.TagKeys))
	for _, k := range in.TagKeys {
		drop[k] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[arn]
	if !ok {
		return nil, &apiError{status: 400, code: "ResourceNotFound", msg: fmt.Sprintf("Resource not found: '%s'", arn), extra: map[string]any{"resourceName": arn}}
	}
	c := *m
	c.tags = nil
	for _, t := range m.tags {
		if !drop[t.Key] {
			c.tags = append(c.tags, t)
		}
	}
	s.machines[arn] = &c
	return map[string]any{}, nil
}

func (s *Server) listTagsForResource(body json.RawMessage) (any, error) {
	var in struct {
		ResourceArn string `json:"resourceArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	arn, err := s.taggedMachine(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	m, _, err := s.lookupMachine(arn)
	if err != nil {
		return nil, err
	}
	tags := m.tags
	if tags == nil {
		tags = []tag{}
	}
	return map[string]any{"tags": tags}, nil
}

// diagnosticCode maps the engine's validation codes to those ValidateStateMachineDefinition
// documents: codes it shares are kept, and the engine's finer ones (an invalid path, choice
// rule or intrinsic, an unreachable state) are what Step Functions reports as schema failures.
func diagnosticCode(code string) string {
	switch code {
	case "INVALID_JSON_DESCRIPTION", "MISSING_DESCRIPTION", "SCHEMA_VALIDATION_FAILED", "INVALID_RESOURCE",
		"MISSING_END_STATE", "DUPLICATE_STATE_NAME", "INVALID_STATE_NAME", "MISSING_TRANSITION_TARGET", "TOO_DEEPLY_NESTED":
		return code
	}
	return "SCHEMA_VALIDATION_FAILED"
}

// diagnostics validates a definition for a state machine of type typ and returns its problems
// as ValidateStateMachineDefinition's diagnostics.
func diagnostics(definition, typ string) []map[string]any {
	if strings.TrimSpace(definition) == "" {
		return []map[string]any{{"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": "Definition must be a valid JSON object"}}
	}
	var problems []asl.Problem
	sm, err := asl.Parse([]byte(definition))
	var ve *asl.ValidationError
	switch {
	case errors.As(err, &ve):
		problems = ve.Problems
	case err != nil:
		problems = []asl.Problem{{Code: "SCHEMA_VALIDATION_FAILED", Location: "/", Message: err.Error()}}
	case typ == "EXPRESS":
		problems = sm.ExpressProblems()
	}
	out := make([]map[string]any, 0, len(problems))
	for _, p := range problems {
		d := map[string]any{"severity": "ERROR", "code": diagnosticCode(p.Code), "message": p.Message}
		if p.Location != "" {
			d["location"] = p.Location
		}
		out = append(out, d)
	}
	return out
}

func (s *Server) validateStateMachineDefinition(body json.RawMessage) (any, error) {
	var in struct {
		Definition *string `json:"definition"`
		Type       string  `json:"type"`
		Severity   string  `json:"severity"`
		MaxResults int     `json:"maxResults"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.Definition == nil {
		return nil, clientErr("ValidationException", "1 validation error detected: Value null at 'definition' failed to satisfy constraint: Member must not be null")
	}
	if in.Type != "" && in.Type != "STANDARD" && in.Type != "EXPRESS" {
		return nil, clientErr("ValidationException", "type must be STANDARD or EXPRESS")
	}
	if in.Severity != "" && in.Severity != "ERROR" && in.Severity != "WARNING" {
		return nil, clientErr("ValidationException", "severity must be ERROR or WARNING")
	}
	if in.MaxResults < 0 || in.MaxResults > 100 {
		return nil, clientErr("ValidationException", "maxResults must be between 0 and 100")
	}
	// The engine reports errors only, so a WARNING minimum returns the same diagnostics.
	diags := diagnostics(*in.Definition, in.Type)
	result := "OK"
	if len(diags) > 0 {
		result = "FAIL"
	}
	limit := in.MaxResults
	if limit == 0 {
		limit = 100
	}
	truncated := len(diags) > limit
	if truncated {
		diags = diags[:limit]
	}
	return map[string]any{"result": result, "diagnostics": diags, "truncated": truncated}, nil
}

func (s *Server) testState(ctx context.Context, body json.RawMessage) (any, error) {
	var in struct {
		Definition      *string `json:"definition"`
		RoleArn         string  `json:"roleArn"`
		Input           *string `json:"input"`
		InspectionLevel string  `json:"inspectionLevel"`
		StateName       string  `json:"stateName"`
		Mock            *struct {
			Result      *string `json:"result"`
			ErrorOutput *struct {
				Error string `json:"error"`
				Cause string `json:"cause"`
			} `json:"errorOutput"`
		} `json:"mock"`
		StateConfiguration *struct {
			RetrierRetryCount int `json:"retrierRetryCount"`
		} `json:"stateConfiguration"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.Definition == nil {
		return nil, clientErr("ValidationException", "1 validation error detected: Value null at 'definition' failed to satisfy constraint: Member must not be null")
	}
	level := in.InspectionLevel
	if level == "" {
		level = "INFO"
	}
	if level != "INFO" && level != "DEBUG" && level != "TRACE" {
		return nil, clientErr("ValidationException", "inspectionLevel must be INFO, DEBUG or TRACE")
	}
	spec := asl.TestStateInput{StateName: in.StateName, RoleARN: in.RoleArn}
	if in.Input != nil {
		spec.Input = []byte(*in.Input)
	}
	if m := in.Mock; m != nil {
		if (m.Result == nil) == (m.ErrorOutput == nil) {
			return nil, clientErr("ValidationException", "A mock must specify exactly one of result and errorOutput")
		}
		spec.Mock = &asl.TestMock{}
		if m.Result != nil {
			spec.Mock.Result, spec.Mock.HasResult = []byte(*m.Result), true
		} else {
			spec.Mock.Error, spec.Mock.Cause = m.ErrorOutput.Error, m.ErrorOutput.Cause
		}
	}
	if in.StateConfiguration != nil {
		spec.RetrierRetryCount = in.StateConfiguration.RetrierRetryCount
	}
	def, missing := asl.Substitute([]byte(*in.Definition), s.opts.Substitutions)
	if len(missing) > 0 {
		return nil, clientErr("InvalidDefinition", "Invalid State Machine Definition: definition substitutions missing for %s", strings.Join(missing, ", "))
	}
	st, err := asl.ParseTestState(def, in.StateName)
	if err != nil {
		return nil, clientErr("InvalidDefinition", "%v", err)
	}
	res, err := s.engine.TestState(ctx, st, spec)
	switch {
	case errors.Is(err, asl.ErrInvalidInput):
		return nil, clientErr("InvalidExecutionInput", "Invalid State Machine Execution Input: '%v'", err)
	case errors.Is(err, asl.ErrTestStateUnsupported):
		return nil, clientErr("ValidationException", "%v", err)
	case err != nil:
		return nil, fmt.Errorf("stepfunctions: TestState: %w", err)
	}
	return testStateResponse(res, level), nil
}

// testStateResponse renders a TestState result at an inspection level: INFO leaves out the
// inspection data; DEBUG and TRACE (which adds only HTTP Task traffic, and the engine runs no
// HTTP Tasks) include it.
func testStateResponse(res asl.TestStateResult, level string) map[string]any {
	out := map[string]any{"status": res.Status}
	if res.Output != nil {
		out["output"] = string(res.Output)
	}
	if res.Error != "" {
		out["error"] = res.Error
	}
	if res.Cause != "" {
		out["cause"] = res.Cause
	}
	if res.NextState != "" {
		out["nextState"] = res.NextState
	}
	if level == "INFO" {
		return out
	}
	data := make(map[string]any, len(res.Inspection)+1)
	for k, v := range res.Inspection {
		data[k] = v
	}
	if d := res.ErrorDetails; d != nil {
		details := map[string]any{}
		if d.RetryIndex != nil {
			details["retryIndex"] = *d.RetryIndex
		}
		if d.RetryBackoffIntervalSeconds != nil {
			details["retryBackoffIntervalSeconds"] = *d.RetryBackoffIntervalSeconds
		}
		if d.CatchIndex != nil {
			details["catchIndex"] = *d.CatchIndex
		}
		data["errorDetails"] = details
	}
	out["inspectionData"] = data
	return out
}

// Redrive limits, as Step Functions sets them.
const (
	redrivablePeriod = 14 * 24 * time.Hour
	maxHistoryEvents = 24999
	maxRedrives      = 1000
)

// redriveReason says why an execution cannot be redriven, in DescribeExecution's
// redriveStatusReason words, or "" when it can: only a closed, unsuccessful execution of a
// STANDARD state machine that still exists, within 14 days of closing, with room in its
// history for the redrive's events.
func redriveReason(machineType string, machineExists bool, status string, stop, now time.Time, events int, redrives int64) string {
	switch {
	case machineType == "EXPRESS":
		return "Execution of an EXPRESS state machine cannot be redriven"
	case !machineExists:
		return "State machine is in DELETING status"
	case status == asl.StatusRunning:
		return "Execution is RUNNING and cannot be redriven"
	case status == asl.StatusSucceeded:
		return "Execution is SUCCEEDED and cannot be redriven"
	case now.Sub(stop) > redrivablePeriod:
		return "Execution redrivable period exceeded"
	case events >= maxHistoryEvents:
		return "Execution history event limit exceeded"
	case redrives >= maxRedrives:
		return "Execution redrive limit exceeded"
	}
	return ""
}

// redriveRefusal applies redriveReason to an execution.
func (s *Server) redriveRefusal(x *asl.Execution, info *runInfo) string {
	snap := x.Snapshot()
	s.mu.Lock()
	_, exists := s.machines[x.StateMachineARN]
	s.mu.Unlock()
	return redriveReason(info.machine.typ, exists, snap.Status, snap.Stop, s.opts.Clock.Now(), len(x.History()), info.redriveCount)
}

// redriveTokenMemory is how many client tokens of successful redrives are remembered.
const redriveTokenMemory = 10

func (s *Server) redriveExecution(body json.RawMessage) (any, error) {
	var in struct {
		ExecutionArn string `json:"executionArn"`
		ClientToken  string `json:"clientToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	x, err := s.lookupExecution(in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	info := s.run(x.ARN)
	if info == nil {
		return nil, clientErr("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", in.ExecutionArn)
	}
	for _, tok := range info.redriveTokens {
		if in.ClientToken != "" && tok == in.ClientToken {
			return map[string]any{"redriveDate": epoch(info.redriveDate)}, nil
		}
	}
	now := s.opts.Clock.Now()
	if reason := s.redriveRefusal(x, info); reason != "" {
		return nil, &apiError{status: 400, code: "ExecutionNotRedrivable", msg: reason}
	}
	s.mu.Lock()
	rec := s.runs[x.ARN]
	// Checked again under the lock: of two redrives of one execution, the second finds the
	// first's run in place of the one it looked up, and that run is open.
	if s.executions[x.ARN] != x || rec.redriveCount != info.redriveCount {
		s.mu.Unlock()
		return nil, &apiError{status: 400, code: "ExecutionNotRedrivable", msg: "Execution is RUNNING and cannot be redriven"}
	}
	next, err := s.engine.Redrive(x, rec.redriveCount+1)
	if err != nil {
		s.mu.Unlock()
		return nil, &apiError{status: 400, code: "ExecutionNotRedrivable", msg: err.Error()}
	}
	s.executions[x.ARN] = next
	for key, named := range s.names {
		if named == x {
			s.names[key] = next
		}
	}
	list := s.byMachine[x.StateMachineARN]
	for i, old := range list {
		if old == x {
			list[i] = next
		}
	}
	rec.redriveCount++
	rec.redriveDate = now
	if in.ClientToken != "" {
		rec.redriveTokens = append(rec.redriveTokens, in.ClientToken)
		if n := len(rec.redriveTokens); n > redriveTokenMemory {
			rec.redriveTokens = rec.redriveTokens[n-redriveTokenMemory:]
		}
	}
	s.mu.Unlock()
	s.log.Info("execution redriven", "execution", x.ARN, "redriveCount", rec.redriveCount)
	// The redriven run closes again, so the observer hears it open again to keep its pairs.
	s.observe(ExecutionEvent{StateMachineARN: x.StateMachineARN, ExecutionARN: x.ARN, Status: asl.StatusRunning, Start: now})
	return map[string]any{"redriveDate": epoch(now)}, nil
}

// expressSyncLimit is how long a synchronous Express execution may run.
const expressSyncLimit = 5 * time.Minute

func (s *Server) startSyncExecution(ctx context.Context, body json.RawMessage) (any, error) {
	req, err := s.decodeStart(body)
	if err != nil {
		return nil, err
	}
	m, testCase, input := req.m, req.testCase, req.input
	if m.typ != "EXPRESS" {
		return nil, clientErr("StateMachineTypeNotSupported", "This operation is not supported by this type of state machine")
	}
	machineARN := m.arn
	if m.parent != "" {
		machineARN = m.parent
	}
	arn := fmt.Sprintf("arn:aws:states:%s:%s:express:%s:%s:%s", s.opts.Region, s.opts.AccountID, m.name, req.name, newExecutionName())
	x, err := s.engine.Start(m.sm, asl.ExecutionSpec{ARN: arn, Name: req.name, StateMachineARN: machineARN, StateMachineName: m.name,
		RoleARN: m.roleARN, TestCase: testCase, Input: []byte(input)})
	if errors.Is(err, asl.ErrInvalidInput) {
		return nil, clientErr("InvalidExecutionInput", "%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("stepfunctions: start sync execution: %w", err)
	}
	s.observe(ExecutionEvent{StateMachineARN: machineARN, ExecutionARN: arn, Status: asl.StatusRunning, Start: x.StartDate})
	// The execution runs on the server's clock; the caller's patience is the request's.
	limit := s.opts.Clock.AfterFunc(expressSyncLimit, func() { x.Stop(asl.ErrTimeout, "the synchronous Express execution exceeded 5 minutes") })
	defer limit.Stop()
	select {
	case <-x.Done():
	case <-ctx.Done():
		x.Stop("States.Aborted", "the caller went away")
		return nil, fmt.Errorf("stepfunctions: sync execution %s: %w", arn, ctx.Err())
	}
	snap := x.Snapshot()
	status := snap.Status
	if status == asl.StatusAborted && snap.Error == asl.ErrTimeout {
		status = asl.StatusTimedOut
	}
	billed := math.Ceil(float64(snap.Stop.Sub(snap.Start).Milliseconds())/100) * 100
	out := map[string]any{"executionArn": arn, "stateMachineArn": machineARN, "name": req.name, "startDate": epoch(snap.Start),
		"stopDate": epoch(snap.Stop), "status": status, "input": input, "inputDetails": map[string]any{"included": true},
		"billingDetails": map[string]any{"billedMemoryUsedInMB": 64, "billedDurationInMilliseconds": int64(max(billed, 100))}}
	if status == asl.StatusSucceeded {
		out["output"] = string(snap.Output)
		out["outputDetails"] = map[string]any{"included": true}
	}
	if snap.Error != "" {
		out["error"] = snap.Error
	}
	if snap.Cause != "" {
		out["cause"] = snap.Cause
	}
	return out, nil
}
