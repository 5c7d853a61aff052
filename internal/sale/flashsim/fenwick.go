package flashsim

// fenwick counts marks over positions 0..n-1 and finds the k-th marked position, both in
// O(log n): the seat map's free seats, picked from and updated at every gate decision.
type fenwick struct {
	tree []int
	n    int
	sum  int
}

func newFenwick(n int) *fenwick { return &fenwick{tree: make([]int, n+1), n: n} }

// add adds d to position i's mark.
func (f *fenwick) add(i, d int) {
	f.sum += d
	for i++; i <= f.n; i += i & -i {
		f.tree[i] += d
	}
}

func (f *fenwick) total() int { return f.sum }

// find returns the position of the k-th mark (k from 0), k < total().
func (f *fenwick) find(k int) int {
	pos := 0
	step := 1
	for step*2 <= f.n {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if next := pos + step; next <= f.n && f.tree[next] <= k {
			pos = next
			k -= f.tree[next]
		}
	}
	return pos
}
