package asl

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ChoiceRule is a Choice state rule: a comparison, or And/Or/Not of rules.
type ChoiceRule struct {
	Next      string
	And       []*ChoiceRule
	Or        []*ChoiceRule
	Not       *ChoiceRule
	Variable  *Path
	Op        string // operator without the "Path" suffix, e.g. StringEquals
	Value     any
	ValuePath *Path // set for ...Path operators
	match     *regexp.Regexp
}

var comparisonKinds = map[string]string{ // operator -> operand kind
	"StringEquals": "string", "StringLessThan": "string", "StringGreaterThan": "string",
	"StringLessThanEquals": "string", "StringGreaterThanEquals": "string", "StringMatches": "pattern",
	"NumericEquals": "number", "NumericLessThan": "number", "NumericGreaterThan": "number",
	"NumericLessThanEquals": "number", "NumericGreaterThanEquals": "number",
	"BooleanEquals":   "bool",
	"TimestampEquals": "timestamp", "TimestampLessThan": "timestamp", "TimestampGreaterThan": "timestamp",
	"TimestampLessThanEquals": "timestamp", "TimestampGreaterThanEquals": "timestamp",
	"IsNull": "bool", "IsPresent": "bool", "IsNumeric": "bool", "IsString": "bool",
	"IsBoolean": "bool", "IsTimestamp": "bool",
}

func (p *parser) choice(s *State, obj map[string]any, loc string) {
	arr, ok := obj["Choices"].([]any)
	if !ok || len(arr) == 0 {
		p.add("SCHEMA_VALIDATION_FAILED", loc+"/Choices", "Choice state %q needs a non-empty Choices array", s.Name)
	}
	for i, item := range arr {
		rloc := fmt.Sprintf("%s/Choices[%d]", loc, i)
		r := p.rule(item, rloc, true)
		if r != nil {
			s.Choices = append(s.Choices, r)
		}
	}
	if v, ok := obj["Default"]; ok {
		s.Default, _ = v.(string)
		if s.Default == "" {
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Default", "Default must name a state")
		}
	}
}

func (p *parser) rule(item any, loc string, top bool) *ChoiceRule {
	m, ok := item.(map[string]any)
	if !ok {
		p.add("SCHEMA_VALIDATION_FAILED", loc, "choice rule must be an object")
		return nil
	}
	r := &ChoiceRule{}
	if next, has := m["Next"]; has {
		r.Next, _ = next.(string)
		switch {
		case !top:
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Next", "nested choice rules cannot have Next")
		case r.Next == "":
			p.add("SCHEMA_VALIDATION_FAILED", loc+"/Next", "Next must name a state")
		}
	} else if top {
		p.add("MISSING_TRANSITION_TARGET", loc, "top-level choice rule needs Next")
	}
	var ops []string
	for k := range m {
		switch k {
		case "Next", "Variable", "Comment":
		case "And", "Or":
			ops = append(ops, k)
			subs, ok := m[k].([]any)
			if !ok || len(subs) == 0 {
				p.add("INVALID_CHOICE_RULE", loc+"/"+k, "%s needs a non-empty array of rules", k)
				continue
			}
			for i, sub := range subs {
				sr := p.rule(sub, fmt.Sprintf("%s/%s[%d]", loc, k, i), false)
				if sr == nil {
					continue
				}
				if k == "And" {
					r.And = append(r.And, sr)
				} else {
					r.Or = append(r.Or, sr)
				}
			}
		case "Not":
			ops = append(ops, k)
			r.Not = p.rule(m[k], loc+"/Not", false)
		default:
			base := strings.TrimSuffix(k, "Path")
			kind, known := comparisonKinds[base]
			if !known || (base != k && strings.HasPrefix(base, "Is")) || (base != k && base == "StringMatches") {
				p.add("INVALID_CHOICE_RULE", loc+"/"+k, "unknown field or operator '%s' in choice rule", k)
				continue
			}
			ops = append(ops, k)
			r.Op = base
			if base != k {
				s, ok := m[k].(string)
				path, err := parsePath(s)
				if !ok || err != nil {
					p.add("INVALID_JSON_PATH", loc+"/"+k, "%s needs a valid path, got %v", k, m[k])
					continue
				}
				r.ValuePath = path
				continue
			}
			r.Value = m[k]
			if !operandOK(kind, m[k]) {
				p.add("INVALID_CHOICE_RULE", loc+"/"+k, "%s has an operand of the wrong type: %v", k, m[k])
			}
			if kind == "pattern" {
				s, _ := m[k].(string)
				r.match = wildcardRegexp(s)
			}
		}
	}
	if len(ops) != 1 {
		p.add("INVALID_CHOICE_RULE", loc, "a choice rule needs exactly one operator, found %d (%s)", len(ops), strings.Join(ops, ", "))
		return r
	}
	if r.Op != "" {
		v, has := m["Variable"].(string)
		if !has {
			p.add("INVALID_CHOICE_RULE", loc+"/Variable", "comparison %s needs a Variable", ops[0])
		} else if path, err := parsePath(v); err != nil {
			p.add("INVALID_JSON_PATH", loc+"/Variable", "%v", err)
		} else {
			r.Variable = path
		}
	} else if _, has := m["Variable"]; has {
		p.add("INVALID_CHOICE_RULE", loc+"/Variable", "%s rules cannot have a Variable", ops[0])
	}
	return r
}

