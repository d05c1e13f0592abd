// The exact search for small gangs: a backtracking fill that tries every
// zone of every node for every pod where the greedy fill gave up, and a
// refinement that looks for a placement on fewer leaves than the tier
// search found. Both are bounded; past the bound the greedy answer stands.

package placement

import (
	"sort"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

const (
	// exactMaxPods is the largest gang searched exactly. Mixed pod shapes
	// and per-pod node sets make the greedy fill and the per-shape
	// estimates miss placements; for gangs this small an exhaustive search
	// is cheap.
	exactMaxPods = 8
	// exactSteps bounds the zone placements one backtracking fill tries,
	// and planSteps those of all the backtracking fills of one Plan call.
	exactSteps = 20000
	planSteps  = 200000
	// refineLeaves bounds the leaves a refinement draws sets from, and
	// refineFills the fills it runs.
	refineLeaves = 12
	refineFills  = 300
	// refineLargeFills bounds the fills of a refinement of a gang larger
	// than exactMaxPods, which only tries one leaf fewer.
	refineLargeFills = 16
)

// exactFill places the pods on the nodes with NICs of the leaves ok admits,
// trying for each pod (largest first) every node and every zone, with the
// same checks as the greedy fill (Gang.Allowed, Gang.Admit, node caps).
// Pods of one shape and one node group are interchangeable and take zones
// in non-decreasing order, so each set of zones is tried once. It reports
// false when no assignment exists or a step bound (of this fill, or of the
// whole Plan call) is reached.
func (p *planner) exactFill(pods []Pod, nodes []string, allowed map[topology.S0ID]bool) ([]Assignment, bool) {
	ok := p.leafOK(allowed)
	var works []*work
	for _, n := range nodes {
		if v := p.s.view(n); v != nil {
			works = append(works, newWork(v))
		}
	}
	order := bySize(pods)
	assign := make([]Assignment, len(pods))
	steps := 0
	var place func(k, from int) bool
	place = func(k, from int) bool {
		if k == len(order) {
			return true
		}
		idx := order[k]
		pod := pods[idx]
		start := 0
		if k > 0 {
			if prev := pods[order[k-1]]; prev.Shape == pod.Shape && prev.Group == pod.Group {
				start = from
			}
		}
		// An option is a node and a zone of it; the option after its
		// last enumerated zone is the spanning placement of a
		// spanning-policy node, or the placement container by container
		// of a split shape on a container-level node.
		for opt := start; opt < len(works)*(maxZones+1); opt++ {
			w, zone := works[opt/(maxZones+1)], opt%(maxZones+1)
			spanAt := min(len(w.zones), maxZones)
			span := zone == spanAt
			if zone > spanAt || span && !(pod.Shape.splitsOn(w.node) || w.node.Policy == topology.PolicySpanning && len(w.zones) >= 2) {
				continue
			}
			if steps++; steps > exactSteps || p.steps >= planSteps {
				return false
			}
			p.steps++
			if !p.takes(w, pod) {
				continue
			}
			saved := w.save()
			a, fit := w.placeZone(zone, span, pod.Shape, ok)
			if !fit {
				w.restore(saved)
				continue
			}
			w.placed = append(w.placed, pod)
			a.PodUID = pod.UID
			assign[idx] = a
			if place(k+1, opt) {
				return true
			}
			w.restore(saved)
		}
		return false
	}
	if !place(0, 0) {
		return nil, false
	}
	return assign, true
}

// maxZones is the most NUMA zones the exact search enumerates one by one
// per node (options are node*(maxZones+1)+zone); a larger node's further
// zones are reached through its spanning placement only.
const maxZones = 8

// workState is what a backtracking step restores on a work.
type workState struct {
	zones  []zoneFree
	cap    *Cap
	used   map[topology.NICID]int64
	placed int
}

// save snapshots the scratch view before a tentative placement.
func (w *work) save() workState {
	st := workState{zones: append([]zoneFree(nil), w.zones...), placed: len(w.placed)}
	if w.cap != nil {
		c := *w.cap
		st.cap = &c
	}
	if w.usedNICs != nil {
		st.used = make(map[topology.NICID]int64, len(w.usedNICs))
		for k, v := range w.usedNICs {
			st.used[k] = v
		}
	}
	return st
}

// restore undoes what happened since save.
func (w *work) restore(st workState) {
	copy(w.zones, st.zones)
	w.cap = st.cap
	w.usedNICs = st.used
	w.placed = w.placed[:st.placed]
}

// placeZone puts a pod of shape sh in zone i of the node, or, when span is
// set, across its zones (spanning policies) or container by container (a
// split shape on a container-level node).
func (w *work) placeZone(i int, span bool, sh Shape, ok func(topology.S0ID) bool) (Assignment, bool) {
	if !w.capFits(sh) {
		return Assignment{}, false
	}
	if span {
		if sh.splitsOn(w.node) {
			return w.placeParts(sh, ok)
		}
		zones, fit := w.span(sh, ok)
		return Assignment{Node: w.name, Zones: zones}, fit
	}
	z := &w.zones[i]
	if z.gpu < sh.GPU || z.cpuMilli < sh.CPUMilli {
		return Assignment{}, false
	}
	nics := w.freeNICs(i, ok)
	if int64(len(nics)) < sh.NICs {
		return Assignment{}, false
	}
	use := ledger.ZoneUse{NUMA: z.id, GPU: sh.GPU, CPUMilli: sh.CPUMilli, NICs: firstNICs(nics, sh.NICs)}
	w.take(i, use)
	return Assignment{Node: w.name, Zones: []ledger.ZoneUse{use}}, true
}

// refine looks, for a gang the tier search placed on two or more leaves,
// for a placement on fewer: sets of fewer leaves drawn from the most
// promising ones (the candidate's own, then those of its S1s, then the
// largest), smallest sets first, each verified by a fill. A small gang
// tries every smaller size; a larger one (whose fill is greedy) one leaf
// fewer only, within a smaller budget. Within a hard S1 limit only sets
// within one S1 count. It returns c when nothing tighter is found within
// the bounds.
func (p *planner) refine(pods []Pod, c *candidate, limit Tier) *candidate {
	if c == nil || len(c.leaves) < 2 || !p.g.Occupancy.Empty() {
		return c
	}
	pool := p.refinePool(c)
	need, counts := gangNICs(pods), p.classCounts(pods)
	first, budget := 1, refineFills
	if len(pods) > exactMaxPods {
		first, budget = len(c.leaves)-1, refineLargeFills
	}
	fills := 0
	for size := first; size < len(c.leaves) && fills < budget; size++ {
		var best *candidate
		forSubsets(len(pool), size, func(pick []int) bool {
			// What bounds a set: its free NICs, and for one leaf the
			// pods of each class its own NICs hold.
			var nics int64
			for _, i := range pick {
				nics += pool[i].nics
			}
			if nics < need || size == 1 && !p.leafHolds(pool[pick[0]], counts) {
				return true
			}
			set := make(map[topology.S0ID]bool, size)
			var nodes []string
			for _, i := range pick {
				set[pool[i].id] = true
				nodes = append(nodes, pool[i].nodes...)
			}
			if limit == TierS1 && s1Count(p.s.fabric, set) > 1 {
				return true
			}
			if fills++; fills > budget {
				return false
			}
			assign, ok := p.fill(pods, p.dedupe(nodes), set)
			if !ok {
				return true
			}
			cand := &candidate{assign: assign, leaves: p.leavesOf(assign), leftover: nics - need, key: "refined"}
			if cand.better(best, p.s.fabric) {
				best = cand
			}
			return true
		})
		if best != nil {
			return best
		}
	}
	return c
}

// refinePool lists the leaves a refinement draws from, at most
// refineLeaves: the candidate's leaves, then the other leaves of its S1s,
// then the rest, each group largest (most free NICs) first.
func (p *planner) refinePool(c *candidate) []*leafStat {
	s1s := map[topology.S1ID]bool{}
	for id := range c.leaves {
		if l, ok := p.s.fabric.Leaf(id); ok {
			s1s[l.S1] = true
		}
	}
	rank := func(st *leafStat) int {
		switch {
		case c.leaves[st.id]:
			return 0
		case s1s[st.s1]:
			return 1
		}
		return 2
	}
	var pool []*leafStat
	for _, st := range p.leafStats() {
		if st.nics > 0 {
			pool = append(pool, st)
		}
	}
	sort.SliceStable(pool, func(i, j int) bool {
		if a, b := rank(pool[i]), rank(pool[j]); a != b {
			return a < b
		}
		if pool[i].nics != pool[j].nics {
			return pool[i].nics > pool[j].nics
		}
		return pool[i].id < pool[j].id
	})
	if len(pool) > refineLeaves {
		pool = pool[:refineLeaves]
	}
	return pool
}

// forSubsets calls visit with every k-subset of 0..n-1 in lexicographic
// order until visit returns false.
func forSubsets(n, k int, visit func([]int) bool) {
	pick := make([]int, k)
	var walk func(depth, from int) bool
	walk = func(depth, from int) bool {
		if depth == k {
			return visit(pick)
		}
		for i := from; i <= n-(k-depth); i++ {
			pick[depth] = i
			if !walk(depth+1, i+1) {
				return false
			}
		}
		return true
	}
	walk(0, 0)
}
