package asl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ohler55/ojg/oj"
)

// StateMachine is a parsed and validated ASL definition.
type StateMachine struct {
	Comment        string
	TimeoutSeconds int
	Definition     string // the definition text after substitutions
	root           *block
}

// block is a StartAt/States pair: the top level, a Parallel branch or a Map processor.
type block struct {
	StartAt string
	States  map[string]*State
	order   []string
}

// State is one parsed state.
type State struct {
	Name string
	Type string
	Next string
	End  bool

	InputPath      optPath
	OutputPath     optPath
	ResultPath     optPath
	Parameters     *template // Parameters (Task, Pass, Parallel, Map legacy)
	ItemSelector   *template
	ResultSelector *template
	Result         any
	hasResult      bool

	// Task
	Resource             string
	TimeoutSeconds       int
	TimeoutSecondsPath   *Path
	HeartbeatSeconds     int
	HeartbeatSecondsPath *Path
	Retry                []Retrier
	Catch                []Catcher

	// Choice
	Choices []*ChoiceRule
	Default string

	// Wait
	Seconds       *float64
	Timestamp     *time.Time
	SecondsPath   *Path
	TimestampPath *Path

	// Fail
	Error     string
	Cause     string
	ErrorPath *Path
	CausePath *Path

	// Parallel / Map
	Branches       []*block
	Processor      *block
	ItemsPath      optPath
	MaxConcurrency int
}

// optPath distinguishes an absent path field (default "$") from a null one.
type optPath struct {
	Null bool
	Path *Path
}

// Retrier is one entry of a Retry field.
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds float64
	MaxAttempts     int
	BackoffRate     float64
	MaxDelaySeconds float64
	JitterFull      bool
}

// Delay returns the wait before retry number n (0-based), without jitter:
// IntervalSeconds × BackoffRate^n, capped by MaxDelaySeconds when set.
func (r Retrier) Delay(n int) time.Duration {
	d := r.IntervalSeconds
	for i := 0; i < n; i++ {
		d *= r.BackoffRate
		if r.MaxDelaySeconds > 0 && d > r.MaxDelaySeconds {
			break
		}
	}
	if r.MaxDelaySeconds > 0 && d > r.MaxDelaySeconds {
		d = r.MaxDelaySeconds
	}
	return time.Duration(d * float64(time.Second))
}

// Catcher is one entry of a Catch field.
type Catcher struct {
	ErrorEquals []string
	Next        string
	ResultPath  optPath
}

// Problem is one reason a definition is invalid.
type Problem struct {
	Code     string // AWS-style code, e.g. MISSING_TRANSITION_TARGET
	Location string // JSON pointer-ish location, e.g. /States/Claim/Next
	Message  string
}

// ValidationError lists every problem found in a definition.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = fmt.Sprintf("'%s: %s at %s'", p.Code, p.Message, p.Location)
	}
	return "Invalid State Machine Definition: " + strings.Join(parts, ", ")
}

type parser struct {
	problems []Problem
}

func (p *parser) add(code, loc, format string, args ...any) {
	p.problems = append(p.problems, Problem{Code: code, Location: loc, Message: fmt.Sprintf(format, args...)})
}

// Parse parses and validates an ASL definition (JSONPath query language).
func Parse(definition []byte) (*StateMachine, error) {
	raw, err := ojParse(definition)
	if err != nil {
		return nil, &ValidationError{Problems: []Problem{{Code: "INVALID_JSON_DESCRIPTION", Location: "/", Message: fmt.Sprintf("the definition is not valid JSON: %v", err)}}}
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return nil, &ValidationError{Problems: []Problem{{Code: "SCHEMA_VALIDATION_FAILED", Location: "/", Message: "the definition must be a JSON object"}}}
	}
	p := &parser{}
	sm := &StateMachine{Definition: string(definition)}
	p.checkFields(top, "", "Comment", "StartAt", "States", "TimeoutSeconds", "Version", "QueryLanguage")
	if ql, ok := top["QueryLanguage"]; ok && ql != "JSONPath" {
		p.add("SCHEMA_VALIDATION_FAILED", "/QueryLanguage", "only the JSONPath query language is supported, not %v", ql)
	}
	sm.Comment, _ = top["Comment"].(string)
	if v, ok := top["TimeoutSeconds"]; ok {
		sm.TimeoutSeconds = p.positiveInt(v, "/TimeoutSeconds")
	}
	sm.root = p.block(top, "")
	if len(p.problems) > 0 {
		return nil, &ValidationError{Problems: p.problems}
	}
	return sm, nil
}

