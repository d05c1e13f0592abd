package grade

import (
	"fmt"
	"slices"
	"sort"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/oracle"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// Tracker is the benchmark's own record of who holds which GPUs and NICs,
// independent of the scheduler under test. It answers the placement-quality
// questions: how many S0s a gang's NICs span, the fewest S0s the gang could
// have used (from the oracle, MinLeaves, on the tracker's state), and how
// many S0s are partly used.
type Tracker struct {
	fabric *topology.Fabric
	// held maps pod UID to its assignment.
	held map[string]placement.Assignment
	// onNode maps node to the UIDs holding something on it.
	onNode map[string]map[string]bool
	// leafUsed counts held NICs per leaf; leafNICs is each leaf's NIC count.
	leafUsed map[topology.S0ID]int
	leafNICs map[topology.S0ID]int
	leaves   []topology.S0ID
	// Misaligned counts pods whose NICs and GPUs could not come from one
	// NUMA zone on a single-NUMA node (kubelet would refuse them).
	Misaligned int
	// nodes are the constraints the optimum reads of each node (taint,
	// pool, memory); tainted says whether any node is tainted.
	nodes   map[string]trace.NodeConstraint
	tainted bool
	// memory maps pod UID to the node and bytes of memory it requests;
	// memUsed sums them per node.
	memory  map[string]podMemory
	memUsed map[string]int64
	// oracle is OracleState's answer, kept from one call to the next:
	// oracleAt indexes it by node, and the entries of the nodes in stale
	// (those Reserve and Release changed since) are rebuilt in place on
	// the next call. Nil until the first call.
	oracle   []oracle.OracleNode
	oracleAt map[string]int
	stale    map[string]bool
}

// podMemory is a pod's memory request on its node.
type podMemory struct {
	node  string
	bytes int64
}

// NewTracker starts an empty tracker over the fabric of nodes and cnrs.
func NewTracker(nodes []*corev1.Node, cnrs []*v1alpha1.CustomNodeResource) *Tracker {
	// The generated clusters label each node's S1 (builders.S1Label); the
	// all-reduce model reads it to tell hops within an S1 from hops through
	// the spine.
	f := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), nodes, cnrs)
	t := &Tracker{
		fabric:   f,
		leafNICs: map[topology.S0ID]int{},
		leaves:   f.LeafIDs(),
		nodes:    trace.ConstraintsOf(nodes),
	}
	for _, nc := range t.nodes {
		t.tainted = t.tainted || nc.Tainted
	}
	for _, id := range t.leaves {
		l, _ := f.Leaf(id)
		for _, s := range l.Slots {
			t.leafNICs[id] += len(s.NICs)
		}
	}
	t.reset()
	return t
}

// Empty returns a tracker over the same fabric and node constraints as t
// that holds nothing. The two share what neither modifies (the fabric,
// the nodes' constraints, the leaves' NIC counts).
func (t *Tracker) Empty() *Tracker {
	e := &Tracker{fabric: t.fabric, leafNICs: t.leafNICs, leaves: t.leaves, nodes: t.nodes, tainted: t.tainted}
	e.reset()
	return e
}

// reset gives t empty holdings.
func (t *Tracker) reset() {
	t.held = map[string]placement.Assignment{}
	t.onNode = map[string]map[string]bool{}
	t.leafUsed = map[topology.S0ID]int{}
	t.Misaligned = 0
	t.memory = map[string]podMemory{}
	t.memUsed = map[string]int64{}
	t.oracle, t.oracleAt = nil, nil
	t.stale = map[string]bool{}
}

// Fabric returns the tracker's fabric (one S1).
func (t *Tracker) Fabric() *topology.Fabric { return t.fabric }

