package console

import (
	"fmt"
	"sort"
	"strings"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// StartNode is the pseudo-state every execution begins at, drawn above the definition's
// StartAt as Step Functions' console draws it.
const StartNode = "Start"

// Edge kinds: why a transition exists in the definition.
const (
	EdgeNext    = "next"
	EdgeChoice  = "choice"
	EdgeDefault = "default"
	EdgeCatch   = "catch"
	EdgeStart   = "start"
)

// Layout sizes, in SVG user units.
const (
	nodeWidth   = 136
	nodeHeight  = 38
	dummyWidth  = 8
	columnGap   = 14
	layerHeight = 76
	margin      = 20
)

// Graph is a state machine's top level laid out in layers, top to bottom: every edge goes
// down a layer or more, except back edges (a loop's way back), which are laid out reversed
// and drawn with their arrow at the original target.
type Graph struct {
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Nodes  []*Node `json:"nodes"`
	Edges  []*Edge `json:"edges"`
}

// Node is one state (or the Start pseudo-state) and its box: X, Y is the top-left corner.
type Node struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Layer int    `json:"layer"`
	X     int    `json:"x"`
	Y     int    `json:"y"`
	W     int    `json:"w"`
	H     int    `json:"h"`
	// End marks a state that ends the execution (Succeed, Fail, or End: true).
	End bool `json:"end,omitempty"`
}

// Edge is one transition the definition allows, with the polyline it is drawn along, from
// the bottom of From's box to the top of To's (for a back edge, the other way round).
type Edge struct {
	From   string   `json:"from"`
	To     string   `json:"to"`
	Kind   string   `json:"kind"`
	Label  string   `json:"label,omitempty"`
	Back   bool     `json:"back,omitempty"`
	Points [][2]int `json:"points"`
}

// Layout lays out the top level of an Amazon States Language definition (a Parallel or Map
// state is one box). It is deterministic: the same definition gives the same graph.
func Layout(definition []byte) (*Graph, error) {
	def, err := asl.ReadOutline(definition)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	g := &Graph{}
	index := map[string]*Node{}
	add := func(name, typ string, end bool) {
		n := &Node{Name: name, Type: typ, End: end, W: nodeWidth, H: nodeHeight}
		g.Nodes = append(g.Nodes, n)
		index[name] = n
	}
	add(StartNode, "Start", false)
	names := def.Names
	for _, n := range names {
		s := def.States[n]
		add(n, s.Type, s.End || s.Type == "Succeed" || s.Type == "Fail")
	}
	g.Edges = append(g.Edges, &Edge{From: StartNode, To: def.StartAt, Kind: EdgeStart})
	// Each state's edges in the order a reader of its definition meets them.
	for _, n := range names {
		s := def.States[n]
		for i, c := range s.Choices {
			g.addEdge(index, n, c.Next, EdgeChoice, fmt.Sprintf("rule %d", i+1))
		}
		g.addEdge(index, n, s.Default, EdgeDefault, "default")
		g.addEdge(index, n, s.Next, EdgeNext, "")
		for _, c := range s.Catch {
			g.addEdge(index, n, c.Next, EdgeCatch, strings.Join(c.ErrorEquals, ", "))
		}
	}
	g.markBackEdges(def.StartAt, index)
	g.assignLayers()
	g.place()
	return g, nil
}

// addEdge adds from → to unless to is empty or names no state; a second edge between the same
// states (two Catch rules to one state) joins its label to the first.
func (g *Graph) addEdge(index map[string]*Node, from, to, kind, label string) {
	if to == "" || index[to] == nil {
		return
	}
	for _, e := range g.Edges {
		if e.From == from && e.To == to {
			if label != "" && e.Label != "" {
				e.Label += "; " + label
			} else if label != "" {
				e.Label = label
			}
			return
		}
	}
	g.Edges = append(g.Edges, &Edge{From: from, To: to, Kind: kind, Label: label})
}

// markBackEdges runs a depth-first search from Start (then from any state it did not reach)
// and marks each edge to a state still on the search's stack: removing those leaves a DAG.
func (g *Graph) markBackEdges(startAt string, index map[string]*Node) {
	out := map[string][]*Edge{}
	for _, e := range g.Edges {
		out[e.From] = append(out[e.From], e)
	}
	const (
		unseen = iota
		onStack
		done
	)
	state := map[string]int{}
	var visit func(n string)
	visit = func(n string) {
		state[n] = onStack
		for _, e := range out[n] {
			switch state[e.To] {
			case onStack:
				e.Back = true
			case unseen:
				visit(e.To)
			}
		}
		state[n] = done
	}
	visit(StartNode)
	for _, n := range g.Nodes {
		if state[n.Name] == unseen {
			visit(n.Name)
		}
	}
}

