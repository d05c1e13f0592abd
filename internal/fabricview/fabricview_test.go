package fabricview

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// TestBuildCountsNICUnits: a NIC of several RDMA units counts free while
// it has a unit left; a NIC of one unit is used by its one holder.
func TestBuildCountsNICUnits(t *testing.T) {
	nic0, nic1 := builders.NUMANICs[0][0], builders.NUMANICs[0][1]
	pod := func(name, nics string) *corev1.Pod {
		return builders.MakePod("ns", name).UID("u-"+name).Node("n1").Phase(corev1.PodRunning).Group("g").
			Req(builders.RDMAResource, "1").Annotation(ledger.AnnotationNICs, nics).Annotation(ledger.AnnotationNUMA, "0").Obj()
	}
	cases := map[string]struct {
		units  int64
		listed []string // consumers the KCNR lists on nic0
		pods   []*corev1.Pod
		want   Leaf
	}{
		"NICs of 2 units: one pod on each leaves both free": {
			units: 2, pods: []*corev1.Pod{pod("a", nic0), pod("b", nic1)},
			want: Leaf{NICs: 2, Free: 2, Holders: map[string]int{}},
		},
		"two pods on a NIC of 2 units use it up": {
			units: 2, pods: []*corev1.Pod{pod("a", nic0), pod("b", nic0)},
			want: Leaf{NICs: 2, Free: 1, Holders: map[string]int{"ns/g": 1}},
		},
		"one annotated pod and one listed consumer use it up": {
			units: 2, listed: []string{"ns/x/u-x"}, pods: []*corev1.Pod{pod("a", nic0)},
			want: Leaf{NICs: 2, Free: 1, Holders: map[string]int{"ns/g": 1}},
		},
		"NICs of one unit: a pod uses its NIC": {
			units: 1, pods: []*corev1.Pod{pod("a", nic0)},
			want: Leaf{NICs: 2, Free: 1, Holders: map[string]int{"ns/g": 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := builders.MakeCNR("n1").Zone(0, 8, 64000).NIC(nic0, 0, "A").NIC(nic1, 0, "A").
				Units(nic0, tc.units).Units(nic1, tc.units)
			for _, c := range tc.listed {
				w.UseNIC(nic0, c)
			}
			c := &workload.Cluster{
				Nodes: []*corev1.Node{builders.MakeNode("n1").Shared().GPU(8).RDMA(2 * tc.units).CPU("64").Obj()},
				CNRs:  []*v1alpha1.CustomNodeResource{w.Obj()},
				Pods:  tc.pods,
			}
			v := Build(topology.Config{}, c)
			if len(v.Leaves) != 1 {
				t.Fatalf("%d leaves, want 1", len(v.Leaves))
			}
			got := v.Leaves[0]
			got.S0, got.S1, got.Nodes = "", "", nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("leaf (-want,+got):\n%s", diff)
			}
			if v.FreeNICs != tc.want.Free {
				t.Errorf("FreeNICs = %d, want %d", v.FreeNICs, tc.want.Free)
			}
		})
	}
}
