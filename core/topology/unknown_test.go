package topology_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

func TestUnknownNICs(t *testing.T) {
	cases := map[string]struct {
		nodes []*corev1.Node
		cnrs  []*v1alpha1.CustomNodeResource
		want  map[topology.ReasonCode]int
	}{
		"all known": {
			nodes: []*corev1.Node{sharedNode("n1").Obj()},
			cnrs:  []*v1alpha1.CustomNodeResource{provider("n1").Obj()},
		},
		"no KCNR": {
			nodes: []*corev1.Node{sharedNode("n1").Obj()},
			want:  map[topology.ReasonCode]int{topology.ReasonNoKCNR: 4},
		},
		"not shared wins over NIC causes": {
			nodes: []*corev1.Node{builders.MakeNode("n1").GPU(8).RDMA(4).Obj()},
			cnrs:  []*v1alpha1.CustomNodeResource{provider("n1").NIC("0000:aa:00.0", 1, "").Obj()},
			want:  map[topology.ReasonCode]int{topology.ReasonNotShared: 5},
		},
		"no topology": {
			nodes: []*corev1.Node{sharedNode("n1").RDMA(2).Obj()},
			cnrs:  []*v1alpha1.CustomNodeResource{builders.MakeCNR("n1").Obj()},
			want:  map[topology.ReasonCode]int{topology.ReasonNoTopology: 2},
		},
		"per NIC causes": {
			nodes: []*corev1.Node{sharedNode("n1").Obj(), sharedNode("n2").Obj()},
			cnrs: []*v1alpha1.CustomNodeResource{
				provider("n1").NIC("0000:aa:00.0", 1, "").NIC("0000:ab:00.0", 1, "").Property("RDMATOR/0000:ab:00.0", "").Obj(),
				provider("n2").NIC("mlx5_0", 0, "unknown:x").Obj(),
			},
			want: map[topology.ReasonCode]int{
				topology.ReasonNICWithoutLeaf: 1, topology.ReasonEmptyProperty: 1, topology.ReasonBadProperty: 1,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := topology.Build(topology.Config{}, tc.nodes, tc.cnrs)
			if diff := cmp.Diff(tc.want, f.UnknownNICs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("UnknownNICs (-want +got):\n%s", diff)
			}
		})
	}

	n := topology.BuildNode(topology.Config{}, sharedNode("n1").Obj(), provider("n1").Obj())
	for _, nic := range []topology.NICID{nicA0, "0000:ff:00.0"} {
		if got := n.UnknownLeafReason(nic); got != "" {
			t.Errorf("UnknownLeafReason(%s) = %q for a known or absent NIC, want empty", nic, got)
		}
	}
}
