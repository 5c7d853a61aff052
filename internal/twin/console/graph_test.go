package console

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/seatsaga/seatsaga/statemachine"
)

func layers(g *Graph) map[string]int {
	m := map[string]int{}
	for _, n := range g.Nodes {
		m[n.Name] = n.Layer
	}
	return m
}

func edgeKey(e *Edge) string { return e.From + "→" + e.To }

// Each state sits one layer below the deepest state that leads to it over a forward edge; a
// transition back up a loop is a back edge; each edge keeps why it exists and its errors.
func TestLayoutLayersStatesAndFindsTheLoops(t *testing.T) {
	cases := []struct {
		name       string
		definition string
		layers     map[string]int
		back       []string
		labels     map[string]string // edge → kind and label
	}{
		{
			name:       "a line",
			definition: `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","Next":"C"},"C":{"Type":"Succeed"}}}`,
			layers:     map[string]int{StartNode: 0, "A": 1, "B": 2, "C": 3},
			labels:     map[string]string{"Start→A": "start ", "A→B": "next ", "B→C": "next "},
		},
		{
			name: "a loop through a choice",
			definition: `{"StartAt":"Work","States":{"Work":{"Type":"Task","Resource":"r","Next":"Again?"},
				"Again?":{"Type":"Choice","Choices":[{"Variable":"$.more","BooleanEquals":true,"Next":"Work"}],"Default":"Done"},
				"Done":{"Type":"Succeed"}}}`,
			layers: map[string]int{StartNode: 0, "Work": 1, "Again?": 2, "Done": 3},
			back:   []string{"Again?→Work"},
			labels: map[string]string{"Again?→Work": "choice rule 1", "Again?→Done": "default default"},
		},
		{
			name: "catches, two to one state",
			definition: `{"StartAt":"Pay","States":{"Pay":{"Type":"Task","Resource":"r","Next":"Paid",
				"Catch":[{"ErrorEquals":["Declined"],"Next":"Failed"},{"ErrorEquals":["States.Timeout","States.TaskFailed"],"Next":"Failed"}]},
				"Paid":{"Type":"Pass","End":true},"Failed":{"Type":"Fail"}}}`,
			layers: map[string]int{StartNode: 0, "Pay": 1, "Paid": 2, "Failed": 2},
			labels: map[string]string{"Pay→Failed": "catch Declined; States.Timeout, States.TaskFailed", "Pay→Paid": "next "},
		},
		{
			name: "a longer way down puts the join lower",
			definition: `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.x","IsPresent":true,"Next":"B"}],"Default":"D"},
				"B":{"Type":"Pass","Next":"C"},"C":{"Type":"Pass","Next":"D"},"D":{"Type":"Succeed"}}}`,
			layers: map[string]int{StartNode: 0, "A": 1, "B": 2, "C": 3, "D": 4},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := Layout([]byte(c.definition))
			if err != nil {
				t.Fatal(err)
			}
			if got := layers(g); !reflect.DeepEqual(got, c.layers) {
				t.Errorf("layers %v, want %v", got, c.layers)
			}
			var back []string
			for _, e := range g.Edges {
				if e.Back {
					back = append(back, edgeKey(e))
				}
				if want, ok := c.labels[edgeKey(e)]; ok && e.Kind+" "+e.Label != want {
					t.Errorf("edge %s is %q, want %q", edgeKey(e), e.Kind+" "+e.Label, want)
				}
			}
			if !reflect.DeepEqual(back, c.back) {
				t.Errorf("back edges %v, want %v", back, c.back)
			}
		})
	}
}

