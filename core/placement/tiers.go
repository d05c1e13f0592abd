// The tier searches of the planner: one node, one S0, and groups of S0s
// within one S1 or anywhere, each verified by a full fill.

package placement

import (
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// tryNode looks for one node that holds every pod with all their NICs
// under one leaf: the node tier. A node whose free NICs hang off two
// leaves and holds the gang only across them is no tighter than two
// leaves (its pods talk NIC to NIC through S1); the S0 and group searches
// weigh it by its leaves.
func (p *planner) tryNode(pods []Pod) *candidate {
	h := p.g.Occupancy
	var names []string
	if !h.Empty() {
		if len(h.Nodes) != 1 || len(h.S0s) > 1 {
			return nil
		}
		for n := range h.Nodes {
			names = append(names, n)
		}
	} else {
		var gpu int64
		for _, pod := range pods {
			gpu += pod.Shape.GPU
		}
		if big := p.s.largestNode(); gpu > big.GPU || gangNICs(pods) > big.NICs {
			return nil
		}
		names = p.nodeCandidates(pods)
	}
	type opt struct {
		name string
		leaf topology.S0ID
		left int64
	}
	var opts []opt
	need, counts := gangNICs(pods), p.classCounts(pods)
	for _, n := range names {
		if !p.anyAllowed(n) {
			continue
		}
		v := p.s.view(n)
		if v == nil {
			continue
		}
		for _, leaf := range nodeLeaves(v) {
			if p.g.ExcludeS0s[leaf] || !h.Empty() && len(h.S0s) == 1 && !h.S0s[leaf] {
				continue
			}
			under := func(l topology.S0ID) bool { return l == leaf }
			free := countFree(v, leaf)
			if free < need || !p.nodeHolds(n, v, under, counts) {
				continue
			}
			opts = append(opts, opt{n, leaf, free - need})
		}
	}
	sort.Slice(opts, func(i, j int) bool {
		if opts[i].left != opts[j].left {
			return opts[i].left < opts[j].left
		}
		if opts[i].name != opts[j].name {
			return opts[i].name < opts[j].name
		}
		return opts[i].leaf < opts[j].leaf
	})
	// The first best-fit (node, leaf) that a fill verifies.
	for i, o := range opts {
		if i >= maxVerify {
			break
		}
		set := map[topology.S0ID]bool{o.leaf: true}
		if assign, ok := p.fill(pods, []string{o.name}, set); ok {
			return &candidate{assign: assign, leaves: set, leftover: o.left, key: o.name}
		}
	}
	return nil
}

// nodeLeaves lists the distinct leaves of a node's free NICs, sorted.
func nodeLeaves(v *nodeFree) []topology.S0ID {
	seen := map[topology.S0ID]bool{}
	for i := range v.zones {
		for _, l := range v.zones[i].leaves {
			seen[l] = true
		}
	}
	return sortedS0s(seen)
}

// nodeCandidates lists nodes for the node tier without building a list of
// the whole cluster: walking the leaves with the fewest free NICs first (the
// most fragmented, so small gangs fill holes and large leaves stay whole), it
// collects nodes that could hold the whole gang by count (free NICs, and
// pods of the main shape), until enough are found. A node's NICs may hang
// off several leaves: the test is on the node, not on the leaf.
func (p *planner) nodeCandidates(pods []Pod) []string {
	var leaves []*leafStat
	for _, st := range p.leafStats() {
		if st.nics > 0 {
			leaves = append(leaves, st)
		}
	}
	sort.Slice(leaves, func(i, j int) bool {
		if leaves[i].nics != leaves[j].nics {
			return leaves[i].nics < leaves[j].nics
		}
		return leaves[i].id < leaves[j].id
	})
	need, counts := gangNICs(pods), p.classCounts(pods)
	seen := map[string]bool{}
	var names []string
	for _, st := range leaves {
		if len(names) >= 4*maxVerify {
			break
		}
		for _, n := range st.nodes {
			if seen[n] {
				continue
			}
			seen[n] = true
			v := p.s.view(n)
			if v == nil || countFree(v, "") < need || !p.nodeHolds(n, v, nil, counts) {
				continue
			}
			names = append(names, n)
		}
	}
	return names
}

// tryS0 looks for the best-fit single leaf that holds every pod.
func (p *planner) tryS0(pods []Pod) *candidate {
	stats := p.leafStats()
	h := p.g.Occupancy
	need, counts := gangNICs(pods), p.classCounts(pods)
	var opts []*leafStat
	for _, st := range stats {
		if !h.Empty() && (len(h.S0s) != 1 || !h.S0s[st.id]) {
			continue
		}
		if st.nics < need || !p.leafHolds(st, counts) {
			continue
		}
		opts = append(opts, st)
	}
	sort.Slice(opts, func(i, j int) bool {
		if opts[i].nics != opts[j].nics {
			return opts[i].nics < opts[j].nics
		}
		return opts[i].id < opts[j].id
	})
	for i, st := range opts {
		if i >= maxVerify {
			break
		}
		set := map[topology.S0ID]bool{st.id: true}
		if assign, ok := p.fill(pods, st.nodes, set); ok {
			return &candidate{assign: assign, leaves: set, leftover: st.nics - need, key: string(st.id)}
		}
	}
	return nil
}

// tryGroups looks for the fewest leaves that hold every pod, within one S1
// (perS1) or anywhere, and among equals the best fit. Each group's choice is
// estimated from leaf capacities; only the most promising groups are
// verified by a full fill.
func (p *planner) tryGroups(pods []Pod, perS1 bool) *candidate {
	stats := p.leafStats()
	h := p.g.Occupancy
	groups := map[topology.S1ID][]*leafStat{}
	for _, st := range stats {
		key := topology.S1ID("")
		if perS1 {
			key = st.s1
			if !h.Empty() && (len(h.S1s) != 1 || !h.S1s[key]) {
				continue
			}
		}
		groups[key] = append(groups[key], st)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	var choices []*groupChoice
	for _, k := range keys {
		if c := p.chooseLeaves(pods, groups[topology.S1ID(k)], k); c != nil {
			choices = append(choices, c)
		}
	}
	sort.Slice(choices, func(i, j int) bool {
		a, b := choices[i], choices[j]
		if len(a.chosen) != len(b.chosen) {
			return len(a.chosen) < len(b.chosen)
		}
		if a.free != b.free {
			return a.free < b.free
		}
		return a.key < b.key
	})
	var best *candidate
	for i, c := range choices {
		if i >= maxVerify {
			break
		}
		if cand := p.verify(pods, c); cand != nil {
			best = cand
			break
		}
	}
	// Groups where pods may need NICs of several leaves each are also
	// searched by footprint; the fewer leaves win.
	for _, k := range keys {
		if members := groups[topology.S1ID(k)]; hasSplit(members) {
			if c := p.tryFootprints(pods, members, k); c != nil && c.better(best, p.s.fabric) {
				best = c
			}
		}
	}
	return best
}

// groupChoice is the estimated fewest-leaves choice within one group.
type groupChoice struct {
	key    string
	chosen []*leafStat
	// rest are the group's other leaves, largest first, used when a
	// verification fails and one more leaf is needed.
	rest []*leafStat
	// free is the chosen leaves' free NIC count.
	free int64
}

// chooseLeaves estimates the fewest leaves of a group that hold the gang:
// held leaves first, then the largest by capacity (leaves of one size S1
// by S1), the last one swapped for the smallest leaf that still completes
// the gang (best fit).
func (p *planner) chooseLeaves(pods []Pod, group []*leafStat, key string) *groupChoice {
	counts := p.classCounts(pods)
	needNICs := gangNICs(pods)
	var forced, rest []*leafStat
	var nics int64
	for _, st := range group {
		if !p.g.Occupancy.Empty() && p.g.Occupancy.S0s[st.id] {
			forced = append(forced, st)
		} else if st.pods > 0 || p.holdsAny(st) {
			rest = append(rest, st)
		} else {
			continue
		}
		nics += st.nics
	}
	if nics < needNICs || !p.groupHolds(append(append([]*leafStat(nil), forced...), rest...), counts) {
		return nil
	}
	// Largest first; among leaves of one size, those of the S1 that holds
	// the most, S1 by S1, so the fewest leaves also come from the fewest
	// S1s.
	perS1 := map[topology.S1ID]int{}
	for _, st := range rest {
		perS1[st.s1] += st.pods
	}
	sort.Slice(rest, func(i, j int) bool {
		a, b := rest[i], rest[j]
		if a.pods != b.pods {
			return a.pods > b.pods
		}
		if perS1[a.s1] != perS1[b.s1] {
			return perS1[a.s1] > perS1[b.s1]
		}
		if a.s1 != b.s1 {
			return a.s1 < b.s1
		}
		return a.id < b.id
	})
	c := &groupChoice{key: key, chosen: append([]*leafStat(nil), forced...)}
	next := 0
	for !p.groupHolds(c.chosen, counts) && next < len(rest) {
		c.chosen = append(c.chosen, rest[next])
		next++
	}
	if len(c.chosen) > len(forced) {
		last := len(c.chosen) - 1
		// rest[next:] ascends from its end: the first leaf found from the
		// end that completes the gang in place of the last chosen is the
		// smallest that does.
		for i := len(rest) - 1; i >= next; i-- {
			c.chosen[last] = rest[i]
			if p.groupHolds(c.chosen, counts) {
				if rest[i].pods < rest[next-1].pods {
					rest[next-1], rest[i] = rest[i], rest[next-1]
				}
				break
			}
		}
		c.chosen[last] = rest[next-1]
	}
	c.rest = rest[next:]
	for _, st := range c.chosen {
		c.free += st.nics
	}
	return c
}

// verify fills the gang into a group choice. When the estimate was
// optimistic it adds one leaf and tries again: the unchosen leaf sharing the
// most nodes with the chosen ones (a pod spanning NUMA zones needs its
// node's other leaf too), else the largest.
func (p *planner) verify(pods []Pod, c *groupChoice) *candidate {
	needNICs := gangNICs(pods)
	chosen := append([]*leafStat(nil), c.chosen...)
	added := make([]bool, len(c.rest))
	for attempt := 0; attempt < maxVerify; attempt++ {
		set := make(map[topology.S0ID]bool, len(chosen))
		var nodes []string
		var free int64
		for _, st := range chosen {
			set[st.id] = true
			nodes = append(nodes, st.nodes...)
			free += st.nics
		}
		nodes = p.dedupe(nodes)
		if assign, ok := p.fill(pods, nodes, set); ok {
			return &candidate{assign: assign, leaves: set, leftover: free - needNICs, key: c.key}
		}
		next := partnerLeaf(nodes, c.rest, added)
		if next < 0 {
			return nil
		}
		added[next] = true
		chosen = append(chosen, c.rest[next])
	}
	return nil
}

// partnerLeaf picks the index of the unadded leaf of rest that shares the
// most nodes with nodes, else the first unadded one (rest is largest
// first); -1 when every leaf is added.
func partnerLeaf(nodes []string, rest []*leafStat, added []bool) int {
	on := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		on[n] = true
	}
	best, bestShared := -1, 0
	for i, st := range rest {
		if added[i] {
			continue
		}
		if best < 0 {
			best = i
		}
		shared := 0
		for _, n := range st.nodes {
			if on[n] {
				shared++
			}
		}
		if shared > bestShared {
			best, bestShared = i, shared
		}
	}
	return best
}
