package asl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestTheJSONAParsedTextToldIsTheJSONMarshalDataWrites(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":1,"b":[true,null,"x"]}`:     `{"a":1,"b":[true,null,"x"]}`,
		" { \"a\" :\n[ 1 , 2 ] }\t":       `{"a":[1,2]}`,
		`{"s":"q\"b\\n\n\t"}`:             `{"s":"q\"b\\n\n\t"}`,
		`{ "s" : "in string: spaces\t" }`: `{"s":"in string: spaces\t"}`,
		`-12`:                             `-12`,
		`{"b":1,"a":2}`:                   ``, // out of order
		`{"a":1,"a":2}`:                   ``, // repeated
		`"a\/b"`:                          ``,
		`-0`:                              ``,
		`1e0`:                             ``,
		`1.5`:                             ``,
		`"\u0041"`:                        ``, // not plain
		`   `:                             ``,
	} {
		if _, got, err := parseDataJSON([]byte(doc)); err != nil || got != want {
			t.Errorf("%q: JSON %q (%v), want %q", doc, got, err, want)
		}
	}

	docs := []string{`{}`, `[]`, `{ }`, `[ ]`, `""`, `"x"`, `0`, `[0,-1]`, `{"a":{}}`}
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		v := randomData(r, 0)
		docs = append(docs, renderJSON(r, v), marshalDataString(v))
	}
	told := 0
	for _, doc := range docs {
		want, wantErr := parseData([]byte(doc))
		got, js, err := parseDataJSON([]byte(doc))
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !sameData(got, want) {
			t.Fatalf("%q: parsed %#v (%v), parseData says %#v (%v)", doc, got, err, want, wantErr)
		}
		if js == "" {
			continue
		}
		told++
		if m := marshalDataString(got); js != m {
			t.Fatalf("%q: JSON %s, marshalData writes %s", doc, js, m)
		}
	}
	// The control: the text tells the JSON of many documents, or the comparison proves little.
	if told < len(docs)/4 {
		t.Fatalf("the text told the JSON of only %d of %d documents", told, len(docs))
	}
}

