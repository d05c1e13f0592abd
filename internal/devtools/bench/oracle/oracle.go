package oracle

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// This file is the benchmark's optimum: the fewest distinct leaves (S0s)
// that all NICs of a gang can use on a given state. It is written apart
// from the placement planner and imports nothing of the project, so the
// benchmark does not grade the planner with the planner's own answer.
//
// The search. For pods of one shape (g GPUs, c CPU, r NICs) a placement
// unit is a NUMA zone of a single-NUMA node (a pod must sit inside one zone)
// or a whole node of a spanning policy (a pod may take GPUs, CPU and NICs
// from any of its zones, so the zones pool). Restricted to the NICs of a
// leaf set S, unit u holds exactly
//
//	p_u(S) = min(C_u, floor(a_u(S) / r))
//
// pods, where C_u is what its GPUs and CPU allow and a_u(S) is its free NICs
// under S; the gang fits on S when the sum over units reaches its size n.
// Units only interact through the leaves they share, so the leaves split
// into components (leaves joined when one unit has NICs under both: the two
// leaves of a provider node pair, the rails of a scalable unit, the NICs of
// one topology-unknown zone). For each component the search finds, for k =
// 1, 2, ... (iterative deepening on the leaf-set size), the most pods any k
// of its leaves hold: a depth-first walk over k-subsets in order of leaf
// capacity, pruned when the chosen leaves' capacity plus that of the next
// best leaves cannot beat the best found, and stopped once the component
// holds the whole gang or all it can. A small dynamic programme then picks
// how many leaves to take from each component: the fewest in total whose
// pods reach n. Each step is exact, so the result is the true minimum for
// one shape. The walk counts the leaf sets it visits; past the limit the
// result is OracleUnknown, never a guess.
//
// NICs of several RDMA units. A pod's r NICs are r distinct NICs, one unit
// of each, and a NIC with f free units serves up to f pods. With the free
// units f_1, f_2, ... of unit u's NICs under S, u holds
//
//	p_u(S) = max { k <= C_u : Σ_i min(f_i, k) >= k·r }
//
// pods (k pods need k·r units with at most k of them on any one NIC; the
// condition is also sufficient: deal the pods' NICs round-robin over the
// NICs sorted by units). The left side minus k·r is concave in k and 0 at
// 0, so the largest such k is found by bisection. With every f_i = 1 it is
// floor(a_u(S)/r) again. The pruning bound of a unit of several leaves
// becomes min(r·C_u, Σ_i min(f_i, C_u)), still an upper bound on r·p_u and
// additive over leaves.
//
// Gangs with pods of different shapes: the per-unit count above is not
// defined for a mix, and the oracle returns OracleUnknown with a reason.

// OracleShape is what one pod needs: GPUs, CPU (millicores) and RDMA NICs.
type OracleShape struct {
	GPU      int64
	CPUMilli int64
	NICs     int64
}

// OracleZone is the free capacity of one NUMA zone: its GPUs, its CPU and
// one entry per free NIC naming that NIC's leaf (and its free units).
type OracleZone struct {
	FreeGPU      int64
	FreeCPUMilli int64
	// FreeNICLeaves lists the leaf of each free NIC of the zone (a leaf may
	// repeat). A topology-unknown NIC has a leaf of its own.
	FreeNICLeaves []string
	// FreeNICUnits, when set, gives the free RDMA units (>= 1) of each NIC
	// of FreeNICLeaves, in the same order: how many pods it still serves,
	// one unit each. Nil: every free NIC has one unit.
	FreeNICUnits []int64
}

// nicUnits returns the free units of the zone's i-th free NIC.
func (z OracleZone) nicUnits(i int) int64 {
	if z.FreeNICUnits == nil {
		return 1
	}
	return max(z.FreeNICUnits[i], 1)
}

// hasUnits reports whether a free NIC of the zone has more than one unit.
func (z OracleZone) hasUnits() bool {
	for _, u := range z.FreeNICUnits {
		if u > 1 {
			return true
		}
	}
	return false
}

