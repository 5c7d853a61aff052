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
	// direct says that the template's value can be rendered as JSON without building it
	// (appendJSON): no object in it has two fields of one name, of which eval keeps the last.
	direct bool
	// readsText says that the template can read its data from JSON text (evalText): each of
	// its paths is a simple one or reads the context object, and it calls no intrinsic.
	readsText bool
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

type tobject struct {
	fields []tfield
	// order lists the fields by name, the order in which their JSON is written.
	order []int
}

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
		return nil, t.notFound()
	}
	return v, nil
}

func (t tpath) notFound() *StateError {
	return &StateError{Name: ErrRuntime, Cause: fmt.Sprintf("The JSONPath '%s' specified for the field '%s.$' could not be found in the input", t.path.Raw, t.key)}
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
	return &template{root: n, context: nodeUsesContext(n), direct: distinctFields(n), readsText: textPaths(n)}, nil
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
		obj.order = make([]int, len(obj.fields))
		for i := range obj.order {
			obj.order[i] = i
		}
		sort.SliceStable(obj.order, func(i, j int) bool { return obj.fields[obj.order[i]].key < obj.fields[obj.order[j]].key })
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

// distinctFields reports whether no object in a compiled template has two fields of one name
// ("a" and "a.$" both name a).
func distinctFields(n tnode) bool {
	switch x := n.(type) {
	case tobject:
		for i, f := range x.order {
			if i > 0 && x.fields[x.order[i-1]].key == x.fields[f].key {
				return false
			}
		}
		for _, f := range x.fields {
			if !distinctFields(f.node) {
				return false
			}
		}
	case tarray:
		for _, it := range x.items {
			if !distinctFields(it) {
				return false
			}
		}
	}
	return true
}

// renderJSON returns the JSON of the template's value for data and ctxObj, as
// marshalDataString(eval(data, ctxObj)) renders it, without building the value, for a caller
// that needs only its JSON. ok is false when the template is not direct, or a path or call in
// it fails, or a value cannot be rendered: the caller then evaluates the template, which
// reports the failure as it always has (a random intrinsic evaluated twice is observed once).
func (t *template) renderJSON(data, ctxObj any) (string, bool) {
	if !t.direct {
		return "", false
	}
	buf := dataBufPool.Get().(*[]byte)
	b, ok := appendNodeJSON((*buf)[:0], t.root, data, ctxObj, 0)
	var out string
	if ok {
		out = string(b)
	}
	releaseData(buf, b)
	return out, ok
}

// appendNodeJSON appends a template node's value at depth as appendData would append it.
func appendNodeJSON(dst []byte, n tnode, data, ctxObj any, depth int) ([]byte, bool) {
	if depth > maxDataDepth {
		return dst, false
	}
	var ok bool
	switch x := n.(type) {
	case tobject:
		dst = append(dst, '{')
		for i, fi := range x.order {
			if i > 0 {
				dst = append(dst, ',')
			}
			f := x.fields[fi]
			dst = appendQuoted(dst, f.key)
			dst = append(dst, ':')
			if dst, ok = appendNodeJSON(dst, f.node, data, ctxObj, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case tarray:
		dst = append(dst, '[')
		for i, it := range x.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendNodeJSON(dst, it, data, ctxObj, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case tliteral:
		return appendData(dst, x.v, depth)
	}
	v, err := n.eval(data, ctxObj)
	if err != nil {
		return dst, false
	}
	return appendData(dst, v, depth)
}

// textPaths reports whether every path in a compiled template can read JSON text: it is a
// simple path, or reads the context object; a template that calls an intrinsic cannot.
func textPaths(n tnode) bool {
	switch x := n.(type) {
	case tobject:
		for _, f := range x.fields {
			if !textPaths(f.node) {
				return false
			}
		}
	case tarray:
		for _, it := range x.items {
			if !textPaths(it) {
				return false
			}
		}
	case tpath:
		return x.path.Context || (x.path.simple && x.path.intrinsic == nil)
	case tcall:
		return false
	}
	return true
}

func (t *template) textOK() bool { return t != nil && t.readsText }

// evalText is eval with data given as JSON text that isCanonicalJSON accepts: each path
// parses only the value it selects. The caller checked textOK.
func (t *template) evalText(text string, ctxObj any) (any, error) {
	return evalNodeText(t.root, textBytes(text), ctxObj)
}

func evalNodeText(n tnode, b []byte, ctxObj any) (any, error) {
	switch x := n.(type) {
	case tobject:
		out := make(map[string]any, len(x.fields))
		for _, f := range x.fields {
			v, err := evalNodeText(f.node, b, ctxObj)
			if err != nil {
				return nil, err
			}
			out[f.key] = v
		}
		return out, nil
	case tarray:
		out := make([]any, len(x.items))
		for i, it := range x.items {
			v, err := evalNodeText(it, b, ctxObj)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case tpath:
		if x.path.Context {
			return x.eval(nil, ctxObj)
		}
		v, found := walkText(b, x.path.steps)
		if !found {
			return nil, x.notFound()
		}
		return v, nil
	}
	return n.eval(nil, ctxObj) // a literal
}
