package builders

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

func TestGenerateClusterDeterministic(t *testing.T) {
	nodes1, cnrs1 := ClusterShape{Nodes: 40, SpanningEvery: 4}.Generate()
	nodes2, cnrs2 := ClusterShape{Nodes: 40, SpanningEvery: 4}.Generate()
	if diff := cmp.Diff(nodes1, nodes2); diff != "" {
		t.Errorf("nodes differ between runs:\n%s", diff)
	}
	if diff := cmp.Diff(cnrs1, cnrs2); diff != "" {
		t.Errorf("KCNRs differ between runs:\n%s", diff)
	}
	policies := map[v1alpha1.TopologyPolicy]int{}
	for _, c := range cnrs1 {
		policies[c.Status.TopologyPolicy]++
	}
	want := map[v1alpha1.TopologyPolicy]int{
		v1alpha1.TopologyPolicySingleNUMANodeContainerLevel: 30,
		v1alpha1.TopologyPolicyNone:                         10,
	}
	if diff := cmp.Diff(want, policies); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
	// Nodes 0..15 share leaves 0 and 1 and S1 0; node 16 starts leaves 2, 3.
	for _, tc := range []struct {
		node       int
		leaf0, s1  string
		leaf1Index int
	}{
		{0, LeafID(0), "s1-0", 1}, {15, LeafID(0), "s1-0", 1}, {16, LeafID(2), "s1-0", 3},
	} {
		props := cnrs1[tc.node].Spec.NodeResourceProperties
		if props[0].PropertyValues[0] != tc.leaf0 || props[2].PropertyValues[0] != LeafID(tc.leaf1Index) {
			t.Errorf("node %d leaves = %s, %s", tc.node, props[0].PropertyValues[0], props[2].PropertyValues[0])
		}
		if got := nodes1[tc.node].Labels[S1Label]; got != tc.s1 {
			t.Errorf("node %d S1 = %q, want %q", tc.node, got, tc.s1)
		}
	}
}

func TestCNRUseNIC(t *testing.T) {
	cnr := MakeCNR("n1").NIC("0000:1a:00.0", 0, "leafA").NIC("0000:3f:00.0", 0, "leafA").
		UseNIC("0000:1a:00.0", "ns/p/u").UseNIC("0000:3f:00.0", "ns/p/u").UseNIC("0000:ff:00.0", "ns/q/v").Obj()
	numa := cnr.Status.TopologyZone[0].Children[0]
	if len(numa.Allocations) != 1 {
		t.Fatalf("NUMA allocations = %d, want 1 merged allocation", len(numa.Allocations))
	}
	got := (*numa.Allocations[0].Requests)[RDMAResource]
	if got.Value() != 2 {
		t.Errorf("NUMA-level RDMA request = %s, want 2", got.String())
	}
	alloc := (*numa.Resources.Allocatable)[RDMAResource]
	if alloc.Value() != 2 {
		t.Errorf("NUMA-level RDMA allocatable = %s, want 2", alloc.String())
	}
	if n := len(numa.Children[0].Allocations); n != 1 {
		t.Errorf("NIC allocations = %d, want 1", n)
	}
	if n := len(cnr.Spec.NodeResourceProperties); n != 2 {
		t.Errorf("properties = %d, want 2", n)
	}
}

func TestMakePod(t *testing.T) {
	p := MakePod("ns", "p").Node("n1").Req(GPUResource, "2").Req(corev1.ResourceCPU, "4").Group("pg").Obj()
	if p.UID != "uid-ns-p" || p.Status.Phase != corev1.PodRunning || p.Annotations[GroupNameAnnotation] != "pg" {
		t.Errorf("unexpected pod %+v", p.ObjectMeta)
	}
	if _, ok := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; ok {
		t.Error("CPU request also set a limit")
	}
	if q := p.Spec.Containers[0].Resources.Limits[GPUResource]; q.Value() != 2 {
		t.Errorf("GPU limit = %s, want 2", q.String())
	}
}

func TestGangPodConstraints(t *testing.T) {
	tests := []struct {
		name      string
		i         int
		tolerates bool
		pools     bool
		port      int32
		want      PodConstraints
	}{
		{name: "none", i: 0, want: PodConstraints{}},
		{name: "head selects the head pool", i: 0, tolerates: true, pools: true, port: 29500,
			want: PodConstraints{Tolerates: true, Pool: PoolHead, HostPort: 29500}},
		{name: "workers select the GPU pool", i: 3, pools: true, want: PodConstraints{Pool: PoolGPU}},
		{name: "no pools: no selector for the head", i: 0, tolerates: true, want: PodConstraints{Tolerates: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GangPodConstraints(tt.i, tt.tolerates, tt.pools, tt.port); got != tt.want {
				t.Fatalf("GangPodConstraints = %+v, want %+v", got, tt.want)
			}
		})
	}
}
