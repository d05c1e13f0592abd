package placement

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// fixture builds a small cluster node by node.
type fixture struct {
	nodes []*corev1.Node
	cnrs  []*v1alpha1.CustomNodeResource
}

// node adds a provider-shaped node (2 NUMA x 4 GPU x 2 NICs) whose NUMA-0
// NICs go to leaf0 and NUMA-1 NICs to leaf1, in miniPod s1.
func (f *fixture) node(name, s1, leaf0, leaf1 string) *builders.CNRWrapper {
	f.nodes = append(f.nodes, builders.MakeNode(name).Shared().GPU(8).RDMA(4).CPU("128").S1(s1).Obj())
	w := builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(builders.NUMANICs[0][0], 0, leaf0).NIC(builders.NUMANICs[0][1], 0, leaf0).
		NIC(builders.NUMANICs[1][0], 1, leaf1).NIC(builders.NUMANICs[1][1], 1, leaf1)
	return w
}

// add finishes a node's KCNR.
func (f *fixture) add(w *builders.CNRWrapper) { f.cnrs = append(f.cnrs, w.Obj()) }

// usedZone marks both NICs and all GPUs of a NUMA zone taken in the KCNR.
func usedZone(w *builders.CNRWrapper, numa int) *builders.CNRWrapper {
	c := builders.Consumer("other", fmt.Sprintf("busy-%d", numa), fmt.Sprintf("uid-busy-%d", numa))
	w.UseNIC(builders.NUMANICs[numa][0], c).UseNIC(builders.NUMANICs[numa][1], c)
	return w.Alloc(numa, c, corev1.ResourceList{builders.GPUResource: resource.MustParse("4")})
}

func (f *fixture) fabric() *topology.Fabric {
	return topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), f.nodes, f.cnrs)
}

// std builds n standard nodes "n1".."nN" in s1 with the given leaves.
func (f *fixture) std(n int, prefix, s1, leaf0, leaf1 string) *fixture {
	for i := 1; i <= n; i++ {
		f.add(f.node(fmt.Sprintf("%s%d", prefix, i), s1, leaf0, leaf1))
	}
	return f
}

var (
	worker = Shape{GPU: 4, NICs: 2, CPUMilli: 8000}
	master = Shape{GPU: 1, NICs: 1, CPUMilli: 4000}
	whole  = Shape{GPU: 8, NICs: 4, CPUMilli: 16000}
)

// gang builds n pods of one shape.
func gang(n int, sh Shape) Gang {
	g := Gang{Job: "ns/job", Mode: ModeSoft, HighestTier: TierS1, Need: n}
	for i := 0; i < n; i++ {
		g.Pods = append(g.Pods, Pod{UID: fmt.Sprintf("p%d", i), Name: fmt.Sprintf("ns/p%d", i), Shape: sh})
	}
	return g
}

func hard(g Gang, t Tier) Gang {
	g.Mode, g.HighestTier = ModeHard, t
	return g
}

// outcome is what a test compares.
type outcome struct {
	Tier   string
	S0s    []string
	Pods   int
	Nodes  int
	Reason ReasonCode
	Msg    string
}

func summarize(p *Plan, f *Failure) outcome {
	if p == nil {
		return outcome{Reason: f.Code, Msg: f.Message}
	}
	o := outcome{Tier: p.Tier.String(), Pods: len(p.Assignments)}
	for _, s := range p.S0s {
		o.S0s = append(o.S0s, string(s))
	}
	nodes := map[string]bool{}
	for _, a := range p.Assignments {
		nodes[a.Node] = true
	}
	o.Nodes = len(nodes)
	return o
}

