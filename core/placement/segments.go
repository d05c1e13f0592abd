// Segments: every block of Gang.Segment.Size consecutive ranks within one
// domain of Gang.Segment.Tier (one node under one leaf, one S0, one S1),
// always, in soft and hard mode alike.
//
// Two plans are weighed, the one with fewer leaves (then S1s) kept:
//
//   - the gang planned as usual, kept when its rank order happens to keep
//     every segment in one domain (the fewest leaves the search finds);
//   - segment by segment in rank order, each planned as a hard gang of its
//     own at the segment tier on a copy of the state that holds the
//     segments before it: first within the leaves the gang already uses,
//     then within its S1s, then anywhere, so the gang opens a new leaf
//     (S1) only when the ones it has hold no further segment.
//
// The whole gang then keeps its own mode and highest tier: in hard mode a
// plan wider than the highest tier is refused. A gang whose segments fit
// nowhere gets a failure naming the segment.
//
// When the held pods carry their ranks (Occupancy.Ranks), a pod's segment is its
// rank's, held pods included: a segment that holds pods is planned first,
// as a hard gang at the segment tier next to them, so its late pods (a
// re-created pod, pods beyond minMember) go into the domain its placed
// pods are in, or wait with a reason naming the segment, in soft and hard
// mode alike. Without ranks the pending pods, in rank order, are the gang.

package placement

import (
	"fmt"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// ReasonSegmentLimit: some segment of the gang fits in no domain of its tier.
const ReasonSegmentLimit ReasonCode = "SegmentLimit"

// planSegments plans a gang with a segment requirement (see the file
// comment). It runs outside the state's lock: it plans on copies.
func (s *State) planSegments(g Gang) (*Plan, *Failure) {
	plan, fail := s.planSegmentsOf(g)
	if plan == nil && g.Need > 0 && g.Need < len(g.Pods) {
		// As Plan does: exactly the pods the gang needs, rounded up to
		// whole segments.
		size := g.Segment.Size
		if n := (g.Need + size - 1) / size * size; n < len(g.Pods) {
			fewer := g
			fewer.Pods = g.Pods[:n]
			if p, _ := s.planSegmentsOf(fewer); p != nil {
				return p, nil
			}
		}
	}
	return plan, fail
}

// planSegmentsOf plans all of g's pods in segments.
func (s *State) planSegmentsOf(g Gang) (*Plan, *Failure) {
	size := g.Segment.Size
	if msg := SegmentProblem(size, gangMembers(g)); msg != "" {
		return nil, &Failure{Code: ReasonInvalidContract, Message: fmt.Sprintf("annotation %s: %s", AnnotationSegmentSize, msg)}
	}
	whole := g
	whole.Segment = Segment{}
	var best *Plan
	if p, _ := s.Plan(whole); p != nil && len(p.Assignments) == len(g.Pods) && segmentsKept(s.fabric, g, p) {
		best = p
	}
	bySegment, fail := s.planEachSegment(g)
	if bySegment != nil && (best == nil || fewerLeaves(s.fabric, bySegment, best)) {
		best = bySegment
	}
	if best == nil {
		return nil, fail
	}
	if g.Mode == ModeHard && best.Tier > g.HighestTier {
		return nil, &Failure{Code: ReasonTierLimit, Message: fmt.Sprintf("segments of %d pods fit only at tier %s, wider than the gang's highest tier %s",
			size, best.Tier, g.HighestTier)}
	}
	return best, nil
}

// gangMembers is how many pods the gang's ranks number (Gang.Members).
func gangMembers(g Gang) int {
	if g.Members > 0 {
		return g.Members
	}
	n := len(g.Pods)
	if g.Occupancy.ranked() {
		n += len(g.Occupancy.Ranks)
	}
	return n
}

// byRank reports whether the pods' ranks count the whole gang, so that a
// pod's segment is its rank's; else the pending pods, in rank order, are
// the gang.
func byRank(g Gang) bool { return g.Occupancy.ranked() || g.Members > 0 }

// segment is one block of ranks: its pending pods and its held ones.
type segment struct {
	index int
	pods  []Pod
	held  []OccupiedRank
}

// segmentsOf groups the pending pods by segment, with each segment's held
// pods: segments that hold pods first (their domain is set), then the
// others, each group by index.
func segmentsOf(g Gang) []segment {
	size := g.Segment.Size
	byIndex := map[int]*segment{}
	var order []int
	get := func(i int) *segment {
		if sg, ok := byIndex[i]; ok {
			return sg
		}
		sg := &segment{index: i}
		byIndex[i] = sg
		order = append(order, i)
		return sg
	}
	for i, pod := range g.Pods {
		idx := i / size
		if byRank(g) {
			idx = pod.Rank / size
		}
		sg := get(idx)
		sg.pods = append(sg.pods, pod)
	}
	if g.Occupancy.ranked() {
		for _, r := range g.Occupancy.Ranks {
			if sg, ok := byIndex[r.Rank/size]; ok {
				sg.held = append(sg.held, r)
			}
		}
	}
	out := make([]segment, 0, len(order))
	for _, i := range order {
		out = append(out, *byIndex[i])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := len(out[i].held) > 0, len(out[j].held) > 0; a != b {
			return a
		}
		return out[i].index < out[j].index
	})
	return out
}

