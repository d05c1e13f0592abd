package topologypreempt

import (
	"math/bits"
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// exactUnits is the most units of a scope whose subsets are all tried.
const exactUnits = 10

// planBudget bounds the planner calls of one gang's search; once spent,
// scopes are searched greedily.
const planBudget = 4096

// scope is a part of the fabric the gang is to fit in once its victims
// there are evicted.
type scope struct {
	name string
	// tier is the scope's kind: one node, one S0's nodes, one S1's nodes,
	// or the cluster.
	tier placement.Tier
	// leaves are the scope's leaves (nil for a node or the cluster).
	leaves map[topology.S0ID]bool
	// nodes the gang may use (nil: every node).
	nodes map[string]bool
	// in says whether a victim holds NICs in the scope.
	in func(*victim) bool
}

// choice is a set of evictions and the plan it makes possible.
type choice struct {
	scope string
	units []*unit
	cost  cost
	plan  *placement.Plan
	// near says how close the plan keeps the pods of a gang that holds
	// pods already (nearness).
	near near
}

func (c *choice) victims() []*victim { return union(c.units) }

// near counts the planned pods of a gang that holds pods already (late
// pods, replacements of lost pods) whose NICs are all under the leaves the
// gang holds (leaf), and those all under its S1s (s1, the first
// included).
type near struct{ leaf, s1 int }

// closer reports whether n keeps more pods under the gang's leaves, else
// more under its S1s, than m.
func (n near) closer(m near) bool {
	if n.leaf != m.leaf {
		return n.leaf > m.leaf
	}
	return n.s1 > m.s1
}

// better reports whether c beats d (nil d is beaten by anything): the
// cheaper evictions; at equal cost, the plan that keeps more of a running
// gang's new pods under its leaves, else its S1s; then the tighter tier.
func (c *choice) better(d *choice) bool {
	if d == nil {
		return true
	}
	if c.cost != d.cost {
		return c.cost.Less(d.cost)
	}
	if c.near != d.near {
		return c.near.closer(d.near)
	}
	if c.plan.Tier != d.plan.Tier {
		return c.plan.Tier < d.plan.Tier
	}
	return c.scope < d.scope
}

// scopes lists the scopes the contract allows, tightest first. They depend
// on the contract's mode and tier and on the session's fabric only, so a
// run builds each list once.
func (r *run) scopes(c placement.Contract) []scope {
	key := scopeKey{c.Mode, c.HighestTier}
	if out, ok := r.scopeLists[key]; ok {
		return out
	}
	out := r.buildScopes(c)
	if r.scopeLists == nil {
		r.scopeLists = map[scopeKey][]scope{}
	}
	r.scopeLists[key] = out
	return out
}

// scopeKey is what a list of scopes depends on.
type scopeKey struct {
	mode placement.Mode
	tier placement.Tier
}

func (r *run) buildScopes(c placement.Contract) []scope {
	f := r.topo.Preemption().Fabric()
	var out []scope
	if c.Mode == placement.ModeHard && c.HighestTier == placement.TierNode {
		for _, name := range f.NodeNames() {
			name := name
			out = append(out, scope{name: "node " + name, tier: placement.TierNode, nodes: map[string]bool{name: true},
				in: func(v *victim) bool { return v.res.Node == name }})
		}
		return out
	}
	leafScope := func(ids []topology.S0ID, name string, tier placement.Tier) scope {
		set := map[topology.S0ID]bool{}
		nodes := map[string]bool{}
		for _, id := range ids {
			set[id] = true
			if l, ok := f.Leaf(id); ok {
				for _, s := range l.Slots {
					nodes[s.Node.Name] = true
				}
			}
		}
		return scope{name: name, tier: tier, leaves: set, nodes: nodes, in: func(v *victim) bool {
			for _, id := range v.leaves {
				if set[id] {
					return true
				}
			}
			return false
		}}
	}
	for _, id := range f.LeafIDs() {
		out = append(out, leafScope([]topology.S0ID{id}, "s0 "+string(id), placement.TierS0))
	}
	if c.Mode == placement.ModeHard && c.HighestTier == placement.TierS0 {
		return out
	}
	if s1s := f.S1IDs(); len(s1s) > 1 || c.Mode == placement.ModeHard && c.HighestTier == placement.TierS1 {
		for _, id := range s1s {
			out = append(out, leafScope(f.LeavesOf(id), "s1 "+string(id), placement.TierS1))
		}
	}
	if c.Mode == placement.ModeHard && c.HighestTier == placement.TierS1 {
		return out
	}
	return append(out, scope{name: "cluster", tier: placement.TierCluster, in: func(*victim) bool { return true }})
}

// searcher evaluates sets of evictions for one gang.
type searcher struct {
	r *run
	g placement.Gang
	// tasks are the gang's RDMA tasks, whose requests Admit sums per node.
	tasks []*api.TaskInfo
	plans int
	// running is set when the gang holds pods already: its new pods
	// belong under its leaves, else its S1s (leaves, s1s), so choices of
	// equal cost are compared by how near they keep them (near).
	running bool
	leaves  map[topology.S0ID]bool
	s1s     map[topology.S1ID]bool
}

// newSearcher returns the searcher of gang g.
func newSearcher(r *run, g placement.Gang, tasks []*api.TaskInfo) *searcher {
	s := &searcher{r: r, g: g, tasks: tasks}
	if occ := g.Occupancy; occ != nil && occ.Pods > 0 && len(occ.S0s) > 0 {
		s.running = true
		s.leaves, s.s1s = occ.S0s, occ.S1s
	}
	return s
}

// nearness counts the plan's pods under the running gang's leaves and
// under its S1s (the zero value for a gang that holds no pod).
func (s *searcher) nearness(plan *placement.Plan) near {
	var n near
	if !s.running || plan == nil {
		return n
	}
	f := s.r.topo.Preemption().Fabric()
	for _, a := range plan.Assignments {
		inLeaf, inS1 := true, true
		nics := a.NICs()
		for _, nic := range nics {
			id, ok := f.NICLeaf(a.Node, nic)
			if !ok {
				inLeaf, inS1 = false, false
				break
			}
			l, _ := f.Leaf(id)
			inLeaf = inLeaf && s.leaves[id]
			inS1 = inS1 && l != nil && s.s1s[l.S1]
		}
		if len(nics) == 0 {
			continue
		}
		if inLeaf {
			n.leaf++
		}
		if inLeaf || inS1 {
			n.s1++
		}
	}
	return n
}

// choose returns the choice of a set of evictions with its plan.
func (s *searcher) choose(sc scope, units []*unit, c cost, plan *placement.Plan) *choice {
	return &choice{scope: sc.name, units: units, cost: c, plan: plan, near: s.nearness(plan)}
}

// fits plans the gang in a what-if copy of the free view with the units'
// victims evicted, on the scope's nodes.
func (s *searcher) fits(sc scope, units []*unit) *placement.Plan {
	s.plans++
	evicted := []ledger.Reservation{}
	for _, v := range union(units) {
		if v.hasRes {
			evicted = append(evicted, v.res)
		}
	}
	g := s.g
	g.Allowed = s.r.fit.Filter(g.Pods, sc.nodes)
	victims := union(units)
	freed := make([]*api.TaskInfo, 0, len(victims))
	for _, v := range victims {
		freed = append(freed, v.task)
	}
	g.Admit = s.r.fit.Admit(s.tasks, freed)
	if sc.tier == placement.TierNode {
		// The node's leaves are all it can use: spare the planner the
		// rest of the fabric.
		f := s.r.topo.Preemption().Fabric()
		g = onLeaves(f, g, roomLeaves(f, sc))
	}
	plan, fail := s.r.topo.Plan(g, evicted)
	if fail != nil {
		return nil
	}
	return plan
}

// search returns the cheapest choice over the contract's scopes, or nil
// when no allowed evictions let the gang fit.
func (r *run) search(g placement.Gang, c placement.Contract, jobs map[api.JobID]*victimJob, rdma []*api.TaskInfo) *choice {
	s := newSearcher(r, g, rdma)
	var best *choice
	for _, sc := range r.scopes(c) {
		units := unitsIn(jobs, sc.in)
		if len(units) == 0 {
			continue
		}
		// Every unit evicted is the most the scope can free: if the gang
		// does not fit then, no subset helps.
		if s.fits(sc, units) == nil {
			continue
		}
		var ch *choice
		if len(units) <= exactUnits && s.plans < planBudget {
			ch = s.exact(sc, units, best)
		} else {
			ch = s.greedy(sc, units)
		}
		if ch != nil && ch.better(best) {
			best = ch
		}
	}
	return best
}

// exact tries every subset of units in cost order and returns the first
// that lets the gang fit; subsets no cheaper than bound are not tried.
func (s *searcher) exact(sc scope, units []*unit, bound *choice) *choice {
	type subset struct {
		mask uint32
		cost cost
		set  []*unit
	}
	var subsets []subset
	for mask := uint32(1); mask < 1<<len(units); mask++ {
		set := make([]*unit, 0, bits.OnesCount32(mask))
		whole := map[api.JobID]bool{}
		for i, u := range units {
			if mask&(1<<i) != 0 {
				set = append(set, u)
				if u.whole {
					whole[u.job] = true
				}
			}
		}
		// A job evicted whole makes its single-pod units redundant: that
		// set is the same as the one without them.
		redundant := false
		for _, u := range set {
			if !u.whole && whole[u.job] {
				redundant = true
			}
		}
		if !redundant {
			subsets = append(subsets, subset{mask: mask, cost: costOf(set), set: set})
		}
	}
	sort.Slice(subsets, func(i, j int) bool { return subsets[i].cost.Less(subsets[j].cost) })
	for _, sub := range subsets {
		// A running gang's choices of equal cost differ in how near they
		// keep its new pods: those are tried too.
		if bound != nil && (bound.cost.Less(sub.cost) || !s.running && !sub.cost.Less(bound.cost)) {
			return nil
		}
		if s.plans >= planBudget {
			return s.greedy(sc, units)
		}
		if !s.allowed(sub.set) {
			continue
		}
		if plan := s.fits(sc, sub.set); plan != nil {
			return s.choose(sc, sub.set, sub.cost, plan)
		}
	}
	return nil
}

// greedy adds units cheapest first until the gang fits, then drops units,
// most expensive first, while it still fits.
func (s *searcher) greedy(sc scope, units []*unit) *choice {
	// Smallest prefix that fits, by bisection (freeing more never makes
	// the gang fit less); the whole list is known to fit.
	lo, hi := 1, len(units)
	for lo < hi {
		mid := (lo + hi) / 2
		if s.fits(sc, units[:mid]) != nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	set := append([]*unit(nil), units[:lo]...)
	for i := len(set) - 1; i >= 0 && len(set) > 1; i-- {
		trial := append(append([]*unit(nil), set[:i]...), set[i+1:]...)
		if s.fits(sc, trial) != nil {
			set = trial
		}
	}
	if !s.allowed(set) {
		return nil
	}
	plan := s.fits(sc, set)
	if plan == nil {
		return nil
	}
	return s.choose(sc, set, costOf(set), plan)
}

// allowed reports whether the session's vetoes let the gang evict the
// units' victims together. Each candidate passed them on its own; a
// cumulative veto (proportion's: a queue's victims together must not take
// it below its deserved share) may still refuse a set. The what-if "every
// unit evicted" test of a scope is not vetoed: it only bounds what a scope
// can free.
func (s *searcher) allowed(units []*unit) bool {
	victims := union(units)
	tasks := make([]*api.TaskInfo, 0, len(victims))
	for _, v := range victims {
		tasks = append(tasks, v.task)
	}
	return s.r.policy.allowsAll(s.r.ssn, s.tasks[0], tasks)
}