func TestPlan(t *testing.T) {
	// Four nodes under leaves A (NUMA 0) and B (NUMA 1), one B zone busy.
	bestFit := func() *fixture {
		f := &fixture{}
		f.std(3, "n", "s1-0", "A", "B")
		f.add(usedZone(f.node("n4", "s1-0", "A", "B"), 1))
		return f
	}
	twoS1 := func() *fixture {
		f := &fixture{}
		f.std(4, "a", "s1-0", "A", "B")
		f.std(4, "c", "s1-1", "C", "D")
		f.add(usedZone(f.node("c5", "s1-1", "E", "F"), 1))
		return f
	}
	cases := map[string]struct {
		f    *fixture
		g    Gang
		want outcome
	}{
		"leaves decide: one S0 over two nodes beats one node whose zones hang off two S0s": {
			f: bestFit(), g: gang(2, worker),
			want: outcome{Tier: "s0", S0s: []string{"B"}, Pods: 2, Nodes: 2},
		},
		"small pods share one node and one S0": {
			f: bestFit(), g: gang(2, master),
			want: outcome{Tier: "node", S0s: []string{"A"}, Pods: 2, Nodes: 1},
		},
		"hard node: one node over two S0s is not the node tier": {
			f: bestFit(), g: hard(gang(2, worker), TierNode),
			want: outcome{Reason: ReasonTierLimit, Msg: "no node can hold 2 pods of 4 GPU + 2 RDMA with their NICs under one S0"},
		},
		"hard node: small pods in one zone": {
			f: bestFit(), g: hard(gang(2, master), TierNode),
			want: outcome{Tier: "node", S0s: []string{"A"}, Pods: 2, Nodes: 1},
		},
		"no single S0 holds the gang: two S0s on one node beat two S0s on two nodes": {
			f: func() *fixture {
				f := &fixture{}
				f.add(f.node("n1", "s1-0", "A", "B"))
				f.add(usedZone(usedZone(f.node("n2", "s1-0", "A", "B"), 0), 1))
				return f
			}(), g: gang(2, worker),
			want: outcome{Tier: "s1", S0s: []string{"A", "B"}, Pods: 2, Nodes: 1},
		},
		"best-fit leaf leaves the larger leaf whole": {
			f: bestFit(), g: gang(3, worker),
			want: outcome{Tier: "s0", S0s: []string{"B"}, Pods: 3, Nodes: 3},
		},
		"split node: NICs follow the leaf, not the node": {
			f: bestFit(), g: gang(4, worker),
			want: outcome{Tier: "s0", S0s: []string{"A"}, Pods: 4, Nodes: 4},
		},
		"hard s0 too big stays unplaced with a reason": {
			f: bestFit(), g: hard(gang(5, worker), TierS0),
			want: outcome{Reason: ReasonTierLimit, Msg: "no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4"},
		},
		"hard node too big": {
			f: bestFit(), g: hard(gang(3, worker), TierNode),
			want: outcome{Reason: ReasonTierLimit, Msg: "no node can hold 3 pods of 4 GPU + 2 RDMA with their NICs under one S0"},
		},
		"soft uses the fewest S0s": {
			f: bestFit(), g: gang(6, worker),
			want: outcome{Tier: "s1", S0s: []string{"A", "B"}, Pods: 6, Nodes: 3},
		},
		"two S1s: stays in one S1": {
			f: twoS1(), g: gang(7, worker),
			want: outcome{Tier: "s1", S0s: []string{"A", "B"}, Pods: 7, Nodes: 4},
		},
		"two S1s: the tighter S1 wins on leftover": {
			f: twoS1(), g: gang(5, worker),
			want: outcome{Tier: "s1", S0s: []string{"C", "E"}, Pods: 5, Nodes: 5},
		},
		"bigger than any S1 goes cluster-wide": {
			f: twoS1(), g: gang(12, worker),
			want: outcome{Tier: "cluster", S0s: []string{"A", "C", "D"}, Pods: 12, Nodes: 8},
		},
		"hard s1 too big": {
			f: twoS1(), g: hard(gang(12, worker), TierS1),
			want: outcome{Reason: ReasonTierLimit, Msg: "no S1 can hold 12 pods of 4 GPU + 2 RDMA; the largest holds 9"},
		},
		"more than the cluster": {
			f: bestFit(), g: gang(9, worker),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 9 pods of 4 GPU + 2 RDMA; free capacity holds 7"},
		},
		"need fewer than all: places exactly need": {
			f: bestFit(), g: func() Gang { g := hard(gang(5, worker), TierS0); g.Need = 4; return g }(),
			want: outcome{Tier: "s0", S0s: []string{"A"}, Pods: 4, Nodes: 4},
		},
		"master and workers share one leaf": {
			f: bestFit(), g: func() Gang {
				g := gang(3, worker)
				g.Pods = append([]Pod{{UID: "m", Name: "ns/m", Shape: master}}, g.Pods...)
				return g
			}(),
			want: outcome{Tier: "s0", S0s: []string{"A"}, Pods: 4, Nodes: 4},
		},
		"single-NUMA nodes refuse whole-node pods": {
			f: bestFit(), g: gang(1, whole),
			want: outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 1 pods of 8 GPU + 4 RDMA; free capacity holds 0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.f.fabric(), ledger.New())
			plan, fail := s.Plan(tc.g)
			if diff := cmp.Diff(tc.want, summarize(plan, fail)); diff != "" {
				t.Errorf("Plan() mismatch (-want,+got):\n%s", diff)
			}
			if plan != nil {
				checkPlan(t, s, tc.g, plan)
			}
		})
	}
}