// unitPods is the most pods (at most limit) of r distinct NICs each that
// NICs of the given free units hold together: the largest k with
// Σ_i min(units_i, k) >= k·r (see the comment at the top of this file).
func unitPods(lists [][]int64, limit int, r int64) int {
	ok := func(k int) bool {
		var sum int64
		for _, l := range lists {
			for _, u := range l {
				sum += min(u, int64(k))
			}
		}
		return sum >= int64(k)*r
	}
	lo, hi := 0, limit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// cappedUnits is Σ_i min(units_i, c) over the lists.
func cappedUnits(lists [][]int64, c int64) int64 {
	var sum int64
	for _, l := range lists {
		for _, u := range l {
			sum += min(u, c)
		}
	}
	return sum
}

// OracleNode is one node as the oracle sees it.
type OracleNode struct {
	Name string
	// S1 is the node's S1 (miniPod); "" is one S1 like any other (the
	// nodes whose S1 is unknown).
	S1 string
	// Spanning is true when the node's topology policy lets a pod take
	// resources from several NUMA zones; false for single-NUMA policies.
	Spanning bool
	Zones    []OracleZone
}

// OracleStatus says how far an oracle answer can be trusted.
type OracleStatus int

const (
	// OracleExact: Leaves is the true minimum.
	OracleExact OracleStatus = iota
	// OracleInfeasible: the gang does not fit the state at all.
	OracleInfeasible
	// OracleUnknown: the search hit its limit or the gang mixes pod shapes;
	// Reason says which.
	OracleUnknown
)

// String names the status.
func (s OracleStatus) String() string {
	switch s {
	case OracleExact:
		return "exact"
	case OracleInfeasible:
		return "infeasible"
	case OracleUnknown:
		return "unknown"
	}
	return fmt.Sprintf("status-%d", int(s))
}

// OracleResult is the oracle's answer.
type OracleResult struct {
	Status OracleStatus
	// Leaves is the fewest distinct leaves all NICs of the gang can use
	// (0 for a gang requesting no NICs); set only when Status is
	// OracleExact.
	Leaves int
	// S1s is the fewest S1s of the placements on Leaves leaves (0 for a
	// gang requesting no NICs); set only when Status is OracleExact and
	// S1Reason is empty.
	S1s int
	// S1Reason says why S1s could not be decided (s1.go); empty when it
	// was.
	S1Reason string
	// Reason explains an OracleUnknown answer.
	Reason string
	// Visited is the number of leaf sets the search visited.
	Visited int
}

// DefaultOracleLimit bounds the leaf sets one MinLeaves call visits.
const DefaultOracleLimit = 1 << 20

// MinLeaves returns the fewest distinct leaves whose NICs can hold every pod
// of pods on nodes, visiting at most limit leaf sets (DefaultOracleLimit if
// limit <= 0). It is exact for pods of one shape; see the comment at the top
// of this file.
func MinLeaves(nodes []OracleNode, pods []OracleShape, limit int) OracleResult {
	if limit <= 0 {
		limit = DefaultOracleLimit
	}
	n := len(pods)
	if n == 0 {
		return OracleResult{Status: OracleExact}
	}
	sh := pods[0]
	for _, p := range pods[1:] {
		if p != sh {
			return OracleResult{Status: OracleUnknown, Reason: fmt.Sprintf("pods of different shapes (%+v and %+v): the oracle is exact for one shape only", sh, p)}
		}
	}
	sc := unitPool.Get().(*unitScratch)
	defer unitPool.Put(sc)
	units := buildUnits(nodes, sh, n, sc)
	if sh.NICs <= 0 {
		total := 0
		for _, u := range units {
			total += u.cap
		}
		if total >= n {
			return OracleResult{Status: OracleExact}
		}
		return OracleResult{Status: OracleInfeasible}
	}
	s := &oracleSearch{r: sh.NICs, n: n, limit: limit}
	var bests [][]int
	comps := componentsOf(units, func(u unit) []string { return u.leaves })
	for _, c := range comps {
		best, ok := s.componentBest(c)
		if !ok {
			return OracleResult{Status: OracleUnknown, Visited: s.visited,
				Reason: fmt.Sprintf("search limit of %d leaf sets reached in a component of %d leaves", limit, len(c.leaves))}
		}
		bests = append(bests, best)
	}
	k, ok := fewestLeaves(bests, n)
	if !ok {
		return OracleResult{Status: OracleInfeasible, Visited: s.visited}
	}
	res := OracleResult{Status: OracleExact, Leaves: k, Visited: s.visited}
	s1s := make([]string, len(comps))
	for i, c := range comps {
		for j, u := range c.items {
			if j > 0 && u.s1 != s1s[i] {
				res.S1Reason = fmt.Sprintf("leaf %s is reached from nodes of S1s %q and %q", c.leaves[0], s1s[i], u.s1)
				return res
			}
			s1s[i] = u.s1
		}
	}
	if c, ok := fewestS1s(bests, s1s, n); ok && c.leaves == k {
		res.S1s = c.s1s
	} else {
		res.S1Reason = fmt.Sprintf("the S1 programme found %d leaves where the leaf programme found %d", c.leaves, k)
	}
	return res
}

// unit is where pods of the gang's shape are counted: a zone of a
// single-NUMA node or a whole spanning node.
type unit struct {
	// cap is how many pods its GPUs and CPU allow, at most the gang size.
	cap int
	// s1 is the S1 of the unit's node.
	s1 string
	// leaves are the leaves of the unit's free NICs, each once, in the
	// order first seen; nics[i] is its free NICs under leaves[i]. (Slices,
	// not a map: a unit has a few leaves, and the oracle builds a unit per
	// zone of the cluster for every gang it grades.)
	leaves []string
	nics   []int64
	// units, when the unit has a NIC of several free units, lists per
	// leaf (as leaves) the free units of each of its NICs there; nil when
	// every NIC has one.
	units [][]int64
}

// unitScratch holds the backing arrays of buildUnits' answer, reused from
// one oracle call to the next: the oracle builds a unit per zone of the
// cluster for every gang it grades, and none of it outlives the call.
type unitScratch struct {
	units  []unit
	leaves []string
	counts []int64
}

var unitPool = sync.Pool{New: func() any { return new(unitScratch) }}

// grow returns s emptied, with room for n elements.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// buildUnits turns nodes into units for shape sh, capping each unit at n
// pods. Units that can hold no pod are dropped. The units and their slices
// live in sc's arrays (one for every unit's leaves, one for their counts),
// valid until sc is used again.
func buildUnits(nodes []OracleNode, sh OracleShape, n int, sc *unitScratch) []unit {
	zones, entries := 0, 0
	for _, nd := range nodes {
		zones += len(nd.Zones)
		for _, z := range nd.Zones {
			entries += len(z.FreeNICLeaves)
		}
	}
	// Sized up front: the units' slices point into leaves and counts,
	// which must not move while they are filled.
	out := grow(sc.units, zones)
	leaves := grow(sc.leaves, entries)
	counts := grow(sc.counts, entries)
	defer func() { sc.units, sc.leaves, sc.counts = out, leaves, counts }()
	// add counts the pods zones hold together: one zone of a single-NUMA
	// node, every zone of a spanning node.
	add := func(s1 string, zones []OracleZone) {
		var gpu, cpu, total int64
		for _, z := range zones {
			gpu += max(z.FreeGPU, 0)
			cpu += max(z.FreeCPUMilli, 0)
			total += int64(len(z.FreeNICLeaves))
		}
		c := int64(n)
		if sh.GPU > 0 {
			c = min(c, gpu/sh.GPU)
		}
		if sh.CPUMilli > 0 {
			c = min(c, cpu/sh.CPUMilli)
		}
		if c <= 0 || total < sh.NICs {
			return
		}
		start := len(leaves)
		withUnits := false
		for _, z := range zones {
			withUnits = withUnits || z.hasUnits()
			for _, l := range z.FreeNICLeaves {
				if i := slices.Index(leaves[start:], l); i >= 0 {
					counts[start+i]++
					continue
				}
				leaves = append(leaves, l)
				counts = append(counts, 1)
			}
		}
		end := len(leaves)
		u := unit{cap: int(c), s1: s1, leaves: leaves[start:end:end], nics: counts[start:end:end]}
		if withUnits {
			u.units = make([][]int64, len(u.leaves))
			for _, z := range zones {
				for i, l := range z.FreeNICLeaves {
					j := slices.Index(u.leaves, l)
					u.units[j] = append(u.units[j], z.nicUnits(i))
				}
			}
			if unitPods(u.units, u.cap, sh.NICs) == 0 {
				return
			}
		}
		out = append(out, u)
	}
	for _, nd := range nodes {
		if nd.Spanning {
			add(nd.S1, nd.Zones)
			continue
		}
		for i := range nd.Zones {
			add(nd.S1, nd.Zones[i:i+1])
		}
	}
	return out
}

// leafComponent is a set of leaves joined by shared items (units, nodes),
// with those items.
type leafComponent[T any] struct {
	leaves []string
	items  []T
}

// componentsOf splits the items' leaves into connected components (sorted
// by their first leaf, leaves sorted within), so the search is
// deterministic; items without leaves are left out.
func componentsOf[T any](items []T, leavesOf func(T) []string) []leafComponent[T] {
	groups := joinLeaves(len(items), func(i int) []string { return leavesOf(items[i]) })
	out := make([]leafComponent[T], len(groups))
	for i, g := range groups {
		out[i].leaves = g.leaves
		out[i].items = make([]T, 0, len(g.items))
		for _, it := range g.items {
			out[i].items = append(out[i].items, items[it])
		}
	}
	return out
}

// component is a set of leaves joined by shared units, with those units.
type component = leafComponent[unit]

// leafGroup is one connected component of joinLeaves: its leaves, sorted,
// and the items joining them, in index order.
type leafGroup struct {
	leaves []string
	items  []int
}

// joinLeaves splits the leaves of n items (item i has the leaves
// leavesOf(i); items without leaves are left out) into connected
// components, leaves joined when one item has both. Components are sorted
// by their first leaf.
func joinLeaves(n int, leavesOf func(int) []string) []leafGroup {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	lists := make([][]string, n)
	for i := range lists {
		lists[i] = leavesOf(i)
		for _, l := range lists[i] {
			if _, ok := parent[l]; !ok {
				parent[l] = l
			}
			if a, b := find(lists[i][0]), find(l); a != b {
				parent[a] = b
			}
		}
	}
	byRoot := map[string]*leafGroup{}
	for l := range parent {
		root := find(l)
		if byRoot[root] == nil {
			byRoot[root] = &leafGroup{}
		}
		byRoot[root].leaves = append(byRoot[root].leaves, l)
	}
	for i, ls := range lists {
		if len(ls) > 0 {
			g := byRoot[find(ls[0])]
			g.items = append(g.items, i)
		}
	}
	out := make([]leafGroup, 0, len(byRoot))
	for _, g := range byRoot {
		slices.Sort(g.leaves)
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b leafGroup) int { return strings.Compare(a.leaves[0], b.leaves[0]) })
	return out
}

