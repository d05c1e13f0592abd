// What-if planning: a copy of the free view in which some pods' holds are
// returned, to ask whether a gang would fit once those pods are evicted.

package placement

import (
	"maps"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Clone returns an independent copy of the state on the same fabric.
// Changes to the copy (Apply, Unapply, Release, SetCap) do not reach s, and
// the reverse. Cached free views and leaf statistics are shared (they are
// never modified once computed, only dropped).
func (s *State) Clone() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The per-node and per-shape maps are shared until either state writes
	// to one (own, leafCacheOf): a what-if copy changes a few nodes of a
	// large cluster.
	s.shared, s.owned, s.ownedShapes = true, nil, nil
	return &State{
		fabric:    s.fabric,
		taken:     maps.Clone(s.taken),
		used:      maps.Clone(s.used),
		caps:      maps.Clone(s.caps),
		views:     maps.Clone(s.views),
		leafCache: maps.Clone(s.leafCache),
		unusable:  maps.Clone(s.unusable),
		freed:     maps.Clone(s.freed),
		maxNode:   s.maxNode,
		shared:    true,
	}
}

// Release returns to the free view everything the pod uid holds under a:
// its NICs (also where the node's KCNR still lists them as allocated), the
// GPUs and CPUs of its zones and its share of the node cap. It is what the
// view would look like once the pod is evicted and gone, and is meant for
// what-if copies (Clone): the session's own state learns of an eviction
// through Unapply, and of the KCNR catching up through the next session.
func (s *State) Release(uid string, a Assignment) {
	s.mu.Lock()
	s.own(a.Node)
	if s.used[a.Node] == nil {
		// Unapply returns GPUs and CPUs through the node's usage record; a
		// node whose every holder the KCNR lists has none yet, and without
		// one the release would free NICs only.
		s.used[a.Node] = map[int]Cap{}
	}
	s.mu.Unlock()
	s.Unapply(uid, a)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed == nil {
		s.freed = map[string]map[topology.NICID]int64{}
	}
	m := s.freed[a.Node]
	if m == nil {
		m = map[topology.NICID]int64{}
		s.freed[a.Node] = m
	}
	for _, z := range a.Zones {
		for _, nic := range z.NICs {
			// The KCNR's free units count the pod's unit when it lists
			// the pod there; Unapply returned it otherwise. A NIC of one
			// unit is free once its holder is gone, whoever the KCNR
			// lists there.
			if n, ok := s.fabric.NIC(a.Node, nic); !ok || n.Units <= 1 || listedOn(n, uid) {
				m[nic]++
			}
		}
	}
	s.invalidate(a.Node)
}
