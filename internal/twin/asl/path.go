package asl

import (
	"fmt"
	"maps"
	"strings"

	"github.com/ohler55/ojg/jp"
)

// Path is a parsed JSONPath as ASL uses it: "$..." selects from the state's
// data, "$$..." from the context object.
type Path struct {
	Raw      string
	Context  bool
	Definite bool // a definite path yields one value; an indefinite one an array
	expr     jp.Expr
	// steps is expr as map keys and array indexes, when it is only those: such a path is
	// walked directly instead of by jp's general evaluator. simple marks that steps is set.
	steps  []pathStep
	simple bool
	// intrinsic is set instead of expr for Fail's ErrorPath/CausePath intrinsic calls.
	intrinsic *intrinsicCall
}

func parsePath(raw string) (*Path, error) {
	if !strings.HasPrefix(raw, "$") {
		return nil, fmt.Errorf("path %q must start with '$'", raw)
	}
	p := &Path{Raw: raw}
	src := raw
	if strings.HasPrefix(raw, "$$") {
		p.Context = true
		src = raw[1:]
	}
	x, err := jp.ParseString(src)
	if err != nil {
		return nil, fmt.Errorf("invalid JSONPath %q: %v", raw, err)
	}
	p.expr = x
	p.Definite = true
	for _, f := range x {
		switch f.(type) {
		case jp.Root, jp.Child, jp.Nth, jp.At:
		case jp.Bracket:
		default:
			p.Definite = false
		}
	}
	p.steps, p.simple = simpleSteps(x)
	return p, nil
}

// pathStep is one map key or array index of a simple path.
type pathStep struct {
	key   string
	index int
	isKey bool
}

// simpleSteps lists a path's keys and indexes when it is a root followed by only those
// (jp.Bracket and jp.At leave the current value as it is, as jp evaluates them; one that
// ends a path would change what a scalar before it yields, so such paths are left to jp).
func simpleSteps(x jp.Expr) ([]pathStep, bool) {
	if len(x) == 0 {
		return nil, false
	}
	if _, ok := x[0].(jp.Root); !ok {
		return nil, false
	}
	if len(x) > 1 {
		switch x[len(x)-1].(type) {
		case jp.Bracket, jp.At:
			return nil, false
		}
	}
	var steps []pathStep
	for _, f := range x[1:] {
		switch tf := f.(type) {
		case jp.Child:
			steps = append(steps, pathStep{key: string(tf), isKey: true})
		case jp.Nth:
			steps = append(steps, pathStep{index: int(tf)})
		case jp.Bracket, jp.At:
		default:
			return nil, false
		}
	}
	return steps, true
}

// walk follows a simple path through the interpreter's generic data. decided is false when
// it meets a container of another type, which only jp knows how to search.
func (p *Path) walk(src any) (v any, found, decided bool) {
	v = src
	for _, st := range p.steps {
		switch c := v.(type) {
		case map[string]any:
			if !st.isKey {
				return nil, false, true
			}
			if v, found = c[st.key]; !found {
				return nil, false, true
			}
		case []any:
			if st.isKey {
				return nil, false, true
			}
			i := st.index
			if i < 0 {
				i += len(c)
			}
			if i < 0 || i >= len(c) {
				return nil, false, true
			}
			v = c[i]
		case nil, bool, string, float64, int64, int:
			// jp stops at a scalar in the middle of a path: nothing is found.
			return nil, false, true
		default:
			return nil, false, false
		}
	}
	return v, true, true
}

// parseReferencePath accepts only paths that name a single node (ResultPath):
// children and indexes, no wildcards, filters or slices.
func parseReferencePath(raw string) (*Path, error) {
	p, err := parsePath(raw)
	if err != nil {
		return nil, err
	}
	if p.Context {
		return nil, fmt.Errorf("reference path %q cannot address the context object", raw)
	}
	if !p.Definite {
		return nil, fmt.Errorf("reference path %q must select a single node", raw)
	}
	return p, nil
}

// errPathNotFound is reported by get when a definite path selects nothing.
type pathNotFoundError struct{ path string }

func (e pathNotFoundError) Error() string {
	return fmt.Sprintf("Invalid path '%s': The JSONPath could not be found in the input", e.path)
}

// get evaluates p against data (or ctxObj for "$$" paths). A definite path that
// selects nothing is an error; an indefinite path returns an array (possibly empty).
func (p *Path) get(data, ctxObj any) (any, error) {
	if p.intrinsic != nil {
		return p.intrinsic.eval(data, ctxObj)
	}
	src := data
	if p.Context {
		src = ctxObj
	}
	if len(p.expr) == 1 {
		if _, ok := p.expr[0].(jp.Root); ok {
			return src, nil
		}
	}
	if p.simple {
		if v, found, decided := p.walk(src); decided {
			if !found {
				return nil, pathNotFoundError{p.Raw}
			}
			return v, nil
		}
	}
	if p.Definite {
		v, ok := p.expr.FirstFound(src)
		if !ok {
			return nil, pathNotFoundError{p.Raw}
		}
		return v, nil
	}
	res := p.expr.Get(src)
	if res == nil {
		res = []any{}
	}
	return res, nil
}

// has reports whether a path selects anything (Choice IsPresent).
func (p *Path) has(data, ctxObj any) bool {
	_, err := p.get(data, ctxObj)
	if err != nil {
		return false
	}
	if !p.Definite {
		v, _ := p.get(data, ctxObj)
		return len(v.([]any)) > 0
	}
	return true
}

// setAt returns a copy of data with v placed at reference path p, creating
// objects along the way, as ResultPath requires.
func setAt(data any, p *Path, v any) (any, error) {
	frags := p.expr
	if len(frags) > 0 {
		if _, ok := frags[0].(jp.Root); ok {
			frags = frags[1:]
		}
	}
	if len(frags) == 0 {
		return v, nil
	}
	return setFrags(data, frags, v, p.Raw)
}

func setFrags(data any, frags jp.Expr, v any, raw string) (any, error) {
	if len(frags) == 0 {
		return v, nil
	}
	switch f := frags[0].(type) {
	case jp.Child:
		var m map[string]any
		switch d := data.(type) {
		case map[string]any:
			// Cloning copies the map's slots as they are, where inserting every key again
			// hashes each: ResultPath copies its input per state transition.
			m = maps.Clone(d)
		case nil:
			m = map[string]any{}
		default:
			return nil, fmt.Errorf("Unable to apply ResultPath '%s' to input: the path crosses a %s, not an object", raw, jsonTypeName(data))
		}
		child, err := setFrags(m[string(f)], frags[1:], v, raw)
		if err != nil {
			return nil, err
		}
		m[string(f)] = child
		return m, nil
	case jp.Nth:
		arr, ok := data.([]any)
		i := int(f)
		if !ok || i < 0 || i >= len(arr) {
			return nil, fmt.Errorf("Unable to apply ResultPath '%s' to input: index %d is out of range", raw, i)
		}
		cp := append([]any(nil), arr...)
		child, err := setFrags(cp[i], frags[1:], v, raw)
		if err != nil {
			return nil, err
		}
		cp[i] = child
		return cp, nil
	default:
		return nil, fmt.Errorf("Unable to apply ResultPath '%s': unsupported path element", raw)
	}
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	default:
		if _, ok := toFloat(v); ok {
			return "number"
		}
		return fmt.Sprintf("%T", v)
	}
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}
