package awsgate

import "github.com/seatsaga/seatsaga/internal/deploy"

// AnyResource is the resource of actions AWS authorizes on no particular resource
// (dynamodb:ListTables, dynamodb:ListStreams), and of calls whose resource the gate cannot
// work out (a task token it does not know).
const AnyResource = "*"

// Request is one question a call puts to IAM: may the caller perform Action on Resource?
type Request struct {
	// Action is an IAM action, e.g. "dynamodb:GetItem".
	Action string
	// Resource is an ARN, or AnyResource.
	Resource string
}

// Allowed reports whether one of the statements allows r: one of its actions matches
// r.Action, compared case-insensitively as IAM compares actions, and one of its resources
// matches r.Resource, case-sensitively. Both may use IAM's wildcards: * matches any run of
// characters (none included, ':' and '/' included) and ? any one character. A request on
// AnyResource is therefore allowed only by a statement on "*".
func Allowed(statements []deploy.Statement, r Request) bool {
	for _, st := range statements {
		if matchesAny(st.Actions, r.Action, true) && matchesAny(st.Resources, r.Resource, false) {
			return true
		}
	}
	return false
}

func matchesAny(patterns []string, s string, foldCase bool) bool {
	for _, p := range patterns {
		if wildcardMatch(p, s, foldCase) {
			return true
		}
	}
	return false
}

// wildcardMatch matches s against pattern, where * matches any run of bytes and ? one byte.
// It backtracks only to the last *, so it runs in O(len(pattern)·len(s)) at worst.
func wildcardMatch(pattern, s string, foldCase bool) bool {
	p, i := 0, 0
	star, resume := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch c := pattern[p]; {
			case c == '*':
				star, resume = p, i
				p++
				continue
			case c == '?' || sameByte(c, s[i], foldCase):
				p++
				i++
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last * swallow one more byte and retry from there.
		resume++
		p, i = star+1, resume
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func sameByte(a, b byte, foldCase bool) bool {
	if a == b {
		return true
	}
	return foldCase && lower(a) == lower(b)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