// Reserve records that pod uid holds a. A UID already held is an error.
func (t *Tracker) Reserve(uid string, a placement.Assignment) error {
	if _, ok := t.held[uid]; ok {
		return fmt.Errorf("pod %s already holds resources on node %s", uid, t.held[uid].Node)
	}
	t.held[uid] = a
	t.stale[a.Node] = true
	if t.onNode[a.Node] == nil {
		t.onNode[a.Node] = map[string]bool{}
	}
	t.onNode[a.Node][uid] = true
	for _, nic := range a.NICs() {
		if leaf, ok := t.fabric.NICLeaf(a.Node, nic); ok {
			t.leafUsed[leaf]++
		}
	}
	return nil
}

// UseMemory records that pod uid requests bytes of memory on node.
func (t *Tracker) UseMemory(uid, node string, bytes int64) {
	if bytes <= 0 {
		return
	}
	t.memory[uid] = podMemory{node: node, bytes: bytes}
	t.memUsed[node] += bytes
}

// Release forgets what pod uid holds (no-op if it holds nothing).
func (t *Tracker) Release(uid string) {
	if m, ok := t.memory[uid]; ok {
		delete(t.memory, uid)
		t.memUsed[m.node] -= m.bytes
	}
	a, ok := t.held[uid]
	if !ok {
		return
	}
	delete(t.held, uid)
	t.stale[a.Node] = true
	delete(t.onNode[a.Node], uid)
	for _, nic := range a.NICs() {
		if leaf, ok := t.fabric.NICLeaf(a.Node, nic); ok {
			t.leafUsed[leaf]--
		}
	}
}

