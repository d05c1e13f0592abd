package topologyallocate_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// addZoneNode adds a node of one NUMA zone (4 GPUs, 2 NICs under leaf):
// room for one pod of 4 GPUs and 2 NICs, as each node of Volcano's
// network-topology allocate tests has room for one pod.
func (c *cluster) addZoneNode(name, leaf string) {
	c.nodes = append(c.nodes, builders.MakeNode(name).Shared().GPU(4).RDMA(2).CPU("128").
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	c.cnrs = append(c.cnrs, builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).NIC(builders.NUMANICs[0][0], 0, leaf).NIC(builders.NUMANICs[0][1], 0, leaf).Obj())
}

// volcanoAllocateTopology is the HyperNode tree of Volcano's
// TestAllocateWithNetWorkTopologies: tier-1 HyperNodes s0 {s0-n1, s0-n2}
// and s1 {s1-n3, s1-n4} (named leaf and spine by tierName here), tier 2
// s2 over both. Each tier-1 group's NICs hang off one leaf (L0, L1).
func volcanoAllocateTopology(c *cluster) {
	c.addZoneNode("s0-n1", "L0")
	c.addZoneNode("s0-n2", "L0")
	c.addZoneNode("s1-n3", "L1")
	c.addZoneNode("s1-n4", "L1")
	exact := func(typ, name string) topology.HyperNodeMember {
		return topology.HyperNodeMember{Type: typ, Selector: topology.HyperNodeMemberSelector{ExactMatch: &topology.HyperNodeExactMatch{Name: name}}}
	}
	hn := func(name string, tier int, tierName string, members ...topology.HyperNodeMember) *topology.HyperNode {
		return &topology.HyperNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: topology.HyperNodeSpec{Tier: tier, TierName: tierName, Members: members}}
	}
	c.hyperNodes = []*topology.HyperNode{
		hn("s0", 1, "leaf", exact(topology.MemberNode, "s0-n1"), exact(topology.MemberNode, "s0-n2")),
		hn("s1", 1, "leaf", exact(topology.MemberNode, "s1-n3"), exact(topology.MemberNode, "s1-n4")),
		hn("s2", 2, "spine", exact(topology.MemberHyperNode, "s0"), exact(topology.MemberHyperNode, "s1")),
	}
}

// nativeJob adds a gang of n one-zone pods whose PodGroup states nt in
// spec.networkTopology (no annotation).
func (c *cluster) nativeJob(name string, n int, nt *placement.NetworkTopology) {
	c.addJob(name, n, 4, 2, nil)
	if c.native == nil {
		c.native = map[string]*placement.NativeTopology{}
	}
	c.native["ns/"+name] = &placement.NativeTopology{NetworkTopology: nt}
}

func tierPtr(v int) *int { return &v }

// TestVolcanoAllocateWithNetworkTopologies ports the cases of Volcano's
// TestAllocateWithNetWorkTopologies (pkg/scheduler/actions/allocate/
// allocate_test.go, tags v1.12.0 to v1.14.0) that hold without Volcano's
// own HyperNode scheduling, written with Volcano's native
// spec.networkTopology, on RDMA nodes of one pod each whose tier-1 groups
// each hang off one leaf, S1 from the HyperNodes (tier 2). Where Volcano
// binds a gang within a tier-1 HyperNode, rdmatopo binds it under one
// leaf; the bind counts are Volcano's.
func TestVolcanoAllocateWithNetworkTopologies(t *testing.T) {
	type want struct {
		Bound  int
		Leaves []string
	}
	cases := map[string]struct {
		size int
		nt   *placement.NetworkTopology
		want want
	}{
		// v1.14.0: "soft network topology constrain, can allocate job when resources are enough"
		"soft, resources enough": {size: 3, nt: &placement.NetworkTopology{Mode: "soft"},
			want: want{Bound: 3, Leaves: []string{"L0", "L1"}}},
		// v1.14.0: "hard network topology constrain, can not allocate job when cross highestTierAllowed tier"
		"hard tier 1, gang wider than a tier-1 group": {size: 3, nt: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: tierPtr(1)},
			want: want{}},
		// v1.14.0: "hard network topology constrain, can allocate job when highestTierAllowed not reached"
		"hard tier 2": {size: 3, nt: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: tierPtr(2)},
			want: want{Bound: 3, Leaves: []string{"L0", "L1"}}},
		// v1.14.0: "hard network topology constrain, can allocate job when multi hyperNodes are available"
		"hard tier 1, two tier-1 groups can hold it": {size: 2, nt: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: tierPtr(1)},
			want: want{Bound: 2, Leaves: []string{"L0"}}},
		// v1.14.0's highestTierName (BuildHyperNodeWithTierName), the
		// same two cases by tier name.
		"hard by tier name leaf, gang wider than a leaf": {size: 3, nt: &placement.NetworkTopology{Mode: "hard", HighestTierName: "leaf"},
			want: want{}},
		"hard by tier name spine": {size: 3, nt: &placement.NetworkTopology{Mode: "hard", HighestTierName: "spine"},
			want: want{Bound: 3, Leaves: []string{"L0", "L1"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			volcanoAllocateTopology(c)
			c.nativeJob("pg1", tc.size, tc.nt)
			o := runSession(t, c, pluginArgs("s1Source: "+string(topology.S1FromHyperNode)))
			got := want{Bound: o.binds.Count("ns", "pg1"), Leaves: o.binds.Leaves("ns", "pg1")}
			if got.Bound == 0 {
				got.Leaves = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement (-want,+got):\n%s\nPodGroup: %s", diff, condition(o.pgs["ns/pg1"]))
			}
			checkBinds(t, o)
		})
	}
}

