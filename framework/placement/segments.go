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
// nowhere gets a failure naming the segment. Pods the gang already holds are
// not part of a segment: segments are planned over the pending pods.

package placement

import (
	"fmt"
	"sort"

	"github.com/rdmatopo/rdmatopo/framework/topology"
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
	if msg := SegmentProblem(size, len(g.Pods)); msg != "" {
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

// planEachSegment plans the segments one after the other on a copy of the
// state (see the file comment).
func (s *State) planEachSegment(g Gang) (*Plan, *Failure) {
	size := g.Segment.Size
	work := s.Clone()
	prior := map[string][]Pod{}
	leaves := map[topology.S0ID]bool{}
	s1s := map[topology.S1ID]bool{}
	var assign []Assignment
	for start := 0; start < len(g.Pods); start += size {
		seg := Gang{Job: g.Job, Pods: g.Pods[start : start+size], Need: size, Mode: ModeHard, HighestTier: g.Segment.Tier,
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
		if plan == nil {
			return nil, segmentFailure(g, start, fail)
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
	return planOf(s.fabric, g.Held, assign), nil
}

// segmentFailure names the segment that fits nowhere.
func segmentFailure(g Gang, start int, fail *Failure) *Failure {
	size := g.Segment.Size
	domain := map[Tier]string{TierNode: "node (with its NICs under one S0)", TierS0: "S0", TierS1: "S1"}[g.Segment.Tier]
	msg := fmt.Sprintf("no %s holds segment %d of %d (ranks %d-%d, %d pods of %s) next to the segments before it",
		domain, start/size+1, len(g.Pods)/size, start, start+size-1, size, mainShape(g.Pods[start:start+size]))
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
// g.Pods, sits within one domain of the segment tier.
func segmentsKept(f *topology.Fabric, g Gang, p *Plan) bool {
	byUID := make(map[string]Assignment, len(p.Assignments))
	for _, a := range p.Assignments {
		byUID[a.PodUID] = a
	}
	pods := append([]Pod(nil), g.Pods...)
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].Rank < pods[j].Rank })
	size := g.Segment.Size
	for start := 0; start < len(pods); start += size {
		nodes := map[string]bool{}
		leaves := map[topology.S0ID]bool{}
		s1s := map[topology.S1ID]bool{}
		for _, pod := range pods[start : start+size] {
			a, ok := byUID[pod.UID]
			if !ok {
				return false
			}
			nodes[a.Node] = true
			for _, id := range f.NICLeaves(a.Node, a.NICs()) {
				leaves[id] = true
				if l, ok := f.Leaf(id); ok {
					s1s[l.S1] = true
				}
			}
		}
		if TierOf(len(nodes), len(leaves), len(s1s)) > g.Segment.Tier {
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
func planOf(f *topology.Fabric, held *Held, assign []Assignment) *Plan {
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
	plan := &Plan{Assignments: assign, S0s: sortedS0s(s0s)}
	for id := range s1s {
		plan.S1s = append(plan.S1s, id)
	}
	sort.Slice(plan.S1s, func(i, j int) bool { return plan.S1s[i] < plan.S1s[j] })
	plan.Tier = TierOf(len(nodes), len(s0s), len(s1s))
	return plan
}
