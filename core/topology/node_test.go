package topology_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

const (
	nicA0 = "0000:1a:00.0"
	nicA1 = "0000:3f:00.0"
	nicB0 = "0000:d1:00.0"
	nicB1 = "0000:e7:00.0"
)

func loadProviderExample(t testing.TB) *v1alpha1.CustomNodeResource {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kcnr-provider-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cnr, err := topology.DecodeCNR(data)
	if err != nil {
		t.Fatalf("DecodeCNR: %v", err)
	}
	return cnr
}

func TestBuildNodeProviderExample(t *testing.T) {
	cnr := loadProviderExample(t)
	node := builders.ProviderNode("10.27.0.4").S1("pod-a").Obj()
	got := topology.BuildNode(topology.Config{S1NodeLabel: builders.S1Label}, node, cnr)

	const leafA = "b6f73fb8fb523a512a30edf3c73b7ab********"
	const leafB = "985abf31e6b7bd2aef8dfe551406912********"
	const holderA = "test-rdma-metrics/test-rdma-host-57bezr9pt-76b4cbf99c-bm7k8/667e2f44-e5ec-496f-81c0-0794********"
	const holderB = "default/test-rdma-fc69fc8b-qv6s8/d981a1f8-ea64-440c-9155-3bab********"
	want := &topology.Node{
		Name:   "10.27.0.4",
		S1:     "pod-a",
		Policy: topology.PolicySingleNUMAContainer,
		Known:  true,
		Zones: []topology.Zone{
			{ID: 0, FreeGPU: 4, FreeCPUMilli: 61000, NICs: []topology.NIC{
				{ID: nicA0, NUMA: 0, S0: leafA, Free: false, Consumers: []string{holderA}, Units: 1},
				{ID: nicA1, NUMA: 0, S0: leafA, Free: true, Units: 1, FreeUnits: 1},
			}},
			{ID: 1, FreeGPU: 4, FreeCPUMilli: 64000, NICs: []topology.NIC{
				{ID: nicB0, NUMA: 1, S0: leafB, Free: false, Consumers: []string{holderB}, Units: 1},
				{ID: nicB1, NUMA: 1, S0: leafB, Free: false, Consumers: []string{holderB}, Units: 1},
			}},
		},
		Consumers:  map[string]bool{holderA: true, holderB: true},
		Generation: 1,
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("BuildNode (-want +got):\n%s", diff)
	}

	f := topology.Build(topology.Config{}, []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{cnr})
	if diff := cmp.Diff([]topology.S0ID{leafB, leafA}, f.LeafIDs()); diff != "" {
		t.Errorf("LeafIDs (-want +got):\n%s", diff)
	}
	var free []topology.NICID
	nics := 0
	for _, z := range got.Zones {
		for _, n := range z.NICs {
			nics++
			if n.Free {
				free = append(free, n.ID)
			}
		}
	}
	if nics != 4 {
		t.Errorf("NICs = %d, want 4", nics)
	}
	if diff := cmp.Diff([]topology.NICID{nicA1}, free); diff != "" {
		t.Errorf("free NICs (-want +got):\n%s", diff)
	}
}

// provider builds the provider's node shape for a node name.
func provider(name string) *builders.CNRWrapper {
	return builders.ProviderCNR(name, "leafA", "leafB")
}

func sharedNode(name string) *builders.NodeWrapper {
	return builders.ProviderNode(name)
}

// nicView is a compact, comparable view of a node's NICs.
type nicView struct {
	NUMA int
	S0   topology.S0ID
	Free bool
}

func nicsOf(n *topology.Node) map[topology.NICID]nicView {
	out := map[topology.NICID]nicView{}
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			out[c.ID] = nicView{NUMA: c.NUMA, S0: c.S0, Free: c.Free}
		}
	}
	return out
}

func codesOf(rs []topology.Reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Code)+"@"+string(r.NIC))
	}
	return out
}

