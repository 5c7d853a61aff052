package asl

import (
	"fmt"
	"testing"
)

// TestSimplePathsFindWhatJPFinds compares the direct walk of key-and-index paths with jp's
// evaluator, which the engine used for every path before, on data of every JSON kind.
func TestSimplePathsFindWhatJPFinds(t *testing.T) {
	data, err := ParseData([]byte(`{"a":{"b":[10,{"c":null,"d":[1,2,3]},"s"],"n":null,"t":true,"x":1.5,"e":{},"z":[]},
	  "list":[[1,2],[3,[4,5]]],"s":"text","k.dot":{"v":1},"":{"empty":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctxObj := map[string]any{"State": map[string]any{"Name": "S", "RetryCount": int64(0)}, "Map": map[string]any{"Item": map[string]any{"Value": []any{"v"}}}}
	paths := []string{
		"$", "$.a", "$.a.b", "$.a.b[0]", "$.a.b[1].c", "$.a.b[1].d[2]", "$.a.b[1].d[3]", "$.a.b[-1]", "$.a.b[-3]", "$.a.b[-4]",
		"$.a.b[1].c.x", "$.a.n", "$.a.n.x", "$.a.t.x", "$.a.x.y", "$.s.x", "$.s[0]", "$.a[0]", "$.list[0]", "$.list[1][1][0]",
		"$.list.x", "$.missing", "$.missing.x", "$.a.e", "$.a.e.x", "$.a.z[0]", "$['a']['b'][1]['d']", "$['k.dot'].v", "$[''].empty",
		"$.a['b'][0]", "$.list[1][1][-1]", "$$", "$$.State.Name", "$$.State.RetryCount", "$$.Map.Item.Value[0]", "$$.State.Missing",
		"$..d", "$.a.b[*]", "$.a.b[0,2]", "$.a.b[0:2]", "$.a.b[?(@ == 10)]",
	}
	walked := 0
	for _, raw := range paths {
		p, err := parsePath(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if p.simple {
			walked++
		}
		got, gotErr := p.get(data, ctxObj)
		viaJP := *p
		viaJP.simple = false
		want, wantErr := viaJP.get(data, ctxObj)
		if (gotErr == nil) != (wantErr == nil) || !sameData(got, want) {
			t.Errorf("%s: got %s, %v; jp finds %s, %v", raw, fmt.Sprint(got), gotErr, fmt.Sprint(want), wantErr)
		}
	}
	// The control: most of these paths take the direct walk, or the comparison proves little.
	if walked < 30 {
		t.Fatalf("only %d of %d paths are walked directly", walked, len(paths))
	}
}
