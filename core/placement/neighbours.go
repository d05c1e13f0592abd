// Late pods: the pods of a gang planned after others of it are placed (a
// pod re-created after a failure or an eviction, pods beyond minMember).
//
// The tier searches grow a held gang within what it holds, but among the
// leaves it holds they pick by fit, not by rank: a re-created rank 2 of a
// gang on leaves A (ranks 0-3) and B (ranks 4-7) may land on B, and the
// ring then crosses four leaf boundaries where two would do. nextToRanks
// tries the late pods next to their rank neighbours first, the held pods
// of the nearest ranks below and above each: on the neighbours' nodes with
// NICs under the neighbours' leaves, then anywhere under those leaves, then
// under the leaves of the neighbours' S1s. It keeps the first of these
// that the fill verifies unless it costs the gang more leaves (or S1s)
// than the search's own choice, or exceeds a hard tier; rank order then
// seats each pod next to the rank before it (rankorder.go). Before the S1
// stage, the pods are also placed under the leaves the whole gang holds,
// and, when those have room for some of them only, split: the first under
// the gang's leaves, the rest under its S1s.
//
// Replacements (Occupancy.Home set: pods re-created after the gang lost
// them) go back home before any other stage after the gang's own leaves:
// as many of them as there is room for under the leaves the gang held when
// it lost them, even where that adds a leaf to what the gang holds now,
// and the rest under one other leaf of its S1s if one holds them all, else
// anywhere under its S1s, provided that the rest costs no more leaves
// outside home than the search's own choice does (backHome).

package placement