func (p *parser) checkFields(obj map[string]any, loc string, allowed ...string) {
	set := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		set[a] = true
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !set[k] {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/"+k, "The field '%s' is not supported by Step Functions", k)
		}
	}
}

func (p *parser) block(obj map[string]any, loc string) *block {
	b := &block{States: map[string]*State{}}
	// Absent fields are named together at the block, as Step Functions' validator names them;
	// present ones of the wrong kind at the field.
	var missing []string
	for _, field := range []string{"States", "StartAt"} {
		if _, present := obj[field]; !present {
			missing = append(missing, field)
		}
	}
	if len(missing) > 0 {
		at := loc
		if at == "" {
			at = "/"
		}
		p.add("SCHEMA_VALIDATION_FAILED", at, "These fields are required: [%s]", strings.Join(missing, ", "))
	}
	start, ok := obj["StartAt"].(string)
	if _, present := obj["StartAt"]; present && (!ok || start == "") {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/StartAt", "StartAt must be a non-empty string")
	}
	b.StartAt = start
	states, ok := obj["States"].(map[string]any)
	if _, present := obj["States"]; present && (!ok || len(states) == 0) {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/States", "States must be a non-empty object")
	}
	if len(states) == 0 {
		return b
	}
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	b.order = names
	for _, name := range names {
		sloc := loc + "/States/" + name
		if len(name) > 80 {
			p.add("SCHEMA_VALIDATION_FAILED", sloc, "state name %q is longer than 80 characters", name)
		}
		sobj, ok := states[name].(map[string]any)
		if !ok {
			p.add("SCHEMA_VALIDATION_FAILED", sloc, "state %q must be an object", name)
			continue
		}
		if st := p.state(name, sobj, sloc); st != nil {
			b.States[name] = st
		}
	}
	if start != "" {
		if _, ok := b.States[start]; !ok {
			if _, exists := states[start]; !exists {
				p.add("MISSING_TRANSITION_TARGET", loc+"/StartAt", "Missing 'StartAt' target: %s", start)
			}
		}
	}
	p.checkTransitions(b, loc)
	return b
}

// checkTransitions reports unknown targets and unreachable states in one block.
func (p *parser) checkTransitions(b *block, loc string) {
	targets := func(s *State) []string {
		var t []string
		if s.Next != "" {
			t = append(t, s.Next)
		}
		for _, c := range s.Catch {
			t = append(t, c.Next)
		}
		for _, r := range s.Choices {
			t = append(t, r.Next)
		}
		if s.Default != "" {
			t = append(t, s.Default)
		}
		return t
	}
	for _, name := range b.order {
		s := b.States[name]
		if s == nil {
			continue
		}
		for _, t := range targets(s) {
			if t == "" {
				continue
			}
			if _, ok := b.States[t]; !ok {
				p.add("MISSING_TRANSITION_TARGET", loc+"/States/"+name, "Missing 'Next' target: %s", t)
			}
		}
	}
	if _, ok := b.States[b.StartAt]; !ok {
		return
	}
	seen := map[string]bool{b.StartAt: true}
	queue := []string{b.StartAt}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, t := range targets(b.States[n]) {
			if _, ok := b.States[t]; ok && !seen[t] {
				seen[t] = true
				queue = append(queue, t)
			}
		}
	}
	for _, name := range b.order {
		if b.States[name] != nil && !seen[name] {
			p.add("UNREACHABLE_STATE", loc+"/States/"+name, "State %q is not reachable", name)
		}
	}
}