// oracleSearch holds what the component searches share.
type oracleSearch struct {
	r       int64 // NICs per pod
	n       int   // gang size
	limit   int
	visited int
}

// leafUse is one unit's NICs under one leaf (units: their free units,
// when the unit has NICs of several).
type leafUse struct {
	unit  int
	nics  int64
	units []int64
}

// componentBest returns best[k], the most pods (at most n) any k leaves of
// the component hold, for k = 0 .. K where best[K] is all the component can
// give; ok is false when the search limit was reached.
func (s *oracleSearch) componentBest(c component) (best []int, ok bool) {
	// Per leaf: the units it reaches and an upper bound on the pods it adds
	// to any set, scaled by r to stay in integers.
	type leafInfo struct {
		uses   []leafUse
		weight int64
	}
	index := map[string]int{}
	for i, l := range c.leaves {
		index[l] = i
	}
	info := make([]leafInfo, len(c.leaves))
	single := make([]bool, len(c.items))
	for ui, u := range c.items {
		single[ui] = len(u.leaves) == 1
		for j, l := range u.leaves {
			k := u.nics[j]
			li := index[l]
			use := leafUse{unit: ui, nics: k}
			switch {
			case u.units != nil:
				use.units = u.units[j]
				if single[ui] {
					info[li].weight += s.r * int64(unitPods(u.units[j:j+1], u.cap, s.r))
				} else {
					info[li].weight += min(int64(u.cap)*s.r, cappedUnits(u.units[j:j+1], int64(u.cap)))
				}
			case single[ui]:
				info[li].weight += s.r * min(int64(u.cap), k/s.r)
			default:
				info[li].weight += min(int64(u.cap)*s.r, k)
			}
			info[li].uses = append(info[li].uses, use)
		}
	}
	for i := range info {
		slices.SortFunc(info[i].uses, func(a, b leafUse) int { return a.unit - b.unit })
	}
	order := make([]int, len(info))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case info[a].weight > info[b].weight:
			return -1
		case info[a].weight < info[b].weight:
			return 1
		}
		return 0
	})
	// prefix lets the walk sum the weights of order[i:i+m] in O(1).
	prefix := make([]int64, len(order)+1)
	for i, li := range order {
		prefix[i+1] = prefix[i] + info[li].weight
	}

	// What the whole component holds.
	full := 0
	for _, u := range c.items {
		if u.units != nil {
			full += unitPods(u.units, u.cap, s.r)
			continue
		}
		var a int64
		for _, k := range u.nics {
			a += k
		}
		full += min(u.cap, int(a/s.r))
	}
	full = min(full, s.n)

	have := make([]int64, len(c.items)) // NICs of each unit under the chosen leaves
	// For units with NICs of several units: the free units of their NICs
	// under the chosen leaves, one list per leaf (a stack: the walk adds
	// and removes leaves last in, first out).
	stack := make([][][]int64, len(c.items))
	// exact and bound track, for the chosen leaves, the pods they hold and
	// the scaled upper bound Σ_u (single: r·p_u, else min(r·C_u, a_u)).
	var exact int
	var bound int64
	contrib := func(ui int) (int, int64) {
		u := c.items[ui]
		if u.units != nil {
			p := unitPods(stack[ui], u.cap, s.r)
			if single[ui] {
				return p, int64(p) * s.r
			}
			return p, min(int64(u.cap)*s.r, cappedUnits(stack[ui], int64(u.cap)))
		}
		p := min(u.cap, int(have[ui]/s.r))
		if single[ui] {
			return p, int64(p) * s.r
		}
		return p, min(int64(u.cap)*s.r, have[ui])
	}
	apply := func(li int, sign int64) {
		for _, use := range info[li].uses {
			p0, b0 := contrib(use.unit)
			have[use.unit] += sign * use.nics
			if use.units != nil {
				if sign > 0 {
					stack[use.unit] = append(stack[use.unit], use.units)
				} else {
					stack[use.unit] = stack[use.unit][:len(stack[use.unit])-1]
				}
			}
			p1, b1 := contrib(use.unit)
			exact += p1 - p0
			bound += b1 - b0
		}
	}

	best = []int{0}
	for k := 1; k <= len(order) && best[k-1] < full; k++ {
		target := best[k-1] // the best of k leaves is at least that of k-1
		var walk func(start, left int) bool
		walk = func(start, left int) bool {
			s.visited++
			if s.visited > s.limit {
				return false
			}
			if left == 0 {
				target = max(target, min(exact, s.n))
				return true
			}
			for i := start; i+left <= len(order); i++ {
				// Leaves are in falling weight, so no later start can do
				// better than this one's bound: stop here.
				if bound+prefix[i+left]-prefix[i] < int64(target+1)*s.r {
					break
				}
				apply(order[i], 1)
				ok := walk(i+1, left-1)
				apply(order[i], -1)
				if !ok {
					return false
				}
				if target >= full {
					break
				}
			}
			return true
		}
		if !walk(0, k) {
			return nil, false
		}
		best = append(best, target)
	}
	return best, true
}

// fewestLeaves combines the components: the fewest leaves in total, taking
// k_c leaves of component c (holding bests[c][k_c] pods), whose pods reach
// n. ok is false when all components together hold fewer than n pods.
func fewestLeaves(bests [][]int, n int) (int, bool) {
	const inf = int(^uint(0) >> 1)
	dp := make([]int, n+1) // dp[j]: fewest leaves holding j pods (j = n: at least n)
	for j := range dp {
		dp[j] = inf
	}
	dp[0] = 0
	next := make([]int, n+1)
	for _, best := range bests {
		copy(next, dp)
		for j, leaves := range dp {
			if leaves == inf {
				continue
			}
			for k := 1; k < len(best); k++ {
				t := min(n, j+best[k])
				next[t] = min(next[t], leaves+k)
			}
		}
		dp, next = next, dp
	}
	if dp[n] == inf {
		return 0, false
	}
	return dp[n], true
}
