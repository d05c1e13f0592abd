package topology_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

var s1Config = topology.Config{S1NodeLabel: builders.S1Label}

// slotView is a comparable view of a Slot.
type slotView struct {
	Node string
	Zone int
	NICs []topology.NICID
}

// leafView is a comparable view of a Leaf.
type leafView struct {
	S1      topology.S1ID
	Slots   []slotView
	Reasons []string
}

// fabricView flattens a fabric for cmp.Diff.
type fabricView struct {
	Nodes  map[string]*topology.Node
	Leaves map[topology.S0ID]leafView
	S1     map[topology.S1ID][]topology.S0ID
}

func viewOf(f *topology.Fabric) fabricView {
	v := fabricView{Nodes: map[string]*topology.Node{}, Leaves: map[topology.S0ID]leafView{}, S1: map[topology.S1ID][]topology.S0ID{}}
	for _, name := range f.NodeNames() {
		n, _ := f.Node(name)
		v.Nodes[name] = n
	}
	for _, id := range f.LeafIDs() {
		l, _ := f.Leaf(id)
		lv := leafView{S1: l.S1, Reasons: codesOf(l.Reasons)}
		for _, s := range l.Slots {
			lv.Slots = append(lv.Slots, slotView{Node: s.Node.Name, Zone: s.Node.Zones[s.Zone].ID, NICs: s.NICs})
		}
		v.Leaves[id] = lv
	}
	for _, s1 := range f.S1IDs() {
		v.S1[s1] = f.LeavesOf(s1)
	}
	return v
}

// ignoreGeneration compares nodes regardless of how often a cache rebuilt them.
var ignoreGeneration = cmpopts.IgnoreFields(topology.Node{}, "Generation")

