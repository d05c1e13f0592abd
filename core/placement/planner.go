package placement

import (
	"fmt"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// maxVerify bounds the candidates of one tier that are verified by a full
// fill after the capacity estimate admitted them.
const maxVerify = 8

// Plan places the gang's pods against the state, in the order of
// preference of the fabric: the fewest distinct leaves used by all NICs of
// the gang; then the fewest S1s; then the fewest nodes (leaves decide, not
// nodes: two pods on one node whose NICs hang off two leaves talk through
// S1). Pods go only where Gang.Allowed and Gang.Admit say Kubernetes admits
// them. The tiers are searched tightest first (one node under one leaf, one S0, the fewest S0s
// within one S1, the fewest S0s anywhere); in soft mode a placement within
// one S1 yields to one anywhere that uses fewer leaves. In hard mode the
// search stops at the gang's highest tier. Among feasible candidates of a
// tier it takes the best fit (least free NIC capacity left over), ties
// broken by name, so large leaves stay whole for large gangs. Pods whose
// NICs must come from several leaves (rail cabling, topology-unknown NICs)
// are searched by footprint (footprint.go). In soft mode a gang is never
// refused while the free capacity holds it: when every leaf-bounded search
// fails, a fill over every usable node is tried.
//
// It tries to place every pending pod; if that fails and Need is smaller, it
// tries exactly Need pods. The state is not changed: the caller applies the
// plan through the session (which calls Apply per pod).
func (s *State) Plan(g Gang) (*Plan, *Failure) {
	if g.Segment.Set() && len(g.Pods) > 0 {
		return s.planSegments(g)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(g.Pods) == 0 {
		return &Plan{Tier: TierNone}, nil
	}
	p := &planner{s: s, g: &g, main: mainShape(g.Pods), groups: groupsOf(g.Pods), classes: classesOf(g.Pods)}
	plan, fail := p.run(g.Pods)
	if fewer := g.fewer(); plan == nil && fewer != nil {
		if smaller, _ := p.run(fewer); smaller != nil {
			return smaller, nil
		}
	}
	return plan, fail
}

// fewer returns the pods to plan when not all of them fit (Gang.Need):
// Fewer, or the first Need by rank; nil when every pod is needed.
func (g *Gang) fewer() []Pod {
	switch {
	case g.Need <= 0 || g.Need >= len(g.Pods):
		return nil
	case len(g.Fewer) == g.Need:
		return g.Fewer
	}
	return g.Pods[:g.Need]
}

// planner carries one Plan call.
type planner struct {
	s    *State
	g    *Gang
	main Shape
	// groups are the node groups of the gang's pods (Pod.Group).
	groups []int
	// stats are the per-leaf statistics for the main shape, sorted by id.
	stats []*leafStat
	// classes are the gang's pod classes (shape and node set); caps
	// memoizes what each leaf holds of each (classes.go).
	classes []podClass
	caps    map[*leafStat][]classCap
	// steps counts the zone placements of the exact search in this call
	// (bounded by planSteps).
	steps int
	// seen is dedupe's scratch set.
	seen map[string]struct{}
	// setPods are the pods the leaf-set search asks Gang.Admit about
	// (leafsets.go); nil outside it.
	setPods []Pod
}

// candidate is a verified placement of one tier.
type candidate struct {
	assign []Assignment
	leaves map[topology.S0ID]bool
	// leftover free NICs in the chosen scope after placement.
	leftover int64
	key      string
}

// better orders candidates as the fabric does: fewer leaves, then fewer
// S1s, then fewer nodes, then less left over (best fit), then by key.
func (c *candidate) better(o *candidate, f *topology.Fabric) bool {
	if o == nil {
		return true
	}
	if len(c.leaves) != len(o.leaves) {
		return len(c.leaves) < len(o.leaves)
	}
	if a, b := s1Count(f, c.leaves), s1Count(f, o.leaves); a != b {
		return a < b
	}
	if a, b := nodeCount(c.assign), nodeCount(o.assign); a != b {
		return a < b
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
	for tier := TierNode; tier <= limit; tier++ {
		var c *candidate
		switch tier {
		case TierNode:
			c = p.tryNode(pods)
		case TierS0:
			c = p.tryS0(pods)
		case TierS1:
			c = p.tryGroups(pods, true)
			if c != nil && limit == TierCluster && len(c.leaves) > 2 {
				// Fewer leaves beat fewer S1s.
				if w := p.tryGroups(pods, false); w != nil && len(w.leaves) < len(c.leaves) {
					c = w
				}
			}
		case TierCluster:
			c = p.tryGroups(pods, false)
		}
		if c != nil {
			c = p.refine(pods, c, limit)
			if tier >= TierS1 && len(c.leaves) > 1 {
				// The exact choice of leaves, then S1s (leafsets.go):
				// within one S1 when that is the limit, else anywhere
				// (fewer leaves beat fewer S1s). It replaces the refined
				// choice only when it uses fewer leaves or S1s.
				c = p.tryLeafSets(pods, c, limit == TierS1)
			}
			return p.finish(p.nextToRanks(pods, c, limit)), nil
		}
	}
	fail := p.failure(pods, limit)
	if limit == TierCluster && fail.Largest >= countShape(pods, p.main) {
		if c := p.tryAnywhere(pods); c != nil {
			return p.finish(p.nextToRanks(pods, p.refine(pods, c, limit), limit)), nil
		}
	}
	return nil, fail
}

// s1Count counts the distinct S1s of a leaf set.
func s1Count(f *topology.Fabric, leaves map[topology.S0ID]bool) int {
	s1s := map[topology.S1ID]bool{}
	for id := range leaves {
		if l, ok := f.Leaf(id); ok {
			s1s[l.S1] = true
		}
	}
	return len(s1s)
}

// nodeCount counts the distinct nodes of an assignment list.
func nodeCount(assign []Assignment) int {
	nodes := map[string]bool{}
	for _, a := range assign {
		nodes[a.Node] = true
	}
	return len(nodes)
}

// tryAnywhere fills the gang over every usable node without a leaf bound:
// the soft-mode last resort, so the estimates of the tier searches never
// refuse a gang the free capacity holds.
func (p *planner) tryAnywhere(pods []Pod) *candidate {
	var nodes []string
	for _, n := range p.s.fabric.NodeNames() {
		if p.anyAllowed(n) {
			nodes = append(nodes, n)
		}
	}
	assign, ok := p.fill(pods, nodes, nil)
	if !ok {
		return nil
	}
	return &candidate{assign: assign, leaves: p.leavesOf(assign), key: "anywhere"}
}

// finish turns a candidate into a plan, with the tier of the whole gang
// and its pods in rank order over the candidate's places (rankorder.go).
func (p *planner) finish(c *candidate) *Plan {
	c.assign = p.inRankOrder(c.assign)
	plan := planOf(p.s.fabric, p.g.Occupancy, c.assign)
	plan.Leftover = c.leftover
	return plan
}

// TierOf is the tier of a placement spanning the given numbers of nodes,
// S0s and S1s (an unknown S1 counts as one). The tiers nest by NIC
// distance: one node is the node tier only when its NICs are under one
// leaf too (two pods on one node talk NIC to NIC, through S1 when their
// NICs hang off two leaves).
func TierOf(nodes, s0s, s1s int) Tier {
	switch {
	case nodes <= 1 && s0s <= 1:
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

// anyAllowed reports whether some pod of the gang may use the node: what
// the capacity estimates count (optimistic where pods of one gang have
// different node sets; the fill checks each pod's own).
func (p *planner) anyAllowed(node string) bool {
	for _, g := range p.groups {
		if p.allowedNode(node, g) {
			return true
		}
	}
	return false
}

// takes reports whether the fill may add pod to the node of w: the pod may
// use the node, and the node admits it next to the gang's pods the fill
// placed there (Gang.Admit).
func (p *planner) takes(w *work, pod Pod) bool {
	return p.allowedNode(w.name, pod.Group) && (p.g.Admit == nil || p.g.Admit(w.name, pod, w.placed))
}

// groupsOf lists the distinct node groups of the pods, in first-seen order.
func groupsOf(pods []Pod) []int {
	var out []int
	seen := map[int]bool{}
	for _, pod := range pods {
		if !seen[pod.Group] {
			seen[pod.Group] = true
			out = append(out, pod.Group)
		}
	}
	return out
}

// leavesOf returns the leaves an assignment list uses.
func (p *planner) leavesOf(assign []Assignment) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for _, a := range assign {
		for _, id := range p.s.fabric.NICLeaves(a.Node, a.NICs()) {
			out[id] = true
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
		return p.noRoom(desc)
	}
	// total is what the free capacity holds wherever the NICs hang off
	// (pods of one node counted once, however many leaves its NICs use);
	// the per-leaf counts only bound the tighter tiers.
	largestLeaf, total := 0, 0
	perS1 := map[topology.S1ID]int{}
	counted := map[string]bool{}
	for _, st := range stats {
		largestLeaf = max(largestLeaf, st.own)
		for _, n := range st.nodes {
			if counted[n] {
				continue
			}
			counted[n] = true
			if v := p.s.view(n); v != nil {
				c := quickCap(v, p.main, nil)
				total += c
				perS1[st.s1] += c
			}
		}
	}
	largestS1 := 0
	for _, n := range perS1 {
		largestS1 = max(largestS1, n)
	}
	held := ""
	if !p.g.Occupancy.Empty() {
		held = fmt.Sprintf(" next to the %d pods it holds", p.g.Occupancy.Pods)
		// A partly placed gang under a hard limit can only grow inside the
		// S0 (S1) it holds: report that one's room, not the largest.
		h := p.g.Occupancy
		heldRoom := func(in func(*leafStat) bool) int {
			n := 0
			for _, st := range stats {
				switch {
				case in(st) && limit == TierS0:
					n += st.own
				case in(st):
					n += st.pods
				}
			}
			return n
		}
		switch {
		case limit == TierS0 && len(h.S0s) == 1:
			room := heldRoom(func(st *leafStat) bool { return h.S0s[st.id] })
			return &Failure{Code: ReasonTierLimit, Largest: room,
				Message: fmt.Sprintf("no S0 can hold %s%s; its S0 holds %d more", desc, held, room)}
		case limit == TierS1 && len(h.S1s) == 1:
			room := heldRoom(func(st *leafStat) bool { return h.S1s[st.s1] })
			return &Failure{Code: ReasonTierLimit, Largest: room,
				Message: fmt.Sprintf("no S1 can hold %s%s; its S1 holds %d more", desc, held, room)}
		}
	}
	if limit == TierCluster || total < want {
		return &Failure{Code: ReasonNoCapacity, Largest: total,
			Message: fmt.Sprintf("the cluster cannot hold %s%s; free capacity holds %d", desc, held, total)}
	}
	switch limit {
	case TierNode:
		return &Failure{Code: ReasonTierLimit, Message: fmt.Sprintf("no node can hold %s%s with their NICs under one S0", desc, held)}
	case TierS0:
		return &Failure{Code: ReasonTierLimit, Largest: largestLeaf,
			Message: fmt.Sprintf("no S0 can hold %s%s; the largest holds %d", desc, held, largestLeaf)}
	default:
		return &Failure{Code: ReasonTierLimit, Largest: largestS1,
			Message: fmt.Sprintf("no S1 can hold %s%s; the largest holds %d", desc, held, largestS1)}
	}
}

// noRoom explains a gang no leaf holds a single pod of: no node passes its
// filters (NoNodes), or the nodes that do have no room for one pod of its
// main shape (NoCapacity, hard or soft: no tier holds it); the message
// counts the NICs free on the nodes the gang may use, 0 on a full fabric.
func (p *planner) noRoom(desc string) *Failure {
	nodes, free := 0, 0
	for _, name := range p.s.fabric.NodeNames() {
		if !p.anyAllowed(name) {
			continue
		}
		nodes++
		if v := p.s.view(name); v != nil {
			for _, z := range v.zones {
				free += len(z.nics)
			}
		}
	}
	if nodes == 0 {
		return &Failure{Code: ReasonNoNodes, Message: fmt.Sprintf("no RDMA node passes the filters of %s", p.g.Job)}
	}
	return &Failure{Code: ReasonNoCapacity, Message: fmt.Sprintf("the cluster cannot hold %s; free capacity holds 0: the %d nodes it may use have %d free RDMA NICs and no room for one pod of %s",
		desc, nodes, free, p.main)}
}
