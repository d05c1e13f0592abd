package placement

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestPlanNoRoom: a gang no leaf holds one pod of waits for capacity
// (NoCapacity, hard or soft), and the message counts the NICs free on the
// nodes the gang may use (0 when the fabric is full). Only when no node
// passes the gang's filters is the reason NoNodes.
func TestPlanNoRoom(t *testing.T) {
	full := func() *fixture {
		f := &fixture{}
		f.add(usedZone(usedZone(f.node("n1", "s1-0", "A", "B"), 0), 1))
		f.add(usedZone(usedZone(f.node("n2", "s1-0", "A", "B"), 0), 1))
		return f
	}
	gpuFull := func() *fixture { // NICs free, GPUs taken: no room for the shape
		f := &fixture{}
		w := f.node("n1", "s1-0", "A", "B")
		for numa := 0; numa < 2; numa++ {
			c := builders.Consumer("other", fmt.Sprintf("gpu-%d", numa), fmt.Sprintf("uid-gpu-%d", numa))
			w = w.Alloc(numa, c, corev1.ResourceList{builders.GPUResource: resource.MustParse("4")})
		}
		f.add(w)
		return f
	}
	none := func(string, int) bool { return false }
	cases := map[string]struct {
		f       *fixture
		g       Gang
		allowed func(string, int) bool
		want    outcome
	}{
		"full fabric, hard s0": {f: full(), g: hard(gang(2, worker), TierS0),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 2 pods of 4 GPU + 2 RDMA; free capacity holds 0: the 2 nodes it may use have 0 free RDMA NICs and no room for one pod of 4 GPU + 2 RDMA"}},
		"full fabric, hard s1": {f: full(), g: hard(gang(2, worker), TierS1),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 2 pods of 4 GPU + 2 RDMA; free capacity holds 0: the 2 nodes it may use have 0 free RDMA NICs and no room for one pod of 4 GPU + 2 RDMA"}},
		"full fabric, hard node": {f: full(), g: hard(gang(2, worker), TierNode),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 2 pods of 4 GPU + 2 RDMA; free capacity holds 0: the 2 nodes it may use have 0 free RDMA NICs and no room for one pod of 4 GPU + 2 RDMA"}},
		"full fabric, soft": {f: full(), g: gang(2, worker),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 2 pods of 4 GPU + 2 RDMA; free capacity holds 0: the 2 nodes it may use have 0 free RDMA NICs and no room for one pod of 4 GPU + 2 RDMA"}},
		"NICs free, GPUs taken, hard s0": {f: gpuFull(), g: hard(gang(1, worker), TierS0),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 1 pods of 4 GPU + 2 RDMA; free capacity holds 0"}},
		"no node passes the filters": {f: full(), g: hard(gang(2, worker), TierS0), allowed: none,
			want: outcome{Reason: ReasonNoNodes, Msg: "no RDMA node passes the filters of ns/job"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.f.fabric(), ledger.New())
			g := tc.g
			g.Allowed = tc.allowed
			plan, fail := s.Plan(g)
			if diff := cmp.Diff(tc.want, summarize(plan, fail)); diff != "" {
				t.Errorf("Plan() mismatch (-want,+got):\n%s", diff)
			}
		})
	}
}
