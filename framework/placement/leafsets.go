// The leaf-set search: for gangs of one pod shape, the fewest leaves that
// hold the gang and, among sets of that many leaves, those in the fewest
// S1s, chosen exactly on the capacity model of the free view.
//
// A unit is one NUMA zone of a single-NUMA node (a pod sits in one zone),
// or a whole node whose zones pool (spanning policies, split shapes on
// container-level nodes). Restricted to the NICs of a leaf set S, unit u
// holds min(C_u, floor(a_u(S)/r)) pods of r NICs: C_u is what its GPUs,
// CPU and the node's cap allow, a_u(S) its free NICs under S. Units only
// interact through the leaves they share, so the leaves split into
// components (the two leaves of a provider node pair, the rails of a
// scalable unit, the NICs of a topology-unknown node). Every subset of a
// component's leaves is counted (components are small; a larger one ends
// the search), which gives, for each k, the most pods k of its leaves hold
// and the best-fit set that does. Components of one S1 combine by a
// knapsack over leaf counts; a last programme over S1s finds the fewest
// leaves and then the fewest S1s that reach the gang. The answer is
// verified by a fill; the tier searches (tiers.go, footprint.go) stay for
// what this model does not cover (held pods, mixed shapes beyond what a
// few extra pods of room absorb, larger components).

package placement

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// maxSetLeaves bounds the leaves of a component whose subsets the
// leaf-set search counts; maxSetExtra bounds the extra pods of room it
// asks for when a gang's other shapes do not fit beside its main shape;
// maxUnitLeaves bounds the leaves one unit may have NICs under.
const (
	maxSetLeaves  = 12
	maxSetExtra   = 2
	maxUnitLeaves = 16
)

// setUnit is one unit of a component: its capacity, and its free NICs
// per leaf as a bit index of the component with a count.
type setUnit struct {
	cap  int
	bits []uint
	nics []int64
	// mult is how many units of the component are alike (same capacity,
	// same NICs per leaf): they are counted once, times mult.
	mult int
}

// setComp is one component of the leaf-set search.
type setComp struct {
	s1     topology.S1ID
	leaves []topology.S0ID
	units  []setUnit
	// best[k] is the most pods (capped at the target) k of the leaves
	// hold, mask[k] the best-fit set that holds them and free[k] its free
	// NICs.
	best []int
	mask []uint32
	free []int64
}

