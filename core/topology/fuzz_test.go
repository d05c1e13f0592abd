package topology_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// FuzzBuildNode feeds arbitrary documents through DecodeCNR, BuildNode and
// Build. Nothing may panic, and whatever decodes must give a fabric where
// every NIC id is normalised (NormalizeNICName) and can be handed out
// (CheckNICName), every NIC's units are consistent, and every NIC is in a
// slot of its own leaf.
func FuzzBuildNode(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kcnr-provider-example.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, cnr := range []*v1alpha1.CustomNodeResource{
		provider("n1").Obj(),
		provider("n1").Flat().NIC("0000:AA:00.0", 3, "").NilProperty().Property("RDMATOR/0000:bb:00.0").Obj(),
		provider("n1").NIC(nicA0, 1, "leafZ").UseNIC(nicB0, "ns/p/u").TopZone(&v1alpha1.TopologyZone{Name: "x"}).Obj(),
		builders.MakeCNR("n1").Obj(),
	} {
		data, err := yaml.Marshal(cnr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "{}", "null", "kind: Node\napiVersion: v1\n", "metadata: {name: n1}\nstatus: {topologyZone: [null]}\n",
		"status:\n  topologyZone:\n  - {type: Numa, name: '0', resources: {allocatable: {cpu: '-3'}}}\n",
		"status:\n  topologyZone:\n  - {type: Numa, name: '007', children: [{type: NIC, name: '0000:1A:00.0'}, {type: NIC, name: '0000:1a:00.0'}]}\n",
		"spec: {nodeResourceProperties: [{propertyName: 'RDMATOR/', propertyValues: ['unknown:x']}]}\n",
		"status:\n  topologyPolicy: SingleNUMANodeContainerLvl\n  topologyZone:\n  - {type: Numa, name: '0', children: [{type: NIC, name: 'a,b'}, {type: NIC, name: 'mlx5 0', resources: {allocatable: {vke.volcengine.com/rdma: '2'}}, allocations: [{consumer: c}]}]}\n",
		"\xff\xfe", "[1,2", "metadata: {name: [}",
	} {
		f.Add([]byte(s))
	}

	cfg := topology.Config{S1NodeLabel: builders.S1Label}
	f.Fuzz(func(t *testing.T, data []byte) {
		cnr, err := topology.DecodeCNR(data)
		if err != nil {
			if !strings.Contains(err.Error(), "CustomNodeResource") {
				t.Fatalf("error does not name the object kind: %v", err)
			}
			return
		}
		node := builders.MakeNode(cnr.Name).Shared().GPU(8).RDMA(4).S1("s1-0").Obj()
		trimmed := topology.TrimCNR(cnr)
		for _, on := range []*corev1.Node{node, nil} {
			n := topology.BuildNode(cfg, on, cnr)
			checkNode(t, n)
			if !reflect.DeepEqual(n, topology.BuildNode(cfg, on, trimmed)) {
				t.Fatalf("BuildNode of the trimmed KCNR differs:\nfull    %+v\ntrimmed %+v", n, topology.BuildNode(cfg, on, trimmed))
			}
		}
		if again := topology.TrimCNR(trimmed); !reflect.DeepEqual(again, trimmed) {
			t.Fatalf("TrimCNR is not idempotent:\nonce  %+v\ntwice %+v", trimmed, again)
		}
		other := provider("zz-other").Obj()
		fab := topology.Build(cfg, []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{cnr, other})
		checkFabric(t, fab)
	})
}

func checkNode(t *testing.T, n *topology.Node) {
	t.Helper()
	if n == nil {
		t.Fatal("BuildNode returned nil for a decoded KCNR")
	}
	known := true
	for zi, z := range n.Zones {
		if zi > 0 && z.ID <= n.Zones[zi-1].ID {
			t.Fatalf("zones not strictly sorted: %d after %d", z.ID, n.Zones[zi-1].ID)
		}
		if z.FreeGPU < 0 || z.FreeCPUMilli < 0 {
			t.Fatalf("zone %d has negative free resources", z.ID)
		}
		for ni, c := range z.NICs {
			if topology.NormalizeNICName(string(c.ID)) != c.ID || topology.CheckNICName(string(c.ID)) != nil {
				t.Fatalf("NIC id %q is not normalised or cannot be handed out", c.ID)
			}
			if c.Units < 0 || c.FreeUnits < 0 || c.FreeUnits > c.Units || c.Free != (c.FreeUnits > 0) {
				t.Fatalf("NIC %s: units %d, free units %d, free %v", c.ID, c.Units, c.FreeUnits, c.Free)
			}
			if ni > 0 && c.ID <= z.NICs[ni-1].ID {
				t.Fatalf("NICs of zone %d not sorted", z.ID)
			}
			if c.NUMA != z.ID || c.S0 == "" {
				t.Fatalf("NIC %s: NUMA %d in zone %d, S0 %q", c.ID, c.NUMA, z.ID, c.S0)
			}
			if c.S0.IsUnknown() {
				known = false
			}
		}
	}
	if known != n.Known {
		t.Fatalf("Known = %v, but NICs say %v", n.Known, known)
	}
	for i := 1; i < len(n.Reasons); i++ {
		a, b := n.Reasons[i-1], n.Reasons[i]
		if a.Code > b.Code || (a.Code == b.Code && a.NIC > b.NIC) {
			t.Fatalf("reasons not sorted: %v before %v", a, b)
		}
	}
}

func checkFabric(t *testing.T, f *topology.Fabric) {
	t.Helper()
	for _, name := range f.NodeNames() {
		n, ok := f.Node(name)
		if !ok {
			t.Fatalf("listed node %q not found", name)
		}
		checkNode(t, n)
		for _, z := range n.Zones {
			for _, c := range z.NICs {
				leaf, ok := f.Leaf(c.S0)
				if !ok {
					t.Fatalf("node %s NIC %s: leaf %q missing", name, c.ID, c.S0)
				}
				if !leafHolds(leaf, name, c.ID) {
					t.Fatalf("leaf %q has no slot with node %s NIC %s", c.S0, name, c.ID)
				}
				if s0, ok := f.NICLeaf(name, c.ID); !ok || s0 != c.S0 {
					t.Fatalf("NICLeaf(%s, %s) = %q, %v; want %q", name, c.ID, s0, ok, c.S0)
				}
			}
		}
	}
	for _, s1 := range f.S1IDs() {
		for _, id := range f.LeavesOf(s1) {
			if l, ok := f.Leaf(id); !ok || l.S1 != s1 {
				t.Fatalf("S1 %q lists leaf %q with S1 %v", s1, id, l)
			}
		}
	}
}

func leafHolds(l *topology.Leaf, node string, nic topology.NICID) bool {
	for _, s := range l.Slots {
		if s.Node.Name != node {
			continue
		}
		for _, id := range s.NICs {
			if id == nic {
				return true
			}
		}
	}
	return false
}
