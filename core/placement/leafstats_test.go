package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// TestLeafStatsConstrained checks that a gang with node constraints of its
// own gets, for every leaf, the statistics a scan over the nodes it may use
// gives, whether or not the state's cache (statistics over every usable
// node) was filled before, and that it takes the cached entry exactly where
// it may use every node the entry counts, and a statistic of its own over
// those nodes of the entry it may use elsewhere.
func TestLeafStatsConstrained(t *testing.T) {
	// Leaves A and B: n1..n3 (NUMA 0 under A, NUMA 1 under B); n2's NUMA 1
	// is used up, n3 is unusable. Leaves C and D: m1, m2; m2's NUMA 0 is used
	// up.
	f := &fixture{}
	f.add(f.node("n1", "s1-0", "A", "B"))
	f.add(usedZone(f.node("n2", "s1-0", "A", "B"), 1))
	f.add(f.node("n3", "s1-0", "A", "B"))
	f.add(f.node("m1", "s1-0", "C", "D"))
	f.add(usedZone(f.node("m2", "s1-0", "C", "D"), 0))
	fab := f.fabric()

	only := func(nodes ...string) func(string, int) bool {
		return func(node string, _ int) bool {
			for _, n := range nodes {
				if n == node {
					return true
				}
			}
			return false
		}
	}
	tests := map[string]struct {
		allowed func(string, int) bool
		exclude map[string]bool
		groups  []int
		// cached are the leaves whose cached entry the gang takes.
		cached []topology.S0ID
	}{
		"every node allowed": {
			allowed: func(string, int) bool { return true },
			cached:  []topology.S0ID{"A", "B", "C", "D"},
		},
		"unusable node refused too": {
			allowed: only("n1", "n2", "m1", "m2"),
			cached:  []topology.S0ID{"A", "B", "C", "D"},
		},
		"node with free NICs under A refused": {
			allowed: only("n1", "n3", "m1", "m2"),
			cached:  []topology.S0ID{"B", "C", "D"},
		},
		"node whose NICs under C are used refused": {
			allowed: only("n1", "n2", "m1"),
			cached:  []topology.S0ID{"A", "B", "C"},
		},
		"excluded node": {
			exclude: map[string]bool{"m1": true},
			cached:  []topology.S0ID{"A", "B"},
		},
		"one group per node": {
			allowed: func(node string, g int) bool { return (g == 0 && node == "n1") || (g == 1 && node == "n2") },
			groups:  []int{0, 1},
			cached:  []topology.S0ID{"A", "B"},
		},
		"nothing allowed": {
			allowed: func(string, int) bool { return false },
		},
	}
	opts := cmp.Options{cmp.AllowUnexported(leafStat{}), cmpopts.EquateEmpty()}
	for name, tc := range tests {
		for _, warmed := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				s := sessionState(fab, ledger.New(), nil, "n3")
				if warmed {
					g := gang(2, worker)
					(&planner{s: s, g: &g, main: worker, groups: groupsOf(g.Pods)}).leafStats()
				}
				g := gang(2, worker)
				g.Allowed, g.Exclude = tc.allowed, tc.exclude
				for i, grp := range tc.groups {
					g.Pods[i].Group = grp
				}
				p := &planner{s: s, g: &g, main: worker, groups: groupsOf(g.Pods)}
				got := p.leafStats()

				// What a scan of every node under each leaf that some pod
				// of the gang may use counts.
				var want []*leafStat
				for _, id := range fab.LeafIDs() {
					leaf, _ := fab.Leaf(id)
					st := &leafStat{id: id, s1: leaf.S1}
					last := ""
					for _, slot := range leaf.Slots {
						if name := slot.Node.Name; name != last && p.anyAllowed(name) {
							last = name
							p.addNode(st, name, underLeaf(id))
						}
					}
					if len(st.nodes) > 0 {
						want = append(want, st)
					}
				}
				if diff := cmp.Diff(want, got, opts); diff != "" {
					t.Errorf("leaf statistics (-scan +got):\n%s", diff)
				}
				var took []topology.S0ID
				for _, st := range got {
					if st == s.leafCache[worker][st.id] {
						took = append(took, st.id)
					}
				}
				if diff := cmp.Diff(tc.cached, took, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("leaves taken from the cache (-want +got):\n%s", diff)
				}
			})
		}
	}
}
