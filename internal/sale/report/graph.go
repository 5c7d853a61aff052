package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/seatsaga/seatsaga/internal/twin/asl"
)

// StartNode is the pseudo-state every execution begins at. EndNode may close a path given to
// CountPaths; terminal states (Succeed, Fail, End) are drawn by colour, so it is not drawn.
const (
	StartNode = "Start"
	EndNode   = "End"
)

// Node is one state of the state machine.
type Node struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Count int    `json:"count"` // executions that entered it (each entry counted)
	Layer int    `json:"-"`
	X, Y  int    `json:"-"`
}

// Edge is one possible transition; Kind says why it exists (next, catch, choice, default).
type Edge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Kind  string `json:"kind"`
	Label string `json:"label,omitempty"`
	Count int    `json:"count"`
}

// Graph is the state machine's shape with how often each state and edge was taken.
type Graph struct {
	StartAt string
	Nodes   []*Node
	Edges   []*Edge
	// Unmatched counts observed transitions the definition has no edge for (they are drawn
	// too, dashed): a sign that the histories came from another definition.
	Unmatched int
}

// GraphFromASL reads the top level of an Amazon States Language definition (nested Parallel
// and Map branches are drawn as one state).
func GraphFromASL(definition []byte) (*Graph, error) {
	def, err := asl.ReadOutline(definition)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if def.States[def.StartAt].Type == "" {
		return nil, fmt.Errorf("report: ASL definition's StartAt state %q has no Type", def.StartAt)
	}
	g := &Graph{StartAt: def.StartAt}
	names := def.Names
	g.Nodes = append(g.Nodes, &Node{Name: StartNode, Type: "Start"})
	for _, n := range names {
		g.Nodes = append(g.Nodes, &Node{Name: n, Type: def.States[n].Type})
	}
	g.addEdge(StartNode, def.StartAt, "next", "")
	for _, n := range names {
		s := def.States[n]
		if s.Next != "" {
			g.addEdge(n, s.Next, "next", "")
		}
		for _, c := range s.Catch {
			g.addEdge(n, c.Next, "catch", strings.Join(c.ErrorEquals, ", "))
		}
		for _, c := range s.Choices {
			g.addEdge(n, c.Next, "choice", "")
		}
		if s.Default != "" {
			g.addEdge(n, s.Default, "default", "")
		}
	}
	g.layout()
	return g, nil
}

func (g *Graph) addEdge(from, to, kind, label string) {
	for _, e := range g.Edges {
		if e.From == from && e.To == to {
			if label != "" && e.Label == "" {
				e.Label = label
			}
			return
		}
	}
	g.Edges = append(g.Edges, &Edge{From: from, To: to, Kind: kind, Label: label})
}

func (g *Graph) node(name string) *Node {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// CountPaths adds executions' paths (the names of the states each entered, in order) to the
// node and edge counts. A path that ended (the execution is no longer running) should end with
// EndNode so that the final edge is counted.
func (g *Graph) CountPaths(paths [][]string) {
	for _, p := range paths {
		prev := StartNode
		if n := g.node(StartNode); n != nil {
			n.Count++
		}
		for _, name := range p {
			if name == EndNode {
				break
			}
			n := g.node(name)
			if n == nil {
				n = &Node{Name: name, Type: "Unknown"}
				g.Nodes = append(g.Nodes, n)
			}
			n.Count++
			g.countEdge(prev, name)
			prev = name
		}
	}
	g.layout()
}

func (g *Graph) countEdge(from, to string) {
	for _, e := range g.Edges {
		if e.From == from && e.To == to {
			e.Count++
			return
		}
	}
	g.Unmatched++
	g.Edges = append(g.Edges, &Edge{From: from, To: to, Kind: "observed", Count: 1})
}

// Layout constants in SVG user units.
const (
	nodeW   = 190
	nodeH   = 46
	layerH  = 110
	colW    = 215
	marginX = 20
	marginY = 20
)

// layout puts each node on the layer of its shortest distance from Start, then orders each
// layer by where its predecessors sit (so a chain of Next edges stays in one column), happy-path
// edges before Catch routes, busier states first.
func (g *Graph) layout() {
	depth := map[string]int{StartNode: 0}
	queue := []string{StartNode}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range g.Edges {
			if e.From != cur {
				continue
			}
			if _, seen := depth[e.To]; !seen {
				depth[e.To] = depth[cur] + 1
				queue = append(queue, e.To)
			}
		}
	}
	maxDepth := 0
	for _, d := range depth {
		maxDepth = max(maxDepth, d)
	}
	layers := map[int][]*Node{}
	for _, n := range g.Nodes {
		d, ok := depth[n.Name]
		if !ok {
			d = maxDepth // unreachable: draw beside the last layer
		}
		n.Layer = d
		layers[d] = append(layers[d], n)
	}
	col := map[string]float64{}
	kindRank := map[string]int{"next": 0, "choice": 1, "default": 1, "catch": 2, "observed": 3}
	for d := 0; d <= maxDepth; d++ {
		ns := layers[d]
		type key struct {
			bary  float64
			rank  int
			count int
		}
		keys := map[string]key{}
		for _, n := range ns {
			k := key{bary: 1e9, rank: 9, count: n.Count}
			sum, weight := 0.0, 0.0
			for _, e := range g.Edges {
				if e.To != n.Name {
					continue
				}
				from := g.node(e.From)
				if from == nil || from.Layer >= d {
					continue
				}
				w := 1 + float64(e.Count)
				sum += col[e.From] * w
				weight += w
				k.rank = min(k.rank, kindRank[e.Kind])
			}
			if weight > 0 {
				k.bary = sum / weight
			}
			keys[n.Name] = k
		}
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := keys[ns[i].Name], keys[ns[j].Name]
			if a.rank != b.rank {
				return a.rank < b.rank
			}
			if a.bary != b.bary {
				return a.bary < b.bary
			}
			if a.count != b.count {
				return a.count > b.count
			}
			return ns[i].Name < ns[j].Name
		})
		for i, n := range ns {
			col[n.Name] = float64(i)
			n.X = marginX + i*colW
			n.Y = marginY + d*layerH
		}
	}
}

// Size is the drawing's width and height.
func (g *Graph) Size() (int, int) {
	w, h := 0, 0
	for _, n := range g.Nodes {
		w = max(w, n.X+nodeW+marginX)
		h = max(h, n.Y+nodeH+marginY)
	}
	return w, h
}