// exactLeafSet returns the leaf set the leaf-set search finds for target
// pods of the main shape: the fewest leaves, then the fewest S1s (within
// one S1 when oneS1). ok is false when the search does not apply (no
// NICs, a component too large or over two S1s) or nothing holds the pods.
func (p *planner) exactLeafSet(target int, oneS1 bool) (map[topology.S0ID]bool, bool) {
	r := p.main.NICs
	if r <= 0 || target <= 0 {
		return nil, false
	}
	comps, ok := p.setComponents(target)
	if !ok {
		return nil, false
	}
	// Per S1, in first-seen order (components are sorted): a knapsack of
	// its components over leaf counts.
	type s1Plan struct {
		id    topology.S1ID
		comps []int
		g     []int   // g[k]: most pods k leaves of the S1 hold
		f     []int64 // f[k]: free NICs of that choice (best fit: fewest)
		pick  [][]int // pick[i][k]: leaves of comps[i] in g's best k
	}
	var plans []*s1Plan
	at := map[topology.S1ID]*s1Plan{}
	for i := range comps {
		c := &comps[i]
		sp := at[c.s1]
		if sp == nil {
			sp = &s1Plan{id: c.s1, g: []int{0}, f: []int64{0}}
			at[c.s1] = sp
			plans = append(plans, sp)
		}
		// Every component joins its S1's knapsack, even once the S1 holds
		// the gang: a later component may hold it with fewer leaves.
		g := make([]int, len(sp.g)+len(c.best)-1)
		f := make([]int64, len(g))
		pick := make([]int, len(g))
		for k := range g {
			g[k] = -1
		}
		for a, pa := range sp.g {
			if pa < 0 {
				continue
			}
			for j, pb := range c.best {
				if pb < 0 {
					continue
				}
				v, fv := min(target, pa+pb), sp.f[a]+c.free[j]
				if v > g[a+j] || v == g[a+j] && fv < f[a+j] {
					g[a+j], f[a+j], pick[a+j] = v, fv, j
				}
			}
		}
		// Keep the counts up to the first that holds the gang: more
		// leaves of this S1 are never needed.
		for k, v := range g {
			if v >= target {
				g, f, pick = g[:k+1], f[:k+1], pick[:k+1]
				break
			}
		}
		sp.comps = append(sp.comps, i)
		sp.g, sp.f = g, f
		sp.pick = append(sp.pick, pick)
	}

	// Over S1s: the fewest leaves, then S1s, then free NICs (best fit,
	// as the tier searches break ties), per number of pods held.
	type state struct {
		leaves, s1s int
		free        int64
	}
	const inf = 1 << 30
	less := func(a, b state) bool {
		if a.leaves != b.leaves {
			return a.leaves < b.leaves
		}
		if a.s1s != b.s1s {
			return a.s1s < b.s1s
		}
		return a.free < b.free
	}
	type back struct{ from, k int }
	dp := make([]state, target+1)
	for j := range dp {
		dp[j] = state{inf, inf, 0}
	}
	dp[0] = state{}
	backs := make([][]back, len(plans))
	if oneS1 {
		best, bestK := -1, 0
		for i, sp := range plans {
			k := len(sp.g) - 1
			if sp.g[k] >= target && (best < 0 || k < bestK || k == bestK && sp.f[k] < plans[best].f[bestK]) {
				best, bestK = i, k
			}
		}
		if best < 0 {
			return nil, false
		}
		return p.setLeaves(comps, plans[best].comps, plans[best].pick, bestK), true
	}
	for i, sp := range plans {
		next := slices.Clone(dp)
		bk := make([]back, target+1)
		for j := range bk {
			bk[j] = back{-1, 0}
		}
		for j, st := range dp {
			if st.leaves == inf {
				continue
			}
			for k := 1; k < len(sp.g); k++ {
				if sp.g[k] <= 0 {
					continue
				}
				t := min(target, j+sp.g[k])
				if cand := (state{st.leaves + k, st.s1s + 1, st.free + sp.f[k]}); less(cand, next[t]) {
					next[t], bk[t] = cand, back{j, k}
				}
			}
		}
		dp, backs[i] = next, bk
	}
	if dp[target].leaves == inf {
		return nil, false
	}
	out := map[topology.S0ID]bool{}
	for i, j := len(plans)-1, target; i >= 0; i-- {
		b := backs[i][j]
		if b.from < 0 {
			continue // this S1 is not used
		}
		for id := range p.setLeaves(comps, plans[i].comps, plans[i].pick, b.k) {
			out[id] = true
		}
		j = b.from
	}
	return out, true
}

// setLeaves unwinds one S1's knapsack: the leaves of its components in
// the choice of k leaves.
func (p *planner) setLeaves(comps []setComp, idx []int, pick [][]int, k int) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for i := len(idx) - 1; i >= 0 && k > 0; i-- {
		if k >= len(pick[i]) {
			k = len(pick[i]) - 1
		}
		j := pick[i][k]
		c := &comps[idx[i]]
		for b, id := range c.leaves {
			if c.mask[j]&(1<<uint(b)) != 0 {
				out[id] = true
			}
		}
		k -= j
	}
	return out
}