// checkPlan verifies a plan against the state: NUMA-aligned, free NICs, no
// NIC twice, pod GPU counts within zones.
func checkPlan(t *testing.T, s *State, g Gang, p *Plan) {
	t.Helper()
	seen := map[string]bool{}
	shapes := map[string]Shape{}
	for _, pod := range g.Pods {
		shapes[pod.UID] = pod.Shape
	}
	for _, a := range p.Assignments {
		n, ok := s.Fabric().Node(a.Node)
		if !ok {
			t.Fatalf("assignment on unknown node %s", a.Node)
		}
		sh := shapes[a.PodUID]
		switch {
		case n.Policy == topology.PolicySingleNUMA && len(a.Zones) != 1:
			t.Errorf("pod %s spans %d zones on single-NUMA node %s", a.PodUID, len(a.Zones), a.Node)
		case n.Policy == topology.PolicySingleNUMAContainer && len(a.Zones) != 1 && (len(sh.Parts()) < 2 || len(a.Containers) < 2):
			t.Errorf("pod %s of shape %s spans %d zones on container-level node %s (containers %v)", a.PodUID, sh, len(a.Zones), a.Node, a.Containers)
		case n.Policy != topology.PolicySingleNUMAContainer && a.Containers != nil:
			t.Errorf("pod %s is split by container on node %s, whose policy is %s", a.PodUID, a.Node, n.Policy)
		}
		var gpus, nics int64
		for _, z := range a.Zones {
			gpus += z.GPU
			nics += int64(len(z.NICs))
			for _, nic := range z.NICs {
				key := a.Node + "/" + string(nic)
				if seen[key] {
					t.Errorf("NIC %s given twice", key)
				}
				seen[key] = true
				if holder, held := s.HolderOf(a.Node, nic); held {
					t.Errorf("NIC %s already held by %s", key, holder)
				}
				if !nicOnZone(n, nic, z.NUMA) {
					t.Errorf("NIC %s is not on NUMA %d", key, z.NUMA)
				}
			}
		}
		if gpus != sh.GPU || nics != sh.NICs {
			t.Errorf("pod %s got %d GPU / %d NICs, wants %s", a.PodUID, gpus, nics, sh)
		}
	}
}

func nicOnZone(n *topology.Node, nic topology.NICID, numa int) bool {
	for _, z := range n.Zones {
		if z.ID != numa {
			continue
		}
		for _, x := range z.NICs {
			if x.ID == nic && x.Free {
				return true
			}
		}
	}
	return false
}

func TestPlanHonoursLedger(t *testing.T) {
	f := &fixture{}
	f.std(3, "n", "s1-0", "A", "B")
	// A pod bound on n1 NUMA 0 that the KCNR does not list yet.
	l := ledger.New()
	if err := l.Reserve(ledger.Reservation{UID: "bound", Namespace: "ns", Name: "bound", Node: "n1",
		Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 4, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][0]), topology.NICID(builders.NUMANICs[0][1])}}}}); err != nil {
		t.Fatal(err)
	}
	s := NewState(f.fabric(), l)
	plan, fail := s.Plan(hard(gang(3, worker), TierS0))
	if plan == nil {
		t.Fatalf("Plan() failed: %v", fail)
	}
	for _, a := range plan.Assignments {
		if a.Node == "n1" && a.Zones[0].NUMA == 0 {
			t.Errorf("pod %s placed on the NICs a lagging KCNR still shows free", a.PodUID)
		}
	}
	// Two NUMA-0 zones are left under A, so A cannot take three pods: the
	// plan uses leaf B (NUMA 1 of n1..n3).
	if diff := cmp.Diff([]topology.S0ID{"B"}, plan.S0s); diff != "" {
		t.Errorf("S0s (-want,+got):\n%s", diff)
	}
	checkPlan(t, s, gang(3, worker), plan)
}

