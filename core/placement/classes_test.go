package placement

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// masterWorkers is a master of 2 GPUs + 2 RDMA and workers of 2 GPUs + 1 RDMA,
// the workers in node group workerGroup.
func masterWorkers(workers, workerGroup int) Gang {
	g := Gang{Job: "ns/mixed", Mode: ModeSoft, HighestTier: TierS1, Need: workers + 1}
	g.Pods = append(g.Pods, Pod{UID: "master", Name: "ns/master", Shape: Shape{GPU: 2, NICs: 2, CPUMilli: 4000}})
	for i := 0; i < workers; i++ {
		g.Pods = append(g.Pods, Pod{UID: fmt.Sprintf("w%d", i), Name: fmt.Sprintf("ns/w%d", i),
			Shape: Shape{GPU: 2, NICs: 1, CPUMilli: 4000}, Group: workerGroup})
	}
	return g
}

// TestPlanCountsEachClass: whether a node, a leaf or a group of leaves
// holds a gang is estimated for each class of its pods (shape and node
// set) on the nodes that class may use, not for the main shape alone. The
// gangs have more pods than the exact search takes, so the estimates
// decide which units are verified.
func TestPlanCountsEachClass(t *testing.T) {
	// fragmented adds 8 leaves "F<i>" of 11 nodes whose zone 0 (under
	// F<i>) has one free NIC: 11 workers fit, the master (2 NICs in one
	// zone) does not; zone 1 is taken. Then one leaf "G" of 6 idle nodes'
	// zone 0 (12 free NICs), zone 1 under "H" taken.
	fragmented := func() *fixture {
		f := &fixture{}
		for l := 0; l < 8; l++ {
			for i := 0; i < 11; i++ {
				name := fmt.Sprintf("f%d-%d", l, i)
				w := f.node(name, "s1-0", fmt.Sprintf("F%d", l), fmt.Sprintf("X%d", l))
				w.UseNIC(builders.NUMANICs[0][0], builders.Consumer("other", "busy-"+name, "uid-busy-"+name))
				f.add(usedZone(w, 1))
			}
		}
		for i := 0; i < 6; i++ {
			f.add(usedZone(f.node(fmt.Sprintf("g%d", i), "s1-0", "G", "H"), 1))
		}
		return f
	}
	// pools adds 9 leaves "P<i>" of 6 idle nodes' zone 0; the nodes of
	// P0..P7 are the head pool (group 0: the master may use them, the
	// workers may not), those of P8 the worker pool (group 1, every pod).
	pools := func() (*fixture, func(string, int) bool) {
		f := &fixture{}
		for l := 0; l < 9; l++ {
			for i := 0; i < 6; i++ {
				f.add(usedZone(f.node(fmt.Sprintf("p%d-%d", l, i), "s1-0", fmt.Sprintf("P%d", l), "Z"), 1))
			}
		}
		allowed := func(node string, group int) bool {
			return group == 0 || node[:3] == "p8-"
		}
		return f, allowed
	}
	cases := map[string]struct {
		f       *fixture
		allowed func(string, int) bool
		g       Gang
		want    []string
	}{
		"hard s0: the one leaf where the master fits beside the workers": {
			f: fragmented(), g: hard(masterWorkers(9, 0), TierS0), want: []string{"G"},
		},
		"soft: the same leaf, not a group of fragmented ones": {
			f: fragmented(), g: masterWorkers(9, 0), want: []string{"G"},
		},
	}
	pf, pAllowed := pools()
	cases["hard s0: workers only on their pool's leaf"] = struct {
		f       *fixture
		allowed func(string, int) bool
		g       Gang
		want    []string
	}{f: pf, allowed: pAllowed, g: hard(masterWorkers(9, 1), TierS0), want: []string{"P8"}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.f.fabric(), ledger.New())
			g := tc.g
			g.Allowed = tc.allowed
			plan, fail := s.Plan(g)
			if plan == nil {
				t.Fatalf("not placed: %v", fail)
			}
			checkPlan(t, s, g, plan)
			var got []string
			for _, id := range plan.S0s {
				got = append(got, string(id))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("leaves (-want +got):\n%s", diff)
			}
		})
	}
}
