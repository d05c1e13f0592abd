package placement

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// TestPlanLatePods: six nodes whose zone 0 is under A and zone 1 under B.
// Ranks 0-2 of a gang of six sit under A (zone 0 of n1..n3), ranks 3-4
// under B (zone 1 of n1, n2); rank 5 is planned late. Zone 1 of n3 and n4
// is taken by other jobs, so A has room on n4..n6 (n4, with one zone
// free, the best fit) and B on n5 and n6 (none with bFull).
func TestPlanLatePods(t *testing.T) {
	build := func(bFull bool) *fixture {
		f := &fixture{}
		for i := 1; i <= 6; i++ {
			w := f.node(fmt.Sprintf("n%d", i), "s1-0", "A", "B")
			if i <= 3 {
				w = usedZone(w, 0)
			}
			if i <= 4 || bFull {
				w = usedZone(w, 1)
			}
			f.add(w)
		}
		return f
	}
	held := func(ranks ...OccupiedRank) *Occupancy {
		h := &Occupancy{Nodes: map[string]bool{}, S0s: map[topology.S0ID]bool{}, S1s: map[topology.S1ID]bool{"s1-0": true}, Pods: len(ranks), Ranks: ranks}
		for _, r := range ranks {
			h.Nodes[r.Node] = true
			for _, id := range r.Leaves {
				h.S0s[id] = true
			}
		}
		return h
	}
	gangHeld := held(OccupiedRank{0, "n1", []topology.S0ID{"A"}}, OccupiedRank{1, "n2", []topology.S0ID{"A"}}, OccupiedRank{2, "n3", []topology.S0ID{"A"}},
		OccupiedRank{3, "n1", []topology.S0ID{"B"}}, OccupiedRank{4, "n2", []topology.S0ID{"B"}})
	late := func(rank int) Gang {
		g := gang(1, worker)
		g.Pods[0].Rank = rank
		g.Occupancy = gangHeld
		return g
	}
	cases := map[string]struct {
		bFull bool
		g     Gang
		// want is the late pod's leaf; "" with fail.
		want string
		fail *Failure
	}{
		"rank 5 goes under B next to rank 4, not to the best fit under A": {g: late(5), want: "B"},
		"segments of 3 under one S0: rank 5 joins its segment under B": {
			g: segmented(late(5), 3, TierS0), want: "B",
		},
		"segments of 3 whose leaf is full: the pod waits, naming its segment": {
			bFull: true, g: segmented(late(5), 3, TierS0),
			fail: &Failure{Code: ReasonSegmentLimit, Message: "no S0 holds segment 2 of 2 (ranks 3-5, 1 pods of 4 GPU + 2 RDMA) where its 2 placed pods are: " +
				"no S0 can hold 1 pods of 4 GPU + 2 RDMA next to the 2 pods it holds; its S0 holds 0 more"},
		},
		"without segments a full B leaves room under A": {bFull: true, g: late(5), want: "A"},
		"the segment size must divide every pod the ranks number": {
			g:    func() Gang { g := segmented(late(5), 4, TierS0); g.Members = 6; return g }(),
			fail: &Failure{Code: ReasonInvalidContract, Message: "annotation rdmatopo.io/segment-size: 4 does not divide the gang's 6 pods"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(build(tc.bFull).fabric(), ledger.New())
			plan, fail := s.Plan(tc.g)
			if tc.fail != nil {
				if diff := cmp.Diff(tc.fail, fail); diff != "" || plan != nil {
					t.Fatalf("Plan() = %v, failure (-want,+got):\n%s", plan != nil, diff)
				}
				return
			}
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			checkPlan(t, s, tc.g, plan)
			if diff := cmp.Diff([]string{tc.want}, ringOf(t, s, tc.g, plan)); diff != "" {
				t.Errorf("late pod's leaf (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPlanReplacementsBackHome: a gang of four lost ranks 0-2 and holds
// rank 3 under A (n1's zone 0); Home is what it held when it lost them.
// A has room for one pod (n2's zone 0), H for one (n3's zone 0), C for two
// (n4). The search's own choice is A plus C, two leaves; replacements whose
// gang held A and H when it lost them go back there, as many as there is
// room for, and the rest under one other leaf.
func TestPlanReplacementsBackHome(t *testing.T) {
	f := &fixture{}
	f.add(usedZone(usedZone(f.node("n1", "s1-0", "A", "B"), 0), 1))
	f.add(usedZone(f.node("n2", "s1-0", "A", "B"), 1))
	f.add(usedZone(f.node("n3", "s1-0", "H", "X"), 1))
	f.add(f.node("n4", "s1-0", "C", "C"))
	held := &Occupancy{Nodes: map[string]bool{"n1": true}, S0s: map[topology.S0ID]bool{"A": true},
		S1s: map[topology.S1ID]bool{"s1-0": true}, Pods: 1, Ranks: []OccupiedRank{{3, "n1", []topology.S0ID{"A"}}}}
	cases := map[string]struct {
		home map[topology.S0ID]bool
		// want are the replacements' leaves, sorted.
		want []string
	}{
		"no lost pods: the fewest leaves":             {home: nil, want: []string{"A", "C", "C"}},
		"back under A and H, the rest under C":        {home: map[topology.S0ID]bool{"A": true, "H": true}, want: []string{"A", "C", "H"}},
		"home is A alone (H failed): as without home": {home: map[topology.S0ID]bool{"A": true}, want: []string{"A", "C", "C"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(f.fabric(), ledger.New())
			g := gang(3, worker)
			occ := *held
			occ.Home = tc.home
			g.Occupancy = &occ
			plan, fail := s.Plan(g)
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			checkPlan(t, s, g, plan)
			got := ringOf(t, s, g, plan)
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replacements' leaves (-want,+got):\n%s", diff)
			}
		})
	}
}
