package asl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// intrinsicCall is a parsed States.* function call.
type intrinsicCall struct {
	name string
	args []intrinsicArg
}

type intrinsicArg struct {
	literal   any
	isLiteral bool
	rawString string // a string literal as written, escapes kept (for States.Format)
	isString  bool
	path      *Path
	call      *intrinsicCall
}

var intrinsicArity = map[string][2]int{ // min, max (-1: unbounded)
	"States.Format":         {1, -1},
	"States.StringToJson":   {1, 1},
	"States.JsonToString":   {1, 1},
	"States.Array":          {0, -1},
	"States.ArrayPartition": {2, 2},
	"States.ArrayContains":  {2, 2},
	"States.ArrayRange":     {3, 3},
	"States.ArrayGetItem":   {2, 2},
	"States.ArrayLength":    {1, 1},
	"States.ArrayUnique":    {1, 1},
	"States.Base64Encode":   {1, 1},
	"States.Base64Decode":   {1, 1},
	"States.Hash":           {2, 2},
	"States.JsonMerge":      {3, 3},
	"States.MathRandom":     {2, 3},
	"States.MathAdd":        {2, 2},
	"States.StringSplit":    {2, 2},
	"States.UUID":           {0, 0},
}

func parseIntrinsic(s string) (*intrinsicCall, error) {
	ip := &intrinsicParser{src: s}
	call, err := ip.call()
	if err != nil {
		return nil, fmt.Errorf("invalid intrinsic function %q: %v", s, err)
	}
	ip.skipSpace()
	if ip.pos != len(ip.src) {
		return nil, fmt.Errorf("invalid intrinsic function %q: unexpected text after the call", s)
	}
	return call, nil
}

type intrinsicParser struct {
	src string
	pos int
}

func (ip *intrinsicParser) skipSpace() {
	for ip.pos < len(ip.src) && (ip.src[ip.pos] == ' ' || ip.src[ip.pos] == '\t' || ip.src[ip.pos] == '\n') {
		ip.pos++
	}
}

func (ip *intrinsicParser) call() (*intrinsicCall, error) {
	ip.skipSpace()
	open := strings.IndexByte(ip.src[ip.pos:], '(')
	if open < 0 {
		return nil, fmt.Errorf("missing '('")
	}
	name := strings.TrimSpace(ip.src[ip.pos : ip.pos+open])
	arity, ok := intrinsicArity[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s", name)
	}
	ip.pos += open + 1
	c := &intrinsicCall{name: name}
	ip.skipSpace()
	if ip.pos < len(ip.src) && ip.src[ip.pos] == ')' {
		ip.pos++
	} else {
		for {
			arg, err := ip.arg()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, arg)
			ip.skipSpace()
			if ip.pos >= len(ip.src) {
				return nil, fmt.Errorf("missing ')'")
			}
			if ip.src[ip.pos] == ',' {
				ip.pos++
				continue
			}
			if ip.src[ip.pos] == ')' {
				ip.pos++
				break
			}
			return nil, fmt.Errorf("unexpected %q at %d", ip.src[ip.pos], ip.pos)
		}
	}
	if len(c.args) < arity[0] || (arity[1] >= 0 && len(c.args) > arity[1]) {
		return nil, fmt.Errorf("%s takes %d to %d arguments, got %d", name, arity[0], arity[1], len(c.args))
	}
	return c, nil
}

