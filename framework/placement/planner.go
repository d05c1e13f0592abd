package placement

import (
	"fmt"
	"sort"

	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// maxVerify bounds the candidates of one tier that are verified by a full
// fill after the capacity estimate admitted them.
const maxVerify = 8

// Plan places the gang's pods against the state, tightest tier first:
// one node, one S0, the fewest S0s within one S1, the fewest S0s anywhere; in
// hard mode it stops at the gang's highest tier. A one-node placement whose
// NICs would span two S0s (each NUMA zone cabled to its own leaf) yields to
// a placement under a single S0 if one exists: the gang's S0 count is what
// the fabric sees, and one node never needs more S0s than the wider tiers. Among feasible candidates of
// a tier it takes the best fit (least free NIC capacity left over), ties
// broken by name, so large leaves stay whole for large gangs.
//
// It tries to place every pending pod; if that fails and Need is smaller, it
// tries exactly Need pods. The state is not changed: the caller applies the
// plan through the session (which calls Apply per pod).
func (s *State) Plan(g Gang) (*Plan, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(g.Pods) == 0 {
		return &Plan{Tier: TierNone}, nil
	}
	p := &planner{s: s, g: &g, main: mainShape(g.Pods)}
	plan, fail := p.run(g.Pods)
	if plan == nil && g.Need > 0 && g.Need < len(g.Pods) {
		if smaller, _ := p.run(g.Pods[:g.Need]); smaller != nil {
			return smaller, nil
		}
	}
	return plan, fail
}

// planner carries one Plan call.
type planner struct {
	s    *State
	g    *Gang
	main Shape
	// stats are the per-leaf statistics for the main shape, sorted by id.
	stats []*leafStat
}

// leafStat is a leaf's free capacity for the gang's main shape.
type leafStat struct {
	id    topology.S0ID
	s1    topology.S1ID
	nodes []string
	// pods is how many pods of the main shape fit under the leaf alone.
	pods int
	// nics is the number of free NICs under the leaf.
	nics int64
}

// candidate is a verified placement of one tier.
type candidate struct {
	assign []Assignment
	leaves map[topology.S0ID]bool
	// leftover free NICs in the chosen scope after placement.
	leftover int64
	key      string
}

// better orders candidates: fewer leaves, less left over, then by key.
func (c *candidate) better(o *candidate) bool {
	if o == nil {
		return true
	}
	if len(c.leaves) != len(o.leaves) {
		return len(c.leaves) < len(o.leaves)
	}
	if c.leftover != o.leftover {
		return c.leftover < o.leftover
	}
	return c.key < o.key
}

func (p *planner) run(pods []Pod) (*Plan, *Failure) {
	limit := TierCluster
	if p.g.Mode == ModeHard {
		limit = p.g.HighestTier
	}
	p.stats = nil
	// oneNode is a one-node placement whose NICs span several leaves (a
	// node's NUMA zones hang off different S0s): it is kept while a
	// single-S0 placement is looked for, and wins over any wider one.
	var oneNode *candidate
	for tier := TierNode; tier <= limit; tier++ {
		var c *candidate
		switch tier {
		case TierNode:
			c = p.tryNode(pods)
			if c != nil && len(c.leaves) > 1 && limit > TierNode {
				oneNode, c = c, nil
			}
		case TierS0:
			c = p.tryS0(pods)
		case TierS1:
			c = p.tryGroups(pods, true)
		case TierCluster:
			c = p.tryGroups(pods, false)
		}
		if c == nil && oneNode != nil && tier >= TierS0 {
			c = oneNode
		}
		if c != nil {
			return p.finish(c), nil
		}
	}
	return nil, p.failure(pods, limit)
}

// finish turns a candidate into a plan, with the tier of the whole gang.
func (p *planner) finish(c *candidate) *Plan {
	nodes := map[string]bool{}
	s0s := map[topology.S0ID]bool{}
	s1s := map[topology.S1ID]bool{}
	if h := p.g.Held; !h.Empty() {
		for n := range h.Nodes {
			nodes[n] = true
		}
		for id := range h.S0s {
			s0s[id] = true
		}
		for id := range h.S1s {
			s1s[id] = true
		}
	}
	for _, a := range c.assign {
		nodes[a.Node] = true
	}
	for leaf := range p.leavesOf(c.assign) {
		s0s[leaf] = true
		if l, ok := p.s.fabric.Leaf(leaf); ok {
			s1s[l.S1] = true
		}
	}
	plan := &Plan{Assignments: c.assign, S0s: sortedS0s(s0s), Leftover: c.leftover}
	for id := range s1s {
		plan.S1s = append(plan.S1s, id)
	}
	sort.Slice(plan.S1s, func(i, j int) bool { return plan.S1s[i] < plan.S1s[j] })
	plan.Tier = TierOf(len(nodes), len(s0s), len(s1s))
	return plan
}

// TierOf is the tier of a placement spanning the given numbers of nodes,
// S0s and S1s (an unknown S1 counts as one).
func TierOf(nodes, s0s, s1s int) Tier {
	switch {
	case nodes <= 1:
		return TierNode
	case s0s <= 1:
		return TierS0
	case s1s <= 1:
		return TierS1
	}
	return TierCluster
}

// allowedNode reports whether a node may take pods of group.
func (p *planner) allowedNode(node string, group int) bool {
	if p.g.Exclude[node] || p.s.unusable[node] {
		return false
	}
	return p.g.Allowed == nil || p.g.Allowed(node, group)
}

// tryNode looks for one node that holds every pod.
func (p *planner) tryNode(pods []Pod) *candidate {
	h := p.g.Held
	var names []string
	if !h.Empty() {
		if len(h.Nodes) != 1 {
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
		names = p.nodeCandidates()
	}
	type opt struct {
		name string
		left int64
	}
	var opts []opt
	need := gangNICs(pods)
	for _, n := range names {
		if !p.allowedNode(n, pods[0].Group) {
			continue
		}
		v := p.s.view(n)
		if v == nil {
			continue
		}
		free := countFree(v, "")
		if free < need || quickCap(v, p.main, nil) < countShape(pods, p.main) {
			continue
		}
		opts = append(opts, opt{n, free - need})
	}
	sort.Slice(opts, func(i, j int) bool {
		if opts[i].left != opts[j].left {
			return opts[i].left < opts[j].left
		}
		return opts[i].name < opts[j].name
	})
	// Verify the best-fit nodes; among those that hold the gang prefer the
	// one whose NICs span the fewest leaves.
	var best *candidate
	for i, o := range opts {
		if i >= maxVerify {
			break
		}
		if assign, ok := p.fill(pods, []string{o.name}, nil); ok {
			c := &candidate{assign: assign, leaves: p.leavesOf(assign), leftover: o.left, key: o.name}
			if c.better(best) {
				best = c
			}
			if len(c.leaves) <= 1 {
				break
			}
		}
	}
	return best
}

// nodeCandidates lists nodes for the node tier without scanning the
// cluster: the nodes of the leaves with the fewest free NICs that still have
// need of them (the most fragmented first, so small gangs fill holes and
// large leaves stay whole), until enough nodes are found.
func (p *planner) nodeCandidates() []string {
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
	seen := map[string]bool{}
	var names []string
	for _, st := range leaves {
		if len(names) >= 4*maxVerify {
			break
		}
		for _, n := range st.nodes {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// tryS0 looks for the best-fit single leaf that holds every pod.
func (p *planner) tryS0(pods []Pod) *candidate {
	stats := p.leafStats()
	h := p.g.Held
	need := gangNICs(pods)
	var opts []*leafStat
	for _, st := range stats {
		if !h.Empty() && (len(h.S0s) != 1 || !h.S0s[st.id]) {
			continue
		}
		if st.nics < need || st.pods < countShape(pods, p.main) {
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
	h := p.g.Held
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
	var choices []*groupChoice
	for k, members := range groups {
		if c := p.chooseLeaves(pods, members, string(k)); c != nil {
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
	for i, c := range choices {
		if i >= maxVerify {
			break
		}
		if cand := p.verify(pods, c); cand != nil {
			return cand
		}
	}
	return nil
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
// held leaves first, then the largest by capacity, the last one swapped for
// the smallest leaf that still completes the gang (best fit).
func (p *planner) chooseLeaves(pods []Pod, group []*leafStat, key string) *groupChoice {
	want := countShape(pods, p.main)
	needNICs := gangNICs(pods)
	var forced, rest []*leafStat
	total := 0
	var nics int64
	for _, st := range group {
		if !p.g.Held.Empty() && p.g.Held.S0s[st.id] {
			forced = append(forced, st)
		} else if st.pods > 0 {
			rest = append(rest, st)
		} else {
			continue
		}
		total += st.pods
		nics += st.nics
	}
	if total < want || nics < needNICs {
		return nil
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].pods != rest[j].pods {
			return rest[i].pods > rest[j].pods
		}
		return rest[i].id < rest[j].id
	})
	c := &groupChoice{key: key, chosen: append([]*leafStat(nil), forced...)}
	got := 0
	for _, st := range forced {
		got += st.pods
	}
	next := 0
	for got < want && next < len(rest) {
		c.chosen = append(c.chosen, rest[next])
		got += rest[next].pods
		next++
	}
	if len(c.chosen) > len(forced) {
		last := len(c.chosen) - 1
		short := want - (got - c.chosen[last].pods)
		// rest[next:] ascends from its end: the first fitting leaf found
		// from the end is the smallest that completes the gang.
		for i := len(rest) - 1; i >= next; i-- {
			if rest[i].pods >= short {
				if rest[i].pods < c.chosen[last].pods {
					rest[next-1], rest[i] = rest[i], rest[next-1]
					c.chosen[last] = rest[next-1]
				}
				break
			}
		}
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
		nodes = dedupe(nodes)
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

// leafStats returns (once per Plan) every leaf's capacity for the main
// shape and its free NICs, over the nodes the gang may use, sorted by id.
// Gangs without node constraints of their own share the state's cache,
// which is kept per shape and dropped per leaf when a node under it changes,
// so a plan costs a map lookup per leaf rather than a scan of every node.
func (p *planner) leafStats() []*leafStat {
	if p.stats != nil {
		return p.stats
	}
	var cache map[topology.S0ID]*leafStat
	if p.g.Allowed == nil && len(p.g.Exclude) == 0 {
		cache = p.s.leafCache[p.main]
		if cache == nil {
			cache = map[topology.S0ID]*leafStat{}
			p.s.leafCache[p.main] = cache
		}
	}
	ids := p.s.fabric.LeafIDs()
	p.stats = make([]*leafStat, 0, len(ids))
	for _, id := range ids {
		st, ok := cache[id]
		if !ok {
			st = p.computeLeaf(id)
			if cache != nil {
				cache[id] = st
			}
		}
		if st != nil {
			p.stats = append(p.stats, st)
		}
	}
	return p.stats
}

// computeLeaf counts a leaf's free NICs and capacity for the main shape over
// the nodes the gang may use; nil when no such node has a free NIC there.
func (p *planner) computeLeaf(id topology.S0ID) *leafStat {
	leaf, ok := p.s.fabric.Leaf(id)
	if !ok {
		return nil
	}
	st := &leafStat{id: id, s1: leaf.S1}
	under := func(l topology.S0ID) bool { return l == id }
	last := ""
	for _, slot := range leaf.Slots {
		// Slots are sorted by node: a node's zones are adjacent.
		name := slot.Node.Name
		if name == last || !p.allowedNode(name, p.g.Pods[0].Group) {
			continue
		}
		last = name
		v := p.s.view(name)
		if v == nil {
			continue
		}
		n := countFree(v, id)
		if n == 0 && p.main.NICs > 0 {
			continue
		}
		st.nodes = append(st.nodes, name)
		st.nics += n
		c := quickCap(v, p.main, under)
		if c == 0 && v.node.Policy == topology.PolicySpanning {
			// A pod that spans zones may need NICs under several leaves;
			// count it under each (an over-estimate the fill corrects by
			// adding leaves).
			c = quickCap(v, p.main, nil)
		}
		st.pods += c
	}
	if len(st.nodes) == 0 {
		return nil
	}
	return st
}

// fill places the pods on the given nodes using only NICs of the allowed
// leaves (nil: any), pods of one node filling its zones before the next node
// is opened. A new node is the best fit: the smallest capacity that still
// holds the pods left, else the largest.
func (p *planner) fill(pods []Pod, nodes []string, allowed map[topology.S0ID]bool) ([]Assignment, bool) {
	ok := leafFilter(allowed)
	type cand struct {
		w   *work
		cap int
	}
	var cands []*cand
	for _, n := range nodes {
		v := p.s.view(n)
		if v == nil {
			continue
		}
		cands = append(cands, &cand{w: newWork(v), cap: quickCap(v, p.main, ok)})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].cap != cands[j].cap {
			return cands[i].cap < cands[j].cap
		}
		return cands[i].w.name < cands[j].w.name
	})
	order := bySize(pods)
	assign := make([]Assignment, len(pods))
	var open []*cand
	used := map[*cand]bool{}
	for k, idx := range order {
		pod := pods[idx]
		placed := false
		for _, c := range open {
			if !p.allowedNode(c.w.name, pod.Group) {
				continue
			}
			if zones, fit := c.w.place(pod.Shape, ok); fit {
				assign[idx] = Assignment{PodUID: pod.UID, Node: c.w.name, Zones: zones}
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		left := len(order) - k
		var pick *cand
		for _, c := range cands {
			if used[c] || !p.allowedNode(c.w.name, pod.Group) || c.cap == 0 && pod.Shape == p.main {
				continue
			}
			if c.cap >= left {
				pick = c
				break
			}
			pick = c // largest so far, as cands ascend
		}
		if pick == nil {
			return nil, false
		}
		zones, fit := pick.w.place(pod.Shape, ok)
		if !fit {
			// The capacity estimate was for the main shape; try the others.
			for _, c := range cands {
				if used[c] || c == pick || !p.allowedNode(c.w.name, pod.Group) {
					continue
				}
				if zones, fit = c.w.place(pod.Shape, ok); fit {
					pick = c
					break
				}
			}
			if !fit {
				return nil, false
			}
		}
		used[pick] = true
		open = append(open, pick)
		assign[idx] = Assignment{PodUID: pod.UID, Node: pick.w.name, Zones: zones}
	}
	return assign, true
}

// leavesOf returns the leaves an assignment list uses.
func (p *planner) leavesOf(assign []Assignment) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for _, a := range assign {
		for _, nic := range a.NICs() {
			if id, ok := p.s.fabric.NICLeaf(a.Node, nic); ok {
				out[id] = true
			}
		}
	}
	return out
}

// failure explains why no tier up to limit holds the gang.
func (p *planner) failure(pods []Pod, limit Tier) *Failure {
	want := countShape(pods, p.main)
	desc := fmt.Sprintf("%d pods of %s", len(pods), p.main)
	if want != len(pods) {
		desc = fmt.Sprintf("%d pods (%d of %s)", len(pods), want, p.main)
	}
	stats := p.leafStats()
	if len(stats) == 0 {
		return &Failure{Code: ReasonNoNodes, Message: fmt.Sprintf("no node with free RDMA NICs passes the filters of %s", p.g.Job)}
	}
	largestLeaf, total := 0, 0
	perS1 := map[topology.S1ID]int{}
	for _, st := range stats {
		largestLeaf = max(largestLeaf, st.pods)
		total += st.pods
		perS1[st.s1] += st.pods
	}
	largestS1 := 0
	for _, n := range perS1 {
		largestS1 = max(largestS1, n)
	}
	held := ""
	if !p.g.Held.Empty() {
		held = fmt.Sprintf(" next to the %d pods it holds", p.g.Held.Pods)
	}
	if limit == TierCluster || total < want {
		return &Failure{Code: ReasonNoCapacity, Largest: total,
			Message: fmt.Sprintf("the cluster cannot hold %s%s; free capacity holds %d", desc, held, total)}
	}
	switch limit {
	case TierNode:
		return &Failure{Code: ReasonTierLimit, Message: fmt.Sprintf("no node can hold %s%s", desc, held)}
	case TierS0:
		return &Failure{Code: ReasonTierLimit, Largest: largestLeaf,
			Message: fmt.Sprintf("no S0 can hold %s%s; the largest holds %d", desc, held, largestLeaf)}
	default:
		return &Failure{Code: ReasonTierLimit, Largest: largestS1,
			Message: fmt.Sprintf("no S1 can hold %s%s; the largest holds %d", desc, held, largestS1)}
	}
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
// CPUs, summed, bounded by the node cap; a shape no zone can hold counts
// whole-node fits on spanning nodes.
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
	if sum == 0 && v.node.Policy == topology.PolicySpanning {
		sum = perZone(totGPU, totCPU, totNIC, sh)
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

// mainShape is the most common shape of the pods (the larger on ties).
func mainShape(pods []Pod) Shape {
	counts := map[Shape]int{}
	for _, p := range pods {
		counts[p.Shape]++
	}
	var best Shape
	bestN := -1
	for sh, n := range counts {
		if n > bestN || n == bestN && larger(sh, best) {
			best, bestN = sh, n
		}
	}
	return best
}

// larger orders shapes by NICs, GPUs, CPU.
func larger(a, b Shape) bool {
	if a.NICs != b.NICs {
		return a.NICs > b.NICs
	}
	if a.GPU != b.GPU {
		return a.GPU > b.GPU
	}
	return a.CPUMilli > b.CPUMilli
}

// bySize returns pod indexes, largest shape first (stable).
func bySize(pods []Pod) []int {
	idx := make([]int, len(pods))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return larger(pods[idx[i]].Shape, pods[idx[j]].Shape) })
	return idx
}

// countShape counts the pods of shape sh.
func countShape(pods []Pod, sh Shape) int {
	n := 0
	for _, p := range pods {
		if p.Shape == sh {
			n++
		}
	}
	return n
}

// gangNICs sums the NICs the pods need.
func gangNICs(pods []Pod) int64 {
	var n int64
	for _, p := range pods {
		n += p.Shape.NICs
	}
	return n
}

// dedupe removes repeated names, keeping the first.
func dedupe(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
