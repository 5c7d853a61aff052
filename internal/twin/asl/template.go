package asl

import (
	"fmt"
	"sort"
	"strings"
)

// template is a compiled payload template (Parameters, ResultSelector,
// ItemSelector): fields whose names end in ".$" take their value from a path
// or an intrinsic function call at run time.
type template struct {
	root tnode
	// context says that some path or intrinsic call in the template reads the context object.
	context bool
}

type tnode interface {
	eval(data, ctxObj any) (any, error)
}

type tliteral struct{ v any }

func (t tliteral) eval(_, _ any) (any, error) { return t.v, nil }

type tfield struct {
	key  string
	node tnode
}

type tobject struct{ fields []tfield }

func (t tobject) eval(data, ctxObj any) (any, error) {
	out := make(map[string]any, len(t.fields))
	for _, f := range t.fields {
		v, err := f.node.eval(data, ctxObj)
		if err != nil {
			return nil, err
		}
		out[f.key] = v
	}
	return out, nil
}

type tarray struct{ items []tnode }

func (t tarray) eval(data, ctxObj any) (any, error) {
	out := make([]any, len(t.items))
	for i, it := range t.items {
		v, err := it.eval(data, ctxObj)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

type tpath struct {
	key  string
	path *Path
}

func (t tpath) eval(data, ctxObj any) (any, error) {
	v, err := t.path.get(data, ctxObj)
	if err != nil {
		return nil, &StateError{Name: ErrRuntime, Cause: fmt.Sprintf("The JSONPath '%s' specified for the field '%s.$' could not be found in the input", t.path.Raw, t.key)}
	}
	return v, nil
}

type tcall struct {
	key  string
	call *intrinsicCall
}

func (t tcall) eval(data, ctxObj any) (any, error) {
	v, err := t.call.eval(data, ctxObj)
	if err != nil {
		return nil, &StateError{Name: ErrIntrinsicFailure, Cause: fmt.Sprintf("The evaluation of the intrinsic function for the field '%s.$' failed: %v", t.key, err)}
	}
	return v, nil
}

func compileTemplate(v any) (*template, error) {
	n, err := compileNode(v)
	if err != nil {
		return nil, err
	}
	return &template{root: n, context: nodeUsesContext(n)}, nil
}

func compileNode(v any) (tnode, error) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		obj := tobject{}
		for _, k := range keys {
			val := x[k]
			if strings.HasSuffix(k, ".$") {
				name := strings.TrimSuffix(k, ".$")
				s, ok := val.(string)
				if !ok {
					return nil, fmt.Errorf("the value of field '%s' must be a path or an intrinsic function", k)
				}
				if strings.HasPrefix(s, "States.") {
					call, err := parseIntrinsic(s)
					if err != nil {
						return nil, fmt.Errorf("field '%s': %v", k, err)
					}
					obj.fields = append(obj.fields, tfield{name, tcall{name, call}})
					continue
				}
				p, err := parsePath(s)
				if err != nil {
					return nil, fmt.Errorf("field '%s': %v", k, err)
				}
				obj.fields = append(obj.fields, tfield{name, tpath{name, p}})
				continue
			}
			child, err := compileNode(val)
			if err != nil {
				return nil, err
			}
			obj.fields = append(obj.fields, tfield{k, child})
		}
		return obj, nil
	case []any:
		arr := tarray{}
		for _, it := range x {
			child, err := compileNode(it)
			if err != nil {
				return nil, err
			}
			arr.items = append(arr.items, child)
		}
		return arr, nil
	default:
		return tliteral{v}, nil
	}
}

func (t *template) eval(data, ctxObj any) (any, error) { return t.root.eval(data, ctxObj) }