func (ip *intrinsicParser) arg() (intrinsicArg, error) {
	ip.skipSpace()
	if ip.pos >= len(ip.src) {
		return intrinsicArg{}, fmt.Errorf("missing argument")
	}
	rest := ip.src[ip.pos:]
	switch {
	case rest[0] == '\'':
		var raw, val strings.Builder
		i := 1
		for ; i < len(rest); i++ {
			ch := rest[i]
			if ch == '\\' && i+1 < len(rest) {
				raw.WriteByte(ch)
				raw.WriteByte(rest[i+1])
				val.WriteByte(rest[i+1])
				i++
				continue
			}
			if ch == '\'' {
				break
			}
			raw.WriteByte(ch)
			val.WriteByte(ch)
		}
		if i >= len(rest) {
			return intrinsicArg{}, fmt.Errorf("unterminated string")
		}
		ip.pos += i + 1
		return intrinsicArg{literal: val.String(), isLiteral: true, isString: true, rawString: raw.String()}, nil
	case rest[0] == '$':
		depth, quote := 0, byte(0)
		i := 0
		for ; i < len(rest); i++ {
			ch := rest[i]
			if quote != 0 {
				if ch == quote {
					quote = 0
				}
				continue
			}
			if ch == '\'' || ch == '"' {
				quote = ch
			} else if ch == '[' || ch == '(' {
				depth++
			} else if ch == ']' || ch == ')' {
				if depth == 0 {
					break
				}
				depth--
			} else if ch == ',' && depth == 0 {
				break
			}
		}
		p, err := parsePath(strings.TrimSpace(rest[:i]))
		if err != nil {
			return intrinsicArg{}, err
		}
		ip.pos += i
		return intrinsicArg{path: p}, nil
	case strings.HasPrefix(rest, "States."):
		c, err := ip.call()
		if err != nil {
			return intrinsicArg{}, err
		}
		return intrinsicArg{call: c}, nil
	default:
		i := 0
		for i < len(rest) && rest[i] != ',' && rest[i] != ')' {
			i++
		}
		tok := strings.TrimSpace(rest[:i])
		ip.pos += i
		switch tok {
		case "true":
			return intrinsicArg{literal: true, isLiteral: true}, nil
		case "false":
			return intrinsicArg{literal: false, isLiteral: true}, nil
		case "null":
			return intrinsicArg{literal: nil, isLiteral: true}, nil
		}
		if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
			return intrinsicArg{literal: n, isLiteral: true}, nil
		}
		if f, err := strconv.ParseFloat(tok, 64); err == nil {
			return intrinsicArg{literal: f, isLiteral: true}, nil
		}
		return intrinsicArg{}, fmt.Errorf("cannot parse argument %q", tok)
	}
}

func (a intrinsicArg) value(data, ctxObj any) (any, error) {
	switch {
	case a.isLiteral:
		return a.literal, nil
	case a.path != nil:
		return a.path.get(data, ctxObj)
	default:
		return a.call.eval(data, ctxObj)
	}
}