import (
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// nextToRanks returns a candidate next to the pods' held rank neighbours
// when one is no worse than c (see the file comment), else c.
func (p *planner) nextToRanks(pods []Pod, c *candidate, limit Tier) *candidate {
	h := p.g.Occupancy
	if c == nil || !h.ranked() {
		return c
	}
	nodes, leaves := p.neighbours(pods)
	if len(leaves) == 0 {
		return c
	}
	s1s := map[topology.S1ID]bool{}
	for id := range leaves {
		if l, ok := p.s.fabric.Leaf(id); ok {
			s1s[l.S1] = true
		}
	}
	s1Leaves := map[topology.S0ID]bool{}
	for id := range s1s {
		for _, leaf := range p.s.fabric.LeavesOf(id) {
			s1Leaves[leaf] = true
		}
	}
	// Every leaf the gang holds, beyond the neighbours' (a gang may hold
	// room under a leaf its nearest ranks are not under).
	held := map[topology.S0ID]bool{}
	for _, r := range h.Ranks {
		for _, id := range r.Leaves {
			held[id] = true
		}
	}
	stages := []struct {
		nodes  []string
		leaves map[topology.S0ID]bool
		home   bool
	}{
		{nodes: nodes, leaves: leaves},
		{nodes: p.nodesUnder(leaves), leaves: leaves},
		{nodes: p.nodesUnder(held), leaves: held},
		{home: true}, // replacements back home (backHome)
		{},           // split between the held leaves and the S1s' (splitUnder)
		{nodes: p.nodesUnder(s1Leaves), leaves: s1Leaves},
	}
	base := p.gangSpan(c.assign)
	for _, st := range stages {
		if st.home {
			if len(h.Home) > 0 {
				if assign := p.backHome(pods, c.assign, held, s1Leaves, limit); assign != nil {
					return &candidate{assign: assign, leaves: p.leavesOf(assign), key: "home"}
				}
			}
			continue
		}
		if st.leaves == nil {
			if split := p.splitUnder(pods, held, s1Leaves); split != nil {
				span := p.gangSpan(split)
				if !(span.leaves > base.leaves || span.leaves == base.leaves && span.s1s > base.s1s || span.tier() > limit) {
					return &candidate{assign: split, leaves: p.leavesOf(split), key: "neighbours"}
				}
			}
			continue
		}
		if len(st.nodes) == 0 {
			continue
		}
		assign, ok := p.fill(pods, st.nodes, st.leaves)
		if !ok {
			continue
		}
		span := p.gangSpan(assign)
		if span.leaves > base.leaves || span.leaves == base.leaves && span.s1s > base.s1s || span.tier() > limit {
			continue
		}
		return &candidate{assign: assign, leaves: p.leavesOf(assign), key: "neighbours"}
	}
	return c
}

// backHome places replacements back under the leaves their gang held
// when it lost them (Occupancy.Home) and the leaves it holds: all of them
// if there is room, else the most (the first, in rank order) there is room
// for, and the rest on other nodes under one other leaf of the gang's S1s,
// else anywhere under them. A split is kept only when its leaves outside
// home are no more than base's (the search's own choice), and never beyond
// limit. Nil when neither fits.
func (p *planner) backHome(pods []Pod, base []Assignment, held, s1Leaves map[topology.S0ID]bool, limit Tier) []Assignment {
	home := map[topology.S0ID]bool{}
	for id := range held {
		home[id] = true
	}
	for id := range p.g.Occupancy.Home {
		home[id] = true
	}
	homeNodes := p.nodesUnder(home)
	if assign, ok := p.fill(pods, homeNodes, home); ok {
		if p.gangSpan(assign).tier() <= limit {
			return assign
		}
		return nil
	}
	for k := len(pods) - 1; k >= 1; k-- {
		first, ok := p.fill(pods[:k], homeNodes, home)
		if !ok {
			continue
		}
		rest := p.restUnder(pods[k:], first, home, s1Leaves)
		if rest == nil {
			return nil
		}
		assign := append(first, rest...)
		if countOutside(p.leavesOf(assign), home) > countOutside(p.leavesOf(base), home) || p.gangSpan(assign).tier() > limit {
			return nil
		}
		return assign
	}
	return nil
}

// restUnder places pods on nodes first does not use: under one leaf of
// s1Leaves outside home (in leaf order) if one holds them all, else
// anywhere under s1Leaves. Nil when they do not fit.
func (p *planner) restUnder(pods []Pod, first []Assignment, home, s1Leaves map[topology.S0ID]bool) []Assignment {
	used := map[string]bool{}
	for _, a := range first {
		used[a.Node] = true
	}
	free := func(nodes []string) []string {
		var out []string
		for _, n := range nodes {
			if !used[n] {
				out = append(out, n)
			}
		}
		return out
	}
	ids := make([]topology.S0ID, 0, len(s1Leaves))
	for id := range s1Leaves {
		if !home[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		one := map[topology.S0ID]bool{id: true}
		if rest, ok := p.fill(pods, free(p.nodesUnder(one)), one); ok {
			return rest
		}
	}
	if rest, ok := p.fill(pods, free(p.nodesUnder(s1Leaves)), s1Leaves); ok {
		return rest
	}
	return nil
}

// countOutside counts the leaves not in set.
func countOutside(leaves, set map[topology.S0ID]bool) int {
	n := 0
	for id := range leaves {
		if !set[id] {
			n++
		}
	}
	return n
}

// splitUnder places as many of the pods (the first ones, in rank order) as
// fit under the gang's held leaves there and the others under its S1s'
// leaves, on other nodes: several late pods of which the held leaves have
// room for some only. Nil when no split fits.
func (p *planner) splitUnder(pods []Pod, held, s1Leaves map[topology.S0ID]bool) []Assignment {
	if len(pods) < 2 {
		return nil
	}
	heldNodes := p.nodesUnder(held)
	for k := len(pods) - 1; k >= 1; k-- {
		first, ok := p.fill(pods[:k], heldNodes, held)
		if !ok {
			continue
		}
		used := map[string]bool{}
		for _, a := range first {
			used[a.Node] = true
		}
		var others []string
		for _, n := range p.nodesUnder(s1Leaves) {
			if !used[n] {
				others = append(others, n)
			}
		}
		rest, ok := p.fill(pods[k:], others, s1Leaves)
		if !ok {
			continue
		}
		return append(first, rest...)
	}
	return nil
}

// neighbours lists the nodes and leaves of the held pods whose ranks are
// nearest each pod's, below and above.
func (p *planner) neighbours(pods []Pod) ([]string, map[topology.S0ID]bool) {
	ranks := append([]OccupiedRank(nil), p.g.Occupancy.Ranks...)
	sort.SliceStable(ranks, func(i, j int) bool { return ranks[i].Rank < ranks[j].Rank })
	nodes := map[string]bool{}
	leaves := map[topology.S0ID]bool{}
	add := func(r OccupiedRank) {
		nodes[r.Node] = true
		for _, id := range r.Leaves {
			leaves[id] = true
		}
	}
	for _, pod := range pods {
		i := sort.Search(len(ranks), func(i int) bool { return ranks[i].Rank >= pod.Rank })
		if i > 0 {
			add(ranks[i-1])
		}
		if i < len(ranks) {
			add(ranks[i])
		}
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, leaves
}

// nodesUnder lists the nodes with a NIC under one of the leaves, sorted.
func (p *planner) nodesUnder(leaves map[topology.S0ID]bool) []string {
	seen := map[string]bool{}
	var out []string
	for id := range leaves {
		l, ok := p.s.fabric.Leaf(id)
		if !ok {
			continue
		}
		for _, s := range l.Slots {
			if n := s.Node.Name; !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// span counts what a whole gang uses.
type span struct{ nodes, leaves, s1s int }

// tier is the span's tier.
func (s span) tier() Tier { return TierOf(s.nodes, s.leaves, s.s1s) }

// gangSpan counts the nodes, leaves and S1s of the held pods and assign
// together, at least one S1.
func (p *planner) gangSpan(assign []Assignment) span {
	nodes, leaves, s1s := extentOf(p.s.fabric, p.g.Occupancy, assign)
	return span{nodes: len(nodes), leaves: len(leaves), s1s: max(1, len(s1s))}
}