func TestBuildTwoLeavesFourNodes(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	f := topology.Build(s1Config, nodes, cnrs)

	if diff := cmp.Diff([]string{"n1", "n2", "n3", "n4"}, f.NodeNames()); diff != "" {
		t.Errorf("NodeNames (-want +got):\n%s", diff)
	}
	if f.Len() != 4 {
		t.Errorf("Len = %d, want 4", f.Len())
	}
	if diff := cmp.Diff([]topology.S1ID{"s1-0"}, f.S1IDs()); diff != "" {
		t.Errorf("S1IDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]topology.S0ID{"leafA", "leafB"}, f.LeavesOf("s1-0")); diff != "" {
		t.Errorf("LeavesOf (-want +got):\n%s", diff)
	}
	var wantA, wantB []slotView
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		wantA = append(wantA, slotView{n, 0, []topology.NICID{nicA0, nicA1}})
		wantB = append(wantB, slotView{n, 1, []topology.NICID{nicB0, nicB1}})
	}
	got := viewOf(f)
	if diff := cmp.Diff(leafView{S1: "s1-0", Slots: wantA}, got.Leaves["leafA"], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("leafA (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(leafView{S1: "s1-0", Slots: wantB}, got.Leaves["leafB"], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("leafB (-want +got):\n%s", diff)
	}
	if s0, ok := f.NICLeaf("n3", nicB1); !ok || s0 != "leafB" {
		t.Errorf("NICLeaf(n3, %s) = %q, %v; want leafB", nicB1, s0, ok)
	}
	if _, ok := f.NICLeaf("n3", "0000:00:00.0"); ok {
		t.Error("NICLeaf of an unknown NIC reported ok")
	}
	if _, ok := f.NICLeaf("nope", nicA0); ok {
		t.Error("NICLeaf of an unknown node reported ok")
	}
	for _, tc := range []struct {
		node string
		nics []topology.NICID
		want []topology.S0ID
	}{
		{"n3", []topology.NICID{nicB1, nicA0, nicB0, nicA1}, []topology.S0ID{"leafB", "leafA"}},
		{"n3", []topology.NICID{nicA1}, []topology.S0ID{"leafA"}},
		{"n3", []topology.NICID{"0000:00:00.0", nicB0}, []topology.S0ID{"leafB"}},
		{"nope", []topology.NICID{nicA0}, nil},
		{"n1", nil, nil},
	} {
		if diff := cmp.Diff(tc.want, f.NICLeaves(tc.node, tc.nics)); diff != "" {
			t.Errorf("NICLeaves(%s, %v) (-want +got):\n%s", tc.node, tc.nics, diff)
		}
	}
	if len(f.Reasons()) != 0 {
		t.Errorf("Reasons = %v, want none", f.Reasons())
	}
}

func TestBuildLeaves(t *testing.T) {
	cases := map[string]struct {
		cfg        topology.Config
		nodes      []*corev1.Node
		cnrs       []*v1alpha1.CustomNodeResource
		wantLeaves map[topology.S0ID]leafView
		wantS1     map[topology.S1ID][]topology.S0ID
	}{
		"one zone split over two leaves": {
			cfg:   s1Config,
			nodes: []*corev1.Node{sharedNode("n1").S1("p").Obj()},
			cnrs: []*v1alpha1.CustomNodeResource{builders.MakeCNR("n1").Zone(0, 8, 1000).
				NIC(nicA0, 0, "x").NIC(nicA1, 0, "y").NIC(nicB0, 0, "x").Obj()},
			wantLeaves: map[topology.S0ID]leafView{
				"x": {S1: "p", Slots: []slotView{{"n1", 0, []topology.NICID{nicA0, nicB0}}}},
				"y": {S1: "p", Slots: []slotView{{"n1", 0, []topology.NICID{nicA1}}}},
			},
			wantS1: map[topology.S1ID][]topology.S0ID{"p": {"x", "y"}},
		},
		"S1 disagreement takes the first node by name": {
			cfg: s1Config,
			nodes: []*corev1.Node{
				sharedNode("n2").S1("q").Obj(), sharedNode("n1").S1("p").Obj(), sharedNode("n3").Obj(),
			},
			cnrs: []*v1alpha1.CustomNodeResource{
				builders.MakeCNR("n1").NIC(nicA0, 0, "x").Obj(),
				builders.MakeCNR("n2").NIC(nicA0, 0, "x").Obj(),
				builders.MakeCNR("n3").NIC(nicA0, 0, "x").Obj(),
			},
			wantLeaves: map[topology.S0ID]leafView{
				"x": {S1: "p", Slots: []slotView{
					{"n1", 0, []topology.NICID{nicA0}}, {"n2", 0, []topology.NICID{nicA0}}, {"n3", 0, []topology.NICID{nicA0}},
				}, Reasons: []string{"S1Mismatch@", "S1Mismatch@"}},
			},
			wantS1: map[topology.S1ID][]topology.S0ID{"p": {"x"}},
		},
		"a KCNR whose Node is gone gives no S1": {
			cfg:   s1Config,
			nodes: []*corev1.Node{sharedNode("n2").S1("p").Obj()},
			cnrs: []*v1alpha1.CustomNodeResource{
				builders.MakeCNR("n1").NIC(nicA0, 0, "x").NIC(nicA1, 0, "y").Obj(),
				builders.MakeCNR("n2").NIC(nicA0, 0, "x").Obj(),
			},
			wantLeaves: map[topology.S0ID]leafView{
				"x": {S1: "p", Slots: []slotView{{"n1", 0, []topology.NICID{nicA0}}, {"n2", 0, []topology.NICID{nicA0}}}},
				"y": {S1: "", Slots: []slotView{{"n1", 0, []topology.NICID{nicA1}}}},
			},
			wantS1: map[topology.S1ID][]topology.S0ID{"p": {"x"}, "": {"y"}},
		},
		"unknown leaves are leaves of their own": {
			cfg:   s1Config,
			nodes: []*corev1.Node{sharedNode("n1").RDMA(2).S1("p").Obj(), builders.MakeNode("n2").RDMA(1).Obj()},
			wantLeaves: map[topology.S0ID]leafView{
				topology.UnknownS0("n1", "rdma-0"): {S1: "p", Slots: []slotView{{"n1", 0, []topology.NICID{"rdma-0"}}}},
				topology.UnknownS0("n1", "rdma-1"): {S1: "p", Slots: []slotView{{"n1", 0, []topology.NICID{"rdma-1"}}}},
				topology.UnknownS0("n2", "rdma-0"): {S1: "", Slots: []slotView{{"n2", 0, []topology.NICID{"rdma-0"}}}},
			},
			wantS1: map[topology.S1ID][]topology.S0ID{
				"p": {topology.UnknownS0("n1", "rdma-0"), topology.UnknownS0("n1", "rdma-1")},
				"":  {topology.UnknownS0("n2", "rdma-0")},
			},
		},
		"no S1 label configured": {
			nodes: []*corev1.Node{sharedNode("n1").S1("p").Obj()},
			cnrs:  []*v1alpha1.CustomNodeResource{builders.MakeCNR("n1").NIC(nicA0, 0, "x").Obj(), nil},
			wantLeaves: map[topology.S0ID]leafView{
				"x": {Slots: []slotView{{"n1", 0, []topology.NICID{nicA0}}}},
			},
			wantS1: map[topology.S1ID][]topology.S0ID{"": {"x"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := viewOf(topology.Build(tc.cfg, tc.nodes, tc.cnrs))
			if diff := cmp.Diff(tc.wantLeaves, got.Leaves, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("leaves (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantS1, got.S1, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("S1 (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFabricReasonsSorted(t *testing.T) {
	nodes := []*corev1.Node{sharedNode("b").Obj(), sharedNode("a").Obj(), builders.MakeNode("c").RDMA(1).Obj()}
	cnrs := []*v1alpha1.CustomNodeResource{provider("b").NIC("0000:aa:00.0", 1, "").Obj(), provider("c").Obj()}
	f := topology.Build(topology.Config{}, nodes, cnrs)
	var got []string
	for _, r := range f.Reasons() {
		got = append(got, r.Node+":"+string(r.Code))
	}
	want := []string{"a:NoKCNR", "b:NICWithoutLeaf", "c:RDMANotShared"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Reasons (-want +got):\n%s", diff)
	}
}

func TestCacheMatchesBuild(t *testing.T) {
	nodes, cnrs := builders.ClusterShape{Nodes: 40, ZonesPerLeaf: 4, LeavesPerS1: 4, SpanningEvery: 3}.Generate()
	c := topology.NewCache(s1Config)
	// Interleave node and KCNR arrivals, KCNRs first for half of the nodes.
	for i := range nodes {
		if i%2 == 0 {
			c.UpsertCNR(cnrs[i])
			c.UpsertNode(nodes[i])
		} else {
			c.UpsertNode(nodes[i])
			c.UpsertCNR(cnrs[i])
		}
	}
	want := viewOf(topology.Build(s1Config, nodes, cnrs))
	if diff := cmp.Diff(want, viewOf(c.Snapshot()), ignoreGeneration, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("cache differs from Build (-want +got):\n%s", diff)
	}

	steps := []struct {
		name  string
		apply func()
		nodes []*corev1.Node
		cnrs  []*v1alpha1.CustomNodeResource
	}{
		{
			name: "move a node to another S1 and another leaf pair",
			apply: func() {
				c.UpsertNode(sharedNode(builders.NodeName(5)).S1("s1-9").Obj())
				c.UpsertCNR(provider(builders.NodeName(5)).Obj())
			},
		},
		{
			name:  "delete a KCNR",
			apply: func() { c.DeleteCNR(builders.NodeName(6)) },
		},
		{
			name:  "delete a Node whose KCNR stays",
			apply: func() { c.DeleteNode(builders.NodeName(7)) },
		},
		{
			name: "delete a whole node group",
			apply: func() {
				for i := 36; i < 40; i++ {
					c.DeleteNode(builders.NodeName(i))
					c.DeleteCNR(builders.NodeName(i))
				}
			},
		},
		{
			name:  "unknown deletes are no-ops",
			apply: func() { c.DeleteNode("nope"); c.DeleteCNR("nope"); c.UpsertNode(nil); c.UpsertCNR(nil) },
		},
	}
	// Track the expected inputs alongside the cache.
	nodeByName := map[string]*corev1.Node{}
	cnrByName := map[string]*v1alpha1.CustomNodeResource{}
	for i := range nodes {
		nodeByName[nodes[i].Name] = nodes[i]
		cnrByName[cnrs[i].Name] = cnrs[i]
	}
	expect := []func(){
		func() {
			nodeByName[builders.NodeName(5)] = sharedNode(builders.NodeName(5)).S1("s1-9").Obj()
			cnrByName[builders.NodeName(5)] = provider(builders.NodeName(5)).Obj()
		},
		func() { delete(cnrByName, builders.NodeName(6)) },
		func() { delete(nodeByName, builders.NodeName(7)) },
		func() {
			for i := 36; i < 40; i++ {
				delete(nodeByName, builders.NodeName(i))
				delete(cnrByName, builders.NodeName(i))
			}
		},
		func() {},
	}
	for i, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.apply()
			expect[i]()
			var ns []*corev1.Node
			for _, n := range nodeByName {
				ns = append(ns, n)
			}
			var cs []*v1alpha1.CustomNodeResource
			for _, cnr := range cnrByName {
				cs = append(cs, cnr)
			}
			want := viewOf(topology.Build(s1Config, ns, cs))
			if diff := cmp.Diff(want, viewOf(c.Snapshot()), ignoreGeneration, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("cache differs from Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCacheSnapshotIsolationAndGenerations(t *testing.T) {
	c := topology.NewCache(s1Config)
	c.UpsertNode(sharedNode("n1").S1("p").Obj())
	c.UpsertCNR(provider("n1").ResourceVersion("1").Obj())
	before := c.Snapshot()
	if again := c.Snapshot(); again != before {
		t.Error("Snapshot without updates returned a new fabric")
	}
	n, _ := before.Node("n1")
	if n.Generation != 2 {
		t.Errorf("generation after node + KCNR = %d, want 2", n.Generation)
	}

	// Same resourceVersion and generation: no-op.
	c.UpsertCNR(provider("n1").ResourceVersion("1").NIC("0000:aa:00.0", 0, "leafC").Obj())
	if c.Snapshot() != before {
		t.Error("an unchanged resourceVersion rebuilt the node")
	}

	c.UpsertCNR(provider("n1").ResourceVersion("2").UseNIC(nicA0, "ns/p/u").NIC("0000:aa:00.0", 0, "leafC").Obj())
	after := c.Snapshot()
	if after == before {
		t.Fatal("update did not produce a new snapshot")
	}
	n2, _ := after.Node("n1")
	if n2.Generation != 3 {
		t.Errorf("generation = %d, want 3", n2.Generation)
	}
	if _, ok := before.Leaf("leafC"); ok {
		t.Error("old snapshot sees a leaf added later")
	}
	if _, ok := after.Leaf("leafC"); !ok {
		t.Error("new snapshot misses leafC")
	}
	if diff := cmp.Diff([]topology.S0ID{"leafA", "leafB"}, before.LeavesOf("p")); diff != "" {
		t.Errorf("old snapshot S1 leaves (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]topology.S0ID{"leafA", "leafB", "leafC"}, after.LeavesOf("p")); diff != "" {
		t.Errorf("new snapshot S1 leaves (-want +got):\n%s", diff)
	}
	la, _ := after.Leaf("leafA")
	if la.Slots[0].Node != n2 {
		t.Error("leafA slot does not point at the rebuilt node")
	}
	lb, _ := before.Leaf("leafA")
	if lb.Slots[0].Node != n {
		t.Error("old snapshot's leaf was modified")
	}
}

func TestFabricConcurrentReaders(t *testing.T) {
	nodes, cnrs := builders.GenerateCluster(64, 4, 4)
	f := topology.Build(s1Config, nodes, cnrs)
	var wg sync.WaitGroup
	results := make([]string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			results[g] = fmt.Sprint(len(f.NodeNames()), len(f.LeafIDs()), f.S1IDs(), len(f.Reasons()))
		}(g)
	}
	wg.Wait()
	for _, r := range results {
		if r != results[0] {
			t.Fatalf("readers disagree: %q vs %q", r, results[0])
		}
	}
	if results[0] != "64 32 [s1-0 s1-1 s1-2 s1-3 s1-4 s1-5 s1-6 s1-7] 0" {
		t.Errorf("unexpected fabric summary %q", results[0])
	}
}

func TestGeneratedClusterShape(t *testing.T) {
	nodes, cnrs := builders.GenerateCluster(10000, 16, 8)
	f := topology.Build(s1Config, nodes, cnrs)
	if f.Len() != 10000 {
		t.Errorf("nodes = %d, want 10000", f.Len())
	}
	if got := len(f.LeafIDs()); got != 1250 {
		t.Errorf("leaves = %d, want 1250", got)
	}
	if got := len(f.S1IDs()); got != 157 {
		t.Errorf("S1s = %d, want 157", got)
	}
	sizes := map[int]int{}
	for _, id := range f.LeafIDs() {
		l, _ := f.Leaf(id)
		sizes[len(l.Slots)]++
	}
	if diff := cmp.Diff(map[int]int{16: 1250}, sizes); diff != "" {
		t.Errorf("slots per leaf (-want +got):\n%s", diff)
	}
	n, _ := f.Node(builders.NodeName(17))
	s0 := []topology.S0ID{n.Zones[0].NICs[0].S0, n.Zones[1].NICs[0].S0}
	if s0[0] == s0[1] || s0[0] != topology.S0ID(builders.LeafID(2)) || s0[1] != topology.S0ID(builders.LeafID(3)) {
		t.Errorf("node 17 leaves = %v, want LeafID(2), LeafID(3)", s0)
	}
	if len(f.Reasons()) != 0 {
		t.Errorf("generated cluster has reasons: %v", f.Reasons()[:1])
	}
	if !sort.StringsAreSorted(f.NodeNames()) {
		t.Error("NodeNames not sorted")
	}
}

func TestCacheConcurrentUpdatesAndReaders(t *testing.T) {
	nodes, cnrs := builders.GenerateCluster(64, 4, 4)
	c := topology.NewCache(s1Config)
	for i := range nodes {
		c.UpsertNode(nodes[i])
		c.UpsertCNR(cnrs[i])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				f := c.Snapshot()
				if f.Len() != 64 {
					errs <- fmt.Sprintf("snapshot has %d nodes", f.Len())
					return
				}
				for _, id := range f.LeafIDs() {
					if l, ok := f.Leaf(id); !ok || len(l.Slots) != 4 {
						errs <- fmt.Sprintf("leaf %s inconsistent", id)
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			cnr := cnrs[i%64].DeepCopy()
			cnr.ResourceVersion = fmt.Sprint(i)
			c.UpsertCNR(cnr)
		}
	}()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
