// Rank order: which pod of the gang takes which place the search chose.
//
// The search (planner.go, tiers.go, footprint.go) decides the places: a node,
// its zones and NICs per pod. It fills a node before opening the next, and on
// provider cabling a node's two zones hang off two leaves, so in rank order
// the pods it yields alternate between leaves. A ring all-reduce sends every
// byte from rank r to rank r+1 (and n-1 back to 0): each change of leaf along
// that ring is a hop through S1.
//
// inRankOrder hands the places out again, rank by rank: each pod takes, among
// the places left that a pod of its class fits (same shape and node group:
// such pods are interchangeable), the one on the node of the previous rank
// under the same leaf, else another under that leaf, else one under a leaf
// of the same S1, else the first left; leaves, and nodes within a leaf, in
// name order. A leaf is left only when no place of the pod's class is left
// under it, so for a gang of one class every leaf is visited once and the
// ring crosses exactly as many leaf boundaries as it has leaves (none on
// one leaf), the minimum. Pods of another class (a master of its own shape)
// stay in their class's places; the next rank starts next to them.

package placement

import (
	"sort"
	"strings"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// podClass is what makes pods interchangeable in a place.
type podClass struct {
	shape Shape
	group int
}

// place is where the search put one pod: a node, its zones and NICs.
type place struct {
	a Assignment
	// leaf names the leaves of the place's NICs (sorted, joined): two places
	// of one leaf key talk without crossing a leaf.
	leaf string
	s1   topology.S1ID
	// order is the place's position by (S1, leaf, node, zone).
	order int
	taken bool
}

// inRankOrder reassigns a verified assignment list so that pods take the
// places in rank order (see the file comment). It returns the list unchanged
// when the reassignment is refused by Gang.Admit (a node's pods differing
// in what the fabric model does not hold).
func (p *planner) inRankOrder(assign []Assignment) []Assignment {
	if len(assign) < 2 {
		return assign
	}
	byUID := make(map[string]Pod, len(p.g.Pods))
	for _, pod := range p.g.Pods {
		byUID[pod.UID] = pod
	}
	pods := make([]Pod, 0, len(assign))
	classes := map[podClass][]*place{}
	var all []*place
	for _, a := range assign {
		pod, ok := byUID[a.PodUID]
		if !ok {
			return assign
		}
		pods = append(pods, pod)
		s := &place{a: a, leaf: p.leafKey(a)}
		if l, ok := p.s.fabric.Leaf(topology.S0ID(strings.SplitN(s.leaf, ",", 2)[0])); ok {
			s.s1 = l.S1
		}
		c := podClass{pod.Shape, pod.Group}
		classes[c] = append(classes[c], s)
		all = append(all, s)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].before(all[j]) })
	for i, s := range all {
		s.order = i
	}
	for _, list := range classes {
		sort.Slice(list, func(i, j int) bool { return list[i].order < list[j].order })
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].Rank < pods[j].Rank })

	out := make([]Assignment, 0, len(assign))
	// held are the gang's held pods by rank: a pending pod whose rank
	// follows a held one starts next to it.
	held := p.heldPlaces()
	var prev *place
	prevRank, next := -1, 0
	for _, pod := range pods {
		for ; next < len(held) && held[next].rank < pod.Rank; next++ {
			if held[next].rank > prevRank {
				prev, prevRank = held[next].place, held[next].rank
			}
		}
		if prev == nil && next < len(held) {
			// The lowest pending rank below every held one: next to the
			// rank above it.
			prev = held[next].place
		}
		s := pickPlace(classes[podClass{pod.Shape, pod.Group}], prev)
		s.taken = true
		a := s.a
		a.PodUID = pod.UID
		out = append(out, a)
		prev, prevRank = s, pod.Rank
	}
	if !p.admits(out, byUID) {
		return assign
	}
	return out
}

// rankedPlace is a held pod's place and rank, for inRankOrder.
type rankedPlace struct {
	rank  int
	place *place
}

// heldPlaces lists the gang's held pods (Occupancy.Ranks) as places, by rank.
func (p *planner) heldPlaces() []rankedPlace {
	if !p.g.Occupancy.ranked() {
		return nil
	}
	out := make([]rankedPlace, 0, len(p.g.Occupancy.Ranks))
	for _, r := range p.g.Occupancy.Ranks {
		s := &place{a: Assignment{Node: r.Node}, leaf: r.leafKey(), taken: true}
		if len(r.Leaves) > 0 {
			if l, ok := p.s.fabric.Leaf(r.Leaves[0]); ok {
				s.s1 = l.S1
			}
		}
		out = append(out, rankedPlace{rank: r.Rank, place: s})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rank < out[j].rank })
	return out
}

// before orders places by S1, leaf, node and first zone.
func (s *place) before(o *place) bool {
	if s.s1 != o.s1 {
		return s.s1 < o.s1
	}
	if s.leaf != o.leaf {
		return s.leaf < o.leaf
	}
	if s.a.Node != o.a.Node {
		return s.a.Node < o.a.Node
	}
	return firstZone(s.a) < firstZone(o.a)
}

// firstZone is the lowest NUMA id of an assignment (-1 without zones).
func firstZone(a Assignment) int {
	if len(a.Zones) == 0 {
		return -1
	}
	return a.Zones[0].NUMA
}

// pickPlace takes the place left in list (sorted by order) closest to prev:
// prev's node under prev's leaf, else prev's leaf, else prev's S1, else the
// first left. list always has a place left: it holds one per pod of its
// class.
func pickPlace(list []*place, prev *place) *place {
	var best *place
	bestScore := -1
	for _, s := range list {
		if s.taken {
			continue
		}
		score := 0
		if prev != nil {
			switch {
			case s.leaf == prev.leaf && s.a.Node == prev.a.Node:
				score = 3
			case s.leaf == prev.leaf:
				score = 2
			case s.s1 == prev.s1:
				score = 1
			}
		}
		if score > bestScore {
			best, bestScore = s, score
		}
		if score == 3 {
			break
		}
	}
	return best
}

// leafKey names the leaves of an assignment's NICs, sorted and joined.
func (p *planner) leafKey(a Assignment) string {
	ids := p.s.fabric.NICLeaves(a.Node, a.NICs())
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// admits checks the reassigned list against Gang.Admit node by node, in the
// order pods land on each node.
func (p *planner) admits(assign []Assignment, byUID map[string]Pod) bool {
	if p.g.Admit == nil {
		return true
	}
	on := map[string][]Pod{}
	for _, a := range assign {
		pod := byUID[a.PodUID]
		if !p.g.Admit(a.Node, pod, on[a.Node]) {
			return false
		}
		on[a.Node] = append(on[a.Node], pod)
	}
	return true
}

// RingCrossings counts the leaf changes along a ring over the given leaf
// keys in rank order, back from the last to the first: 0 for fewer than two
// pods or one leaf, else at least the number of distinct keys.
func RingCrossings(leaves []string) int {
	if len(leaves) < 2 {
		return 0
	}
	n := 0
	for i := range leaves {
		if leaves[i] != leaves[(i+1)%len(leaves)] {
			n++
		}
	}
	return n
}