// On the saga's own definition every state is drawn once, boxes of a layer do not overlap and
// fit the picture, forward edges run down from the bottom of their source to the top of their
// target, and back edges the other way.
func TestLayoutOfTheSagaIsWellFormed(t *testing.T) {
	def := statemachine.Definition()
	g, err := Layout(def)
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct{ States map[string]json.RawMessage }
	if err := json.Unmarshal(def, &parsed); err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != len(parsed.States)+1 {
		t.Errorf("%d nodes for %d states and Start", len(g.Nodes), len(parsed.States))
	}
	byName := map[string]*Node{}
	for _, n := range g.Nodes {
		if byName[n.Name] != nil {
			t.Errorf("state %q drawn twice", n.Name)
		}
		byName[n.Name] = n
		if _, ok := parsed.States[n.Name]; !ok && n.Name != StartNode {
			t.Errorf("node %q is no state of the definition", n.Name)
		}
		if n.X < 0 || n.Y < 0 || n.X+n.W > g.Width || n.Y+n.H > g.Height {
			t.Errorf("%q at (%d,%d) lies outside the %dx%d picture", n.Name, n.X, n.Y, g.Width, g.Height)
		}
	}
	for _, a := range g.Nodes {
		for _, b := range g.Nodes {
			if a != b && a.Layer == b.Layer && a.X < b.X+b.W && b.X < a.X+a.W {
				t.Errorf("%q and %q overlap in layer %d", a.Name, b.Name, a.Layer)
			}
		}
	}
	backs := 0
	for _, e := range g.Edges {
		from, to := byName[e.From], byName[e.To]
		first, last := e.Points[0], e.Points[len(e.Points)-1]
		if e.Back {
			backs++
			if from.Layer < to.Layer || first[1] != from.Y || last[1] != to.Y+to.H {
				t.Errorf("back edge %s runs from %v to %v", edgeKey(e), first, last)
			}
			continue
		}
		if from.Layer >= to.Layer {
			t.Errorf("forward edge %s goes from layer %d to %d", edgeKey(e), from.Layer, to.Layer)
		}
		if first != [2]int{from.X + from.W/2, from.Y + from.H} || last != [2]int{to.X + to.W/2, to.Y} {
			t.Errorf("edge %s runs from %v to %v, not from %q's bottom to %q's top", edgeKey(e), first, last, e.From, e.To)
		}
		if len(e.Points) != to.Layer-from.Layer+1 {
			t.Errorf("edge %s spans %d layers with %d points", edgeKey(e), to.Layer-from.Layer, len(e.Points))
		}
	}
	// The saga loops back to waiting, to reconciling again and from the reconciliation to the capture.
	if backs != 3 {
		t.Errorf("%d back edges, want 3", backs)
	}
	again, err := Layout(def)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, again) {
		t.Errorf("two layouts of one definition differ")
	}
}

// crossings counts pairs of edges between adjacent layers that cross.
func crossings(g *Graph) int {
	n := 0
	for i, a := range g.Edges {
		for _, b := range g.Edges[i+1:] {
			if len(a.Points) != 2 || len(b.Points) != 2 || a.Points[0][1] != b.Points[0][1] {
				continue
			}
			if (a.Points[0][0]-b.Points[0][0])*(a.Points[1][0]-b.Points[1][0]) < 0 {
				n++
			}
		}
	}
	return n
}

// Ordering a layer by its neighbours undoes the crossing alphabetical order would draw: X
// leads to Q and Y to P, so P must sit under Y.
func TestLayoutOrdersLayersToAvoidCrossings(t *testing.T) {
	g, err := Layout([]byte(`{"StartAt":"A","States":{
		"A":{"Type":"Choice","Choices":[{"Variable":"$.x","IsPresent":true,"Next":"X"}],"Default":"Y"},
		"X":{"Type":"Pass","Next":"Q"},"Y":{"Type":"Pass","Next":"P"},"P":{"Type":"Succeed"},"Q":{"Type":"Succeed"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]*Node{}
	for _, node := range g.Nodes {
		n[node.Name] = node
	}
	if (n["X"].X < n["Y"].X) != (n["Q"].X < n["P"].X) {
		t.Errorf("X at %d, Y at %d, but Q at %d, P at %d: their edges cross", n["X"].X, n["Y"].X, n["Q"].X, n["P"].X)
	}
	if c := crossings(g); c != 0 {
		t.Errorf("%d crossings", c)
	}
}

func TestLayoutRefusesWhatIsNoDefinition(t *testing.T) {
	for _, def := range []string{`not json`, `{"StartAt":"Missing","States":{"A":{"Type":"Succeed"}}}`} {
		if _, err := Layout([]byte(def)); err == nil {
			t.Errorf("Layout(%s) = nil error", def)
		}
	}
}
