package topologyallocate_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// s1HyperNodes are the HyperNodes of two miniPods x and y: tier-1
// HyperNodes select the nodes by their "rack" label, tier 2 holds them.
func s1HyperNodes() []*topology.HyperNode {
	hn := func(name string, tier int, m topology.HyperNodeMember) *topology.HyperNode {
		return &topology.HyperNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: topology.HyperNodeSpec{Tier: tier, Members: []topology.HyperNodeMember{m}}}
	}
	rack := func(v string) topology.HyperNodeMember {
		return topology.HyperNodeMember{Type: topology.MemberNode,
			Selector: topology.HyperNodeMemberSelector{LabelMatch: &metav1.LabelSelector{MatchLabels: map[string]string{"rack": v}}}}
	}
	under := func(name string) topology.HyperNodeMember {
		return topology.HyperNodeMember{Type: topology.MemberHyperNode,
			Selector: topology.HyperNodeMemberSelector{ExactMatch: &topology.HyperNodeExactMatch{Name: name}}}
	}
	return []*topology.HyperNode{
		hn("rack-x", 1, rack("x")), hn("rack-y", 1, rack("y")),
		hn("x", 2, under("rack-x")), hn("y", 2, under("rack-y")),
	}
}

// TestS1FromHyperNodes: hard gangs with highest-tier s1 on two miniPods of
// two nodes (four zones each) are placed, or wait, alike whether the S1
// comes from the node label or from HyperNodes: a gang of six fits no S1
// and waits, a gang of four takes one miniPod's two leaves. With no
// HyperNodes every node shares the default S1, where the six fit.
func TestS1FromHyperNodes(t *testing.T) {
	hardS1 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s1"}
	// placed is what one gang of a size got: pods bound, leaves used.
	type placed struct {
		Bound  int
		Leaves []string
	}
	cases := map[string]struct {
		// args are the rdma-topology plugin's arguments.
		args  []string
		hyper []*topology.HyperNode
		want  map[int]placed // by gang size
	}{
		"label": {args: []string{"s1NodeLabel: " + builders.S1Label},
			want: map[int]placed{4: {Bound: 4, Leaves: []string{"A", "B"}}, 6: {}}},
		"hypernode": {args: []string{"s1Source: " + string(topology.S1FromHyperNode)}, hyper: s1HyperNodes(),
			want: map[int]placed{4: {Bound: 4, Leaves: []string{"A", "B"}}, 6: {}}},
		"hypernode, none given": {args: []string{"s1Source: " + string(topology.S1FromHyperNode)},
			want: map[int]placed{4: {Bound: 4, Leaves: []string{"A", "B"}}, 6: {Bound: 6, Leaves: []string{"A", "B", "C"}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := map[int]placed{}
			for _, size := range []int{4, 6} {
				c := &cluster{}
				for i, s1 := range []string{"x", "x", "y", "y"} {
					leaves := [2]string{"A", "B"}
					if s1 == "y" {
						leaves = [2]string{"C", "D"}
					}
					c.addNode(fmt.Sprintf("n%d", i+1), leaves[0], leaves[1])
					c.nodes[i].Labels[builders.S1Label] = s1
					c.nodes[i].Labels["rack"] = s1
				}
				c.addJob("gang", size, 4, 2, hardS1)
				c.hyperNodes = tc.hyper
				o := runSession(t, c, pluginArgs(tc.args...))
				got[size] = placed{Bound: o.binds.Count("ns", "gang"), Leaves: o.binds.Leaves("ns", "gang")}
				checkBinds(t, o)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement (-want,+got):\n%s", diff)
			}
		})
	}
}
