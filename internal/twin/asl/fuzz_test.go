package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/modroot"
)

// fuzzSeedDefinitions are small definitions of every state type, each valid, plus the saga's
// own definition with its placeholders filled.
func fuzzSeedDefinitions(f *testing.F) [][]byte {
	f.Helper()
	seeds := [][]byte{
		[]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Result":{"x":1},"ResultPath":"$.r","Next":"B"},"B":{"Type":"Succeed"}}}`),
		[]byte(`{"StartAt":"W","TimeoutSeconds":60,"States":{"W":{"Type":"Wait","SecondsPath":"$.s","Next":"C"},` +
			`"C":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericGreaterThan":1,"Next":"F"},` +
			`{"And":[{"Variable":"$.s","IsPresent":true},{"Not":{"Variable":"$.s","StringMatches":"a*"}}],"Next":"W"}],"Default":"F"},` +
			`"F":{"Type":"Fail","Error":"E","Cause":"c"}}}`),
		[]byte(`{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}}],` +
			`"Catch":[{"ErrorEquals":["States.ALL"],"Next":"M"}],"Next":"M"},` +
			`"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":2,"ItemProcessor":{"StartAt":"Y","States":{"Y":{"Type":"Pass","End":true}}},"End":true}}}`),
		[]byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f","Payload.$":"$"},` +
			`"Retry":[{"ErrorEquals":["States.TaskFailed"],"IntervalSeconds":1,"MaxAttempts":2,"BackoffRate":2}],"TimeoutSeconds":5,"End":true}}}`),
		[]byte(`{"StartAt":"Missing","States":{"A":{"Type":"Pass","Next":"Nowhere"}}}`),
	}
	root, err := modroot.Find(".")
	if err != nil {
		f.Fatal(err)
	}
	saga, err := os.ReadFile(root + "/statemachine/reservation.asl.json")
	if err != nil {
		f.Fatal(err)
	}
	values := map[string]string{}
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z]+)\}`).FindAllSubmatch(saga, -1) {
		values[string(m[1])] = "arn:aws:lambda:us-east-1:000000000000:function:" + string(m[1])
	}
	filled, missing := Substitute(saga, values)
	if len(missing) > 0 {
		f.Fatalf("placeholders left unfilled: %v", missing)
	}
	return append(seeds, filled)
}

// FuzzParseDefinition parses arbitrary definitions. Whatever the bytes: Parse never panics and
// answers either a machine or a *ValidationError listing problems, each with a code and a
// location, never both and never neither; the verdict and the problems do not change when the
// same JSON is laid out with other whitespace; and a machine it accepts is closed: every block
// starts at one of its states, every transition (Next, Default, a choice's or a catcher's Next)
// names a state of its own block, and every state that does not end the block on its own
// either has a Next or is marked End.
func FuzzParseDefinition(f *testing.F) {
	for _, s := range fuzzSeedDefinitions(f) {
		f.Add(s)
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Next":"A"}}}`))
	f.Fuzz(func(t *testing.T, definition []byte) {
		sm, err := Parse(definition)
		verdict := checkVerdict(t, sm, err)
		if sm != nil {
			checkBlock(t, sm.root, "")
		}
		var relaid bytes.Buffer
		if json.Indent(&relaid, definition, "", "\t") != nil || !utf8JSONSafe(definition) {
			// Only JSON encoding/json reads the same way is laid out again.
			return
		}
		sm2, err2 := Parse(relaid.Bytes())
		if again := checkVerdict(t, sm2, err2); again != verdict {
			t.Fatalf("laid out again the verdict changed:\n%s\n%s", verdict, again)
		}
	})
}

// checkVerdict checks Parse's answer and renders it: "ok", or the problems' codes and
// locations in order.
func checkVerdict(t *testing.T, sm *StateMachine, err error) string {
	t.Helper()
	if (sm == nil) == (err == nil) {
		t.Fatalf("Parse answered machine %v and error %v", sm != nil, err)
	}
	if err == nil {
		return "ok"
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		t.Fatalf("Parse failed with %T %v, want a *ValidationError with problems", err, err)
	}
	var out []string
	for _, p := range ve.Problems {
		if p.Code == "" || !strings.HasPrefix(p.Location, "/") || p.Message == "" {
			t.Fatalf("problem %+v lacks a code, a location or a message", p)
		}
		// The whole-document problems quote the decoder's error, whose offsets change with
		// the layout; the code is what must not.
		out = append(out, p.Code+" "+p.Location)
	}
	return strings.Join(out, "; ")
}

func checkBlock(t *testing.T, b *block, loc string) {
	t.Helper()
	if b == nil || b.States[b.StartAt] == nil {
		t.Fatalf("block %s accepted with StartAt naming no state", loc)
	}
	in := func(name, what string) {
		if b.States[name] == nil {
			t.Fatalf("block %s accepted with %s naming no state of it: %q", loc, what, name)
		}
	}
	for name, s := range b.States {
		switch s.Type {
		case "Succeed", "Fail":
		case "Choice":
			if len(s.Choices) == 0 {
				t.Fatalf("choice %s/%s accepted without choices", loc, name)
			}
			for _, c := range s.Choices {
				in(c.Next, name+"'s choice")
			}
			if s.Default != "" {
				in(s.Default, name+"'s Default")
			}
		default:
			if s.End == (s.Next != "") {
				t.Fatalf("state %s/%s accepted with End %v and Next %q", loc, name, s.End, s.Next)
			}
			if s.Next != "" {
				in(s.Next, name+"'s Next")
			}
		}
		for _, c := range s.Catch {
			in(c.Next, name+"'s catcher")
		}
		for i, br := range s.Branches {
			checkBlock(t, br, loc+"/"+name+"/Branches["+string(rune('0'+i%10))+"]")
		}
		if s.Processor != nil {
			checkBlock(t, s.Processor, loc+"/"+name+"/ItemProcessor")
		}
	}
}

// utf8JSONSafe reports whether encoding/json would keep definition's strings byte for byte:
// json.Indent copies strings as they are, but a definition with invalid UTF-8 may be read
// differently by the two decoders.
func utf8JSONSafe(definition []byte) bool {
	return json.Valid(definition) && bytes.Equal(bytes.ToValidUTF8(definition, nil), definition)
}
