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

	"github.com/rdmatopo/rdmatopo/core/topology"
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

// setZone is one place of a unit where pods pool (a NUMA zone of a
// single-NUMA node, or a node whose zones pool): its capacity, and its
// free NICs per leaf as a bit index of the component with a count.
type setZone struct {
	cap  int
	bits []uint
	nics []int64
	// other says whether the gang's pod of another shape (setOther) fits
	// in the zone, and otherCap is the zone's capacity for the main shape
	// beside it.
	other    bool
	otherCap int
}

// setUnit is what the search counts as one: a zone, or the zones of a
// node whose admission (Gang.Admit: memory, host ports, the pod limit)
// takes fewer pods of the gang than they hold, with that limit.
type setUnit struct {
	zones []setZone
	// limit bounds the main-shape pods of the unit's zones together,
	// otherLimit those beside the other pod (-1: no bound).
	limit, otherLimit int
	// mult is how many units of the component are alike (same
	// capacities, same NICs per leaf): they are counted once, times mult.
	mult int
}

// setOther is the one pod of a gang whose shape differs from the main
// one (a master beside its workers) that the leaf-set search counts
// exactly: its shape and node group.
type setOther struct {
	shape Shape
	group int
	// mainGroup is the node group of the gang's main-shape pods.
	mainGroup int
}

// setComp is one component of the leaf-set search.
type setComp struct {
	s1     topology.S1ID
	leaves []topology.S0ID
	units  []setUnit
	// best[l][k] is the most pods of the main shape (capped at the
	// target) k of the leaves hold, beside the other pod when l is 1,
	// mask[l][k] the best-fit set that holds them and free[l][k] its free
	// NICs; best[1][k] is -1 when no set of k leaves holds the other pod.
	// Layer 1 exists only when the search counts another pod.
	best [][]int
	mask [][]uint32
	free [][]int64
}

// otherPod returns the pod the leaf-set search counts beside the main
// shape: the gang's one RDMA pod of another shape, when the main-shape
// pods share a node group; nil otherwise (pods of other shapes are then
// given room as extra main-shape pods, tryLeafSets).
func otherPod(pods []Pod, main Shape) *setOther {
	var o *setOther
	group, groups := 0, 0
	for _, pod := range pods {
		switch {
		case pod.Shape == main:
			if groups == 0 || pod.Group != group {
				groups++
			}
			group = pod.Group
		case pod.Shape.NICs <= 0, o != nil:
			return nil
		default:
			o = &setOther{shape: pod.Shape, group: pod.Group}
		}
	}
	if o == nil || groups != 1 {
		return nil
	}
	o.mainGroup = group
	return o
}

