// Per-leaf statistics of the planner: free slots and capacity estimates per
// pod shape, kept in the state and recomputed only for leaves whose nodes
// changed.

package placement

import (
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// leafStat is a leaf's free capacity for the gang's main shape.
type leafStat struct {
	id    topology.S0ID
	s1    topology.S1ID
	nodes []string
	// pods estimates how many pods of the main shape the leaf contributes to
	// a group of leaves: own, plus, on spanning nodes where no pod fits with
	// this leaf's NICs alone, the pods that fit with the node's NICs under
	// any leaf (an over-estimate the group fill corrects by adding leaves).
	pods int
	// own is how many pods of the main shape fit using this leaf's NICs
	// alone: what a single-leaf (s0) placement can use.
	own int
	// nics is the number of free NICs under the leaf.
	nics int64
	// split is true when a pod under this leaf may need NICs of other
	// leaves too: a node under it has a zone whose free NICs hang off
	// several leaves (rail cabling, topology-unknown NICs), or a pod of the
	// main shape only fits there across zones of different leaves. Groups
	// with such leaves are also searched by footprint (footprint.go).
	split bool
}

// leafStats returns (once per Plan) the capacity for the main shape and the
// free NICs of every leaf the gang does not exclude, over the nodes the
// gang may use, sorted by id.
// The state caches, per shape, the statistics over every usable node (what a
// gang without node constraints of its own counts); an entry is dropped
// when a node under its leaf changes, so a plan costs a map lookup per leaf
// rather than a scan of every node. A node the entry leaves out contributes
// nothing under the leaf for any gang (unusable, or no free NIC there), so
// a gang with constraints (Allowed, Exclude) gets its statistics from the
// entry's nodes alone: the entry itself where it may use all of them, else
// the same count over those it may use (restrict).
func (p *planner) leafStats() []*leafStat {
	if p.stats != nil {
		return p.stats
	}
	constrained := p.g.Allowed != nil || len(p.g.Exclude) > 0
	cache := p.s.leafCache[p.main]
	ids := p.s.fabric.LeafIDs()
	p.stats = make([]*leafStat, 0, len(ids))
	for _, id := range ids {
		if p.g.ExcludeS0s[id] {
			continue
		}
		st, ok := cache[id]
		if !ok {
			st = p.computeLeaf(id)
			cache = p.s.leafCacheOf(p.main)
			cache[id] = st
		}
		if constrained && st != nil {
			st = p.restrict(st)
		}
		if st != nil {
			p.stats = append(p.stats, st)
		}
	}
	return p.stats
}

// computeLeaf counts a leaf's free NICs and capacity for the main shape over
// every usable node (the state's cached statistics); nil when no such node
// has a free NIC there (or, for a shape without NICs, a free view).
func (p *planner) computeLeaf(id topology.S0ID) *leafStat {
	leaf, ok := p.s.fabric.Leaf(id)
	if !ok {
		return nil
	}
	st := &leafStat{id: id, s1: leaf.S1}
	under := underLeaf(id)
	last := ""
	for _, slot := range leaf.Slots {
		// Slots are sorted by node: a node's zones are adjacent.
		name := slot.Node.Name
		if name == last || p.s.unusable[name] {
			continue
		}
		last = name
		p.addNode(st, name, under)
	}
	if len(st.nodes) == 0 {
		return nil
	}
	return st
}

// restrict returns the statistics of st's leaf over the nodes of st some pod
// of the gang may use (anyAllowed): st itself when it may use all of them,
// nil when none. The nodes keep their order.
func (p *planner) restrict(st *leafStat) *leafStat {
	all := true
	for _, name := range st.nodes {
		if !p.anyAllowed(name) {
			all = false
			break
		}
	}
	if all {
		return st
	}
	out := &leafStat{id: st.id, s1: st.s1}
	under := underLeaf(st.id)
	for _, name := range st.nodes {
		if p.anyAllowed(name) {
			p.addNode(out, name, under)
		}
	}
	if len(out.nodes) == 0 {
		return nil
	}
	return out
}

// underLeaf admits the NICs of one leaf (quickCap).
func underLeaf(id topology.S0ID) func(topology.S0ID) bool {
	return func(l topology.S0ID) bool { return l == id }
}

// addNode counts what node contributes under st's leaf (under admits that
// leaf's NICs): nothing when the state has no view of it or, for a shape
// with NICs, it has no free NIC there.
func (p *planner) addNode(st *leafStat, name string, under func(topology.S0ID) bool) {
	v := p.s.view(name)
	if v == nil {
		return
	}
	n := countFree(v, st.id)
	if n == 0 && p.main.NICs > 0 {
		return
	}
	st.nodes = append(st.nodes, name)
	st.nics += n
	c := quickCap(v, p.main, under)
	st.own += c
	if c == 0 && pools(v.node, p.main) {
		// A pod that spans zones (or puts its containers in different
		// zones) may need NICs under several leaves; count it under each
		// (an over-estimate the fill corrects by adding leaves).
		if c = quickCap(v, p.main, nil); c > 0 {
			st.split = true
		}
	}
	if !st.split && zonesSplit(v) {
		st.split = true
	}
	st.pods += c
}

// zonesSplit reports whether a zone of the node has free NICs under more
// than one leaf.
func zonesSplit(v *nodeFree) bool {
	for i := range v.zones {
		ls := v.zones[i].leaves
		for j := 1; j < len(ls); j++ {
			if ls[j] != ls[0] {
				return true
			}
		}
	}
	return false
}

// countFree counts a node's free NICs under leaf (any leaf when "").
func countFree(v *nodeFree, leaf topology.S0ID) int64 {
	var n int64
	for i := range v.zones {
		for _, l := range v.zones[i].leaves {
			if leaf == "" || l == leaf {
				n++
			}
		}
	}
	return n
}

// quickCap estimates how many pods of sh fit on a node using NICs of the
// leaves ok admits (any when nil): per zone the minimum over NICs, GPUs and
// CPUs, summed, bounded by the node cap; on spanning nodes, and for split
// shapes on container-level nodes, the zones pool.
func quickCap(v *nodeFree, sh Shape, ok func(topology.S0ID) bool) int {
	var sum, totGPU, totCPU, totNIC int64
	for i := range v.zones {
		z := &v.zones[i]
		var nics int64
		for _, l := range z.leaves {
			if ok == nil || ok(l) {
				nics++
			}
		}
		totGPU += z.gpu
		totCPU += z.cpuMilli
		totNIC += nics
		sum += perZone(z.gpu, z.cpuMilli, nics, sh)
	}
	if pools(v.node, sh) {
		// A pod may take from several zones: the pooled count is never
		// below the per-zone sum, and a fill reaches it by spanning.
		sum = max(sum, perZone(totGPU, totCPU, totNIC, sh))
	}
	if v.cap != nil {
		sum = min(sum, perZone(v.cap.GPU, v.cap.CPUMilli, v.cap.NICs, sh))
	}
	return int(min(sum, 1<<20))
}

// perZone counts pods of sh fitting the given free amounts.
func perZone(gpu, cpu, nics int64, sh Shape) int64 {
	n := int64(1 << 20)
	if sh.GPU > 0 {
		n = min(n, gpu/sh.GPU)
	}
	if sh.CPUMilli > 0 {
		n = min(n, cpu/sh.CPUMilli)
	}
	if sh.NICs > 0 {
		n = min(n, nics/sh.NICs)
	}
	return max(n, 0)
}