// setComponents builds the units of the usable nodes for the main shape,
// joins their leaves into components and counts every subset of each.
func (p *planner) setComponents(target int) ([]setComp, bool) {
	sh, r := p.main, p.main.NICs
	// rawUnit's leaves and NIC counts are flatLeaves[off:off+n] and
	// flatNICs[off:off+n] (one backing array for all: the search builds
	// a unit per zone of the cluster).
	type rawUnit struct{ cap, off, n int }
	var units []rawUnit
	var flatLeaves []topology.S0ID
	var flatNICs []int64
	parent := map[topology.S0ID]topology.S0ID{}
	var find func(topology.S0ID) topology.S0ID
	find = func(x topology.S0ID) topology.S0ID {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	tooWide := false
	add := func(v *nodeFree, zones []zoneFree) {
		var gpu, cpu, total int64
		for i := range zones {
			gpu += zones[i].gpu
			cpu += zones[i].cpuMilli
			total += int64(len(zones[i].nics))
		}
		c := perZone(gpu, cpu, 1<<40, sh)
		if v.cap != nil {
			c = min(c, perZone(v.cap.GPU, v.cap.CPUMilli, v.cap.NICs, sh))
		}
		if c <= 0 || total < r {
			return
		}
		u := rawUnit{cap: int(min(c, int64(target))), off: len(flatLeaves)}
		for i := range zones {
			for _, id := range zones[i].leaves {
				if j := slices.Index(flatLeaves[u.off:], id); j >= 0 {
					flatNICs[u.off+j]++
					continue
				}
				if u.n == maxUnitLeaves {
					tooWide = true
					return
				}
				flatLeaves = append(flatLeaves, id)
				flatNICs = append(flatNICs, 1)
				u.n++
			}
		}
		leaves := flatLeaves[u.off : u.off+u.n]
		for _, id := range leaves {
			if _, ok := parent[id]; !ok {
				parent[id] = id
			}
			if a, b := find(leaves[0]), find(id); a != b {
				parent[a] = b
			}
		}
		units = append(units, u)
	}
	for _, name := range p.s.fabric.NodeNames() {
		if !p.anyAllowed(name) {
			continue
		}
		v := p.s.view(name)
		if v == nil {
			continue
		}
		if pools(v.node, sh) {
			add(v, v.zones)
			continue
		}
		for i := range v.zones {
			add(v, v.zones[i:i+1])
		}
	}
	if tooWide {
		return nil, false
	}
	byRoot := map[topology.S0ID]*setComp{}
	var roots []topology.S0ID
	for id := range parent {
		root := find(id)
		c := byRoot[root]
		if c == nil {
			c = &setComp{}
			byRoot[root] = c
			roots = append(roots, root)
		}
		c.leaves = append(c.leaves, id)
	}
	for _, c := range byRoot {
		if len(c.leaves) > maxSetLeaves {
			return nil, false
		}
		slices.Sort(c.leaves)
		for i, id := range c.leaves {
			l, ok := p.s.fabric.Leaf(id)
			if !ok {
				return nil, false
			}
			if i == 0 {
				c.s1 = l.S1
			} else if l.S1 != c.s1 {
				return nil, false
			}
		}
	}
	// Units by component, alike units merged: one map for all components,
	// keyed by the component's root and the unit (the key is built in
	// scratch space; only a new one is stored).
	seen := map[string]int{}
	var key []byte
	var bitsOf [maxUnitLeaves]uint
	for i := range units {
		u := &units[i]
		leaves, nics := flatLeaves[u.off:u.off+u.n], flatNICs[u.off:u.off+u.n]
		root := find(leaves[0])
		c := byRoot[root]
		for j, id := range leaves {
			bitsOf[j] = uint(slices.Index(c.leaves, id))
		}
		key = append(append(key[:0], root...), '|')
		key = appendInt(key, int64(u.cap))
		for j := 0; j < u.n; j++ {
			key = append(key, '/')
			key = appendInt(key, int64(bitsOf[j]))
			key = append(key, ':')
			key = appendInt(key, nics[j])
		}
		if at, ok := seen[string(key)]; ok {
			c.units[at].mult++
			continue
		}
		seen[string(key)] = len(c.units)
		c.units = append(c.units, setUnit{cap: u.cap, bits: slices.Clone(bitsOf[:u.n]), nics: slices.Clone(nics), mult: 1})
	}
	comps := make([]setComp, 0, len(roots))
	sort.Slice(roots, func(i, j int) bool { return byRoot[roots[i]].leaves[0] < byRoot[roots[j]].leaves[0] })
	for _, root := range roots {
		c := byRoot[root]
		c.count(r, target)
		comps = append(comps, *c)
	}
	sort.SliceStable(comps, func(i, j int) bool { return comps[i].s1 < comps[j].s1 })
	return comps, true
}

// appendInt appends v (>= 0) in decimal.
func appendInt(b []byte, v int64) []byte {
	if v == 0 {
		return append(b, '0')
	}
	var tmp [20]byte
	i := len(tmp)
	for v > 0 {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, tmp[i:]...)
}

// count fills best and mask: for every subset of the component's leaves,
// the pods its units hold (capped at target); per size the most, ties to
// the fewest free NICs under the set (best fit), then the lowest mask.
func (c *setComp) count(r int64, target int) {
	n := len(c.leaves)
	c.best = make([]int, n+1)
	c.mask = make([]uint32, n+1)
	c.free = make([]int64, n+1)
	free := c.free
	for k := 1; k <= n; k++ {
		c.best[k] = -1
	}
	leafNICs := make([]int64, n)
	for _, u := range c.units {
		for i, b := range u.bits {
			leafNICs[b] += u.nics[i] * int64(u.mult)
		}
	}
	for m := uint32(1); m < 1<<uint(n); m++ {
		pods := 0
		for _, u := range c.units {
			var a int64
			for i, b := range u.bits {
				if m&(1<<b) != 0 {
					a += u.nics[i]
				}
			}
			pods += min(u.cap, int(a/r)) * u.mult
			if pods >= target {
				pods = target
				break
			}
		}
		var nics int64
		for b := 0; b < n; b++ {
			if m&(1<<uint(b)) != 0 {
				nics += leafNICs[b]
			}
		}
		k := bits.OnesCount32(m)
		if pods > c.best[k] || pods == c.best[k] && nics < free[k] {
			c.best[k], c.mask[k], free[k] = pods, m, nics
		}
	}
}

// tryLeafSets verifies the leaf-set search's choice for the gang by a
// fill and returns it when it uses fewer leaves than c; else c, whose
// choice among sets of as many leaves (S1s, nodes, best fit, which keep
// large leaves whole for later gangs) stands. It applies to gangs that
// hold no pods yet; pods of other shapes than the main one are given room
// by asking for up to maxSetExtra more pods of the main shape.
func (p *planner) tryLeafSets(pods []Pod, c *candidate, oneS1 bool) *candidate {
	if !p.g.Occupancy.Empty() || p.main.NICs <= 0 {
		return c
	}
	main := countShape(pods, p.main)
	extra := 0
	if main < len(pods) {
		extra = maxSetExtra
	}
	stats := map[topology.S0ID]*leafStat{}
	for _, st := range p.leafStats() {
		stats[st.id] = st
	}
	need := gangNICs(pods)
	for t := main; t <= main+extra; t++ {
		set, ok := p.exactLeafSet(t, oneS1)
		if !ok || c != nil && len(set) > len(c.leaves) {
			return c
		}
		var nodes []string
		var free int64
		for _, id := range sortedS0s(set) {
			if st := stats[id]; st != nil {
				nodes = append(nodes, st.nodes...)
				free += st.nics
			}
		}
		assign, ok := p.fill(pods, p.dedupe(nodes), set)
		if !ok {
			continue
		}
		cand := &candidate{assign: assign, leaves: p.leavesOf(assign), leftover: max(free-need, 0), key: "leaf-set"}
		if c == nil || len(cand.leaves) < len(c.leaves) {
			return cand
		}
		return c
	}
	return c
}