var commonFields = []string{"Type", "Comment"}

var allowedFields = map[string][]string{
	"Pass":     {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "Result"},
	"Task":     {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Retry", "Catch", "Credentials"},
	"Choice":   {"InputPath", "OutputPath", "Choices", "Default"},
	"Wait":     {"Next", "End", "InputPath", "OutputPath", "Seconds", "Timestamp", "SecondsPath", "TimestampPath"},
	"Succeed":  {"InputPath", "OutputPath"},
	"Fail":     {"Error", "Cause", "ErrorPath", "CausePath"},
	"Parallel": {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Branches", "Retry", "Catch"},
	"Map":      {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ItemSelector", "ResultSelector", "ItemsPath", "MaxConcurrency", "Iterator", "ItemProcessor", "Retry", "Catch"},
}

func (p *parser) state(name string, obj map[string]any, loc string) *State {
	typ, _ := obj["Type"].(string)
	allowed, ok := allowedFields[typ]
	if !ok {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/Type", "state %q has unknown Type %v", name, obj["Type"])
		return nil
	}
	p.checkFields(obj, loc, append(append([]string{}, commonFields...), allowed...)...)
	s := &State{Name: name, Type: typ}
	s.Next, _ = obj["Next"].(string)
	if v, ok := obj["Next"]; ok {
		if _, isStr := v.(string); !isStr {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Next", "Next must be a string")
		}
	}
	if v, ok := obj["End"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/End", "End must be a boolean")
		}
		s.End = b
	}
	switch typ {
	case "Pass", "Task", "Wait", "Parallel", "Map":
		if s.End && s.Next != "" {
			p.add("SCHEMA_VALIDATION_FAILED", loc, "state %q has both Next and End", name)
		}
		if !s.End && s.Next == "" {
			p.add("MISSING_TRANSITION_TARGET", loc, "state %q has neither Next nor End: true", name)
		}
	}
	s.InputPath = p.optPath(obj, "InputPath", loc, false)
	s.OutputPath = p.optPath(obj, "OutputPath", loc, false)
	s.ResultPath = p.optPath(obj, "ResultPath", loc, true)
	s.Parameters = p.template(obj, "Parameters", loc)
	s.ResultSelector = p.template(obj, "ResultSelector", loc)
	if v, ok := obj["Result"]; ok {
		s.Result, s.hasResult = v, true
	}

	switch typ {
	case "Task":
		p.task(s, obj, loc)
	case "Choice":
		p.choice(s, obj, loc)
	case "Wait":
		p.wait(s, obj, loc)
	case "Fail":
		p.fail(s, obj, loc)
	case "Parallel":
		branches, ok := obj["Branches"].([]any)
		if !ok || len(branches) == 0 {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Branches", "Parallel state %q needs a non-empty Branches array", name)
		}
		for i, br := range branches {
			bobj, ok := br.(map[string]any)
			bloc := fmt.Sprintf("%s/Branches[%d]", loc, i)
			if !ok {
				p.add("SCHEMA_VALIDATION_FAILED", bloc, "branch must be an object")
				continue
			}
			p.checkFields(bobj, bloc, "StartAt", "States", "Comment")
			s.Branches = append(s.Branches, p.block(bobj, bloc))
		}
		s.Retry, s.Catch = p.retryCatch(obj, loc)
	case "Map":
		p.mapState(s, obj, loc)
		s.Retry, s.Catch = p.retryCatch(obj, loc)
	}
	return s
}

func (p *parser) task(s *State, obj map[string]any, loc string) {
	res, ok := obj["Resource"].(string)
	if !ok || res == "" {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/Resource", "Task state %q needs a Resource string", s.Name)
	} else if !strings.HasPrefix(res, "arn:") {
		p.add("INVALID_RESOURCE", loc+"/Resource", "Resource %q is not an ARN", res)
	}
	s.Resource = res
	if v, ok := obj["TimeoutSeconds"]; ok {
		s.TimeoutSeconds = p.positiveInt(v, loc+"/TimeoutSeconds")
	}
	if v, ok := obj["HeartbeatSeconds"]; ok {
		s.HeartbeatSeconds = p.positiveInt(v, loc+"/HeartbeatSeconds")
	}
	s.TimeoutSecondsPath = p.pathField(obj, "TimeoutSecondsPath", loc)
	s.HeartbeatSecondsPath = p.pathField(obj, "HeartbeatSecondsPath", loc)
	if s.TimeoutSeconds > 0 && s.TimeoutSecondsPath != nil {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "TimeoutSeconds and TimeoutSecondsPath are mutually exclusive")
	}
	if s.HeartbeatSeconds > 0 && s.HeartbeatSecondsPath != nil {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "HeartbeatSeconds and HeartbeatSecondsPath are mutually exclusive")
	}
	if s.HeartbeatSeconds > 0 && s.TimeoutSeconds > 0 && s.HeartbeatSeconds >= s.TimeoutSeconds {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/HeartbeatSeconds", "HeartbeatSeconds must be smaller than TimeoutSeconds")
	}
	s.Retry, s.Catch = p.retryCatch(obj, loc)
}

