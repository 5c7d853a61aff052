package asl

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ohler55/ojg/oj"
)

// sameData reports whether two generic values are equal with their Go types: int64 and
// float64 are told apart, floats are compared bit for bit (so -0 differs from 0).
func sameData(a, b any) bool {
	return equalData(a, b, func(a, b any) bool {
		if x, ok := a.(float64); ok {
			y, ok := b.(float64)
			return ok && math.Float64bits(x) == math.Float64bits(y)
		}
		return fmt.Sprintf("%T %#v", a, a) == fmt.Sprintf("%T %#v", b, b)
	})
}

// randomData builds a generic value of the kinds the interpreter holds, with the strings and
// numbers most likely to be rendered or parsed differently.
func randomData(r *rand.Rand, depth int) any {
	strs := []string{"", "plain", "quote\"back\\slash", "ctl\x01\x1f\b\f\n\r\t", "<tag>&amp;", "é ü 中文 🎉",
		"\u2028\u2029", "bad\xffutf8\xc3", "slash/", "\x7f", "a b", "$.path", "States.Format('{}')"}
	nums := []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 0.0, math.Copysign(0, -1),
		1.5, -2.25, 1e21, 1e20, 1e-6, 1e-7, 123456789.123456789, 5e-324, math.MaxFloat64, 0.1, 100.0, 3.0}
	k := r.IntN(10)
	if depth > 3 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return strs[r.IntN(len(strs))]
	case 4:
		return nums[r.IntN(len(nums))]
	case 5:
		if r.IntN(2) == 0 {
			return int64(r.Int64N(1<<40) - 1<<39)
		}
		return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20))
	case 6, 7:
		m := map[string]any{}
		for range r.IntN(20) {
			m[strs[r.IntN(len(strs))]+strconv.Itoa(r.IntN(5))] = randomData(r, depth+1)
		}
		return m
	default:
		arr := []any{}
		for range r.IntN(6) {
			arr = append(arr, randomData(r, depth+1))
		}
		return arr
	}
}

func TestAppendDataRendersExactlyAsMarshalData(t *testing.T) {
	values := []any{
		nil, true, "", "x", int64(7), 7, 1.0, math.NaN(), math.Inf(1),
		map[string]any{"n": math.Inf(-1)}, []any{1.0, math.NaN()},
		map[string]any(nil), []any(nil), map[string]any{"a": []any(nil), "b": map[string]any(nil)},
		json.Number("12345678901234567890"), []string{"a", "<b>"}, map[string]string{"z": "1", "a": "2"},
		float32(1.1), uint64(math.MaxUint64), int32(-5), []byte("bytes"), struct{ A int }{1},
		map[string]any{"é": 1.0, "e": 2.0, "E": 3.0, "": 4.0, "\u2028": 5.0, "bad\xff": 6.0},
	}
	deep := any("leaf")
	for range 1200 {
		deep = []any{deep}
	}
	values = append(values, deep)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		values = append(values, randomData(r, 0))
	}
	for i, v := range values {
		want := string(MarshalData(v))
		if got := string(marshalData(v)); got != want {
			t.Fatalf("value %d: marshalData\n got %s\nwant %s", i, got, want)
		}
		if got := marshalDataString(v); got != want {
			t.Fatalf("value %d: marshalDataString\n got %s\nwant %s", i, got, want)
		}
	}
}

// renderJSON writes v as JSON text in one of several equivalent spellings: spacing, escapes
// and number forms vary, as documents from functions and callers do.
func renderJSON(r *rand.Rand, v any) string {
	ws := func() string { return []string{"", "", " ", "\n\t", "\r\n  "}[r.IntN(5)] }
	switch x := v.(type) {
	case map[string]any:
		var parts []string
		for k, val := range x {
			parts = append(parts, ws()+renderString(r, k)+ws()+":"+ws()+renderJSON(r, val)+ws())
		}
		return "{" + strings.Join(parts, ",") + ws() + "}"
	case []any:
		var parts []string
		for _, val := range x {
			parts = append(parts, ws()+renderJSON(r, val)+ws())
		}
		return "[" + strings.Join(parts, ",") + ws() + "]"
	case string:
		return renderString(r, x)
	case float64:
		forms := []string{strconv.FormatFloat(x, 'g', -1, 64), strconv.FormatFloat(x, 'e', -1, 64),
			strconv.FormatFloat(x, 'E', 5, 64), strconv.FormatFloat(x, 'f', 3, 64)}
		return forms[r.IntN(len(forms))]
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func renderString(r *rand.Rand, s string) string {
	if r.IntN(2) == 0 {
		b, _ := json.Marshal(s) // \u escapes for <, >, & and control characters
		return string(b)
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			sb.WriteString(`\` + string(c))
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '/':
			sb.WriteString(`\/`)
		case c < 0x20:
			fmt.Fprintf(&sb, `\u%04x`, c)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func TestParseDataReturnsWhatOJGReturns(t *testing.T) {
	docs := []string{
		``, `   `, `{}`, `[]`, `0`, `-0`, `-0.0`, `0.0`, `1.0`, `1.50`, `0.001`, `1e2`, `1E+2`, `1e-2`, `-1.5e3`,
		`123456789012345678`, `1234567890123456789`, `9223372036854775807`, `9223372036854775808`,
		`-9223372036854775808`, `0.12345678901234567`, `0.123456789012345678`, `1e308`, `1e999`, `1e-999`, `1e1022`, `1e1023`,
		`"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83c\udf89"`, `"\ud800"`, `"é"`, "\"\x7f\"", "\"tab\there\"", `"bad \x"`,
		`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":null}]}}`, ` {"x" : true , "y":[ false ,null ] } `,
		`01`, `1.`, `.5`, `-`, `+1`, `1e`, `[1,]`, `{"a":1,}`, `{a:1}`, `{"a" 1}`, `[1 2]`, `nul`, `tru`, `"open`,
		`{"a":1} x`, `{"a":1}{"b":2}`, `/* c */ {"a":1}`, `{"a":1} // c`, "\xef\xbb\xbf{\"a\":1}", `NaN`, `Infinity`,
		strings.Repeat("[", 300) + strings.Repeat("]", 300), "{\"a\":\x01}", "\"\x01\"",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		docs = append(docs, renderJSON(r, randomData(r, 0)))
	}
	plain := 0
	for _, doc := range docs {
		want, wantErr := ParseData([]byte(doc))
		got, gotErr := parseData([]byte(doc))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: error %v, ParseData says %v", doc, gotErr, wantErr)
		}
		if !sameData(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", doc, got, want)
		}
		if v, ok := parsePlainJSON([]byte(doc)); ok {
			plain++
			if ojv, err := oj.Parse([]byte(doc)); err != nil || !sameData(v, ojv) {
				t.Fatalf("%q: the plain parser accepted it as %#v; ojg says %#v, %v", doc, v, ojv, err)
			}
		}
	}
	// The control: the plain parser takes most documents, or the comparison proves little.
	if plain < len(docs)/3 {
		t.Fatalf("the plain parser took only %d of %d documents", plain, len(docs))
	}
}
