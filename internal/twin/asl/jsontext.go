package asl

import (
	"bytes"
	"unsafe"
)

// A Lambda function's result is JSON text, which a task's ResultSelector usually picks a few
// fields from. Parsing the whole result to pick them builds maps that are dropped at once;
// when the result is written as marshalData writes JSON, the fields are found in the text
// and only they are parsed.

// resultText is a task result kept as its JSON text, written as marshalData writes it.
type resultText string

// isCanonicalJSON reports whether b is plain JSON (as parsePlainJSON reads it) written exactly
// as marshalData writes its value: no whitespace, object keys in order and once each, numbers
// as int64 digits. Keys with escapes are refused, so that a key is its text.
func isCanonicalJSON(b []byte) bool {
	s := canonicalScanner{b: b}
	return s.value(0) && s.i == len(b)
}

type canonicalScanner struct {
	b []byte
	i int
}

func (s *canonicalScanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxPlainDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return true
		}
		var prev []byte
		for first := true; ; first = false {
			key, ok := s.key()
			if !ok || (!first && bytes.Compare(key, prev) <= 0) || s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			prev = key
			s.i++
			if !s.value(depth + 1) {
				return false
			}
			if done, ok := s.after('}'); !ok {
				return false
			} else if done {
				return true
			}
		}
	case c == '[':
		s.i++
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !s.value(depth + 1) {
				return false
			}
			if done, ok := s.after(']'); !ok {
				return false
			} else if done {
				return true
			}
		}
	case c == '"':
		return s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *canonicalScanner) after(closing byte) (done, ok bool) {
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, true
	case closing:
		s.i++
		return true, true
	}
	return false, false
}

func (s *canonicalScanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// key reads an object key of printable ASCII without escapes.
func (s *canonicalScanner) key() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for s.i = start; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string of printable ASCII whose escapes are those marshalData writes.
func (s *canonicalScanner) str() bool {
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				s.i++
			default:
				return false
			}
		case c < 0x20 || c >= 0x7f:
			return false
		}
	}
	return false
}

// number reads an int64 as marshalData writes it: up to 18 digits, no leading zero, no -0. A
// fraction or exponent after it is refused by what reads on: it is no delimiter.
func (s *canonicalScanner) number() bool {
	neg := s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - start
	return n > 0 && n <= 18 && (s.b[start] != '0' || (n == 1 && !neg))
}

// skip moves past the value at s.i of text isCanonicalJSON accepted.
func (s *canonicalScanner) skip() {
	s.value(0)
}

// walkText is Path.walk over the value canonical JSON text b holds, parsing only the value
// the path selects.
func walkText(b []byte, steps []pathStep) (any, bool) {
	s := canonicalScanner{b: b}
	for _, st := range steps {
		switch b[s.i] {
		case '{':
			if !st.isKey || !s.findKey(st.key) {
				return nil, false
			}
		case '[':
			if st.isKey || !s.findIndex(st.index) {
				return nil, false
			}
		default:
			return nil, false // a scalar in the middle of a path: nothing is found
		}
	}
	p := plainParser{b: b, i: s.i}
	return p.value(0)
}

// findKey moves from an object's '{' to the value of its member key.
func (s *canonicalScanner) findKey(key string) bool {
	s.i++
	if s.b[s.i] == '}' {
		return false
	}
	for {
		k, _ := s.key()
		s.i++ // ':'
		switch c := bytes.Compare(k, textBytes(key)); {
		case c == 0:
			return true
		case c > 0:
			return false // keys are in order: key is not among the rest
		}
		s.skip()
		if s.b[s.i] == '}' {
			return false
		}
		s.i++ // ','
	}
}

// findIndex moves from an array's '[' to its element i, counted from the end when negative.
func (s *canonicalScanner) findIndex(i int) bool {
	start := s.i
	if i < 0 {
		i += s.count()
		s.i = start
	}
	if i < 0 {
		return false
	}
	s.i++
	if s.b[s.i] == ']' {
		return false
	}
	for ; i > 0; i-- {
		s.skip()
		if s.b[s.i] == ']' {
			return false
		}
		s.i++ // ','
	}
	return true
}

// count returns the number of elements of the array at s.i.
func (s *canonicalScanner) count() int {
	s.i++
	if s.b[s.i] == ']' {
		return 0
	}
	n := 1
	for {
		s.skip()
		if s.b[s.i] == ']' {
			return n
		}
		s.i++
		n++
	}
}

// textBytes views a string's bytes for reading, without copying them: the scanners and the
// parser only read what they are given.
func textBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
