package grade

import (
	"sort"
	"strings"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// RingLeaves grades a gang's rank order the way a ring all-reduce sees it:
// rank r sends to rank r+1 and the last rank back to rank 0, and each hop
// between pods whose NICs hang off different leaves (compared as the set of
// leaves of each pod's NICs, so pods on the same rails of one scalable unit
// are alike) goes through S1. byRank holds the gang's assignments in rank
// order. It returns the leaf changes along the ring and the fewest a ring
// over the same pods' leaf sets could have: 0 when they are all alike, else
// the number of distinct sets (each visited once).
//
// It reads the leaves from the benchmark's own fabric, independently of the
// planner's rank order (core/placement/rankorder.go), which it grades.
func RingLeaves(f *topology.Fabric, byRank []placement.Assignment) (crossings, minimum int) {
	keys := make([]string, len(byRank))
	distinct := map[string]bool{}
	for i, a := range byRank {
		set := map[string]bool{}
		for _, z := range a.Zones {
			for _, nic := range z.NICs {
				if leaf, ok := f.NICLeaf(a.Node, nic); ok {
					set[string(leaf)] = true
				}
			}
		}
		ids := make([]string, 0, len(set))
		for id := range set {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		keys[i] = strings.Join(ids, "+")
		distinct[keys[i]] = true
	}
	if len(keys) < 2 {
		return 0, 0
	}
	for i, k := range keys {
		if k != keys[(i+1)%len(keys)] {
			crossings++
		}
	}
	if len(distinct) > 1 {
		minimum = len(distinct)
	}
	return crossings, minimum
}
