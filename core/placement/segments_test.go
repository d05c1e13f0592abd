package placement

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// segmented asks segments of size within tier.
func segmented(g Gang, size int, tier Tier) Gang {
	g.Segment = Segment{Size: size, Tier: tier}
	return g
}

// segmentDomains returns, per segment of the plan by rank, the node and
// leaf sets its pods use, as "nodes|leaves".
func segmentDomains(t *testing.T, s *State, g Gang, p *Plan) []string {
	t.Helper()
	ring := ringOf(t, s, g, p)
	rank := map[string]int{}
	for _, pod := range g.Pods {
		rank[pod.UID] = pod.Rank
	}
	nodes := make([]string, len(p.Assignments))
	for _, a := range p.Assignments {
		nodes[rank[a.PodUID]] = a.Node
	}
	var out []string
	for start := 0; start < len(ring); start += g.Segment.Size {
		ns, ls := map[string]bool{}, map[string]bool{}
		for i := start; i < start+g.Segment.Size; i++ {
			ns[nodes[i]] = true
			ls[ring[i]] = true
		}
		out = append(out, fmt.Sprintf("%d nodes|%d leaves", len(ns), len(ls)))
	}
	return out
}

func TestPlanSegments(t *testing.T) {
	// sixEach: leaves A and B with 6 free zones each (6 nodes), C and D
	// with 2 (c1).
	sixEach := func() *fixture {
		f := &fixture{}
		f.std(6, "n", "s1-0", "A", "B")
		f.std(1, "c", "s1-0", "C", "D")
		return f
	}
	// aSplit: leaf A has 6 free zones, C and D 2 each (c1, c2), E 4.
	aSplit := func() *fixture {
		f := &fixture{}
		for i := 1; i <= 6; i++ {
			f.add(usedZone(f.node(fmt.Sprintf("n%d", i), "s1-0", "A", "B"), 1))
		}
		f.std(2, "c", "s1-0", "C", "D")
		for i := 1; i <= 4; i++ {
			f.add(usedZone(f.node(fmt.Sprintf("e%d", i), "s1-0", "E", "F"), 1))
		}
		return f
	}
	// threeEach: every leaf has 3 free zones, one per node.
	threeEach := func() *fixture {
		f := &fixture{}
		for i := 1; i <= 6; i++ {
			busy := 1
			if i > 3 {
				busy = 0
			}
			f.add(usedZone(f.node(fmt.Sprintf("n%d", i), "s1-0", "A", "B"), busy))
		}
		return f
	}
	small := Shape{GPU: 2, NICs: 1, CPUMilli: 2000}
	cases := map[string]struct {
		f    func() *fixture
		g    Gang
		want []string
		// wantLeaves is the plan's leaf count.
		wantLeaves int
		fail       *Failure
	}{
		// Unsegmented, 8 pods take A (6) and C (2), the best fit: ranks 4-7
		// would straddle A and C. Segmented: A and E.
		"segments of 4 under one S0 where the fewest leaves would split one": {
			f: aSplit, g: segmented(ranked(gang(8, worker)), 4, TierS0),
			want: []string{"4 nodes|1 leaves", "4 nodes|1 leaves"}, wantLeaves: 2,
		},
		"segments that the unsegmented plan keeps": {
			f: sixEach, g: segmented(ranked(gang(6, worker)), 3, TierS0),
			want: []string{"3 nodes|1 leaves", "3 nodes|1 leaves"}, wantLeaves: 1,
		},
		"segments of 2 on one node": {
			f: threeEach, g: segmented(ranked(gang(6, small)), 2, TierNode),
			want: []string{"1 nodes|1 leaves", "1 nodes|1 leaves", "1 nodes|1 leaves"}, wantLeaves: 1,
		},
		"segments of 4 fit no S0 of 3 free zones": {
			f: threeEach, g: segmented(ranked(gang(8, worker)), 4, TierS0),
			fail: &Failure{Code: ReasonSegmentLimit,
				Message: "no S0 holds segment 1 of 2 (ranks 0-3, 4 pods of 4 GPU + 2 RDMA) next to the segments before it: no S0 can hold 4 pods of 4 GPU + 2 RDMA; the largest holds 3"},
		},
		"segment size that does not divide the gang": {
			f: sixEach, g: segmented(ranked(gang(6, worker)), 4, TierS0),
			fail: &Failure{Code: ReasonInvalidContract, Message: "annotation rdmatopo.io/segment-size: 4 does not divide the gang's 6 pods"},
		},
		"hard s0 gang whose segments need two leaves": {
			f: sixEach, g: hard(segmented(ranked(gang(8, worker)), 4, TierS0), TierS0),
			fail: &Failure{Code: ReasonTierLimit, Message: "segments of 4 pods fit only at tier s1, wider than the gang's highest tier s0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.f().fabric(), ledger.New())
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
			if len(plan.Assignments) != len(tc.g.Pods) {
				t.Fatalf("placed %d pods, want %d", len(plan.Assignments), len(tc.g.Pods))
			}
			if diff := cmp.Diff(tc.want, segmentDomains(t, s, tc.g, plan)); diff != "" {
				t.Errorf("segments (-want,+got):\n%s", diff)
			}
			if len(plan.S0s) != tc.wantLeaves {
				t.Errorf("plan uses %d leaves %v, want %d", len(plan.S0s), plan.S0s, tc.wantLeaves)
			}
		})
	}
}