// assignLayers gives each node the longest path to it over the forward edges, so every forward
// edge points down.
func (g *Graph) assignLayers() {
	index := g.index()
	in := map[string]int{}
	for _, e := range g.Edges {
		if !e.Back {
			in[e.To]++
		}
	}
	var queue []string
	for _, n := range g.Nodes {
		if in[n.Name] == 0 {
			queue = append(queue, n.Name)
		}
	}
	out := map[string][]*Edge{}
	for _, e := range g.Edges {
		if !e.Back {
			out[e.From] = append(out[e.From], e)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range out[n] {
			to := index[e.To]
			to.Layer = max(to.Layer, index[n].Layer+1)
			if in[e.To]--; in[e.To] == 0 {
				queue = append(queue, e.To)
			}
		}
	}
}

func (g *Graph) index() map[string]*Node {
	m := make(map[string]*Node, len(g.Nodes))
	for _, n := range g.Nodes {
		m[n.Name] = n
	}
	return m
}

// slot is a node or a dummy point of a long edge in one layer's order.
type slot struct {
	node  *Node // nil for a dummy
	edge  *Edge // the edge a dummy carries
	layer int
	pos   float64 // barycenter while ordering
	x     int     // centre, once placed
}

// place orders each layer to reduce crossings (barycenter sweeps over the edges, long ones
// split by dummies) and gives every node and edge its coordinates.
func (g *Graph) place() {
	depth := 0
	for _, n := range g.Nodes {
		depth = max(depth, n.Layer)
	}
	layers := make([][]*slot, depth+1)
	slots := map[string]*slot{}
	for _, n := range g.Nodes {
		s := &slot{node: n, layer: n.Layer}
		slots[n.Name] = s
		layers[n.Layer] = append(layers[n.Layer], s)
	}
	// chains holds each edge's slots from its upper end to its lower one.
	chains := map[*Edge][]*slot{}
	for _, e := range g.Edges {
		top, bottom := slots[e.From], slots[e.To]
		if e.Back {
			top, bottom = bottom, top
		}
		chain := []*slot{top}
		for l := top.layer + 1; l < bottom.layer; l++ {
			d := &slot{edge: e, layer: l}
			layers[l] = append(layers[l], d)
			chain = append(chain, d)
		}
		chains[e] = append(chain, bottom)
	}
	up, down := map[*slot][]*slot{}, map[*slot][]*slot{}
	for _, e := range g.Edges {
		c := chains[e]
		for i := 1; i < len(c); i++ {
			down[c[i-1]] = append(down[c[i-1]], c[i])
			up[c[i]] = append(up[c[i]], c[i-1])
		}
	}
	renumber := func(l []*slot) {
		for i, s := range l {
			s.pos = float64(i)
		}
	}
	for _, l := range layers {
		renumber(l)
	}
	sweep := func(l []*slot, neighbours map[*slot][]*slot) {
		for _, s := range l {
			if ns := neighbours[s]; len(ns) > 0 {
				sum := 0.0
				for _, n := range ns {
					sum += n.pos
				}
				s.pos = sum / float64(len(ns))
			}
		}
		sort.SliceStable(l, func(i, j int) bool { return l[i].pos < l[j].pos })
		renumber(l)
	}
	for range 4 {
		for i := 1; i < len(layers); i++ {
			sweep(layers[i], up)
		}
		for i := len(layers) - 2; i >= 0; i-- {
			sweep(layers[i], down)
		}
	}
	width := 0
	for _, l := range layers {
		width = max(width, layerWidth(l))
	}
	for i, l := range layers {
		x := margin + (width-layerWidth(l))/2
		for _, s := range l {
			w := slotWidth(s)
			s.x = x + w/2
			x += w + columnGap
			if s.node != nil {
				s.node.X, s.node.Y = s.x-s.node.W/2, margin+i*layerHeight
			}
		}
	}
	for _, e := range g.Edges {
		c := chains[e]
		pts := make([][2]int, 0, len(c))
		for i, s := range c {
			y := margin + s.layer*layerHeight + nodeHeight/2
			switch {
			case i == 0:
				y = margin + s.layer*layerHeight + nodeHeight
			case i == len(c)-1:
				y = margin + s.layer*layerHeight
			}
			pts = append(pts, [2]int{s.x, y})
		}
		if e.Back {
			for i, j := 0, len(pts)-1; i < j; i, j = i+1, j-1 {
				pts[i], pts[j] = pts[j], pts[i]
			}
		}
		e.Points = pts
	}
	g.Width = width + 2*margin
	g.Height = margin + depth*layerHeight + nodeHeight + margin
}

func slotWidth(s *slot) int {
	if s.node != nil {
		return s.node.W
	}
	return dummyWidth
}

func layerWidth(l []*slot) int {
	w := 0
	for i, s := range l {
		if i > 0 {
			w += columnGap
		}
		w += slotWidth(s)
	}
	return w
}