// planEachSegment plans the segments one after the other on a copy of the
// state (see the file comment). A segment that holds pods is planned as a
// hard gang at the segment tier next to them, so its late pods go into
// their domain; the others first within the leaves the gang uses, then
// within its S1s, then anywhere.
func (s *State) planEachSegment(g Gang) (*Plan, *Failure) {
	work := s.Clone()
	prior := map[string][]Pod{}
	leaves := map[topology.S0ID]bool{}
	s1s := map[topology.S1ID]bool{}
	if h := g.Occupancy; !h.Empty() {
		for id := range h.S0s {
			leaves[id] = true
		}
		for id := range h.S1s {
			s1s[id] = true
		}
	}
	var assign []Assignment
	for _, sg := range segmentsOf(g) {
		seg := Gang{Job: g.Job, Pods: sg.pods, Need: len(sg.pods), Mode: ModeHard, HighestTier: g.Segment.Tier,
			Allowed: g.Allowed, Exclude: g.Exclude, ExcludeS0s: g.ExcludeS0s}
		if g.Admit != nil {
			// The node admits the segment's pods next to the gang's pods
			// earlier segments put there.
			seg.Admit = func(node string, pod Pod, on []Pod) bool {
				return g.Admit(node, pod, append(append([]Pod(nil), prior[node]...), on...))
			}
		}
		var plan *Plan
		var fail *Failure
		if len(sg.held) > 0 {
			seg.Occupancy = occupancyOfRanks(s.fabric, sg.held)
			plan, fail = work.Plan(seg)
		} else {
			for _, within := range []map[topology.S0ID]bool{leaves, s.leavesOfS1s(s1s), nil} {
				if within != nil && len(within) == 0 {
					continue
				}
				try := seg
				if within != nil {
					try.ExcludeS0s = outside(s.fabric, within, g.ExcludeS0s)
				}
				if plan, fail = work.Plan(try); plan != nil {
					break
				}
			}
		}
		if plan == nil {
			return nil, segmentFailure(g, sg, fail)
		}
		for _, a := range plan.Assignments {
			work.Apply(a.PodUID, a)
			prior[a.Node] = append(prior[a.Node], podOf(seg.Pods, a.PodUID))
		}
		for _, id := range plan.S0s {
			leaves[id] = true
		}
		for _, id := range plan.S1s {
			s1s[id] = true
		}
		assign = append(assign, plan.Assignments...)
	}
	return planOf(s.fabric, g.Occupancy, assign), nil
}

// occupancyOfRanks is what the given held pods hold.
func occupancyOfRanks(f *topology.Fabric, ranks []OccupiedRank) *Occupancy {
	h := &Occupancy{Nodes: map[string]bool{}, S0s: map[topology.S0ID]bool{}, S1s: map[topology.S1ID]bool{}, Pods: len(ranks), Ranks: ranks}
	for _, r := range ranks {
		h.Nodes[r.Node] = true
		for _, id := range r.Leaves {
			h.S0s[id] = true
			if l, ok := f.Leaf(id); ok {
				h.S1s[l.S1] = true
			}
		}
	}
	return h
}

