package rdmatopology

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestDomainsOf: the domains a gang without NICs is kept within, per tier:
// a node whose NUMA zones hang off two leaves is in both leaves' domains,
// a node with no NIC under a known leaf (no KCNR) is a domain of its own
// at s0 and in its S1 at s1, a node the fabric does not know is a domain
// of its own at every tier.
func TestDomainsOf(t *testing.T) {
	nodes := []*corev1.Node{
		builders.MakeNode("a1").Shared().S1("p").RDMA(2).Obj(),
		builders.MakeNode("a2").Shared().S1("p").RDMA(4).Obj(),
		builders.MakeNode("b1").Shared().S1("q").RDMA(2).Obj(),
		builders.MakeNode("plain").S1("q").Obj(),
	}
	cnr := func(name, leaf0, leaf1 string) *v1alpha1.CustomNodeResource {
		w := builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
			Zone(0, 0, 8000).NIC(builders.NUMANICs[0][0], 0, leaf0)
		if leaf1 != "" {
			w = w.Zone(1, 0, 8000).NIC(builders.NUMANICs[1][0], 1, leaf1)
		}
		return w.Obj()
	}
	f := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}, nodes,
		[]*v1alpha1.CustomNodeResource{cnr("a1", "A", ""), cnr("a2", "A", "B"), cnr("b1", "C", "")})
	names := []string{"a1", "a2", "b1", "plain", "unknown"}
	cases := map[placement.Tier][]Domain{
		placement.TierNode: {{"node a1", []string{"a1"}}, {"node a2", []string{"a2"}}, {"node b1", []string{"b1"}},
			{"node plain", []string{"plain"}}, {"node unknown", []string{"unknown"}}},
		placement.TierS0: {{"S0 A", []string{"a1", "a2"}}, {"S0 B", []string{"a2"}}, {"S0 C", []string{"b1"}},
			{"node plain", []string{"plain"}}, {"node unknown", []string{"unknown"}}},
		placement.TierS1: {{"S1 p", []string{"a1", "a2"}}, {"S1 q", []string{"b1", "plain"}},
			{"node unknown", []string{"unknown"}}},
	}
	for tier, want := range cases {
		t.Run(tier.String(), func(t *testing.T) {
			if diff := cmp.Diff(want, domainsOf(f, tier, names)); diff != "" {
				t.Errorf("domains (-want,+got):\n%s", diff)
			}
		})
	}
}

// BenchmarkDomainsOf is the cost of a confined gang's domains, computed
// once per turn of a job without RDMA pods under a hard contract.
func BenchmarkDomainsOf(b *testing.B) {
	for _, n := range []int{512, 5000} {
		nodes, cnrs := builders.GenerateCluster(n, 16, 8)
		f := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}, nodes, cnrs)
		names := f.NodeNames()
		for _, tier := range []placement.Tier{placement.TierNode, placement.TierS0, placement.TierS1} {
			if len(domainsOf(f, tier, names)) == 0 {
				b.Fatalf("no %s domains", tier)
			}
			b.Run(fmt.Sprintf("nodes=%d/tier=%s", n, tier), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					domainsOf(f, tier, names)
				}
			})
		}
	}
}