// exactLeafSet returns the leaf set the leaf-set search finds for target
// pods of the main shape, beside other when set: the fewest leaves, then
// the fewest S1s (within one S1 when oneS1). ok is false when the search
// does not apply (no NICs, a component too large or over two S1s) or
// nothing holds the pods.
func (p *planner) exactLeafSet(target int, other *setOther, oneS1 bool) (map[topology.S0ID]bool, bool) {
	r := p.main.NICs
	if r <= 0 || target <= 0 {
		return nil, false
	}
	comps, ok := p.setComponents(target, other)
	if !ok {
		return nil, false
	}
	// top is the layer of a full answer: 1 when the other pod must be
	// placed too.
	top := 0
	if other != nil {
		top = 1
	}
	// Per S1, in first-seen order (components are sorted): a knapsack of
	// its components over leaf counts, per layer.
	type choice struct{ j, l int }
	type s1Plan struct {
		id    topology.S1ID
		comps []int
		g     [][]int      // g[l][k]: most pods k leaves of the S1 hold (-1: none)
		f     [][]int64    // f[l][k]: free NICs of that choice (best fit: fewest)
		pick  [][][]choice // pick[i][l][k]: leaves and layer of comps[i] in g's best
	}
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
		// Keep the counts up to the first that holds the gang in every
		// layer: more leaves of this S1 are never needed.
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
	// unwind lists the leaves of one S1's choice of k leaves in layer l.
	unwind := func(sp *s1Plan, l, k int) map[topology.S0ID]bool {
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

	// Over S1s: the fewest leaves, then S1s, then free NICs (best fit,
	// as the tier searches break ties), per number of pods held and layer.
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
	if oneS1 {
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
		return unwind(plans[best], top, bestK), true
	}
	type back struct{ from, fromL, k, l int }
	dp := make([][]state, top+1)
	for l := range dp {
		dp[l] = make([]state, target+1)
		for j := range dp[l] {
			dp[l][j] = state{inf, inf, 0}
		}
	}
	dp[0][0] = state{}
	backs := make([][][]back, len(plans))
	for i, sp := range plans {
		next := make([][]state, top+1)
		bk := make([][]back, top+1)
		for l := range next {
			next[l] = slices.Clone(dp[l])
			bk[l] = make([]back, target+1)
			for j := range bk[l] {
				bk[l][j] = back{from: -1}
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
						if cand := (state{st.leaves + k, st.s1s + 1, st.free + sp.f[lc][k]}); less(cand, next[l][t]) {
							next[l][t], bk[l][t] = cand, back{j, la, k, lc}
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
		for id := range unwind(plans[i], b.l, b.k) {
			out[id] = true
		}
		j, l = b.from, b.fromL
	}
	return out, true
}

// setComponents builds the units of the usable nodes for the main shape,
// joins their leaves into components and counts every subset of each.
func (p *planner) setComponents(target int, other *setOther) ([]setComp, bool) {
	sh, r := p.main, p.main.NICs
	// rawZone's leaves and NIC counts are flatLeaves[off:off+n] and
	// flatNICs[off:off+n] (one backing array for all: the search builds
	// a zone per zone of the cluster).
	type rawZone struct {
		cap, off, n int
		other       bool
		otherCap    int
	}
	// rawUnit is a run of zones (zones[from:to]) counted as one unit.
	type rawUnit struct{ from, to, limit, otherLimit int }
	var zones []rawZone
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
	join := func(leaves []topology.S0ID) {
		for _, id := range leaves {
			if _, ok := parent[id]; !ok {
				parent[id] = id
			}
			if a, b := find(leaves[0]), find(id); a != b {
				parent[a] = b
			}
		}
	}
	tooWide := false
	// add counts zones of node v that pool as one zone. mainOK and
	// otherOK say whether the node takes pods of the main shape and the
	// other pod.
	add := func(v *nodeFree, zs []zoneFree, mainOK, otherOK bool) {
		var gpu, cpu, total int64
		for i := range zs {
			gpu += zs[i].gpu
			cpu += zs[i].cpuMilli
			total += int64(len(zs[i].nics))
		}
		// capOf is what the zone holds of the main shape once taken is
		// placed in it (the node's cap too).
		capOf := func(taken Shape) int64 {
			if !mainOK {
				return 0
			}
			c := perZone(gpu-taken.GPU, cpu-taken.CPUMilli, 1<<40, sh)
			if v.cap != nil {
				c = min(c, perZone(v.cap.GPU-taken.GPU, v.cap.CPUMilli-taken.CPUMilli, v.cap.NICs-taken.NICs, sh))
			}
			return min(c, int64(target))
		}
		c := capOf(Shape{})
		z := rawZone{cap: int(c), off: len(flatLeaves)}
		if other != nil && otherOK {
			o := other.shape
			z.other = perZone(gpu, cpu, total, o) > 0 && (v.cap == nil || perZone(v.cap.GPU, v.cap.CPUMilli, v.cap.NICs, o) > 0)
			if z.other {
				z.otherCap = int(capOf(o))
			}
		}
		if (c <= 0 || total < r) && !z.other {
			return
		}
		for i := range zs {
			for _, id := range zs[i].leaves {
				if j := slices.Index(flatLeaves[z.off:], id); j >= 0 {
					flatNICs[z.off+j]++
					continue
				}
				if z.n == maxUnitLeaves {
					tooWide = true
					return
				}
				flatLeaves = append(flatLeaves, id)
				flatNICs = append(flatNICs, 1)
				z.n++
			}
		}
		zones = append(zones, z)
	}
	for _, name := range p.s.fabric.NodeNames() {
		mainOK, otherOK := p.anyAllowed(name), false
		if other != nil {
			mainOK, otherOK = p.allowedNode(name, other.mainGroup), p.allowedNode(name, other.group)
		}
		if !mainOK && !otherOK {
			continue
		}
		v := p.s.view(name)
		if v == nil {
			continue
		}
		from := len(zones)
		if pools(v.node, sh) {
			add(v, v.zones, mainOK, otherOK)
		} else {
			for i := range v.zones {
				add(v, v.zones[i:i+1], mainOK, otherOK)
			}
		}
		if tooWide {
			return nil, false
		}
		// The node's zones are one unit when its admission takes fewer
		// pods than they hold; else each zone is one.
		holds, otherHolds, anyOther := 0, 0, false
		for _, z := range zones[from:] {
			holds += z.cap
		}
		for _, z := range zones[from:] {
			if z.other {
				otherHolds = max(otherHolds, holds-z.cap+z.otherCap)
				anyOther = true
			}
		}
		limit, otherLimit := p.admitted(name, holds, false), -1
		if anyOther {
			if otherLimit = p.admitted(name, otherHolds, true); otherLimit < 0 {
				for i := from; i < len(zones); i++ {
					zones[i].other = false
				}
				otherLimit = -1
			}
		}
		if limit < holds || otherLimit >= 0 && otherLimit < otherHolds {
			units = append(units, rawUnit{from: from, to: len(zones), limit: limit, otherLimit: otherLimit})
		} else {
			for i := from; i < len(zones); i++ {
				units = append(units, rawUnit{from: i, to: i + 1, limit: -1, otherLimit: -1})
			}
		}
		var leaves []topology.S0ID
		for _, z := range zones[from:] {
			leaves = append(leaves, flatLeaves[z.off:z.off+z.n]...)
		}
		if len(leaves) > 0 {
			join(leaves)
		}
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
	for _, u := range units {
		if zones[u.from].n == 0 && u.to-u.from == 1 {
			continue
		}
		var root topology.S0ID
		for _, z := range zones[u.from:u.to] {
			if z.n > 0 {
				root = find(flatLeaves[z.off])
				break
			}
		}
		c := byRoot[root]
		key = append(append(key[:0], root...), '|')
		key = appendInt(key, int64(u.limit+1))
		key = append(key, ',')
		key = appendInt(key, int64(u.otherLimit+1))
		su := setUnit{limit: u.limit, otherLimit: u.otherLimit, mult: 1}
		for _, z := range zones[u.from:u.to] {
			leaves, nics := flatLeaves[z.off:z.off+z.n], flatNICs[z.off:z.off+z.n]
			for j, id := range leaves {
				bitsOf[j] = uint(slices.Index(c.leaves, id))
			}
			key = append(key, '|')
			key = appendInt(key, int64(z.cap))
			if z.other {
				key = append(key, '+')
				key = appendInt(key, int64(z.otherCap))
			}
			for j := 0; j < z.n; j++ {
				key = append(key, '/')
				key = appendInt(key, int64(bitsOf[j]))
				key = append(key, ':')
				key = appendInt(key, nics[j])
			}
			su.zones = append(su.zones, setZone{cap: z.cap, bits: slices.Clone(bitsOf[:z.n]), nics: slices.Clone(nics), other: z.other, otherCap: z.otherCap})
		}
		if at, ok := seen[string(key)]; ok {
			c.units[at].mult++
			continue
		}
		seen[string(key)] = len(c.units)
		c.units = append(c.units, su)
	}
	comps := make([]setComp, 0, len(roots))
	sort.Slice(roots, func(i, j int) bool { return byRoot[roots[i]].leaves[0] < byRoot[roots[j]].leaves[0] })
	for _, root := range roots {
		c := byRoot[root]
		c.count(r, target, other)
		comps = append(comps, *c)
	}
	sort.SliceStable(comps, func(i, j int) bool { return comps[i].s1 < comps[j].s1 })
	return comps, true
}

// admitted is how many of the gang's main-shape pods node admits together
// (Gang.Admit), beside its other pod when withOther, up to holds: holds
// when the admission takes that many (or the gang has none); -1 when it
// refuses the other pod. One probe decides most nodes (the last pod
// beside the others); a node that refuses it is probed pod by pod.
func (p *planner) admitted(node string, holds int, withOther bool) int {
	if p.g.Admit == nil || p.setPods == nil {
		return holds
	}
	var mains []Pod
	var on []Pod
	for _, pod := range p.setPods {
		switch {
		case pod.Shape == p.main:
			mains = append(mains, pod)
		case withOther && pod.Shape.NICs > 0 && len(on) == 0:
			if !p.g.Admit(node, pod, nil) {
				return -1
			}
			on = append(on, pod)
		}
	}
	holds = min(holds, len(mains))
	takes := func(k int) bool { // the k-th main pod beside the first k-1
		return p.g.Admit(node, mains[k-1], append(on[:len(on):len(on)], mains[:k-1]...))
	}
	switch {
	case holds == 0:
		return 0
	case takes(holds):
		return holds
	}
	k := 0
	for k < holds-1 && takes(k+1) {
		k++
	}
	return k
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

// count fills best, mask and free: for every subset of the component's
// leaves, the pods of the main shape its units hold (capped at target),
// and with other set, those they hold beside it (the other pod in the
// zone where it costs the fewest); per size the most, ties to the fewest
// free NICs under the set (best fit), then the lowest mask.
func (c *setComp) count(r int64, target int, other *setOther) {
	n := len(c.leaves)
	layers := 1
	if other != nil {
		layers = 2
	}
	c.best, c.mask, c.free = make([][]int, layers), make([][]uint32, layers), make([][]int64, layers)
	for l := range c.best {
		c.best[l], c.mask[l], c.free[l] = make([]int, n+1), make([]uint32, n+1), make([]int64, n+1)
		for k := 1; k <= n; k++ {
			c.best[l][k] = -1
		}
	}
	if other != nil {
		c.best[1][0] = -1
	}
	leafNICs := make([]int64, n)
	for _, u := range c.units {
		for _, z := range u.zones {
			for i, b := range z.bits {
				leafNICs[b] += z.nics[i] * int64(u.mult)
			}
		}
	}
	keep := func(l int, m uint32, pods int, nics int64) {
		k := bits.OnesCount32(m)
		if pods > c.best[l][k] || pods == c.best[l][k] && nics < c.free[l][k] {
			c.best[l][k], c.mask[l][k], c.free[l][k] = pods, m, nics
		}
	}
	bound := func(limit, v int) int {
		if limit >= 0 {
			return min(limit, v)
		}
		return v
	}
	var held, avail []int
	for m := uint32(1); m < 1<<uint(n); m++ {
		pods := 0
		// delta is the fewest main-shape pods the other pod costs in a
		// zone that holds it (ok: some zone does).
		delta, ok := 0, false
		for _, u := range c.units {
			held, avail = held[:0], avail[:0]
			sum := 0
			for _, z := range u.zones {
				var a int
				for i, b := range z.bits {
					if m&(1<<b) != 0 {
						a += int(z.nics[i])
					}
				}
				h := min(z.cap, a/int(r))
				held, avail = append(held, h), append(avail, a)
				sum += h
			}
			p := bound(u.limit, sum)
			pods += p * u.mult
			if other == nil {
				if pods >= target {
					break
				}
				continue
			}
			for i, z := range u.zones {
				if !z.other || int64(avail[i]) < other.shape.NICs {
					continue
				}
				beside := min(z.otherCap, (avail[i]-int(other.shape.NICs))/int(r))
				d := bound(u.otherLimit, sum-held[i]+beside) - p
				if !ok || d > delta {
					delta, ok = d, true
				}
			}
		}
		var nics int64
		for b := 0; b < n; b++ {
			if m&(1<<uint(b)) != 0 {
				nics += leafNICs[b]
			}
		}
		keep(0, m, min(pods, target), nics)
		if ok {
			keep(1, m, min(pods+delta, target), nics)
		}
	}
}

// tryLeafSets verifies the leaf-set search's choice for the gang by a
// fill and returns it when it uses fewer leaves than c, or as many in
// fewer S1s; else c, whose choice among sets of as many leaves and S1s
// (nodes, best fit, which keep large leaves whole for later gangs)
// stands. It applies to gangs that hold no pods yet. A gang's one RDMA pod
// of another shape than the main one (a master) is counted exactly
// (otherPod); other pods of other shapes are given room by asking for up
// to maxSetExtra more pods of the main shape.
func (p *planner) tryLeafSets(pods []Pod, c *candidate, oneS1 bool) *candidate {
	if !p.g.Occupancy.Empty() || p.main.NICs <= 0 {
		return c
	}
	need := gangNICs(pods)
	if c != nil && !p.setsMayBeat(c, need, oneS1) {
		return c
	}
	main := countShape(pods, p.main)
	p.setPods = pods
	defer func() { p.setPods = nil }()
	stats := map[topology.S0ID]*leafStat{}
	for _, st := range p.leafStats() {
		stats[st.id] = st
	}
	// try fills the gang on the search's set for t main-shape pods
	// (beside other): the verified candidate, nil when the fill fails;
	// stop when the search finds nothing or more leaves than c.
	try := func(t int, other *setOther) (cand *candidate, stop bool) {
		set, ok := p.exactLeafSet(t, other, oneS1)
		if !ok || c != nil && len(set) > len(c.leaves) {
			return nil, true
		}
		// The fill may use every node with a NIC under the set (the
		// fabric's slots; the fill skips what has no room).
		var nodes []string
		var free int64
		for _, id := range sortedS0s(set) {
			if st := stats[id]; st != nil {
				free += st.nics
			}
			if l, ok := p.s.fabric.Leaf(id); ok {
				for _, slot := range l.Slots {
					nodes = append(nodes, slot.Node.Name)
				}
			}
		}
		assign, ok := p.fill(pods, p.dedupe(nodes), set)
		if !ok {
			return nil, false
		}
		return &candidate{assign: assign, leaves: p.leavesOf(assign), leftover: max(free-need, 0), key: "leaf-set"}, false
	}
	pick := func(cand *candidate) *candidate {
		if c == nil || len(cand.leaves) < len(c.leaves) ||
			len(cand.leaves) == len(c.leaves) && s1Count(p.s.fabric, cand.leaves) < s1Count(p.s.fabric, c.leaves) {
			return cand
		}
		return c
	}
	if other := otherPod(pods, p.main); other != nil {
		if cand, _ := try(main, other); cand != nil {
			return pick(cand)
		}
	}
	extra := 0
	if main < len(pods) {
		extra = maxSetExtra
	}
	for t := main; t <= main+extra; t++ {
		cand, stop := try(t, nil)
		if stop {
			return c
		}
		if cand != nil {
			return pick(cand)
		}
	}
	return c
}

// setsMayBeat is the leaf-set search's gate: whether a set of leaves could
// beat c, a placement on k leaves in m S1s, by the bound that every NIC
// the gang needs is a free NIC under its leaves: some k-1 leaves (within
// one S1 when oneS1) have need free NICs, or, when c spans several S1s,
// some k leaves of fewer S1s do. It reads the per-leaf statistics the
// tier searches keep, so a gang the tiers already placed on the fewest
// leaves and S1s the bound allows costs no node scan.
func (p *planner) setsMayBeat(c *candidate, need int64, oneS1 bool) bool {
	k, m := len(c.leaves), s1Count(p.s.fabric, c.leaves)
	// Per S1, its leaves' free NICs, largest first, as prefix sums.
	byS1 := map[topology.S1ID][]int64{}
	var order []topology.S1ID
	for _, st := range p.leafStats() {
		if st.nics <= 0 {
			continue
		}
		if _, ok := byS1[st.s1]; !ok {
			order = append(order, st.s1)
		}
		byS1[st.s1] = append(byS1[st.s1], st.nics)
	}
	prefix := func(list []int64) []int64 {
		slices.SortFunc(list, func(a, b int64) int { return int(b - a) })
		out := make([]int64, len(list)+1)
		for i, v := range list {
			out[i+1] = out[i] + v
		}
		return out
	}
	top := func(pre []int64, j int) int64 { return pre[min(j, len(pre)-1)] }
	if oneS1 {
		for _, id := range order {
			if top(prefix(byS1[id]), k-1) >= need {
				return true
			}
		}
		return false
	}
	var all []int64
	pres := make([][]int64, 0, len(order))
	for _, id := range order {
		all = append(all, byS1[id]...)
		pres = append(pres, prefix(byS1[id]))
	}
	if top(prefix(all), k-1) >= need {
		return true
	}
	if m <= 1 {
		return false
	}
	// best[s][j]: the most free NICs j leaves of s S1s have (s < m).
	best := make([][]int64, m)
	for s := range best {
		best[s] = make([]int64, k+1)
		for j := range best[s] {
			best[s][j] = -1
		}
	}
	best[0][0] = 0
	for _, pre := range pres {
		for s := m - 2; s >= 0; s-- {
			for j := k; j >= 0; j-- {
				if best[s][j] < 0 {
					continue
				}
				for t := 1; j+t <= k && t < len(pre); t++ {
					best[s+1][j+t] = max(best[s+1][j+t], best[s][j]+pre[t])
				}
			}
		}
	}
	for s := 1; s < m; s++ {
		for j := 1; j <= k; j++ {
			if best[s][j] >= need {
				return true
			}
		}
	}
	return false
}