// TestNativeContractUnhonoured: a field rdmatopo cannot honour (a tier
// name no HyperNode gives) keeps the gang pending with the condition
// naming the field; nothing is placed wider instead.
func TestNativeContractUnhonoured(t *testing.T) {
	c := &cluster{}
	volcanoAllocateTopology(c)
	c.nativeJob("pg1", 2, &placement.NetworkTopology{Mode: "hard", HighestTierName: "rack"})
	o := runSession(t, c, pluginArgs("s1Source: "+string(topology.S1FromHyperNode)))
	if n := o.binds.Count("ns", "pg1"); n != 0 {
		t.Errorf("%d pods bound, want none", n)
	}
	want := `PodGroup ns/pg1: invalid job contract: field spec.networkTopology.highestTierName: "rack" is the spec.tierName of no HyperNode (known: leaf=1, spine=2)`
	if got := condition(o.pgs["ns/pg1"]); got != want {
		t.Errorf("condition = %q, want %q", got, want)
	}
	for _, cond := range o.pgs["ns/pg1"].Status.Conditions {
		if string(cond.Type) == string(rdmatopology.ConditionType) && cond.Reason != string(placement.ReasonInvalidContract) {
			t.Errorf("condition reason %q, want %s", cond.Reason, placement.ReasonInvalidContract)
		}
	}
}

// TestConfinedGangsWithoutNICs: a gang whose pods request no RDMA NICs is
// kept within one domain of its hard highest tier, however the contract is
// written (rdmatopo.io annotations, spec.networkTopology), or waits with
// the reason on its PodGroup; soft limits nothing; an invalid contract
// places nothing. Nodes n1 and n2 have their NUMA zones under leaves A
// and B, n3 (and, when asked, n4) under C and D, all in one S1; each node
// has room for one pod.
func TestConfinedGangsWithoutNICs(t *testing.T) {
	type want struct {
		Bound  int
		Nodes  []string
		Reason string
	}
	hard := func(tier string) map[string]string {
		return map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: tier}
	}
	cases := map[string]struct {
		size   int
		ann    map[string]string
		native *placement.NetworkTopology
		// n4 adds node n4 under C and D; taintN1 taints n1 (the pods do
		// not tolerate it).
		n4, taintN1 bool
		want        want
	}{
		"hard s0: the first leaf tried refuses a pod, the next holds both": {size: 2, ann: hard("s0"), n4: true, taintN1: true,
			want: want{Bound: 2, Nodes: []string{"n3", "n4"}, Reason: "Placed"}},
		"hard s0, two pods: one leaf's nodes": {size: 2, ann: hard("s0"),
			want: want{Bound: 2, Nodes: []string{"n1", "n2"}, Reason: "Placed"}},
		"hard s0, three pods: no leaf has three nodes": {size: 3, ann: hard("s0"),
			want: want{Reason: string(placement.ReasonTierLimit)}},
		"hard s1, three pods": {size: 3, ann: hard("s1"),
			want: want{Bound: 3, Nodes: []string{"n1", "n2", "n3"}, Reason: "Placed"}},
		"hard node, two pods of a node each": {size: 2, ann: hard("node"),
			want: want{Reason: string(placement.ReasonTierLimit)}},
		"spec.networkTopology hard tier 1, three pods": {size: 3, native: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: tierPtr(1)},
			want: want{Reason: string(placement.ReasonTierLimit)}},
		"soft s0, three pods: placed as allocate places them": {size: 3, ann: map[string]string{ledger.AnnotationMode: "soft", ledger.AnnotationHighestTier: "s0"},
			want: want{Bound: 3, Nodes: []string{"n1", "n2", "n3"}}},
		"invalid contract": {size: 2, ann: map[string]string{ledger.AnnotationMode: "strict"},
			want: want{Reason: rdmatopology.ReasonInvalid}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			c.addNode("n1", "A", "B")
			c.addNode("n2", "A", "B")
			c.addNode("n3", "C", "D")
			if tc.n4 {
				c.addNode("n4", "C", "D")
			}
			if tc.taintN1 {
				c.nodes[0].Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
			}
			c.addPods("cpu", tc.size, func(name string) *builders.PodWrapper {
				// A Volcano Job's task role: allocate skips a task whose
				// role has failed to fit, unless told to try again.
				return builders.MakePod("ns", name).Req("cpu", "100").Req("memory", "1Gi").Annotation("volcano.sh/task-spec", "worker")
			})
			c.pgs[0].Annotations = tc.ann
			if tc.native != nil {
				c.native = map[string]*placement.NativeTopology{"ns/cpu": {NetworkTopology: tc.native}}
			}
			o := runSession(t, c)
			got := want{Bound: o.binds.Count("ns", "cpu")}
			for name, b := range o.binds {
				if strings.HasPrefix(name, "ns/cpu-") {
					got.Nodes = append(got.Nodes, b.Node)
				}
			}
			sort.Strings(got.Nodes)
			for _, cond := range o.pgs["ns/cpu"].Status.Conditions {
				if string(cond.Type) == string(rdmatopology.ConditionType) {
					got.Reason = cond.Reason
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement (-want,+got):\n%s\ncondition %q", diff, condition(o.pgs["ns/cpu"]))
			}
		})
	}
}