// segmentFailure names the segment that fits nowhere.
func segmentFailure(g Gang, sg segment, fail *Failure) *Failure {
	size := g.Segment.Size
	domain := map[Tier]string{TierNode: "node (with its NICs under one S0)", TierS0: "S0", TierS1: "S1"}[g.Segment.Tier]
	next := "next to the segments before it"
	if len(sg.held) > 0 {
		next = fmt.Sprintf("where its %d placed pods are", len(sg.held))
	}
	msg := fmt.Sprintf("no %s holds segment %d of %d (ranks %d-%d, %d pods of %s) %s",
		domain, sg.index+1, gangMembers(g)/size, sg.index*size, sg.index*size+size-1, len(sg.pods), mainShape(sg.pods), next)
	if fail != nil {
		msg += ": " + fail.Message
	}
	return &Failure{Code: ReasonSegmentLimit, Message: msg}
}

// podOf returns the pod of uid among pods.
func podOf(pods []Pod, uid string) Pod {
	for _, p := range pods {
		if p.UID == uid {
			return p
		}
	}
	return Pod{UID: uid}
}

// leavesOfS1s lists the leaves under the given S1s.
func (s *State) leavesOfS1s(s1s map[topology.S1ID]bool) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for id := range s1s {
		for _, leaf := range s.fabric.LeavesOf(id) {
			out[leaf] = true
		}
	}
	return out
}

// outside lists every leaf not in within, plus those already excluded.
func outside(f *topology.Fabric, within, excluded map[topology.S0ID]bool) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for _, id := range f.LeafIDs() {
		if !within[id] || excluded[id] {
			out[id] = true
		}
	}
	return out
}

// segmentsKept reports whether every segment of the plan, by the ranks of
// g.Pods and the held pods of each, sits within one domain of the segment
// tier.
func segmentsKept(f *topology.Fabric, g Gang, p *Plan) bool {
	byUID := make(map[string]Assignment, len(p.Assignments))
	for _, a := range p.Assignments {
		byUID[a.PodUID] = a
	}
	for _, sg := range segmentsOf(g) {
		nodes := map[string]bool{}
		leaves := map[topology.S0ID]bool{}
		add := func(node string, ids []topology.S0ID) {
			nodes[node] = true
			for _, id := range ids {
				leaves[id] = true
			}
		}
		for _, pod := range sg.pods {
			a, ok := byUID[pod.UID]
			if !ok {
				return false
			}
			add(a.Node, f.NICLeaves(a.Node, a.NICs()))
		}
		for _, r := range sg.held {
			add(r.Node, r.Leaves)
		}
		if TierOf(len(nodes), len(leaves), s1Count(f, leaves)) > g.Segment.Tier {
			return false
		}
	}
	return true
}

// fewerLeaves reports whether plan a uses fewer leaves than b, then fewer S1s.
func fewerLeaves(f *topology.Fabric, a, b *Plan) bool {
	if len(a.S0s) != len(b.S0s) {
		return len(a.S0s) < len(b.S0s)
	}
	return len(a.S1s) < len(b.S1s)
}

// planOf builds the plan of a whole gang from its assignments and what it
// holds.
func planOf(f *topology.Fabric, held *Occupancy, assign []Assignment) *Plan {
	nodes, s0s, s1s := extentOf(f, held, assign)
	plan := &Plan{Assignments: assign, S0s: sortedS0s(s0s)}
	for id := range s1s {
		plan.S1s = append(plan.S1s, id)
	}
	sort.Slice(plan.S1s, func(i, j int) bool { return plan.S1s[i] < plan.S1s[j] })
	plan.Tier = TierOf(len(nodes), len(s0s), len(s1s))
	return plan
}

// extentOf collects the nodes, leaves and (known) S1s of the held pods and
// assign together. An Occupancy's S1s are those of its known leaves, so the
// S1s are those of the leaves collected.
func extentOf(f *topology.Fabric, held *Occupancy, assign []Assignment) (map[string]bool, map[topology.S0ID]bool, map[topology.S1ID]bool) {
	nodes := map[string]bool{}
	s0s := map[topology.S0ID]bool{}
	s1s := map[topology.S1ID]bool{}
	if !held.Empty() {
		for n := range held.Nodes {
			nodes[n] = true
		}
		for id := range held.S0s {
			s0s[id] = true
		}
		for id := range held.S1s {
			s1s[id] = true
		}
	}
	for _, a := range assign {
		nodes[a.Node] = true
		for _, id := range f.NICLeaves(a.Node, a.NICs()) {
			s0s[id] = true
			if l, ok := f.Leaf(id); ok {
				s1s[l.S1] = true
			}
		}
	}
	return nodes, s0s, s1s
}
