package awsgate

import (
	"unicode/utf8"

	"github.com/seatsaga/seatsaga/internal/deploy"
)

// AnyResource is the resource of actions AWS authorizes on no particular resource
// (dynamodb:ListTables, dynamodb:ListStreams).
const AnyResource = "*"

// UnknownTaskToken is the resource of SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat
// with a task token the gate cannot resolve to the state machine that issued it: malformed,
// never issued, or forgotten by the engine. AWS answers such a call InvalidToken or
// TaskDoesNotExist, not AccessDenied, to a caller allowed the action on some state machine,
// so a statement allows a request on UnknownTaskToken when it allows the request's action on
// any resource at all; the call then goes on and the engine answers its own error. It is no
// ARN and no pattern can be written for it: a caller with no statement for the action is
// denied.
const UnknownTaskToken = "(unknown task token)"

// Request is one question a call puts to IAM: may the caller perform Action on Resource?
type Request struct {
	// Action is an IAM action, e.g. "dynamodb:GetItem".
	Action string
	// Resource is an ARN, AnyResource or UnknownTaskToken.
	Resource string
}

// Allowed reports whether one of the statements allows r: one of its actions matches
// r.Action, compared case-insensitively as IAM compares actions, and one of its resources
// matches r.Resource, case-sensitively (for UnknownTaskToken, any resource does). Both may
// use IAM's wildcards, as wildcardMatch describes. A request on AnyResource is therefore
// allowed only by a statement on "*".
func Allowed(statements []deploy.Statement, r Request) bool {
	for _, st := range statements {
		if !matchesAny(st.Actions, r.Action, true) {
			continue
		}
		if r.Resource == UnknownTaskToken {
			if len(st.Resources) > 0 {
				return true
			}
			continue
		}
		if matchesAny(st.Resources, r.Resource, false) {
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

// wildcardMatch matches s against pattern as IAM matches an Action or Resource element
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html,
// "Using wildcards in resource ARNs"): * matches any run of characters, none included, and ?
// exactly one character. Neither stops at ARN separators: * matches across '/' within a
// segment and, as the last character of a segment, beyond ':' (so "arn:aws:dynamodb:*"
// matches every DynamoDB ARN and "...:execution:<machine>:*" every execution of the machine);
// ? matches ':' or '/' like any other character. The gate matches the whole ARN as one glob.
// For a * that ends a segment or sits in the last one (every pattern internal/deploy writes)
// that is exactly the documented behaviour; for a * inside an earlier segment, which the
// documentation does not promise to cross ':', the gate is the more permissive. Characters
// are UTF-8 code points, so ? matches one multi-byte character, not one byte.
//
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
			case c == '?':
				p++
				i += runeLen(s[i:])
				continue
			case sameByte(c, s[i], foldCase):
				p++
				i++
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last * swallow one more character and retry from there.
		resume += runeLen(s[resume:])
		p, i = star+1, resume
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// runeLen is the length in bytes of the character s opens with (1 for a byte that opens no
// valid UTF-8 sequence); s is not empty.
func runeLen(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	return n
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
