package asl

import "time"

// Building the context object ($$) costs two maps and a formatted time per state; most
// states never read it. contextFor builds it only for states whose paths, templates or
// choice rules refer to it: the others run with a nil context object, which nothing reads.

// contextFor returns the context object for an attempt at s, or nil when s never reads it.
func (t *thread) contextFor(s *State, entered time.Time, retries int) map[string]any {
	if !stateUsesContext(s) {
		return nil
	}
	return t.ctxObject(s, entered, retries)
}

// stateUsesContext reports whether any of s's fields that are evaluated against the context
// object refers to it. TestContextAnalysisCoversEveryEvaluatedField keeps this list whole.
func stateUsesContext(s *State) bool {
	for _, p := range [...]optPath{s.InputPath, s.OutputPath, s.ResultPath, s.ItemsPath} {
		if p.Path.usesContext() {
			return true
		}
	}
	for _, tm := range [...]*template{s.Parameters, s.ItemSelector, s.ResultSelector} {
		if tm.usesContext() {
			return true
		}
	}
	for _, p := range [...]*Path{s.TimeoutSecondsPath, s.HeartbeatSecondsPath, s.SecondsPath, s.TimestampPath, s.ErrorPath, s.CausePath} {
		if p.usesContext() {
			return true
		}
	}
	for _, r := range s.Choices {
		if r.usesContext() {
			return true
		}
	}
	for _, c := range s.Catch {
		if c.ResultPath.Path.usesContext() {
			return true
		}
	}
	return false
}

// usesContext reports whether evaluating p reads the context object.
func (p *Path) usesContext() bool {
	return p != nil && (p.Context || p.intrinsic.usesContext())
}

func (c *intrinsicCall) usesContext() bool {
	if c == nil {
		return false
	}
	for _, a := range c.args {
		if a.path.usesContext() || a.call.usesContext() {
			return true
		}
	}
	return false
}

func (r *ChoiceRule) usesContext() bool {
	if r == nil {
		return false
	}
	if r.Variable.usesContext() || r.ValuePath.usesContext() || r.Not.usesContext() {
		return true
	}
	for _, rules := range [...][]*ChoiceRule{r.And, r.Or} {
		for _, sub := range rules {
			if sub.usesContext() {
				return true
			}
		}
	}
	return false
}

func (tm *template) usesContext() bool { return tm != nil && tm.context }

// nodeUsesContext reports whether a compiled template node reads the context object.
func nodeUsesContext(n tnode) bool {
	switch x := n.(type) {
	case tobject:
		for _, f := range x.fields {
			if nodeUsesContext(f.node) {
				return true
			}
		}
	case tarray:
		for _, it := range x.items {
			if nodeUsesContext(it) {
				return true
			}
		}
	case tpath:
		return x.path.usesContext()
	case tcall:
		return x.call.usesContext()
	}
	return false
}