// FromAnnotations turns the rdmatopo.io/nics annotation of a pod bound to
// node into an assignment: each NIC in the zone the fabric lists it under,
// the pod's GPUs split over those zones and, where they lack free GPUs,
// taken from the node's other zones (placeGPUs). ok is false when the pod
// carries no NIC annotation.
func (t *Tracker) FromAnnotations(node string, annotations map[string]string, sh placement.Shape) (placement.Assignment, bool, error) {
	raw := annotations[ledger.AnnotationNICs]
	if raw == "" {
		return placement.Assignment{}, false, nil
	}
	nics, err := ledger.ParseNICs(raw)
	if err != nil {
		return placement.Assignment{}, false, fmt.Errorf("node %s: annotation %s: %w", node, ledger.AnnotationNICs, err)
	}
	n, ok := t.fabric.Node(node)
	if !ok {
		return placement.Assignment{}, false, fmt.Errorf("node %s is not in the fabric", node)
	}
	byZone := map[int][]topology.NICID{}
	for _, nic := range nics {
		found := false
		for _, z := range n.Zones {
			for _, c := range z.NICs {
				if c.ID == nic {
					byZone[z.ID] = append(byZone[z.ID], nic)
					found = true
				}
			}
		}
		if !found {
			return placement.Assignment{}, false, fmt.Errorf("node %s has no NIC %s (annotation %s)", node, nic, ledger.AnnotationNICs)
		}
	}
	ids := make([]int, 0, len(byZone))
	for id := range byZone {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	a := placement.Assignment{Node: node}
	for _, id := range ids {
		list := byZone[id]
		sort.Slice(list, func(x, y int) bool { return list[x] < list[y] })
		a.Zones = append(a.Zones, ledger.ZoneUse{NUMA: id, NICs: list})
	}
	t.placeGPUs(&a, sh.GPU)
	return a, true, nil
}

// placeGPUs gives assignment a (its zones those of its NICs) gpu GPUs:
// split evenly over its zones as far as each zone has them free, what a
// zone lacks from the other zones of a with GPUs left, then from the
// node's other zones in id order (a pod on a node whose policy spans
// zones takes its GPUs where they are free). What no zone has left is
// counted on a's first zone, so the node's total stays what its pods
// hold. A zone never shows fewer free GPUs than none because of one pod's
// split.
func (t *Tracker) placeGPUs(a *placement.Assignment, gpu int64) {
	if gpu <= 0 || len(a.Zones) == 0 {
		return
	}
	zones, _, _ := t.freeZones(a.Node)
	free := map[int]int64{}
	for _, z := range zones {
		free[z.id] = max(z.gpu, 0)
	}
	left := int64(0)
	for i, want := range ledger.SplitEvenly(gpu, len(a.Zones)) {
		got := min(want, free[a.Zones[i].NUMA])
		a.Zones[i].GPU = got
		free[a.Zones[i].NUMA] -= got
		left += want - got
	}
	for i := range a.Zones {
		got := min(left, free[a.Zones[i].NUMA])
		a.Zones[i].GPU += got
		free[a.Zones[i].NUMA] -= got
		left -= got
	}
	for _, z := range zones {
		if left == 0 {
			break
		}
		if slices.ContainsFunc(a.Zones, func(u ledger.ZoneUse) bool { return u.NUMA == z.id }) {
			continue
		}
		if got := min(left, free[z.id]); got > 0 {
			a.Zones = append(a.Zones, ledger.ZoneUse{NUMA: z.id, GPU: got})
			left -= got
		}
	}
	a.Zones[0].GPU += left
}

// zoneFree is what one NUMA zone of a node has left in the tracker.
type zoneFree struct {
	id  int
	gpu int64
	// nics are the NICs with a free RDMA unit, units their free units
	// (each pod on a NIC takes one).
	nics  []topology.NICID
	units []int64
}

// freeZones lists the zones of node with their free GPUs and NICs: a NIC
// is free while the pods the tracker holds on it are fewer than the free
// units its KCNR shows.
func (t *Tracker) freeZones(node string) ([]zoneFree, *topology.Node, bool) {
	n, ok := t.fabric.Node(node)
	if !ok {
		return nil, nil, false
	}
	usedGPU := map[int]int64{}
	usedNIC := map[topology.NICID]int64{}
	for uid := range t.onNode[node] {
		for _, z := range t.held[uid].Zones {
			usedGPU[z.NUMA] += z.GPU
			for _, nic := range z.NICs {
				usedNIC[nic]++
			}
		}
	}
	out := make([]zoneFree, 0, len(n.Zones))
	for _, z := range n.Zones {
		zf := zoneFree{id: z.ID, gpu: z.FreeGPU - usedGPU[z.ID]}
		for _, c := range z.NICs {
			if left := c.FreeUnits - usedNIC[c.ID]; left > 0 {
				zf.nics = append(zf.nics, c.ID)
				zf.units = append(zf.units, left)
			}
		}
		out = append(out, zf)
	}
	return out, n, true
}

// NodeAssign models the node agent (kubelet's topology manager with
// katalyst's QRM plugins) for a pod a topology-blind scheduler bound to
// node: it takes the GPUs and NICs from the one NUMA zone that fits and is
// left with the fewest free NICs (then the lowest id). When no zone fits —
// the scheduler only counted GPUs and NICs per node — it takes them from the
// zones in id order, and counts the pod in Misaligned if the node's policy
// is single-NUMA (kubelet would reject such a pod; the benchmark keeps it
// running so both schedulers are compared on the same pods).
func (t *Tracker) NodeAssign(node string, sh placement.Shape) (placement.Assignment, error) {
	zones, n, ok := t.freeZones(node)
	if !ok {
		return placement.Assignment{}, fmt.Errorf("node %s is not in the fabric", node)
	}
	best := -1
	for i, z := range zones {
		if z.gpu < sh.GPU || int64(len(z.nics)) < sh.NICs {
			continue
		}
		if best < 0 || len(z.nics) < len(zones[best].nics) {
			best = i
		}
	}
	if best >= 0 {
		z := zones[best]
		return placement.Assignment{Node: node, Zones: []ledger.ZoneUse{{
			NUMA: z.id, GPU: sh.GPU, NICs: append([]topology.NICID(nil), z.nics[:sh.NICs]...)}}}, nil
	}
	var gpu, nics int64
	for _, z := range zones {
		gpu += z.gpu
		nics += int64(len(z.nics))
	}
	if gpu < sh.GPU || nics < sh.NICs {
		return placement.Assignment{}, fmt.Errorf("node %s: %s does not fit (free %d GPU, %d NICs)", node, sh, gpu, nics)
	}
	if n.Policy.Aligned() {
		t.Misaligned++
	}
	a := placement.Assignment{Node: node}
	needGPU, needNIC := sh.GPU, sh.NICs
	for _, z := range zones {
		u := ledger.ZoneUse{NUMA: z.id, GPU: min(needGPU, z.gpu)}
		k := min(needNIC, int64(len(z.nics)))
		u.NICs = append([]topology.NICID(nil), z.nics[:k]...)
		needGPU -= u.GPU
		needNIC -= k
		if u.GPU > 0 || len(u.NICs) > 0 {
			a.Zones = append(a.Zones, u)
		}
	}
	return a, nil
}

// S0Count is the number of distinct leaves the assignments' NICs use.
func (t *Tracker) S0Count(assign []placement.Assignment) int {
	seen := map[topology.S0ID]bool{}
	for _, a := range assign {
		for _, leaf := range t.fabric.NICLeaves(a.Node, a.NICs()) {
			seen[leaf] = true
		}
	}
	return len(seen)
}

// S1Count returns how many S1s the leaves of the assignments' NICs are in.
func (t *Tracker) S1Count(assign []placement.Assignment) int {
	seen := map[topology.S1ID]bool{}
	for _, a := range assign {
		for _, id := range t.fabric.NICLeaves(a.Node, a.NICs()) {
			if l, ok := t.fabric.Leaf(id); ok {
				seen[l.S1] = true
			}
		}
	}
	return len(seen)
}

// OracleState returns every node's free GPUs, CPU and NICs as the tracker
// holds them, with each free NIC's leaf, for MinLeaves. CPU is what the
// KCNRs show: the tracker does not follow CPU, which never limits placement
// in the trace. The slice is the tracker's own and valid until the next
// Reserve or Release: callers only read it, and entries of nodes unchanged
// since the last call are not rebuilt (a run grades every gang over every
// node).
func (t *Tracker) OracleState() []oracle.OracleNode {
	if t.oracle == nil {
		names := t.fabric.NodeNames()
		t.oracle = make([]oracle.OracleNode, 0, len(names))
		t.oracleAt = make(map[string]int, len(names))
		for _, name := range names {
			if on, ok := t.oracleNode(name); ok {
				t.oracleAt[name] = len(t.oracle)
				t.oracle = append(t.oracle, on)
			}
		}
		clear(t.stale)
		return t.oracle
	}
	for name := range t.stale {
		if i, ok := t.oracleAt[name]; ok {
			// The fabric does not change: a node it knows keeps its entry.
			t.oracle[i], _ = t.oracleNode(name)
		}
	}
	clear(t.stale)
	return t.oracle
}

// oracleNode is a node's OracleState entry; false if the fabric does not
// know the node.
func (t *Tracker) oracleNode(name string) (oracle.OracleNode, bool) {
	zones, n, ok := t.freeZones(name)
	if !ok {
		return oracle.OracleNode{}, false
	}
	on := oracle.OracleNode{Name: name, S1: string(n.S1), Spanning: n.Policy == topology.PolicySpanning, Zones: make([]oracle.OracleZone, len(zones))}
	for i, z := range zones {
		oz := oracle.OracleZone{FreeGPU: z.gpu, FreeCPUMilli: n.Zones[i].FreeCPUMilli}
		for _, nic := range z.nics {
			leaf, _ := t.fabric.NICLeaf(name, nic)
			oz.FreeNICLeaves = append(oz.FreeNICLeaves, string(leaf))
		}
		if slices.ContainsFunc(z.units, func(u int64) bool { return u > 1 }) {
			oz.FreeNICUnits = z.units
		}
		on.Zones[i] = oz
	}
	return on, true
}

// Optimum asks the oracle for the fewest S0s pods pods of shape sh could
// use on the tracker's current state.
func (t *Tracker) Optimum(pods int, sh placement.Shape) oracle.OracleResult {
	gang := make([]oracle.OracleShape, pods)
	for i := range gang {
		gang[i] = oracle.OracleShape{GPU: sh.GPU, CPUMilli: sh.CPUMilli, NICs: sh.NICs}
	}
	return oracle.MinLeaves(t.OracleState(), gang, 0)
}

// OptimumOf asks the oracle for the fewest S0s gang g could use on the
// tracker's current state: MinLeaves for a gang of one shape on a cluster
// without constraints, MinLeavesGang (shapes, node groups, pod limits)
// otherwise.
func (t *Tracker) OptimumOf(g trace.GangSpec) oracle.OracleResult {
	return t.optimumOn(t.OracleState(), g)
}

// OptimumWithinTier is OptimumOf for the placements gang g's contract
// allows: a hard gang held to one S1 is graded against the fewest leaves
// (and then one S1) that the nodes of any single S1 give it, since a
// placement over two S1s is one it must not take. Nodes of unknown S1 ("")
// are one S1 like any other, as the scheduler counts them. A soft gang, or
// a hard one held to the cluster, gets OptimumOf; so does a hard gang held
// to one node or one S0, whose placement is on one leaf, which no
// unconstrained placement beats. wider reports that the tier made a
// difference: fewer leaves over several S1s would hold the gang, or
// nothing holds it within one S1.
func (t *Tracker) OptimumWithinTier(g trace.GangSpec) (within oracle.OracleResult, wider bool) {
	return t.withinTierOn(t.OracleState(), g)
}

// OptimumWithinTierOff is OptimumWithinTier with the NICs under leaves and
// the nodes in nodes taken away: the placements left to a gang that is
// kept off them (rooms that waiting gangs claim).
func (t *Tracker) OptimumWithinTierOff(g trace.GangSpec, leaves, nodes map[string]bool) oracle.OracleResult {
	within, _ := t.withinTierOn(Without(t.OracleState(), leaves, nodes), g)
	return within
}

// Wider reports whether answer a is a wider optimum than b, both exact:
// more leaves, or as many over more S1s (both decided). An answer that is
// not exact is never wider (a gang is not graded against what the oracle
// could not decide).
func Wider(a, b oracle.OracleResult) bool {
	if a.Status != oracle.OracleExact || b.Status != oracle.OracleExact {
		return false
	}
	return a.Leaves > b.Leaves || a.Leaves == b.Leaves && a.S1Reason == "" && b.S1Reason == "" && a.S1s > b.S1s
}

// Without returns a copy of state without the nodes in nodes and without
// the free NICs under leaves (their units with them); state is unchanged.
func Without(state []oracle.OracleNode, leaves, nodes map[string]bool) []oracle.OracleNode {
	out := make([]oracle.OracleNode, 0, len(state))
	for _, on := range state {
		if nodes[on.Name] {
			continue
		}
		zones := make([]oracle.OracleZone, len(on.Zones))
		for i, z := range on.Zones {
			oz := z
			oz.FreeNICLeaves, oz.FreeNICUnits = nil, nil
			for j, leaf := range z.FreeNICLeaves {
				if leaves[leaf] {
					continue
				}
				oz.FreeNICLeaves = append(oz.FreeNICLeaves, leaf)
				if z.FreeNICUnits != nil {
					oz.FreeNICUnits = append(oz.FreeNICUnits, z.FreeNICUnits[j])
				}
			}
			zones[i] = oz
		}
		on.Zones = zones
		out = append(out, on)
	}
	return out
}

// withinTierOn is OptimumWithinTier on the nodes of state only.
func (t *Tracker) withinTierOn(state []oracle.OracleNode, g trace.GangSpec) (within oracle.OracleResult, wider bool) {
	all := t.optimumOn(state, g)
	if g.Mode != placement.ModeHard || g.HighestTier != placement.TierS1 || all.Status != oracle.OracleExact || all.S1s <= 1 && all.S1Reason == "" {
		return all, false
	}
	byS1 := map[topology.S1ID][]oracle.OracleNode{}
	var ids []topology.S1ID
	for _, on := range state {
		id := topology.S1ID(on.S1)
		if _, ok := byS1[id]; !ok {
			ids = append(ids, id)
		}
		byS1[id] = append(byS1[id], on)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	within = oracle.OracleResult{Status: oracle.OracleInfeasible}
	for _, id := range ids {
		o := t.optimumOn(byS1[id], g)
		within.Visited += o.Visited
		switch o.Status {
		case oracle.OracleUnknown:
			return oracle.OracleResult{Status: oracle.OracleUnknown, Visited: within.Visited,
				Reason: fmt.Sprintf("within S1 %q: %s", id, o.Reason)}, false
		case oracle.OracleExact:
			if within.Status != oracle.OracleExact || o.Leaves < within.Leaves {
				within.Status, within.Leaves = oracle.OracleExact, o.Leaves
			}
		}
	}
	if within.Status == oracle.OracleExact {
		within.S1s = 1
	}
	return within, within.Status != oracle.OracleExact || within.Leaves > all.Leaves
}

// optimumOn is OptimumOf on the nodes of state only.
func (t *Tracker) optimumOn(state []oracle.OracleNode, g trace.GangSpec) oracle.OracleResult {
	if g.Master == nil && !g.Pools && g.MemoryGi == 0 && g.HostPort == 0 && (g.Tolerates || !t.tainted) {
		sh := g.Kind.Shape()
		gang := make([]oracle.OracleShape, g.Pods)
		for i := range gang {
			gang[i] = oracle.OracleShape{GPU: sh.GPU, CPUMilli: sh.CPUMilli, NICs: sh.NICs}
		}
		return oracle.MinLeaves(state, gang, 0)
	}
	og := trace.OracleGangOf(g, t.nodes, func(node string) int64 { return t.memUsed[node] })
	return oracle.MinLeavesGang(state, og, 0)
}

// FitsOneS1 reports whether the oracle finds room for gang g within the
// nodes of one S1 on the tracker's current state. An S1 the oracle cannot
// decide counts as room (the answer feeds a floor, which must not be too
// slow).
func (t *Tracker) FitsOneS1(g trace.GangSpec) bool {
	byS1 := map[topology.S1ID][]oracle.OracleNode{}
	for _, on := range t.OracleState() {
		if n, ok := t.fabric.Node(on.Name); ok && n.S1 != "" {
			byS1[n.S1] = append(byS1[n.S1], on)
		}
	}
	for _, id := range t.fabric.S1IDs() {
		if nodes := byS1[id]; len(nodes) > 0 && t.optimumOn(nodes, g).Status != oracle.OracleInfeasible {
			return true
		}
	}
	return false
}

// Fragmentation is the share of all S0s that are partly used: some of their
// NICs held, some free.
func (t *Tracker) Fragmentation() float64 {
	if len(t.leaves) == 0 {
		return 0
	}
	partly := 0
	for _, id := range t.leaves {
		if u := t.leafUsed[id]; u > 0 && u < t.leafNICs[id] {
			partly++
		}
	}
	return float64(partly) / float64(len(t.leaves))
}

// ReservationsOn lists what the tracker holds on node, as reservations.
func (t *Tracker) ReservationsOn(node string) []ledger.Reservation {
	uids := make([]string, 0, len(t.onNode[node]))
	for uid := range t.onNode[node] {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	out := make([]ledger.Reservation, 0, len(uids))
	for _, uid := range uids {
		out = append(out, ledger.Reservation{UID: uid, Node: node, Zones: t.held[uid].Zones})
	}
	return out
}