func TestBuildNodeReasons(t *testing.T) {
	unknown := func(nic topology.NICID) topology.S0ID { return topology.UnknownS0("n1", nic) }
	allKnown := map[topology.NICID]nicView{
		nicA0: {0, "leafA", true}, nicA1: {0, "leafA", true},
		nicB0: {1, "leafB", true}, nicB1: {1, "leafB", true},
	}
	cases := map[string]struct {
		node      *corev1.Node
		cnr       *v1alpha1.CustomNodeResource
		wantCodes []string
		wantNICs  map[topology.NICID]nicView
		wantKnown bool
		wantZones []int
		// wantIn must each appear in some reason (its String form), so the
		// reason names the field at fault.
		wantIn []string
	}{
		"clean": {
			node: sharedNode("n1").Obj(), cnr: provider("n1").Obj(),
			wantNICs: allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"no KCNR with RDMA": {
			node:      sharedNode("n1").Obj(),
			wantCodes: []string{"NoKCNR@"},
			wantNICs: map[topology.NICID]nicView{
				"rdma-0": {0, unknown("rdma-0"), true}, "rdma-1": {0, unknown("rdma-1"), true},
				"rdma-2": {0, unknown("rdma-2"), true}, "rdma-3": {0, unknown("rdma-3"), true},
			},
			wantZones: []int{0},
		},
		"no KCNR, CPU only": {
			node:      builders.MakeNode("n1").CPU("16").Obj(),
			wantNICs:  map[topology.NICID]nicView{},
			wantKnown: true,
		},
		"not shared": {
			node: builders.MakeNode("n1").GPU(8).RDMA(4).Obj(), cnr: provider("n1").Obj(),
			wantCodes: []string{"RDMANotShared@"},
			wantNICs: map[topology.NICID]nicView{
				nicA0: {0, unknown(nicA0), true}, nicA1: {0, unknown(nicA1), true},
				nicB0: {1, unknown(nicB0), true}, nicB1: {1, unknown(nicB1), true},
			},
			wantZones: []int{0, 1},
		},
		"KCNR without node is read as shared": {
			cnr:      provider("n1").Obj(),
			wantNICs: allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"NIC without leaf": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").NIC("0000:AA:00.0", 1, "").Obj(),
			wantCodes: []string{"NICWithoutLeaf@0000:aa:00.0"},
			wantNICs: merge(allKnown, map[topology.NICID]nicView{
				"0000:aa:00.0": {1, unknown("0000:aa:00.0"), true},
			}),
			wantZones: []int{0, 1},
		},
		"empty and nil properties": {
			node: sharedNode("n1").Obj(),
			cnr: provider("n1").NIC("0000:aa:00.0", 1, "").
				Property("RDMATOR/0000:aa:00.0").NilProperty().Obj(),
			wantCodes: []string{"EmptyProperty@", "EmptyProperty@0000:aa:00.0"},
			wantNICs: merge(allKnown, map[topology.NICID]nicView{
				"0000:aa:00.0": {1, unknown("0000:aa:00.0"), true},
			}),
			wantZones: []int{0, 1},
		},
		"bad and duplicate properties": {
			node: sharedNode("n1").Obj(),
			cnr: provider("n1").NIC("0000:aa:00.0", 1, "unknown:x").
				Property("RDMATOR/"+nicA0, "leafZ").Property("RDMATOR/"+nicA1, "leafA").Obj(),
			wantCodes: []string{"BadProperty@0000:aa:00.0", "DuplicateProperty@" + nicA0},
			wantNICs: merge(allKnown, map[topology.NICID]nicView{
				"0000:aa:00.0": {1, unknown("0000:aa:00.0"), true},
			}),
			wantZones: []int{0, 1},
		},
		"leaf without NIC": {
			node: sharedNode("n1").Obj(), cnr: provider("n1").Property("RDMATOR/0000:BB:00.0", "leafA").Obj(),
			wantCodes: []string{"LeafWithoutNIC@0000:bb:00.0"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"duplicate NIC keeps the first zone": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").NIC(nicA0, 1, "").Obj(),
			wantCodes: []string{"DuplicateNIC@" + nicA0},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{"node n1 NIC " + nicA0, "status.topologyZone[1].children[0].children[2] lists the NIC again (first at status.topologyZone[0].children[0].children[0])"},
		},
		"empty RDMATOR value": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").NIC("0000:aa:00.0", 1, "").Property("RDMATOR/0000:aa:00.0", "").Obj(),
			wantCodes: []string{"EmptyProperty@0000:aa:00.0"},
			wantNICs: merge(allKnown, map[topology.NICID]nicView{
				"0000:aa:00.0": {1, unknown("0000:aa:00.0"), true},
			}),
			wantZones: []int{0, 1},
			wantIn:    []string{"node n1 NIC 0000:aa:00.0: EmptyProperty: spec.nodeResourceProperties[4] (RDMATOR/0000:aa:00.0) has an empty propertyValues[0]: it must name the leaf switch (S0) the NIC is cabled to"},
		},
		"multiple RDMATOR values use the first": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").NIC("0000:aa:00.0", 1, "").Property("RDMATOR/0000:aa:00.0", "leafC", "leafD").Obj(),
			wantCodes: []string{"MultiplePropertyValues@0000:aa:00.0"},
			wantNICs: merge(allKnown, map[topology.NICID]nicView{
				"0000:aa:00.0": {1, "leafC", true},
			}),
			wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{`node n1 NIC 0000:aa:00.0: MultiplePropertyValues: spec.nodeResourceProperties[4] (RDMATOR/0000:aa:00.0) has 2 propertyValues ["leafC" "leafD"]`},
		},
		"duplicate NUMA id": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").TopZone(&v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeNuma, Name: "1"}).Obj(),
			wantCodes: []string{"DuplicateNUMA@"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{`node n1: DuplicateNUMA: status.topologyZone[2].name="1" repeats NUMA 1 of status.topologyZone[1].children[0]`},
		},
		"negative NUMA allocatable": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").Allocatable(0, builders.GPUResource, "-2").Obj(),
			wantCodes: []string{"BadQuantity@"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{"node n1: BadQuantity: status.topologyZone[0].children[0].resources.allocatable[nvidia.com/gpu]=-2 is negative"},
		},
		"negative NIC allocatable": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").Units(nicA1, -1).Obj(),
			wantCodes: []string{"BadQuantity@"},
			wantNICs:  merge(allKnown, map[topology.NICID]nicView{nicA1: {0, "leafA", false}}),
			wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{"node n1: BadQuantity: status.topologyZone[0].children[0].children[1].resources.allocatable[vke.volcengine.com/rdma]=-1 is negative"},
		},
		"misspelt policy": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").Policy("SingleNUMANodeContainerLvl").Obj(),
			wantCodes: []string{"UnknownPolicy@"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{`node n1: UnknownPolicy: status.topologyPolicy="SingleNUMANodeContainerLvl" is not a katalyst topology policy; read as SingleNUMANodePodLevel`},
		},
		"NIC name with a comma is not handed out": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").NIC("mlx5_0,mlx5_1", 1, "leafB").Obj(),
			wantCodes: []string{"BadNICName@mlx5_0,mlx5_1"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{`node n1 NIC mlx5_0,mlx5_1: BadNICName: status.topologyZone[1].children[0].children[2].name="mlx5_0,mlx5_1": the name holds a comma`},
		},
		"NIC name with whitespace is not handed out": {
			node:      sharedNode("n1").Obj(),
			cnr:       provider("n1").NIC("mlx5 0", 0, "").NIC(" 0000:aa:00.0", 1, "leafB").Obj(),
			wantCodes: []string{"BadNICName@ 0000:aa:00.0", "BadNICName@mlx5 0"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
			wantIn: []string{`status.topologyZone[0].children[0].children[2].name="mlx5 0": the name holds whitespace`},
		},
		"other NIC names are kept, PCI addresses in lower case": {
			node: sharedNode("n1").Obj(),
			cnr: provider("n1").NIC("mlx5_0", 1, "leafB").NIC("MLX5_1", 1, "leafB").
				NIC("1A:00.0", 0, "leafA").NIC("0000:AB:00.1", 0, "").Property("RDMATOR/0000:ab:00.1", "leafA").Obj(),
			wantNICs: merge(allKnown, map[topology.NICID]nicView{
				"mlx5_0": {1, "leafB", true}, "MLX5_1": {1, "leafB", true},
				"1a:00.0": {0, "leafA", true}, "0000:ab:00.1": {0, "leafA", true},
			}),
			wantKnown: true, wantZones: []int{0, 1},
		},
		"malformed zones are skipped": {
			node: sharedNode("n1").Obj(),
			cnr: provider("n1").
				TopZone(nil).
				TopZone(&v1alpha1.TopologyZone{Name: "7"}).
				TopZone(&v1alpha1.TopologyZone{Type: "Weird", Name: "8"}).
				TopZone(&v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeNuma, Name: "x1"}).
				TopZone(&v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeNuma, Name: "0"}).
				TopZone(&v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeNIC, Name: "0000:cc:00.0"}).
				TopZone(&v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeSocket, Name: "9", Children: []*v1alpha1.TopologyZone{
					nil, {Type: v1alpha1.TopologyTypeNIC, Name: "0000:cd:00.0"},
				}}).
				ChildZone(0, nil).
				ChildZone(0, &v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeNIC}).
				ChildZone(0, &v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeNuma, Name: "3"}).
				ChildZone(0, &v1alpha1.TopologyZone{Type: v1alpha1.TopologyTypeGPU, Name: "gpu-0"}).
				Obj(),
			wantCodes: append([]string{"DuplicateNUMA@"}, repeat("MalformedZone@", 10)...),
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"no topology falls back to the Node": {
			node:      sharedNode("n1").RDMA(2).Obj(),
			cnr:       builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicySingleNUMANodePodLevel).Obj(),
			wantCodes: []string{"NoTopology@"},
			wantNICs: map[topology.NICID]nicView{
				"rdma-0": {0, unknown("rdma-0"), true}, "rdma-1": {0, unknown("rdma-1"), true},
			},
			wantZones: []int{0},
		},
		"no topology and no RDMA": {
			node:      builders.MakeNode("n1").Shared().Obj(),
			cnr:       builders.MakeCNR("n1").Obj(),
			wantCodes: []string{"NoTopology@"},
			wantNICs:  map[topology.NICID]nicView{},
			wantKnown: true,
		},
		"zones without NICs while the Node has RDMA": {
			node:      sharedNode("n1").RDMA(1).Obj(),
			cnr:       builders.MakeCNR("n1").Zone(0, 4, 1000).Zone(1, 4, 1000).Obj(),
			wantCodes: []string{"NoTopology@"},
			wantNICs:  map[topology.NICID]nicView{"rdma-0": {0, unknown("rdma-0"), true}},
			wantZones: []int{0},
		},
		"GPU-only node with KCNR needs no shared label": {
			node:      builders.MakeNode("n1").GPU(8).Obj(),
			cnr:       builders.MakeCNR("n1").Zone(0, 4, 1000).Zone(1, 4, 1000).Obj(),
			wantNICs:  map[topology.NICID]nicView{},
			wantKnown: true,
			wantZones: []int{0, 1},
		},
		"name mismatch": {
			node: sharedNode("n1").Obj(), cnr: provider("n2").Obj(),
			wantCodes: []string{"NameMismatch@"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"bad quantities": {
			node: sharedNode("n1").Obj(),
			cnr: provider("n1").Alloc(0, "ns/p/u", corev1.ResourceList{
				builders.GPUResource: mustQty("-1"),
				corev1.ResourceCPU:   mustQty("1e15"),
			}).Obj(),
			wantCodes: []string{"BadQuantity@", "BadQuantity@"},
			wantNICs:  allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"NUMA zones without Socket": {
			node:     sharedNode("n1").Obj(),
			cnr:      provider("n1").Flat().Obj(),
			wantNICs: allKnown, wantKnown: true, wantZones: []int{0, 1},
		},
		"too many synthetic NICs": {
			node:      sharedNode("n1").RDMA(1000).Obj(),
			wantCodes: []string{"BadQuantity@", "NoKCNR@"},
			wantNICs:  nil, // checked by count below
			wantZones: []int{0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := topology.BuildNode(topology.Config{}, tc.node, tc.cnr)
			if got == nil {
				t.Fatal("BuildNode returned nil")
			}
			if tc.cnr != nil {
				trimmed := topology.BuildNode(topology.Config{}, tc.node, topology.TrimCNR(tc.cnr))
				if diff := cmp.Diff(got, trimmed); diff != "" {
					t.Errorf("BuildNode of the trimmed KCNR differs (-full +trimmed):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantCodes, codesOf(got.Reasons), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reason codes (-want +got):\n%s\nreasons: %v", diff, got.Reasons)
			}
			if tc.wantNICs != nil {
				if diff := cmp.Diff(tc.wantNICs, nicsOf(got), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("NICs (-want +got):\n%s", diff)
				}
			} else if n := len(nicsOf(got)); n != 64 {
				t.Errorf("synthetic NICs = %d, want 64", n)
			}
			if got.Known != tc.wantKnown {
				t.Errorf("Known = %v, want %v", got.Known, tc.wantKnown)
			}
			var zones []int
			for _, z := range got.Zones {
				zones = append(zones, z.ID)
			}
			if diff := cmp.Diff(tc.wantZones, zones, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
			var all strings.Builder
			for _, r := range got.Reasons {
				if r.Node != got.Name || r.Message == "" {
					t.Errorf("reason %v: want node %q and a message", r, got.Name)
				}
				all.WriteString(r.String() + "\n")
			}
			for _, want := range tc.wantIn {
				if !strings.Contains(all.String(), want) {
					t.Errorf("no reason contains %q; reasons:\n%s", want, all.String())
				}
			}
		})
	}
}

func TestBuildNodeNil(t *testing.T) {
	if n := topology.BuildNode(topology.Config{}, nil, nil); n != nil {
		t.Errorf("BuildNode(nil, nil) = %+v, want nil", n)
	}
}

func TestBuildNodeFreeResources(t *testing.T) {
	cnr := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).
		Zone(0, 4, 8000).Zone(1, 4, 8000).
		NIC(nicA0, 0, "leafA").NIC(nicB0, 1, "leafB").
		Alloc(0, "ns/a/1", corev1.ResourceList{builders.GPUResource: mustQty("3"), corev1.ResourceCPU: mustQty("2500m")}).
		Alloc(0, "ns/b/2", corev1.ResourceList{builders.GPUResource: mustQty("3")}).
		Alloc(1, "ns/c/3", corev1.ResourceList{corev1.ResourceCPU: mustQty("1")}).
		UseNIC(nicB0, "ns/c/3").
		Obj()
	got := topology.BuildNode(topology.Config{}, sharedNode("n1").Obj(), cnr)
	type zoneView struct{ ID, GPU, CPU int64 }
	var zones []zoneView
	for _, z := range got.Zones {
		zones = append(zones, zoneView{int64(z.ID), z.FreeGPU, z.FreeCPUMilli})
	}
	if diff := cmp.Diff([]zoneView{{0, 0, 5500}, {1, 4, 7000}}, zones); diff != "" {
		t.Errorf("free resources (-want +got):\n%s", diff)
	}
	if got.Policy != topology.PolicySpanning {
		t.Errorf("policy = %v, want Spanning", got.Policy)
	}
	wantConsumers := map[string]bool{"ns/a/1": true, "ns/b/2": true, "ns/c/3": true}
	if diff := cmp.Diff(wantConsumers, got.Consumers); diff != "" {
		t.Errorf("consumers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[topology.NICID]nicView{nicA0: {0, "leafA", true}, nicB0: {1, "leafB", false}}, nicsOf(got)); diff != "" {
		t.Errorf("NICs (-want +got):\n%s", diff)
	}
}

func TestParsePolicy(t *testing.T) {
	type result struct {
		Policy topology.Policy
		Known  bool
	}
	cases := map[v1alpha1.TopologyPolicy]result{
		v1alpha1.TopologyPolicySingleNUMANodeContainerLevel: {topology.PolicySingleNUMAContainer, true},
		v1alpha1.TopologyPolicySingleNUMANodePodLevel:       {topology.PolicySingleNUMA, true},
		v1alpha1.TopologyPolicyNone:                         {topology.PolicySpanning, true},
		v1alpha1.TopologyPolicyBestEffortContainerLevel:     {topology.PolicySpanning, true},
		v1alpha1.TopologyPolicyBestEffortPodLevel:           {topology.PolicySpanning, true},
		v1alpha1.TopologyPolicyRestrictedContainerLevel:     {topology.PolicySpanning, true},
		v1alpha1.TopologyPolicyRestrictedPodLevel:           {topology.PolicySpanning, true},
		v1alpha1.TopologyPolicyNumericContainerLevel:        {topology.PolicySpanning, true},
		v1alpha1.TopologyPolicyNumericPodLevel:              {topology.PolicySpanning, true},
		// Unset: katalyst's default, None.
		"": {topology.PolicySpanning, true},
		// Misspellings and unknown values: the strictest reading (one zone per pod).
		"SingleNUMANodeContainerLvl":   {topology.PolicySingleNUMA, false},
		"singlenumanodecontainerlevel": {topology.PolicySingleNUMA, false},
		"BestEffort":                   {topology.PolicySingleNUMA, false},
		" None":                        {topology.PolicySingleNUMA, false},
	}
	for in, want := range cases {
		t.Run(string(in), func(t *testing.T) {
			var got result
			got.Policy, got.Known = topology.ParsePolicy(in)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParsePolicy(%q) (-want +got):\n%s", in, diff)
			}
			if p := topology.PolicyOf(in); p != want.Policy {
				t.Errorf("PolicyOf(%q) = %v, want %v", in, p, want.Policy)
			}
		})
	}
}

func TestBuildNodePolicy(t *testing.T) {
	cases := map[string]struct {
		policy    v1alpha1.TopologyPolicy
		want      topology.Policy
		wantCodes []string
	}{
		"single NUMA":     {policy: v1alpha1.TopologyPolicySingleNUMANodePodLevel, want: topology.PolicySingleNUMA},
		"per container":   {policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, want: topology.PolicySingleNUMAContainer},
		"best effort":     {policy: v1alpha1.TopologyPolicyBestEffortPodLevel, want: topology.PolicySpanning},
		"unset is None":   {policy: "", want: topology.PolicySpanning},
		"misspelt policy": {policy: "SingleNUMANodeContainerLvl", want: topology.PolicySingleNUMA, wantCodes: []string{"UnknownPolicy@"}},
		"unknown policy":  {policy: "Strict", want: topology.PolicySingleNUMA, wantCodes: []string{"UnknownPolicy@"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := topology.BuildNode(topology.Config{}, sharedNode("n1").Obj(), provider("n1").Policy(tc.policy).Obj())
			if got.Policy != tc.want {
				t.Errorf("Policy = %v, want %v", got.Policy, tc.want)
			}
			if diff := cmp.Diff(tc.wantCodes, codesOf(got.Reasons), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reason codes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildNodeNICUnits(t *testing.T) {
	type units struct {
		Units, FreeUnits int64
		Free             bool
	}
	rdma := func(q string) corev1.ResourceList { return corev1.ResourceList{builders.RDMAResource: mustQty(q)} }
	cases := map[string]struct {
		cnr       *builders.CNRWrapper
		want      units
		wantCodes []string
	}{
		"one free unit":         {cnr: provider("n1"), want: units{1, 1, true}},
		"two units, one used":   {cnr: provider("n1").Units(nicA0, 2).UseNICUnits(nicA0, "ns/a/1", 1), want: units{2, 1, true}},
		"two units, both used":  {cnr: provider("n1").Units(nicA0, 2).UseNICUnits(nicA0, "ns/a/1", 1).UseNICUnits(nicA0, "ns/b/2", 1), want: units{2, 0, false}},
		"over-allocated clamps": {cnr: provider("n1").UseNICUnits(nicA0, "ns/a/1", 3), want: units{1, 0, false}},
		"no allocatable listed": {cnr: provider("n1").AllocNIC(nicA0, "", nil), want: units{1, 1, true}},
		"zero units":            {cnr: provider("n1").Units(nicA0, 0), want: units{0, 0, false}},
		"negative units":        {cnr: provider("n1").Units(nicA0, -2), want: units{0, 0, false}, wantCodes: []string{"BadQuantity@"}},
		"consumer, no requests": {cnr: provider("n1").Units(nicA0, 2).AllocNIC(nicA0, "ns/a/1", nil), want: units{2, 0, false}},
		"consumer, no RDMA request": {
			cnr:  provider("n1").Units(nicA0, 2).AllocNIC(nicA0, "ns/a/1", corev1.ResourceList{corev1.ResourceCPU: mustQty("1")}),
			want: units{2, 0, false},
		},
		"explicit zero request holds nothing": {cnr: provider("n1").Units(nicA0, 2).AllocNIC(nicA0, "ns/a/1", rdma("0")), want: units{2, 2, true}},
		"no consumer, no requests":            {cnr: provider("n1").Units(nicA0, 2).AllocNIC(nicA0, "", nil), want: units{2, 2, true}},
		"no consumer, RDMA request":           {cnr: provider("n1").Units(nicA0, 2).AllocNIC(nicA0, "", rdma("1")), want: units{2, 1, true}},
		"negative request":                    {cnr: provider("n1").AllocNIC(nicA0, "ns/a/1", rdma("-1")), want: units{1, 1, true}, wantCodes: []string{"BadQuantity@"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := topology.BuildNode(topology.Config{}, sharedNode("n1").Obj(), tc.cnr.Obj())
			var got units
			for _, z := range n.Zones {
				for _, c := range z.NICs {
					if c.ID == nicA0 {
						got = units{c.Units, c.FreeUnits, c.Free}
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NIC %s (-want +got):\n%s", nicA0, diff)
			}
			if diff := cmp.Diff(tc.wantCodes, codesOf(n.Reasons), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reason codes (-want +got):\n%s\nreasons: %v", diff, n.Reasons)
			}
		})
	}

	// Synthetic NICs of a node without KCNR have one free unit each.
	n := topology.BuildNode(topology.Config{}, sharedNode("n1").RDMA(2).Obj(), nil)
	for _, c := range n.Zones[0].NICs {
		if diff := cmp.Diff(units{1, 1, true}, units{c.Units, c.FreeUnits, c.Free}); diff != "" {
			t.Errorf("synthetic NIC %s (-want +got):\n%s", c.ID, diff)
		}
	}
}

func TestNormalizeNICName(t *testing.T) {
	cases := map[string]topology.NICID{
		"0000:1a:00.0":   "0000:1a:00.0",
		"0000:1A:00.0":   "0000:1a:00.0",
		"1A:00.7":        "1a:00.7",
		"0001AB:CD:EF.1": "0001ab:cd:ef.1",
		"mlx5_0":         "mlx5_0",
		"MLX5_0":         "MLX5_0",
		"1A:00.8":        "1A:00.8", // function 8 does not exist: not a PCI address
		"0000:1A:00":     "0000:1A:00",
		"rdma-0":         "rdma-0",
	}
	for in, want := range cases {
		if got := topology.NormalizeNICName(in); got != want {
			t.Errorf("NormalizeNICName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckNICName(t *testing.T) {
	cases := map[string]string{ // name -> part of the error, "" for none
		"0000:1a:00.0": "",
		"mlx5_0":       "",
		"1a:00.0":      "",
		"":             "empty",
		"a,b":          "comma",
		"mlx5 0":       "whitespace",
		"mlx5_0\t":     "whitespace",
		"\xff":         "UTF-8",
	}
	for in, want := range cases {
		err := topology.CheckNICName(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckNICName(%q) = %v, want nil", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("CheckNICName(%q) = %v, want an error about %s", in, err, want)
		}
	}
}

func TestConfigWithDefaults(t *testing.T) {
	got := topology.Config{S1NodeLabel: "x"}.WithDefaults()
	want := topology.Config{RDMAResource: topology.DefaultRDMAResource, GPUResource: topology.DefaultGPUResource, S1NodeLabel: "x",
		S1Source: topology.S1FromLabel, S1HyperNodeTier: topology.DefaultS1HyperNodeTier}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithDefaults (-want +got):\n%s", diff)
	}
	custom := topology.Config{RDMAResource: "r", GPUResource: "g", S1Source: topology.S1FromHyperNode, S1HyperNodeTier: 3}
	if diff := cmp.Diff(custom, custom.WithDefaults()); diff != "" {
		t.Errorf("WithDefaults kept custom names (-want +got):\n%s", diff)
	}
}

func merge(a, b map[topology.NICID]nicView) map[topology.NICID]nicView {
	out := map[topology.NICID]nicView{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