func TestPlanHeldPlacement(t *testing.T) {
	f := &fixture{}
	f.std(4, "n", "s1-0", "A", "B")
	held := &Occupancy{Nodes: map[string]bool{"n1": true}, S0s: map[topology.S0ID]bool{"B": true}, S1s: map[topology.S1ID]bool{"s1-0": true}, Pods: 1}
	g := hard(gang(3, worker), TierS0)
	g.Occupancy = held
	s := NewState(f.fabric(), ledger.New())
	plan, fail := s.Plan(g)
	if plan == nil {
		t.Fatalf("Plan() failed: %v", fail)
	}
	if diff := cmp.Diff(outcome{Tier: "s0", S0s: []string{"B"}, Pods: 3, Nodes: 3}, summarize(plan, nil)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}

	// Too many for the held S0: the reason names its room, not the largest
	// S0's (A and B both hold 4).
	g = hard(gang(5, worker), TierS0)
	g.Occupancy = held
	plan, fail = s.Plan(g)
	want := outcome{Reason: ReasonTierLimit, Msg: "no S0 can hold 5 pods of 4 GPU + 2 RDMA next to the 1 pods it holds; its S0 holds 4 more"}
	if diff := cmp.Diff(want, summarize(plan, fail)); diff != "" {
		t.Errorf("held gang too big (-want,+got):\n%s", diff)
	}
}

