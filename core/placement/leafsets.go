// The leaf-set search: for gangs of one pod shape, the fewest leaves that
// hold the gang and, among sets of that many leaves, those in the fewest
// S1s, chosen exactly on the capacity model of the free view.
//
// A unit is one NUMA zone of a single-NUMA node (a pod sits in one zone),
// or a whole node whose zones pool (spanning policies, split shapes on
// container-level nodes). Restricted to the NICs of a leaf set S, unit u
// holds min(C_u, floor(a_u(S)/r)) pods of r NICs: C_u is what its GPUs,
// CPU and the node's cap allow, a_u(S) its free NICs under S (with NICs
// of several RDMA units, the largest k with Σ min(f_i, k) ≥ k·r over its
// NICs' free units f_i under S, since a pod takes distinct NICs). Units only
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
	// units and unitBits, set when a NIC of the zone has more than one
	// free unit, give each NIC's free units and the bit of its leaf: the
	// zone then holds the largest k pods of r NICs with Σ min(units, k)
	// ≥ k·r over its NICs under the set (unitPods), fewer than its units
	// divided by r when pods would need one NIC twice.
	units    []int64
	unitBits []uint
}

// unitPods is the most pods of r distinct NICs each, up to limit, that NICs
// with the given free units hold together: the largest k with
// Σ min(units_i, k) ≥ k·r (each pod takes one unit of r different NICs).
func unitPods(units []int64, r int64, limit int) int {
	k := 0
	for k < limit {
		var sum int64
		next := int64(k + 1)
		for _, u := range units {
			sum += min(u, next)
		}
		if sum < next*r {
			break
		}
		k++
	}
	return k
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
	plans := s1Plans(comps, target, top)
	if oneS1 {
		return bestInOneS1(plans, comps, target, top)
	}
	return bestOverS1s(plans, comps, target, top)
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
	var inSet []int64
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
				if z.units != nil && h > 0 {
					inSet = inSet[:0]
					for i, b := range z.unitBits {
						if m&(1<<b) != 0 {
							inSet = append(inSet, z.units[i])
						}
					}
					h = unitPods(inSet, r, h)
				}
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
	// The tier searches' candidate is judged by the leaves its pods'
	// NICs use, not the set it was filled on (which may be wider).
	var used map[topology.S0ID]bool
	if c != nil {
		used = p.leavesOf(c.assign)
	}
	if c != nil && !p.setsMayBeat(used, need, oneS1) {
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
		if !ok || c != nil && len(set) > len(used) {
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
		if c == nil || len(cand.leaves) < len(used) ||
			len(cand.leaves) == len(used) && s1Count(p.s.fabric, cand.leaves) < s1Count(p.s.fabric, used) {
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
// beat a placement on leaves (k of them, in m S1s), by the bound that
// every NIC the gang needs is a free NIC under its leaves: some k-1 leaves
// (within one S1 when oneS1) have need free NICs, or, when the placement
// spans several S1s, some k leaves of fewer S1s do. It reads the per-leaf statistics the
// tier searches keep, so a gang the tiers already placed on the fewest
// leaves and S1s the bound allows costs no node scan.
func (p *planner) setsMayBeat(leaves map[topology.S0ID]bool, need int64, oneS1 bool) bool {
	k, m := len(leaves), s1Count(p.s.fabric, leaves)
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