func (p *parser) mapState(s *State, obj map[string]any, loc string) {
	s.ItemsPath = p.optPath(obj, "ItemsPath", loc, false)
	s.ItemSelector = p.template(obj, "ItemSelector", loc)
	if s.ItemSelector != nil && s.Parameters != nil {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "ItemSelector and Parameters are mutually exclusive")
	}
	if s.ItemSelector == nil {
		// Parameters is the pre-2022 name of ItemSelector on Map.
		s.ItemSelector, s.Parameters = s.Parameters, nil
	}
	if v, ok := obj["MaxConcurrency"]; ok {
		n, isNum := toFloat(v)
		if !isNum || n < 0 || n != float64(int(n)) {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/MaxConcurrency", "MaxConcurrency must be a non-negative integer")
		}
		s.MaxConcurrency = int(n)
	}
	proc, hasProc := obj["ItemProcessor"].(map[string]any)
	iter, hasIter := obj["Iterator"].(map[string]any)
	switch {
	case hasProc && hasIter:
		p.add("SCHEMA_VALIDATION_FAILED", loc, "ItemProcessor and Iterator are mutually exclusive")
	case hasProc:
		ploc := loc + "/ItemProcessor"
		p.checkFields(proc, ploc, "StartAt", "States", "Comment", "ProcessorConfig")
		if cfg, ok := proc["ProcessorConfig"].(map[string]any); ok {
			if mode, ok := cfg["Mode"]; ok && mode != "INLINE" {
				p.add("SCHEMA_VALIDATION_FAILED", ploc+"/ProcessorConfig/Mode", "only INLINE Map processing is supported, not %v", mode)
			}
		}
		s.Processor = p.block(proc, ploc)
	case hasIter:
		iloc := loc + "/Iterator"
		p.checkFields(iter, iloc, "StartAt", "States", "Comment")
		s.Processor = p.block(iter, iloc)
	default:
		p.add("SCHEMA_VALIDATION_FAILED", loc, "Map state %q needs an ItemProcessor", s.Name)
	}
}

func (p *parser) wait(s *State, obj map[string]any, loc string) {
	n := 0
	if v, ok := obj["Seconds"]; ok {
		n++
		f, isNum := toFloat(v)
		if !isNum || f < 0 {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Seconds", "Seconds must be a non-negative number")
		}
		s.Seconds = &f
	}
	if v, ok := obj["Timestamp"]; ok {
		n++
		str, _ := v.(string)
		t, err := parseTimestamp(str)
		if err != nil {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Timestamp", "Timestamp %v is not an RFC 3339 timestamp", v)
		}
		s.Timestamp = &t
	}
	if s.SecondsPath = p.pathField(obj, "SecondsPath", loc); s.SecondsPath != nil {
		n++
	}
	if s.TimestampPath = p.pathField(obj, "TimestampPath", loc); s.TimestampPath != nil {
		n++
	}
	if n != 1 {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "Wait state %q needs exactly one of Seconds, Timestamp, SecondsPath, TimestampPath", s.Name)
	}
}

