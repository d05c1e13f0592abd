package placement

// The leaf-set search's choice: per S1 a knapsack of its components over
// leaf counts, then the fewest leaves, S1s and free NICs over S1s.

import (
	"slices"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// choice is one component's part in an S1's best count: its leaves (j)
// and layer (l).
type choice struct{ j, l int }

// s1Plan is one S1's knapsack of its components over leaf counts, per
// layer.
type s1Plan struct {
	id    topology.S1ID
	comps []int
	g     [][]int      // g[l][k]: most pods k leaves of the S1 hold (-1: none)
	f     [][]int64    // f[l][k]: free NICs of that choice (best fit: fewest)
	pick  [][][]choice // pick[i][l][k]: leaves and layer of comps[i] in g's best
}

// s1Plans builds the knapsack of every S1, in first-seen order (components
// are sorted).
func s1Plans(comps []setComp, target, top int) []*s1Plan {
	var plans []*s1Plan
	at := map[topology.S1ID]*s1Plan{}
	for i := range comps {
		c := &comps[i]
		sp := at[c.s1]
		if sp == nil {
			sp = &s1Plan{id: c.s1, g: make([][]int, top+1), f: make([][]int64, top+1)}
			for l := range sp.g {
				sp.g[l], sp.f[l] = []int{-1}, []int64{0}
			}
			sp.g[0][0] = 0
			at[c.s1] = sp
			plans = append(plans, sp)
		}
		// Every component joins its S1's knapsack, even once the S1 holds
		// the gang: a later component may hold it with fewer leaves.
		sp.add(i, c, target, top)
	}
	return plans
}

// add joins component i (c) to the S1's knapsack.
func (sp *s1Plan) add(i int, c *setComp, target, top int) {
	size := len(sp.g[0]) + len(c.best[0]) - 1
	g := make([][]int, top+1)
	f := make([][]int64, top+1)
	pick := make([][]choice, top+1)
	for l := range g {
		g[l], f[l], pick[l] = make([]int, size), make([]int64, size), make([]choice, size)
		for k := range g[l] {
			g[l][k] = -1
		}
	}
	for la := range sp.g {
		for a, pa := range sp.g[la] {
			if pa < 0 {
				continue
			}
			for lc := 0; la+lc <= top; lc++ {
				for j, pb := range c.best[lc] {
					if pb < 0 {
						continue
					}
					l := la + lc
					v, fv := min(target, pa+pb), sp.f[la][a]+c.free[lc][j]
					if v > g[l][a+j] || v == g[l][a+j] && fv < f[l][a+j] {
						g[l][a+j], f[l][a+j], pick[l][a+j] = v, fv, choice{j, lc}
					}
				}
			}
		}
	}
	// Keep the counts up to the first that holds the gang in every layer:
	// more leaves of this S1 are never needed.
	cut := 0
	for l := range g {
		k := slices.IndexFunc(g[l], func(v int) bool { return v >= target })
		if k < 0 {
			cut = -1
			break
		}
		cut = max(cut, k)
	}
	if cut >= 0 {
		for l := range g {
			g[l], f[l], pick[l] = g[l][:cut+1], f[l][:cut+1], pick[l][:cut+1]
		}
	}
	sp.comps = append(sp.comps, i)
	sp.g, sp.f = g, f
	sp.pick = append(sp.pick, pick)
}

// unwind lists the leaves of the S1's choice of k leaves in layer l.
func (sp *s1Plan) unwind(comps []setComp, l, k int) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for i := len(sp.comps) - 1; i >= 0 && k > 0; i-- {
		k = min(k, len(sp.pick[i][l])-1)
		ch := sp.pick[i][l][k]
		c := &comps[sp.comps[i]]
		for b, id := range c.leaves {
			if c.mask[ch.l][ch.j]&(1<<uint(b)) != 0 {
				out[id] = true
			}
		}
		k -= ch.j
		l -= ch.l
	}
	return out
}

// bestInOneS1 is the S1 that holds the gang on the fewest leaves, then the
// fewest free NICs (best fit), and those leaves.
func bestInOneS1(plans []*s1Plan, comps []setComp, target, top int) (map[topology.S0ID]bool, bool) {
	best, bestK := -1, 0
	for i, sp := range plans {
		k := slices.IndexFunc(sp.g[top], func(v int) bool { return v >= target })
		if k >= 0 && (best < 0 || k < bestK || k == bestK && sp.f[top][k] < plans[best].f[top][bestK]) {
			best, bestK = i, k
		}
	}
	if best < 0 {
		return nil, false
	}
	return plans[best].unwind(comps, top, bestK), true
}

// setState is a choice over S1s, ordered by fewest leaves, then S1s, then
// free NICs (best fit, as the tier searches break ties).
type setState struct {
	leaves, s1s int
	free        int64
}

func (a setState) less(b setState) bool {
	if a.leaves != b.leaves {
		return a.leaves < b.leaves
	}
	if a.s1s != b.s1s {
		return a.s1s < b.s1s
	}
	return a.free < b.free
}

// setBack is where a state over S1s came from: the count (from) and layer
// (fromL) before the S1, and the S1's leaves (k) and layer (l).
type setBack struct{ from, fromL, k, l int }

// bestOverS1s is the choice over S1s of the fewest leaves, then S1s, then
// free NICs, per number of pods held and layer, and its leaves.
func bestOverS1s(plans []*s1Plan, comps []setComp, target, top int) (map[topology.S0ID]bool, bool) {
	const inf = 1 << 30
	dp := make([][]setState, top+1)
	for l := range dp {
		dp[l] = make([]setState, target+1)
		for j := range dp[l] {
			dp[l][j] = setState{inf, inf, 0}
		}
	}
	dp[0][0] = setState{}
	backs := make([][][]setBack, len(plans))
	for i, sp := range plans {
		next := make([][]setState, top+1)
		bk := make([][]setBack, top+1)
		for l := range next {
			next[l] = slices.Clone(dp[l])
			bk[l] = make([]setBack, target+1)
			for j := range bk[l] {
				bk[l][j] = setBack{from: -1}
			}
		}
		for la := range dp {
			for j, st := range dp[la] {
				if st.leaves == inf {
					continue
				}
				for lc := 0; la+lc <= top; lc++ {
					for k := 1; k < len(sp.g[lc]); k++ {
						if sp.g[lc][k] < 0 || sp.g[lc][k] == 0 && lc == 0 {
							continue
						}
						l, t := la+lc, min(target, j+sp.g[lc][k])
						if cand := (setState{st.leaves + k, st.s1s + 1, st.free + sp.f[lc][k]}); cand.less(next[l][t]) {
							next[l][t], bk[l][t] = cand, setBack{j, la, k, lc}
						}
					}
				}
			}
		}
		dp, backs[i] = next, bk
	}
	if dp[top][target].leaves == inf {
		return nil, false
	}
	out := map[topology.S0ID]bool{}
	for i, j, l := len(plans)-1, target, top; i >= 0; i-- {
		b := backs[i][l][j]
		if b.from < 0 {
			continue // this S1 is not used
		}
		for id := range plans[i].unwind(comps, b.l, b.k) {
			out[id] = true
		}
		j, l = b.from, b.fromL
	}
	return out, true
}