func operandOK(kind string, v any) bool {
	switch kind {
	case "string", "pattern":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := toFloat(v)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "timestamp":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := parseTimestamp(s)
		return err == nil
	}
	return false
}

// wildcardRegexp compiles StringMatches patterns: '*' matches any run of
// characters, '\*' a literal star and '\\' a backslash.
func wildcardRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)^")
	for i := 0; i < len(pattern); i++ {
		ch := pattern[i]
		switch {
		case ch == '\\' && i+1 < len(pattern):
			b.WriteString(regexp.QuoteMeta(string(pattern[i+1])))
			i++
		case ch == '*':
			b.WriteString(".*")
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// eval applies a rule to the state's effective input.
func (r *ChoiceRule) eval(data, ctxObj any) (bool, error) {
	switch {
	case r.And != nil:
		for _, sub := range r.And {
			ok, err := sub.eval(data, ctxObj)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.Or != nil:
		for _, sub := range r.Or {
			ok, err := sub.eval(data, ctxObj)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.Not != nil:
		ok, err := r.Not.eval(data, ctxObj)
		return !ok, err
	}
	if r.Op == "IsPresent" {
		want, _ := r.Value.(bool)
		return r.Variable.has(data, ctxObj) == want, nil
	}
	v, err := r.Variable.get(data, ctxObj)
	if err != nil {
		return false, &StateError{Name: ErrRuntime, Cause: fmt.Sprintf("Invalid path '%s': The choice state's condition path references an invalid value.", r.Variable.Raw)}
	}
	operand := r.Value
	if r.ValuePath != nil {
		operand, err = r.ValuePath.get(data, ctxObj)
		if err != nil {
			return false, &StateError{Name: ErrRuntime, Cause: fmt.Sprintf("Invalid path '%s': The choice state's condition path references an invalid value.", r.ValuePath.Raw)}
		}
	}
	switch r.Op {
	case "IsNull":
		return (v == nil) == operand.(bool), nil
	case "IsNumeric":
		_, isNum := toFloat(v)
		return isNum == operand.(bool), nil
	case "IsString":
		_, isStr := v.(string)
		return isStr == operand.(bool), nil
	case "IsBoolean":
		_, isBool := v.(bool)
		return isBool == operand.(bool), nil
	case "IsTimestamp":
		s, isStr := v.(string)
		isTS := false
		if isStr {
			_, err := parseTimestamp(s)
			isTS = err == nil
		}
		return isTS == operand.(bool), nil
	case "StringMatches":
		s, ok := v.(string)
		return ok && r.match.MatchString(s), nil
	case "BooleanEquals":
		a, ok1 := v.(bool)
		b, ok2 := operand.(bool)
		return ok1 && ok2 && a == b, nil
	}
	kind := comparisonKinds[r.Op]
	cmpOp := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(r.Op, "String"), "Numeric"), "Timestamp")
	var c int
	switch kind {
	case "string":
		a, ok1 := v.(string)
		b, ok2 := operand.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		c = strings.Compare(a, b)
	case "number":
		a, ok1 := toFloat(v)
		b, ok2 := toFloat(operand)
		if !ok1 || !ok2 {
			return false, nil
		}
		c = compareFloat(a, b)
	case "timestamp":
		as, ok1 := v.(string)
		bs, ok2 := operand.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		a, err1 := parseTimestamp(as)
		b, err2 := parseTimestamp(bs)
		if err1 != nil || err2 != nil {
			return false, nil
		}
		c = compareTime(a, b)
	}
	switch cmpOp {
	case "Equals":
		return c == 0, nil
	case "LessThan":
		return c < 0, nil
	case "GreaterThan":
		return c > 0, nil
	case "LessThanEquals":
		return c <= 0, nil
	case "GreaterThanEquals":
		return c >= 0, nil
	}
	return false, fmt.Errorf("unknown operator %s", r.Op)
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareTime(a, b time.Time) int { return a.Compare(b) }