func TestATemplatesJSONIsTheJSONOfItsValue(t *testing.T) {
	data := map[string]any{"x": int64(1), "s": "a\"b<c>\n", "f": 1.5, "arr": []any{int64(1), "two", nil},
		"obj": map[string]any{"z": true, "a": map[string]any{}}, "nan": math.NaN()}
	ctxObj := map[string]any{"Execution": map[string]any{"Id": "arn:x", "Name": "n"}}
	templates := []struct {
		def    any
		direct bool // renderJSON renders it
	}{
		{map[string]any{}, true},
		{map[string]any{"a.$": "$.x", "b": int64(2), "c": []any{"lit", map[string]any{"d.$": "$.s"}}}, true},
		// Names sort differently once ".$" is cut off: "a-b" < "a.$" but "a" < "a-b".
		{map[string]any{"a.$": "$.obj", "a-b": "lit", "a0.$": "$.arr"}, true},
		{map[string]any{"all.$": "$.obj", "ctx.$": "$$.Execution", "f.$": "$.f", "n": nil, "t": true}, true},
		{map[string]any{"fmt.$": "States.Format('{} and {}', $.x, $.s)", "arr.$": "States.Array($.x, $.f)"}, true},
		{map[string]any{"outer": map[string]any{"inner": []any{map[string]any{"k.$": "$.arr[1]"}}}}, true},
		{[]any{map[string]any{"p.$": "$.obj.z"}, "x"}, true},
		{map[string]any{"a": int64(1), "a.$": "$.x"}, false},       // two fields named a: eval keeps one
		{map[string]any{"missing.$": "$.nope"}, false},             // the path fails
		{map[string]any{"bad.$": "States.MathAdd($.s, 1)"}, false}, // the call fails
		{map[string]any{"n.$": "$.nan"}, false},                    // NaN has no JSON: marshalData writes null
	}
	for i, c := range templates {
		tm, err := compileTemplate(c.def)
		if err != nil {
			t.Fatalf("template %d: %v", i, err)
		}
		got, ok := tm.renderJSON(data, ctxObj)
		if ok != c.direct {
			t.Fatalf("template %d: rendered %v, want %v", i, ok, c.direct)
		}
		if !ok {
			continue
		}
		v, err := tm.eval(data, ctxObj)
		if err != nil {
			t.Fatalf("template %d: eval: %v", i, err)
		}
		if want := marshalDataString(v); got != want {
			t.Fatalf("template %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// canonicalDocs are JSON texts, most of them written as marshalData writes them, with the
// values randomData makes (floats, escapes and odd keys among them) and small ones whose
// keys paths will name.
func canonicalDocs(r *rand.Rand) []string {
	docs := []string{`{}`, `[]`, `0`, `-7`, `""`, `"a\"b\\c\n"`, `true`, `null`, `[[],{}]`,
		`{"a":{"b":[1,{"c":null}]},"b":-3,"c":"x"}`, `{"":1,"a":[10,20,30]}`}
	for range 2000 {
		v := randomData(r, 0)
		docs = append(docs, marshalDataString(v), renderJSON(r, v))
	}
	return docs
}

// randomSteps names a path through v, the way a template's path would: mostly keys and
// indexes that are there, sometimes ones that are not, or of the wrong kind.
func randomSteps(r *rand.Rand, v any) []pathStep {
	var steps []pathStep
	for range r.IntN(4) {
		switch x := v.(type) {
		case map[string]any:
			keys := []string{"missing", "a"}
			for k := range x {
				keys = append(keys, k)
			}
			k := keys[r.IntN(len(keys))]
			if r.IntN(8) == 0 {
				steps = append(steps, pathStep{index: 0})
				return steps
			}
			steps = append(steps, pathStep{key: k, isKey: true})
			v = x[k]
		case []any:
			i := r.IntN(len(x)+2) - 1 - r.IntN(2)*len(x)
			if r.IntN(8) == 0 {
				steps = append(steps, pathStep{key: "k", isKey: true})
				return steps
			}
			steps = append(steps, pathStep{index: i})
			if j := i; j >= -len(x) && j < len(x) {
				if j < 0 {
					j += len(x)
				}
				v = x[j]
			}
		default:
			steps = append(steps, pathStep{key: "deeper", isKey: true})
			return steps
		}
	}
	return steps
}

func TestTheFieldsFoundInAResultsTextAreTheFieldsOfItsValue(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	canonical, walked := 0, 0
	for _, doc := range canonicalDocs(r) {
		b := []byte(doc)
		if !isCanonicalJSON(b) {
			// Whatever the scanner refuses is parsed as before; what it accepts must be its
			// own JSON, as the parser reads it.
			continue
		}
		canonical++
		v, js, err := parseDataJSON(b)
		if err != nil || js != doc {
			t.Fatalf("%s: accepted as canonical, but parsed with JSON %q (%v)", doc, js, err)
		}
		for range 10 {
			steps := randomSteps(r, v)
			p := &Path{steps: steps, simple: true}
			want, wantFound, _ := p.walk(v)
			got, found := walkText(b, steps)
			if found != wantFound || (found && !sameData(got, want)) {
				t.Fatalf("%s %+v: found %v %#v, the parsed value gives %v %#v", doc, steps, found, got, wantFound, want)
			}
			if found {
				walked++
			}
		}
	}
	// The control: many documents are canonical and many walks find a value, or the
	// comparison proves little.
	if canonical < 1000 || walked < 3000 {
		t.Fatalf("only %d canonical documents and %d values found", canonical, walked)
	}
	for doc, want := range map[string]bool{
		`{"a":1}`: true, `{"a":1,"b":2}`: true, `{"b":1,"a":2}`: false, `{"a":1,"a":2}`: false,
		`{"a":1.5}`: false, `{"a":1e2}`: false, `{"a":-0}`: false, `{"a":01}`: false, `{ "a":1}`: false,
		`{"a\n":1}`: false, `{"a":"\/"}`: false, `{"a":"\u0041"}`: false, `{"a":"é"}`: false,
		`{"a":1}x`: false, `{"a":1234567890123456789}`: false, strings.Repeat("[", 202) + strings.Repeat("]", 202): false,
	} {
		if got := isCanonicalJSON([]byte(doc)); got != want {
			t.Errorf("isCanonicalJSON(%s) = %v, want %v", doc, got, want)
		}
	}
}

func TestAResultSelectorReadingTextSelectsWhatItSelectsFromTheValue(t *testing.T) {
	doc := `{"arr":[1,"two",null,{"deep":true}],"n":-5,"obj":{"a":{},"z":"q\"\\"},"s":"x"}`
	if !isCanonicalJSON([]byte(doc)) {
		t.Fatal("the document is not canonical")
	}
	data, _ := parseData([]byte(doc))
	ctxObj := map[string]any{"State": map[string]any{"Name": "S"}}
	for i, def := range []any{
		map[string]any{"n.$": "$.n", "s.$": "$.s", "lit": "x", "nested": map[string]any{"z.$": "$.obj.z", "a.$": "$.obj.a"}},
		map[string]any{"all.$": "$", "last.$": "$.arr[-1].deep", "first.$": "$.arr[0]", "list": []any{map[string]any{"x.$": "$.arr[1]"}}},
		map[string]any{"state.$": "$$.State.Name", "bracket.$": "$['s']"},
		map[string]any{"missing.$": "$.nope"},
		map[string]any{"pastEnd.$": "$.arr[4]"},
		map[string]any{"intoScalar.$": "$.n.x"},
		map[string]any{"keyOfArray.$": "$.arr.x"},
	} {
		tm, err := compileTemplate(def)
		if err != nil {
			t.Fatal(err)
		}
		if !tm.textOK() {
			t.Fatalf("template %d does not read text", i)
		}
		want, wantErr := tm.eval(data, ctxObj)
		got, err := tm.evalText(doc, ctxObj)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !sameData(got, want) {
			t.Fatalf("template %d: %#v (%v), from the value %#v (%v)", i, got, err, want, wantErr)
		}
	}
	for _, def := range []any{
		map[string]any{"f.$": "States.Format('{}', $.s)"},
		map[string]any{"all.$": "$..deep"},
		map[string]any{"filter.$": "$.arr[?(@ == 1)]"},
	} {
		if tm, _ := compileTemplate(def); tm.textOK() {
			t.Errorf("%v reads text, but needs the value", def)
		}
	}
}

func TestFunctionNameFromARNNamesTheFunctionOfEveryForm(t *testing.T) {
	for in, want := range map[string]string{
		"add":      "add",
		"add:live": "add",
		"arn:aws:lambda:us-east-1:123456789012:function:add":         "add",
		"arn:aws:lambda:us-east-1:123456789012:function:add:live":    "add",
		"arn:aws:lambda:us-east-1:123456789012:function:add:$LATEST": "add",
		"arn:aws:lambda:us-east-1:123456789012:function":             "arn:aws:lambda:us-east-1:123456789012:function",
		"arn:aws:lambda:us-east-1:123456789012:layer:x":              "arn:aws:lambda:us-east-1:123456789012:layer:x",
		"arn:aws:lambda:us-east-1:function:add":                      "arn:aws:lambda:us-east-1:function:add",
		"arn:aws:lambda:us-east-1:123456789012:function:":            "",
		"arn:": "arn:",
		"":     "",
	} {
		if got := FunctionNameFromARN(in); got != want {
			t.Errorf("FunctionNameFromARN(%q) = %q, want %q", in, got, want)
		}
	}
}