func TestPlanSpanningNode(t *testing.T) {
	f := &fixture{}
	f.nodes = append(f.nodes, builders.MakeNode("big").Shared().GPU(8).RDMA(4).CPU("128").S1("s1-0").Obj())
	f.add(builders.MakeCNR("big").Policy(v1alpha1.TopologyPolicyNone).
		Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
		NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B"))
	s := NewState(f.fabric(), ledger.New())
	plan, fail := s.Plan(gang(1, whole))
	if plan == nil {
		t.Fatalf("Plan() failed: %v", fail)
	}
	a := plan.Assignments[0]
	var numa []string
	for _, z := range a.Zones {
		numa = append(numa, fmt.Sprint(z.NUMA))
	}
	sort.Strings(numa)
	if got := strings.Join(numa, ","); got != "0,1" || len(a.NICs()) != 4 {
		t.Errorf("whole-node pod got zones %s and %d NICs, want 0,1 and 4", got, len(a.NICs()))
	}
	checkPlan(t, s, gang(1, whole), plan)
}

func TestFitAndApply(t *testing.T) {
	f := &fixture{}
	f.std(1, "n", "s1-0", "A", "B")
	s := NewState(f.fabric(), ledger.New())
	var got []Assignment
	for i := 0; i < 3; i++ {
		a, ok := s.Fit("n1", worker, nil)
		if !ok {
			got = append(got, Assignment{})
			continue
		}
		s.Apply(fmt.Sprintf("p%d", i), a)
		got = append(got, a)
	}
	if got[0].Node != "n1" || got[1].Node != "n1" || got[2].Node != "" {
		t.Fatalf("Fit sequence = %+v, want two fits then none", got)
	}
	s.Unapply("p0", got[0])
	if _, ok := s.Fit("n1", worker, nil); !ok {
		t.Errorf("Fit after Unapply failed")
	}
	if _, ok := s.Fit("n1", worker, map[topology.S0ID]bool{"B": true}); ok {
		t.Errorf("Fit limited to leaf B succeeded although B's zone is taken")
	}
}

func TestPlanAfterApplySeesCachedLeavesChange(t *testing.T) {
	f := &fixture{}
	f.std(4, "n", "s1-0", "A", "B")
	s := NewState(f.fabric(), ledger.New())
	var used []Assignment
	for i, want := range []string{"A", "B", ""} {
		g := hard(gang(4, worker), TierS0)
		for j := range g.Pods {
			g.Pods[j].UID = fmt.Sprintf("g%d-p%d", i, j)
		}
		plan, fail := s.Plan(g)
		if want == "" {
			if plan != nil {
				t.Fatalf("gang %d placed under %v although both leaves are full", i, plan.S0s)
			}
			continue
		}
		if plan == nil {
			t.Fatalf("gang %d not placed: %v", i, fail)
		}
		if diff := cmp.Diff([]topology.S0ID{topology.S0ID(want)}, plan.S0s); diff != "" {
			t.Errorf("gang %d S0s (-want,+got):\n%s", i, diff)
		}
		checkPlan(t, s, g, plan)
		for _, a := range plan.Assignments {
			s.Apply(a.PodUID, a)
			used = append(used, a)
		}
	}
	// Releasing the first gang makes leaf A whole again.
	for _, a := range used[:4] {
		s.Unapply(a.PodUID, a)
	}
	if plan, fail := s.Plan(hard(gang(4, worker), TierS0)); plan == nil || plan.S0s[0] != "A" {
		t.Errorf("after release: plan %+v, failure %v; want leaf A", plan, fail)
	}
}

func TestPlanWholeNodePodsAcrossSplitLeaves(t *testing.T) {
	f := &fixture{}
	for _, name := range []string{"big1", "big2"} {
		f.nodes = append(f.nodes, builders.MakeNode(name).Shared().GPU(8).RDMA(4).CPU("128").S1("s1-0").Obj())
		f.add(builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicyNone).
			Zone(0, 4, 64000).Zone(1, 4, 64000).
			NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
			NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B"))
	}
	s := NewState(f.fabric(), ledger.New())
	plan, fail := s.Plan(gang(2, whole))
	if diff := cmp.Diff(outcome{Tier: "s1", S0s: []string{"A", "B"}, Pods: 2, Nodes: 2}, summarize(plan, fail)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if plan != nil {
		checkPlan(t, s, gang(2, whole), plan)
	}
}

// railPCI names NIC i of a rail node.
func railPCI(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x10+i) }

// railNode adds a rail-cabled single-NUMA node: 2 zones of 4 GPUs, perZone
// NICs per zone, NIC i cabled to leaf "<unit>-rail<i>".
func (f *fixture) railNode(name, unit string, perZone int) {
	f.nodes = append(f.nodes, builders.MakeNode(name).Shared().GPU(8).RDMA(int64(2*perZone)).CPU("128").S1("s1-0").Obj())
	w := builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000)
	for i := 0; i < 2*perZone; i++ {
		w.NIC(railPCI(i), i/perZone, fmt.Sprintf("%s-rail%d", unit, i))
	}
	f.add(w)
}

// unknownNode adds a SingleNUMA node whose KCNR names no leaf (or, with
// shared false, a node without the vke.node.rdma.mode=shared label).
func (f *fixture) unknownNode(name string, shared bool) {
	nw := builders.MakeNode(name).GPU(8).RDMA(4).CPU("128").S1("s1-0")
	if shared {
		nw = nw.Shared()
	}
	f.nodes = append(f.nodes, nw.Obj())
	f.add(builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(builders.NUMANICs[0][0], 0, "").NIC(builders.NUMANICs[0][1], 0, "").
		NIC(builders.NUMANICs[1][0], 1, "").NIC(builders.NUMANICs[1][1], 1, ""))
}

// planLeaves is the number of distinct leaves a plan's NICs use.
func planLeaves(s *State, p *Plan) int {
	seen := map[topology.S0ID]bool{}
	for _, a := range p.Assignments {
		for _, id := range s.Fabric().NICLeaves(a.Node, a.NICs()) {
			seen[id] = true
		}
	}
	return len(seen)
}

