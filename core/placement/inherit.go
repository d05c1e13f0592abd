// Carrying a state's caches over to the next session: the node views and
// per-leaf statistics of nodes whose inputs did not change.

package placement

import (
	"maps"
	"slices"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Inherit takes over from prev, the state an earlier session planned
// against (as that session left it), the node views and the per-leaf
// statistics whose inputs are the same in s, so a session does not
// recompute what the cluster did not change. A view is taken when its node
// is the same fabric node (the fabric cache replaces a node it rebuilds,
// never modifies it) and the node's reservations, usage, freed NICs, cap
// and usability are equal in both states; a leaf's statistics when the
// leaf is the same fabric leaf and every node under it passes that test.
// What s already computed is kept. It returns how many views and leaf
// statistics (over every shape) were taken.
//
// Call it before s is used by more than one goroutine. prev is only read.
func (s *State) Inherit(prev *State) (views, leaves int) {
	if prev == nil || prev == s {
		return 0, 0
	}
	prev.mu.Lock()
	defer prev.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()

	same := map[string]bool{}
	unchanged := func(name string) bool {
		ok, seen := same[name]
		if !seen {
			ok = s.sameNodeInputs(prev, name)
			same[name] = ok
		}
		return ok
	}
	for name, v := range prev.views {
		if v == nil {
			continue
		}
		if _, have := s.views[name]; have || !unchanged(name) {
			continue
		}
		s.views[name] = v
		views++
	}
	for sh, stats := range prev.leafCache {
		var mine map[topology.S0ID]*leafStat
		for id, st := range stats {
			if !s.sameLeaf(prev, id, unchanged) {
				continue
			}
			if mine == nil {
				mine = s.leafCacheOf(sh)
			}
			if _, have := mine[id]; have {
				continue
			}
			// A nil statistic is kept too: no usable node under the leaf
			// has room for the shape.
			mine[id] = st
			leaves++
		}
	}
	return views, leaves
}

// sameLeaf reports whether leaf id is the same fabric leaf in both states
// and every node under it is unchanged. Callers hold both locks.
func (s *State) sameLeaf(prev *State, id topology.S0ID, unchanged func(string) bool) bool {
	l, ok := s.fabric.Leaf(id)
	pl, pok := prev.fabric.Leaf(id)
	if !ok || !pok || l != pl {
		return false
	}
	last := ""
	for _, slot := range l.Slots {
		if name := slot.Node.Name; name != last {
			last = name
			if !unchanged(name) {
				return false
			}
		}
	}
	return true
}

// sameNodeInputs reports whether everything a node's view and its leaves'
// statistics are computed from is equal in s and prev: the fabric node,
// the NICs held and by whom, the usage of reservations the KCNR does not
// list, the NICs counted free in a what-if, the cap and usability.
// Callers hold both locks.
func (s *State) sameNodeInputs(prev *State, name string) bool {
	n, ok := s.fabric.Node(name)
	pn, pok := prev.fabric.Node(name)
	if ok != pok || n != pn {
		return false
	}
	c, cok := s.caps[name]
	pc, pcok := prev.caps[name]
	if cok != pcok || c != pc || s.unusable[name] != prev.unusable[name] {
		return false
	}
	return maps.EqualFunc(s.taken[name], prev.taken[name], slices.Equal) && maps.Equal(s.used[name], prev.used[name]) &&
		maps.Equal(s.freed[name], prev.freed[name])
}
