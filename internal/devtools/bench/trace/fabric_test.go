package trace

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// fabricSummary is what TestFabricClusterShape checks of a generated
// fabric.
type fabricSummary struct {
	Nodes int
	// Known and Unknown count the nodes with and without usable topology.
	Known, Unknown int
	// NICsPerNode counts nodes by their NIC count.
	NICsPerNode map[int]int
	// Leaves counts the known leaves; LeafNICs counts them by NIC count.
	Leaves   int
	LeafNICs map[int]int
	// UnknownNICs counts the NICs that are a leaf of their own.
	UnknownNICs int
	// Spanning counts the nodes of a spanning policy.
	Spanning int
	S1s      int
	// PreboundNICs counts the NICs the pre-bound pods name, by pod.
	PreboundNICs map[int]int
}

func summarize(t *testing.T, fabric string, nodes int) fabricSummary {
	t.Helper()
	c, err := NewFabricCluster(fabric, nodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults()
	f := topology.Build(cfg, c.Nodes, c.CNRs)
	s := fabricSummary{Nodes: f.Len(), NICsPerNode: map[int]int{}, LeafNICs: map[int]int{}, PreboundNICs: map[int]int{}}
	for _, name := range f.NodeNames() {
		n, _ := f.Node(name)
		if n.Known {
			s.Known++
		} else {
			s.Unknown++
		}
		if n.Policy == topology.PolicySpanning {
			s.Spanning++
		}
		count := 0
		for _, z := range n.Zones {
			count += len(z.NICs)
		}
		s.NICsPerNode[count]++
	}
	for _, id := range f.LeafIDs() {
		l, _ := f.Leaf(id)
		if id.IsUnknown() {
			s.UnknownNICs++
			continue
		}
		s.Leaves++
		count := 0
		for _, slot := range l.Slots {
			count += len(slot.NICs)
		}
		s.LeafNICs[count]++
	}
	s.S1s = len(f.S1IDs())
	for _, p := range c.Pods {
		if errs := ledger.CheckAnnotations(p.Annotations); len(errs) > 0 {
			t.Errorf("pre-bound pod %s: %v", p.Name, errs[0])
		}
		nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
		if err != nil {
			t.Fatal(err)
		}
		s.PreboundNICs[len(nics)]++
	}
	l, errs := ledger.Rebuild(cfg, c.Pods, f)
	if len(errs) > 0 {
		t.Errorf("%s: ledger rebuild from the pre-bound pods: %v", fabric, errs[0])
	}
	if l == nil {
		t.Errorf("%s: no ledger", fabric)
	}
	return s
}

func TestFabricClusterShape(t *testing.T) {
	tests := []struct {
		fabric string
		nodes  int
		want   fabricSummary
	}{
		{fabric: FabricProvider, nodes: 64, want: fabricSummary{
			Nodes: 64, Known: 64, NICsPerNode: map[int]int{4: 64},
			Leaves: 8, LeafNICs: map[int]int{32: 8}, Spanning: 16, S1s: 1,
			PreboundNICs: map[int]int{2: 58},
		}},
		// Two 32-node units of 8 rails each, one NIC per node on every
		// rail; both units in one S1.
		{fabric: FabricRail, nodes: 64, want: fabricSummary{
			Nodes: 64, Known: 64, NICsPerNode: map[int]int{8: 64},
			Leaves: 16, LeafNICs: map[int]int{32: 16}, Spanning: 16, S1s: 1,
			PreboundNICs: map[int]int{4: 58}, // the same zones as on provider
		}},
		// 32 provider nodes (two leaf pairs), 32 rail nodes (one unit of 8 rails),
		// 32 topology-unknown nodes (4 NICs each, a leaf each).
		{fabric: FabricMixed, nodes: 96, want: fabricSummary{
			Nodes: 96, Known: 64, Unknown: 32, NICsPerNode: map[int]int{4: 64, 8: 32},
			Leaves: 12, LeafNICs: map[int]int{32: 12}, UnknownNICs: 128, Spanning: 24, S1s: 3,
			PreboundNICs: map[int]int{2: 41, 4: 17},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.fabric, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(t, tc.fabric, tc.nodes)); diff != "" {
				t.Errorf("generated %s fabric differs (-want +got):\n%s", tc.fabric, diff)
			}
		})
	}
}

// TestRailCabling checks that NIC i of every node of a unit is on the
// unit's rail i, and that units do not share rails.
func TestRailCabling(t *testing.T) {
	c, err := NewFabricCluster(FabricRail, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := topology.Build(topology.Config{}.WithDefaults(), c.Nodes, c.CNRs)
	rails := map[topology.S0ID][]int{} // leaf -> unit, rail index
	for i := 0; i < 64; i++ {
		n, _ := f.Node(builders.NodeName(i))
		k := 0
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				want := []int{i / railUnitNodes, k}
				if got, ok := rails[nic.S0]; ok && !cmp.Equal(got, want) {
					t.Errorf("node %d NIC %d is on the leaf of unit %d rail %d, want unit %d rail %d", i, k, got[0], got[1], want[0], want[1])
				}
				rails[nic.S0] = want
				k++
			}
		}
	}
	if len(rails) != 16 {
		t.Errorf("%d rail leaves, want 16", len(rails))
	}
}

func TestFabricClusterDeterministic(t *testing.T) {
	for _, fabric := range Fabrics {
		a, err := NewFabricCluster(fabric, 100, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewFabricCluster(fabric, 100, 7)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: two clusters of one seed differ", fabric)
		}
	}
	if _, err := NewFabricCluster("torus", 10, 1); err == nil {
		t.Error("NewFabricCluster(torus) succeeded, want an error")
	}
}

// TestFabricUnits: the units fabric is the provider's with NICs of 4 RDMA
// units, 2 on every third node; each node's RDMA resource counts them.
func TestFabricUnits(t *testing.T) {
	c, err := NewFabricCluster(FabricUnits, 12, 1)
	if err != nil {
		t.Fatal(err)
	}
	prov, _ := NewFabricCluster(FabricProvider, 12, 1)
	if len(c.Nodes) != len(prov.Nodes) || len(c.Pods) != len(prov.Pods) {
		t.Errorf("%d nodes and %d pre-bound pods, want the provider's %d and %d", len(c.Nodes), len(c.Pods), len(prov.Nodes), len(prov.Pods))
	}
	f := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), c.Nodes, c.CNRs)
	perNode := map[int64]int{}
	for i, node := range c.Nodes {
		n, ok := f.Node(node.Name)
		if !ok {
			t.Fatalf("node %s not in the fabric", node.Name)
		}
		want := int64(unitsPerNIC)
		if i%smallUnitsEvery == smallUnitsEvery-1 {
			want = smallUnitsPerNIC
		}
		var total int64
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				if nic.Units != want || nic.S0.IsUnknown() {
					t.Errorf("node %s NIC %s: %d units (leaf %s), want %d under a known leaf", node.Name, nic.ID, nic.Units, nic.S0, want)
				}
				total += nic.Units
			}
		}
		if q := node.Status.Allocatable[builders.RDMAResource]; q.Value() != total {
			t.Errorf("node %s: RDMA allocatable %s, want %d (its NICs' units)", node.Name, q.String(), total)
		}
		perNode[want]++
	}
	if diff := cmp.Diff(map[int64]int{unitsPerNIC: 8, smallUnitsPerNIC: 4}, perNode); diff != "" {
		t.Errorf("nodes by NIC units (-want,+got):\n%s", diff)
	}
}
