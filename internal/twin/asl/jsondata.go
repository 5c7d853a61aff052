package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// The interpreter renders state data as JSON several times per state transition (history
// events, payload limits, Lambda payloads). encoding/json does that by reflection, sorting
// map keys through reflect values; appendData writes the interpreter's generic form
// (map[string]any, []any, strings, numbers, booleans, nil) directly, byte for byte as
// MarshalData renders it, and hands any other type to encoding/json.

// maxDataDepth is where appendData stops and lets encoding/json decide, which starts its
// cycle detection at the same depth.
const maxDataDepth = 1000

var dataBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// renderData renders v into a pooled buffer, which the caller hands back to releaseData.
func renderData(v any) (buf *[]byte, b []byte, ok bool) {
	buf = dataBufPool.Get().(*[]byte)
	b, ok = appendData((*buf)[:0], v, 0)
	return buf, b, ok
}

func releaseData(buf *[]byte, b []byte) {
	// Very large buffers are not kept, so that one large payload does not pin its memory.
	if cap(b) <= 64*1024 {
		*buf = b[:0]
		dataBufPool.Put(buf)
	}
}

// marshalDataString is string(MarshalData(v)), with one allocation: the result.
func marshalDataString(v any) string {
	buf, b, ok := renderData(v)
	defer releaseData(buf, b)
	if !ok {
		return "null"
	}
	return string(b)
}

// marshalData is MarshalData(v), with one allocation: the result.
func marshalData(v any) []byte {
	buf, b, ok := renderData(v)
	defer releaseData(buf, b)
	if !ok {
		return []byte("null")
	}
	return bytes.Clone(b)
}

// appendData appends v's JSON to dst; ok is false where MarshalData fails (NaN, infinities
// or a value encoding/json rejects), for which MarshalData renders the whole value as null.
func appendData(dst []byte, v any, depth int) (out []byte, ok bool) {
	if depth > maxDataDepth {
		return appendByEncodingJSON(dst, v)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendQuoted(dst, x), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case float64:
		return appendFloat(dst, x)
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		return appendObject(dst, x, depth)
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, item := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendData(dst, item, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	default:
		return appendByEncodingJSON(dst, v)
	}
}

// smallObject is the number of keys sorted in a stack array rather than a heap slice.
const smallObject = 16

func appendObject(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	var arr [smallObject]string
	keys := arr[:0]
	if len(m) > smallObject {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	var ok bool
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, k)
		dst = append(dst, ':')
		if dst, ok = appendData(dst, m[k], depth+1); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendFloat formats a number as encoding/json does: like ES6's number to string, 'f'
// notation between 1e-6 and 1e21 and 'e' notation outside, with a one-digit exponent
// where one suffices.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

const hexDigits = "0123456789abcdef"

// appendQuoted quotes a string as encoding/json does without HTML escaping: control
// characters, quotes and backslashes escaped, invalid UTF-8 replaced by U+FFFD, and U+2028
// and U+2029 escaped.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendByEncodingJSON renders a value of a type appendData does not know as MarshalData does.
func appendByEncodingJSON(dst []byte, v any) ([]byte, bool) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, false
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), true
}

// parseData is ParseData. Plain JSON (ASCII strings without \u escapes, numbers of modest
// precision) is parsed here, into the values ojg gives; anything else, errors included, is
// left to ojg, so that what ParseData accepts, returns and reports is unchanged.
func parseData(b []byte) (any, error) {
	if v, ok := parsePlainJSON(b); ok {
		return v, nil
	}
	return parseOther(b)
}

func parseOther(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}, nil
	}
	return ojParse(b)
}

// parseDataJSON is parseData that also returns the value's JSON as marshalDataString renders
// it, when the text tells it: plain JSON whose objects list their keys in order, once each, and
// whose strings and numbers are written as marshalData writes them is that JSON once the
// whitespace between tokens is dropped. Otherwise the JSON is empty, for the caller to render.
func parseDataJSON(b []byte) (v any, js string, err error) {
	p := plainParser{b: b}
	if v, ok := p.parse(); ok {
		switch {
		case p.nonCanonical:
		case !p.spaced:
			js = string(b)
		default:
			js = compactJSON(b)
		}
		return v, js, nil
	}
	v, err = parseOther(b)
	return v, "", err
}

// compactJSON drops the whitespace between the tokens of valid JSON.
func compactJSON(b []byte) string {
	buf := dataBufPool.Get().(*[]byte)
	out := (*buf)[:0]
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			out = append(out, c)
			if c == '\\' {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			inString = c == '"'
			out = append(out, c)
		}
	}
	js := string(out)
	releaseData(buf, out)
	return js
}