func TestPlanPodsSpanningLeaves(t *testing.T) {
	rails := func(nodes, perZone int) *fixture {
		f := &fixture{}
		for i := 1; i <= nodes; i++ {
			f.railNode(fmt.Sprintf("r%d", i), "su1", perZone)
		}
		return f
	}
	unknown := func(shared bool) *fixture {
		f := &fixture{}
		for i := 1; i <= 3; i++ {
			f.unknownNode(fmt.Sprintf("u%d", i), shared)
		}
		return f
	}
	mixed := func() *fixture {
		f := rails(2, 2)
		f.unknownNode("u1", true)
		f.add(f.node("p1", "s1-0", "A", "B"))
		return f
	}
	cases := map[string]struct {
		f      *fixture
		g      Gang
		tier   string
		leaves int
		nodes  int
	}{
		"2-rail zones: three pods on the same two rails": {
			f: rails(3, 2), g: gang(3, worker), tier: "s1", leaves: 2, nodes: 3,
		},
		"4-rail zones: three pods on the same two rails": {
			f: rails(3, 4), g: gang(3, worker), tier: "s1", leaves: 2, nodes: 3,
		},
		"4-rail zones: both zones of every node, four rails": {
			f: rails(3, 4), g: gang(6, worker), tier: "s1", leaves: 4, nodes: 3,
		},
		"rails: one-NIC pods share one rail": {
			f: rails(5, 2), g: gang(5, master), tier: "s0", leaves: 1, nodes: 5,
		},
		"rails: two rails over two nodes beat four rails on one": {
			f: rails(3, 4), g: gang(2, worker), tier: "s1", leaves: 2, nodes: 2,
		},
		"no RDMATOR properties: three pods, six unknown leaves": {
			f: unknown(true), g: gang(3, worker), tier: "s1", leaves: 6, nodes: 2,
		},
		"not labelled shared: three pods, six unknown leaves": {
			f: unknown(false), g: gang(3, worker), tier: "s1", leaves: 6, nodes: 2,
		},
		"mixed: the provider leaf and the rails before unknown NICs": {
			f: mixed(), g: gang(3, worker), tier: "s1", leaves: 3, nodes: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.f.fabric(), ledger.New())
			plan, fail := s.Plan(tc.g)
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			got := struct {
				Tier          string
				Leaves, Nodes int
				Pods, PlanS0s int
			}{plan.Tier.String(), planLeaves(s, plan), summarize(plan, nil).Nodes, len(plan.Assignments), len(plan.S0s)}
			want := got
			want.Tier, want.Leaves, want.Nodes, want.Pods, want.PlanS0s = tc.tier, tc.leaves, tc.nodes, len(tc.g.Pods), tc.leaves
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Plan() (-want,+got):\n%s", diff)
			}
			checkPlan(t, s, tc.g, plan)
		})
	}
}