func (p *parser) fail(s *State, obj map[string]any, loc string) {
	s.Error, _ = obj["Error"].(string)
	s.Cause, _ = obj["Cause"].(string)
	s.ErrorPath = p.pathOrIntrinsic(obj, "ErrorPath", loc)
	s.CausePath = p.pathOrIntrinsic(obj, "CausePath", loc)
	if s.Error != "" && s.ErrorPath != nil {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "Error and ErrorPath are mutually exclusive")
	}
	if s.Cause != "" && s.CausePath != nil {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "Cause and CausePath are mutually exclusive")
	}
}

func (p *parser) retryCatch(obj map[string]any, loc string) ([]Retrier, []Catcher) {
	var retriers []Retrier
	p.eachObject(obj, "Retry", loc, "retrier", func(m map[string]any, rloc string, last bool) {
		p.checkFields(m, rloc, "ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment")
		r := Retrier{IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2}
		r.ErrorEquals = p.errorEquals(m, rloc, last)
		if v, ok := m["IntervalSeconds"]; ok {
			r.IntervalSeconds = float64(p.positiveInt(v, rloc+"/IntervalSeconds"))
		}
		if v, ok := m["MaxAttempts"]; ok {
			f, isNum := toFloat(v)
			if !isNum || f < 0 || f != float64(int(f)) {
				p.add("SCHEMA_VALIDATION_FAILED", rloc+"/MaxAttempts", "MaxAttempts must be a non-negative integer")
			}
			r.MaxAttempts = int(f)
		}
		if v, ok := m["BackoffRate"]; ok {
			f, isNum := toFloat(v)
			if !isNum || f < 1 {
				p.add("SCHEMA_VALIDATION_FAILED", rloc+"/BackoffRate", "BackoffRate must be a number >= 1.0")
			}
			r.BackoffRate = f
		}
		if v, ok := m["MaxDelaySeconds"]; ok {
			r.MaxDelaySeconds = float64(p.positiveInt(v, rloc+"/MaxDelaySeconds"))
		}
		if v, ok := m["JitterStrategy"]; ok {
			switch v {
			case "FULL":
				r.JitterFull = true
			case "NONE":
			default:
				p.add("SCHEMA_VALIDATION_FAILED", rloc+"/JitterStrategy", "JitterStrategy must be FULL or NONE")
			}
		}
		retriers = append(retriers, r)
	})
	var catchers []Catcher
	p.eachObject(obj, "Catch", loc, "catcher", func(m map[string]any, cloc string, last bool) {
		p.checkFields(m, cloc, "ErrorEquals", "Next", "ResultPath", "Comment")
		c := Catcher{ErrorEquals: p.errorEquals(m, cloc, last)}
		c.Next, _ = m["Next"].(string)
		if c.Next == "" {
			p.add("MISSING_TRANSITION_TARGET", cloc+"/Next", "catcher needs a Next state")
		}
		c.ResultPath = p.optPath(m, "ResultPath", cloc, true)
		catchers = append(catchers, c)
	})
	return retriers, catchers
}

// eachObject walks the array obj[key] (Retry, Catch), reporting a value that is not an array
// and each item that is not an object (what names the item: "retrier", "catcher"), and calls
// fn for every object item with its location and whether it is the array's last item.
func (p *parser) eachObject(obj map[string]any, key, loc, what string, fn func(m map[string]any, iloc string, last bool)) {
	v, ok := obj[key]
	if !ok {
		return
	}
	arr, isArr := v.([]any)
	if !isArr {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/"+key, "%s must be an array", key)
	}
	for i, item := range arr {
		iloc := fmt.Sprintf("%s/%s[%d]", loc, key, i)
		m, ok := item.(map[string]any)
		if !ok {
			p.add("SCHEMA_VALIDATION_FAILED", iloc, "%s must be an object", what)
			continue
		}
		fn(m, iloc, i == len(arr)-1)
	}
}