// plainParser reads the subset of JSON that parsePlainJSON accepts. Its methods report ok
// false on anything outside the subset, valid JSON or not.
type plainParser struct {
	b   []byte
	i   int
	buf []byte // unescaped string bytes
	// spaced says that whitespace was skipped; nonCanonical that a token is written other than
	// as marshalData writes it (an escaped '/', a number with an exponent or a fraction, -0), or
	// that an object's keys are out of order or repeated.
	spaced, nonCanonical bool
}

// maxPlainDepth bounds the nesting parsePlainJSON recurses into.
const maxPlainDepth = 200

// parsePlainJSON parses one JSON value surrounded by optional whitespace.
func parsePlainJSON(b []byte) (any, bool) {
	p := plainParser{b: b}
	return p.parse()
}

func (p *plainParser) parse() (any, bool) {
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.b)
}

func (p *plainParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
			p.spaced = true
		default:
			return
		}
	}
}

func (p *plainParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > maxPlainDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		if s, ok := p.str(); ok {
			return s, true
		}
		return nil, false
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *plainParser) literal(word string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

func (p *plainParser) object(depth int) (any, bool) {
	p.i++ // '{'
	m := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, true
	}
	prev, first := "", true
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		if !first && key <= prev {
			p.nonCanonical = true // marshalData writes keys sorted, once each
		}
		prev, first = key, false
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[key] = v // a repeated key keeps its last value, as in ojg
		if done, ok := p.after('}'); !ok {
			return nil, false
		} else if done {
			return m, true
		}
	}
}

func (p *plainParser) array(depth int) (any, bool) {
	p.i++ // '['
	arr := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		if done, ok := p.after(']'); !ok {
			return nil, false
		} else if done {
			return arr, true
		}
	}
}

// after reads what follows a member of an object or array: a comma (another member comes) or
// the closing byte (done); anything else is outside the subset.
func (p *plainParser) after(closing byte) (done, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		p.space()
		return false, true
	case closing:
		p.i++
		return true, true
	}
	return false, false
}

// str reads a string of printable ASCII with the escapes that name one such character or
// a control character; \u escapes and other bytes are outside the subset.
func (p *plainParser) str() (string, bool) {
	p.i++ // '"'
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20 || c >= 0x7f:
			return "", false
		}
		p.i++
	}
	return "", false
}

func (p *plainParser) escapedStr(start int) (string, bool) {
	p.buf = append(p.buf[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(p.buf), true
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", false
			}
			var r byte
			switch p.b[p.i+1] {
			case '/':
				r = '/'
				p.nonCanonical = true // marshalData writes '/' unescaped
			case '"', '\\':
				r = p.b[p.i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default:
				return "", false
			}
			p.buf = append(p.buf, r)
			p.i += 2
			continue
		case c < 0x20 || c >= 0x7f:
			return "", false
		}
		p.buf = append(p.buf, c)
		p.i++
	}
	return "", false
}

// number reads a JSON number whose digits ojg keeps in 64-bit integers, and converts it as
// ojg does: digits without a fraction and with a zero or no exponent become an int64, any
// other number a float64 parsed from its text. Longer numbers, which ojg turns into
// json.Number, and forms ojg rejects or reads leniently, are outside the subset.
func (p *plainParser) number() (any, bool) {
	start := p.i
	neg := false
	if p.b[p.i] == '-' {
		neg = true
		p.i++
	}
	intStart := p.i
	intDigits := p.digits()
	if intDigits == 0 || intDigits > 18 || (intDigits > 1 && p.b[intStart] == '0') {
		return nil, false
	}
	intEnd := p.i
	fraction := false
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if n := p.digits(); n == 0 || n > 17 {
			return nil, false
		}
		fraction = true
	}
	exp := 0
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		if !fraction && p.b[intStart] == '0' {
			return nil, false // ojg rejects an exponent right after a leading 0
		}
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		expStart := p.i
		if n := p.digits(); n == 0 || n > 3 {
			return nil, false
		}
		for _, c := range p.b[expStart:p.i] {
			exp = exp*10 + int(c-'0')
		}
	}
	if fraction || p.i > intEnd || (neg && p.b[intStart] == '0') {
		p.nonCanonical = true // marshalData writes an int64 as its digits, and -0 as 0
	}
	if !fraction && exp == 0 {
		var n int64
		for _, c := range p.b[intStart:intEnd] {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, true
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, false
	}
	return f, true
}

// digits skips decimal digits and returns how many there were.
func (p *plainParser) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