func TestPlanSpanningLeavesFailure(t *testing.T) {
	// Three unknown nodes hold six worker pods; seven are refused with the
	// true count, not the per-leaf count (which is zero).
	f := &fixture{}
	for i := 1; i <= 3; i++ {
		f.unknownNode(fmt.Sprintf("u%d", i), true)
	}
	s := NewState(f.fabric(), ledger.New())
	plan, fail := s.Plan(gang(7, worker))
	want := outcome{Reason: ReasonNoCapacity, Msg: "the cluster cannot hold 7 pods of 4 GPU + 2 RDMA; free capacity holds 6"}
	if diff := cmp.Diff(want, summarize(plan, fail)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	// Hard s0 over rails: no leaf holds a 2-NIC pod; the reason says so.
	r := &fixture{}
	for i := 1; i <= 3; i++ {
		r.railNode(fmt.Sprintf("r%d", i), "su1", 2)
	}
	s = NewState(r.fabric(), ledger.New())
	plan, fail = s.Plan(hard(gang(3, worker), TierS0))
	want = outcome{Reason: ReasonTierLimit, Msg: "no S0 can hold 3 pods of 4 GPU + 2 RDMA; the largest holds 0"}
	if diff := cmp.Diff(want, summarize(plan, fail)); diff != "" {
		t.Errorf("hard s0 on rails (-want,+got):\n%s", diff)
	}
}

// TestPlanExcludeS0s: excluded leaves' NICs are used by no tier, a node of
// an excluded leaf still takes pods on its other leaf, and a gang that fits
// only the excluded leaves fails.
func TestPlanExcludeS0s(t *testing.T) {
	f := &fixture{}
	f.std(4, "n", "s1-0", "A", "B")
	f.std(4, "m", "s1-0", "C", "D")
	tests := []struct {
		name    string
		g       Gang
		exclude []topology.S0ID
		want    []string // leaves used; nil: no plan
	}{
		{"hard s0, best fit excluded", hard(gang(4, worker), TierS0), []topology.S0ID{"A"}, []string{"B"}},
		{"hard s0, three leaves excluded", hard(gang(4, worker), TierS0), []topology.S0ID{"A", "B", "C"}, []string{"D"}},
		{"hard s0, every leaf excluded", hard(gang(4, worker), TierS0), []topology.S0ID{"A", "B", "C", "D"}, nil},
		{"hard node, one leaf of the node excluded", hard(gang(1, worker), TierNode), []topology.S0ID{"A", "C", "D"}, []string{"B"}},
		{"hard node, whole-node pod needs both leaves", hard(gang(1, whole), TierNode), []topology.S0ID{"A", "C"}, nil},
		{"soft, spills past the excluded leaves", gang(12, worker), []topology.S0ID{"A"}, []string{"B", "C", "D"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState(f.fabric(), ledger.New())
			g := tc.g
			g.ExcludeS0s = map[topology.S0ID]bool{}
			for _, id := range tc.exclude {
				g.ExcludeS0s[id] = true
			}
			plan, fail := s.Plan(g)
			if tc.want == nil {
				if plan != nil {
					t.Fatalf("Plan() = %v, want a failure", summarize(plan, nil).S0s)
				}
				return
			}
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			var got []string
			for _, id := range planLeavesOf(s, plan) {
				got = append(got, string(id))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("leaves used (-want,+got):\n%s", diff)
			}
			checkPlan(t, s, g, plan)
		})
	}
}

// planLeavesOf lists the leaves a plan's NICs use, sorted.
func planLeavesOf(s *State, p *Plan) []topology.S0ID {
	set := map[topology.S0ID]bool{}
	for _, a := range p.Assignments {
		for _, id := range s.fabric.NICLeaves(a.Node, a.NICs()) {
			set[id] = true
		}
	}
	return sortedS0s(set)
}

// TestPlanFewestS1s: among placements on the fewest leaves, the one over
// the fewest S1s. Leaves a1 (S1 x) and b1 (S1 y) hold two pods each, as do
// c1 and c2 (S1 z); six pods need three leaves, and c1, c2 and one more
// use two S1s.
func TestPlanFewestS1s(t *testing.T) {
	f := &fixture{}
	add := func(prefix, s1, leaf string) {
		for i := 1; i <= 2; i++ {
			f.add(usedZone(f.node(fmt.Sprintf("%s-%d", prefix, i), s1, leaf, prefix+"-busy"), 1))
		}
	}
	add("a1", "x", "a1")
	add("b1", "y", "b1")
	add("c1", "z", "c1")
	add("c2", "z", "c2")
	s := NewState(f.fabric(), ledger.New())
	plan, fail := s.Plan(gang(6, worker))
	if plan == nil {
		t.Fatalf("Plan() failed: %v", fail)
	}
	checkPlan(t, s, gang(6, worker), plan)
	if got := planLeaves(s, plan); got != 3 {
		t.Errorf("plan uses %d leaves %v, want 3", got, plan.S0s)
	}
	if len(plan.S1s) != 2 {
		t.Errorf("plan uses S1s %v, want 2 (z and one more)", plan.S1s)
	}
}

// TestPlanFewestS1sOnEmptyCluster: on 2,000 empty provider nodes (leaves
// of 16 zones, 8 leaves per S1, so an S1 holds 128 one-zone pods) a large
// gang takes the fewest leaves and, among those, the fewest S1s.
func TestPlanFewestS1sOnEmptyCluster(t *testing.T) {
	nodes, cnrs := builders.GenerateCluster(2000, 0, 0)
	fabric := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), nodes, cnrs)
	for _, tc := range []struct{ pods, leaves, s1s int }{
		{pods: 130, leaves: 9, s1s: 2},
		{pods: 500, leaves: 32, s1s: 4},
	} {
		s := NewState(fabric, ledger.New())
		plan, fail := s.Plan(gang(tc.pods, worker))
		if plan == nil {
			t.Fatalf("%d pods: Plan() failed: %v", tc.pods, fail)
		}
		if len(plan.S0s) != tc.leaves || len(plan.S1s) != tc.s1s {
			t.Errorf("%d pods: %d leaves over %d S1s, want %d over %d", tc.pods, len(plan.S0s), len(plan.S1s), tc.leaves, tc.s1s)
		}
	}
}