func (p *parser) errorEquals(m map[string]any, loc string, last bool) []string {
	arr, ok := m["ErrorEquals"].([]any)
	if !ok || len(arr) == 0 {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/ErrorEquals", "ErrorEquals must be a non-empty array of strings")
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		s, ok := v.(string)
		if !ok {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/ErrorEquals", "ErrorEquals must contain strings")
			continue
		}
		out = append(out, s)
		if s == ErrAll && (len(arr) != 1 || !last) {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/ErrorEquals", "States.ALL must appear alone and in the last retrier or catcher")
		}
	}
	return out
}

func (p *parser) positiveInt(v any, loc string) int {
	f, ok := toFloat(v)
	if !ok || f < 1 || f != float64(int(f)) {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "must be a positive integer, got %v", v)
		return 0
	}
	return int(f)
}

func (p *parser) optPath(obj map[string]any, field, loc string, reference bool) optPath {
	v, ok := obj[field]
	if !ok {
		return optPath{}
	}
	if v == nil {
		return optPath{Null: true}
	}
	s, isStr := v.(string)
	if !isStr {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/"+field, "%s must be a string or null", field)
		return optPath{}
	}
	var path *Path
	var err error
	if reference {
		path, err = parseReferencePath(s)
	} else {
		path, err = parsePath(s)
	}
	if err != nil {
		p.add("INVALID_JSON_PATH", loc+"/"+field, "%v", err)
		return optPath{}
	}
	return optPath{Path: path}
}

func (p *parser) pathField(obj map[string]any, field, loc string) *Path {
	v, ok := obj[field]
	if !ok {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/"+field, "%s must be a string", field)
		return nil
	}
	path, err := parsePath(s)
	if err != nil {
		p.add("INVALID_JSON_PATH", loc+"/"+field, "%v", err)
		return nil
	}
	return path
}

// pathOrIntrinsic parses Fail's ErrorPath/CausePath, which may also be an intrinsic call.
func (p *parser) pathOrIntrinsic(obj map[string]any, field, loc string) *Path {
	v, ok := obj[field]
	if !ok {
		return nil
	}
	s, _ := v.(string)
	if strings.HasPrefix(s, "States.") {
		call, err := parseIntrinsic(s)
		if err != nil {
			p.add("INVALID_INTRINSIC", loc+"/"+field, "%v", err)
			return nil
		}
		return &Path{Raw: s, intrinsic: call}
	}
	return p.pathField(obj, field, loc)
}

func (p *parser) template(obj map[string]any, field, loc string) *template {
	v, ok := obj[field]
	if !ok {
		return nil
	}
	t, err := compileTemplate(v)
	if err != nil {
		p.add("INVALID_JSON_PATH", loc+"/"+field, "%v", err)
		return nil
	}
	return t
}

func parseTimestamp(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

// MarshalData renders a value as JSON, object keys sorted, without the HTML
// escaping encoding/json applies by default (Step Functions leaves '<', '>'
// and '&' as they are).
func MarshalData(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Values come from JSON parsing, so this only happens for NaN/Inf from arithmetic.
		return []byte("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ParseData parses JSON into the generic form the interpreter uses; empty input is {}.
func ParseData(b []byte) (any, error) { return parseData(b) }

// ojParse is oj.Parse, with the panics some malformed inputs cause inside ojg (a nil map
// assignment on e.g. `{"":{"":},"":""0`) turned into the parse error they are.
func ojParse(b []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("malformed JSON: %v", r)
		}
	}()
	return oj.Parse(b)
}