func (c *intrinsicCall) eval(data, ctxObj any) (any, error) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		v, err := a.value(data, ctxObj)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch c.name {
	case "States.Format":
		return c.format(args)
	case "States.StringToJson":
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("StringToJson needs a string")
		}
		v, err := parseData([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("StringToJson: %v", err)
		}
		return v, nil
	case "States.JsonToString":
		return marshalDataString(args[0]), nil
	case "States.Array":
		return args, nil
	case "States.ArrayPartition":
		arr, ok1 := args[0].([]any)
		n, ok2 := asInt(args[1])
		if !ok1 || !ok2 || n < 1 {
			return nil, fmt.Errorf("ArrayPartition needs an array and a positive chunk size")
		}
		out := []any{}
		for i := 0; i < len(arr); i += n {
			out = append(out, append([]any(nil), arr[i:min(i+n, len(arr))]...))
		}
		return out, nil
	case "States.ArrayContains":
		arr, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("ArrayContains needs an array")
		}
		for _, v := range arr {
			if jsonEqual(v, args[1]) {
				return true, nil
			}
		}
		return false, nil
	case "States.ArrayRange":
		first, ok1 := asInt(args[0])
		last, ok2 := asInt(args[1])
		step, ok3 := asInt(args[2])
		if !ok1 || !ok2 || !ok3 || step == 0 {
			return nil, fmt.Errorf("ArrayRange needs integer bounds and a non-zero step")
		}
		out := []any{}
		for i := first; (step > 0 && i <= last) || (step < 0 && i >= last); i += step {
			out = append(out, int64(i))
			if len(out) > 1000 {
				return nil, fmt.Errorf("ArrayRange result exceeds 1000 items")
			}
		}
		return out, nil
	case "States.ArrayGetItem":
		arr, ok1 := args[0].([]any)
		i, ok2 := asInt(args[1])
		if !ok1 || !ok2 || i < 0 || i >= len(arr) {
			return nil, fmt.Errorf("ArrayGetItem index out of range")
		}
		return arr[i], nil
	case "States.ArrayLength":
		arr, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("ArrayLength needs an array")
		}
		return int64(len(arr)), nil
	case "States.ArrayUnique":
		arr, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("ArrayUnique needs an array")
		}
		out := []any{}
		for _, v := range arr {
			dup := false
			for _, o := range out {
				if jsonEqual(o, v) {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, v)
			}
		}
		return out, nil
	case "States.Base64Encode":
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("Base64Encode needs a string")
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "States.Base64Decode":
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("Base64Decode needs a string")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("Base64Decode: %v", err)
		}
		return string(b), nil
	case "States.Hash":
		alg, _ := args[1].(string)
		var h hash.Hash
		switch alg {
		case "MD5":
			h = md5.New()
		case "SHA-1":
			h = sha1.New()
		case "SHA-256":
			h = sha256.New()
		case "SHA-384":
			h = sha512.New384()
		case "SHA-512":
			h = sha512.New()
		default:
			return nil, fmt.Errorf("Hash: unsupported algorithm %q", alg)
		}
		s, ok := args[0].(string)
		if !ok {
			s = marshalDataString(args[0])
		}
		h.Write([]byte(s))
		return hex.EncodeToString(h.Sum(nil)), nil
	case "States.JsonMerge":
		a, ok1 := args[0].(map[string]any)
		b, ok2 := args[1].(map[string]any)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("JsonMerge needs two objects")
		}
		if deep, _ := args[2].(bool); deep {
			return nil, fmt.Errorf("JsonMerge supports shallow mode only (false)")
		}
		out := make(map[string]any, len(a)+len(b))
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out, nil
	case "States.MathRandom":
		lo, ok1 := asInt(args[0])
		hi, ok2 := asInt(args[1])
		if !ok1 || !ok2 || hi <= lo {
			return nil, fmt.Errorf("MathRandom needs integer bounds start < end")
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(hi-lo)))
		if err != nil {
			return nil, err
		}
		return int64(lo) + n.Int64(), nil
	case "States.MathAdd":
		a, ok1 := toFloat(args[0])
		b, ok2 := toFloat(args[1])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("MathAdd needs two numbers")
		}
		sum := a + b
		if sum == math.Trunc(sum) && math.Abs(sum) < 1<<53 {
			return int64(sum), nil
		}
		return sum, nil
	case "States.StringSplit":
		s, ok1 := args[0].(string)
		d, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("StringSplit needs two strings")
		}
		parts := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(d, r) })
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "States.UUID":
		return newUUID(), nil
	}
	return nil, fmt.Errorf("unknown function %s", c.name)
}

func (c *intrinsicCall) format(args []any) (any, error) {
	tmplArg := c.args[0]
	if !tmplArg.isString {
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("Format needs a template string")
		}
		tmplArg.rawString = s
	}
	raw := tmplArg.rawString
	var out strings.Builder
	next := 1
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		if ch == '\\' && i+1 < len(raw) {
			out.WriteByte(raw[i+1])
			i++
			continue
		}
		if ch == '{' && i+1 < len(raw) && raw[i+1] == '}' {
			if next >= len(args) {
				return nil, fmt.Errorf("Format has more placeholders than arguments")
			}
			switch v := args[next].(type) {
			case string:
				out.WriteString(v)
			case map[string]any, []any:
				return nil, fmt.Errorf("Format arguments must be strings, numbers, booleans or null")
			default:
				out.WriteString(marshalDataString(v))
			}
			next++
			i++
			continue
		}
		out.WriteByte(ch)
	}
	if next != len(args) {
		return nil, fmt.Errorf("Format has %d placeholders but %d arguments", next-1, len(args)-1)
	}
	return out.String(), nil
}

func asInt(v any) (int, bool) {
	f, ok := toFloat(v)
	if !ok || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// jsonEqual compares two decoded JSON values, treating 1 and 1.0 as equal.
func jsonEqual(a, b any) bool {
	return equalData(a, b, func(a, b any) bool {
		fa, okA := toFloat(a)
		fb, okB := toFloat(b)
		if okA || okB {
			return okA && okB && fa == fb
		}
		return reflect.DeepEqual(a, b)
	})
}

// equalData walks two generic values together: objects key by key, arrays index by index, and
// every other pair as leaf says.
func equalData(a, b any, leaf func(a, b any) bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalData(v, w, leaf) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalData(x[i], y[i], leaf) {
				return false
			}
		}
		return true
	}
	return leaf(a, b)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	// The 8-4-4-4-12 form of lowercase hex digits, written without fmt (one per Lambda invoke).
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

var _ = json.Valid
