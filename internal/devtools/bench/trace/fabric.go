package trace

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Fabrics of the generated cluster (`rdmatopo-dev bench --fabric`).
const (
	// FabricProvider is the provider's cabling: every NIC of a NUMA zone
	// under one leaf (the NUMA-0 NICs of 16 nodes on one S0, their NUMA-1
	// NICs on another).
	FabricProvider = "provider"
	// FabricRail is rail cabling: 8 GPUs and 8 NICs per node (4 + 4 per
	// NUMA zone), NIC i of every node of a 32-node scalable unit on that
	// unit's rail leaf i.
	FabricRail = "rail"
	// FabricMixed is a third of provider nodes, a third of rail nodes and a
	// third of topology-unknown nodes (each of their NICs a leaf of its
	// own).
	FabricMixed = "mixed"
	// FabricUnits is the provider's cabling with NICs of several RDMA
	// units (shared NICs): every NIC of 4 units, except the NICs of every
	// third node, of 2 (mixed capacities). A NIC serves pods up to its
	// units, one unit per pod and NIC.
	FabricUnits = "units"
)

// Fabrics lists the fabric names in the order the docs give them.
var Fabrics = []string{FabricProvider, FabricRail, FabricMixed, FabricUnits}

// NIC units of FabricUnits: unitsPerNIC, and smallUnitsPerNIC on every
// smallUnitsEvery-th node.
const (
	unitsPerNIC      = 4
	smallUnitsPerNIC = 2
	smallUnitsEvery  = 3
)

// Rail fabric shape.
const (
	// railUnitNodes is the nodes of one scalable unit (one set of rails).
	railUnitNodes = 32
	// railsPerUnit is the rail leaves of a unit: one per NIC of a node.
	railsPerUnit = 8
	// railUnitsPerS1 puts two units (64 nodes, as many as a provider S1)
	// under one S1.
	railUnitsPerS1 = 2
	// unknownNodesPerS1 is the topology-unknown nodes under one S1 label.
	unknownNodesPerS1 = 64
)

// railNICs lists the PCI addresses of a rail node's NICs per NUMA zone;
// NIC i (counting zone 0 first) is cabled to rail i of its unit.
var railNICs = [2][]string{
	{"0000:1a:00.0", "0000:1b:00.0", "0000:3f:00.0", "0000:40:00.0"},
	{"0000:d1:00.0", "0000:d2:00.0", "0000:e7:00.0", "0000:e8:00.0"},
}

// railLeafID is the opaque hash of rail rail of scalable unit unit (40 hex
// digits, like the provider's leaves, from a name no provider leaf uses).
func railLeafID(unit, rail int) string {
	sum := sha1.Sum([]byte("rail-" + strconv.Itoa(unit) + "-" + strconv.Itoa(rail)))
	return hex.EncodeToString(sum[:])
}

// unlabelledLeafID is the leaf the KCNR of an unlabelled topology-unknown
// node names for its NICs (the label, not the KCNR, makes it unknown).
func unlabelledLeafID(group, numa int) string {
	sum := sha1.Sum([]byte("unlabelled-" + strconv.Itoa(group) + "-" + strconv.Itoa(numa)))
	return hex.EncodeToString(sum[:])
}

// CheckFabric returns an error unless fabric names a generated fabric.
func CheckFabric(fabric string) error {
	for _, f := range Fabrics {
		if fabric == f {
			return nil
		}
	}
	return fmt.Errorf("--fabric must be %s, %s, %s or %s, got %q", FabricProvider, FabricRail, FabricMixed, FabricUnits, fabric)
}

// ZoneNICs lists, per node of a generated cluster, the PCI addresses of
// each NUMA zone's NICs: what a pre-bound pod holding a whole zone names.
type ZoneNICs [][2][]string

// providerZoneNICs is the provider node's NICs per zone.
func providerZoneNICs() [2][]string {
	return [2][]string{builders.NUMANICs[0][:], builders.NUMANICs[1][:]}
}

// NewFabricCluster generates nodes nodes of the named fabric with pre-bound
// pods, deterministically from seed. FabricProvider gives exactly
// NewCluster's cluster. Every fabric gets the same occupancy: per group of
// 16 consecutive nodes a share full, a share partly used, the rest empty;
// each pre-bound pod holds a whole NUMA zone (4 GPU and all the zone's
// NICs) and carries the rdmatopo.io/nics and rdmatopo.io/numa annotations
// a previous placement would have written, so both schedulers see the same
// occupancy.
func NewFabricCluster(fabric string, nodes int, seed uint64) (*workload.Cluster, error) {
	if err := CheckFabric(fabric); err != nil {
		return nil, err
	}
	var c *workload.Cluster
	var nics ZoneNICs
	switch fabric {
	case FabricProvider:
		c, nics = ProviderPart(nodes)
	case FabricUnits:
		c, nics = ProviderPart(nodes)
		for i := range c.CNRs {
			units := int64(unitsPerNIC)
			if i%smallUnitsEvery == smallUnitsEvery-1 {
				units = smallUnitsPerNIC
			}
			setNICUnits(c.Nodes[i], c.CNRs[i], units)
		}
	case FabricRail:
		c, nics = railPart(0, nodes, 0)
	case FabricMixed:
		nProv, nRail := nodes/3, nodes/3
		c, nics = ProviderPart(nProv)
		s1 := providerS1s(nProv)
		r, rn := railPart(nProv, nRail, s1)
		s1 += (nRail + railUnitNodes*railUnitsPerS1 - 1) / (railUnitNodes * railUnitsPerS1)
		u, un := unknownPart(nProv+nRail, nodes-nProv-nRail, s1)
		for _, part := range []*workload.Cluster{r, u} {
			c.Nodes = append(c.Nodes, part.Nodes...)
			c.CNRs = append(c.CNRs, part.CNRs...)
		}
		nics = append(append(nics, rn...), un...)
	}
	for _, n := range c.Nodes {
		q := *resource.NewQuantity(PodsPerNode, resource.DecimalSI)
		n.Status.Allocatable[corev1.ResourcePods] = q
		n.Status.Capacity[corev1.ResourcePods] = q
	}
	occupy(c, nics, seed)
	return c, nil
}

// setNICUnits gives every NIC zone of a KCNR units RDMA units (allocatable
// and capacity); its NUMA zones and its Node count their NICs' units.
func setNICUnits(node *corev1.Node, cnr *v1alpha1.CustomNodeResource, units int64) {
	rdma := corev1.ResourceName(builders.RDMAResource)
	qty := func(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
	var total int64
	var walk func(zs []*v1alpha1.TopologyZone) int64
	walk = func(zs []*v1alpha1.TopologyZone) int64 {
		var sum int64
		for _, z := range zs {
			if z == nil {
				continue
			}
			n := walk(z.Children)
			if z.Type == v1alpha1.TopologyTypeNIC {
				n = units
			}
			for _, l := range []*corev1.ResourceList{z.Resources.Allocatable, z.Resources.Capacity} {
				if l != nil {
					if _, ok := (*l)[rdma]; ok {
						(*l)[rdma] = qty(n)
					}
				}
			}
			if z.Type == v1alpha1.TopologyTypeNuma {
				total += n
			}
			sum += n
		}
		return sum
	}
	walk(cnr.Status.TopologyZone)
	node.Status.Allocatable[rdma] = qty(total)
	node.Status.Capacity[rdma] = qty(total)
}

// ProviderPart is the provider-cabled cluster of NewCluster, nodes
// NodeName(0..nodes-1), without pre-bound pods.
func ProviderPart(nodes int) (*workload.Cluster, ZoneNICs) {
	ns, cnrs := builders.ClusterShape{Nodes: nodes, ZonesPerLeaf: zonesPerLeaf,
		LeavesPerS1: leavesPerS1, SpanningEvery: spanningEvery}.Generate()
	nics := make(ZoneNICs, nodes)
	for i := range nics {
		nics[i] = providerZoneNICs()
	}
	return &workload.Cluster{Nodes: ns, CNRs: cnrs}, nics
}

// providerS1s is the number of S1s the provider part of nodes nodes uses.
func providerS1s(nodes int) int {
	groups := (nodes + zonesPerLeaf - 1) / zonesPerLeaf
	return (2*groups + leavesPerS1 - 1) / leavesPerS1
}

// policyOf is the topology policy of generated node i: every fourth node
// spans zones, as in the provider part.
func policyOf(i int) v1alpha1.TopologyPolicy {
	if i%spanningEvery == spanningEvery-1 {
		return v1alpha1.TopologyPolicyNone
	}
	return v1alpha1.TopologyPolicySingleNUMANodeContainerLevel
}

// GeneratedNode is a Node of gpus GPUs and nics RDMA NICs (two NUMA zones'
// worth of CPU and memory) in S1 s1; shared sets vke.node.rdma.mode=shared.
func GeneratedNode(name, s1 string, gpus, nics int64, shared bool) *corev1.Node {
	w := builders.MakeNode(name).GPU(gpus).RDMA(nics).CPU("128").Resource(corev1.ResourceMemory, "2Ti").
		Label(builders.KatalystDeployLabel, "true").S1(s1)
	if shared {
		w.Shared()
	}
	return w.Obj()
}

// railPart generates count rail-cabled nodes, NodeName(first..), their
// scalable units counted from the part's first node and their S1s from
// S1Name(firstS1).
func railPart(first, count, firstS1 int) (*workload.Cluster, ZoneNICs) {
	c := &workload.Cluster{}
	nics := make(ZoneNICs, count)
	for j := 0; j < count; j++ {
		i := first + j
		unit := j / railUnitNodes
		name := builders.NodeName(i)
		c.Nodes = append(c.Nodes, GeneratedNode(name, builders.S1Name(firstS1+unit/railUnitsPerS1), 8, 8, true))
		w := builders.MakeCNR(name).Policy(policyOf(i)).Zone(0, 4, 64000).Zone(1, 4, 64000)
		rail := 0
		for numa, list := range railNICs {
			for _, pci := range list {
				w.NIC(pci, numa, railLeafID(unit, rail))
				rail++
			}
		}
		c.CNRs = append(c.CNRs, w.Obj())
		nics[j] = railNICs
	}
	return c, nics
}

// unknownPart generates count topology-unknown nodes of the provider's
// shape (two zones of 4 GPUs and two NICs), NodeName(first..), with S1s
// from S1Name(firstS1). Every other node lacks the vke.node.rdma.mode=shared
// label (its KCNR names leaves the scheduler must not trust); the others
// are labelled but their KCNRs have no RDMATOR properties.
func unknownPart(first, count, firstS1 int) (*workload.Cluster, ZoneNICs) {
	c := &workload.Cluster{}
	nics := make(ZoneNICs, count)
	for j := 0; j < count; j++ {
		i := first + j
		name := builders.NodeName(i)
		unlabelled := j%2 == 0
		c.Nodes = append(c.Nodes, GeneratedNode(name, builders.S1Name(firstS1+j/unknownNodesPerS1), 8, 4, !unlabelled))
		w := builders.MakeCNR(name).Policy(policyOf(i)).Zone(0, 4, 64000).Zone(1, 4, 64000)
		for numa, list := range providerZoneNICs() {
			leaf := ""
			if unlabelled {
				leaf = unlabelledLeafID(j/zonesPerLeaf, numa)
			}
			for _, pci := range list {
				w.NIC(pci, numa, leaf)
			}
		}
		c.CNRs = append(c.CNRs, w.Obj())
		nics[j] = providerZoneNICs()
	}
	return c, nics
}

// occupy adds the pre-bound pods: per group of zonesPerLeaf consecutive
// nodes a share of groups full, a share partly used (each NUMA zone taken
// with a probability drawn in [0.2, 0.8)), the rest empty. nics[i] are the
// NICs of node i's zones.
func occupy(c *workload.Cluster, nics ZoneNICs, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x636c7573))
	nodes := len(nics)
	created := workload.Epoch.Add(-24 * time.Hour)
	for g := 0; g*zonesPerLeaf < nodes; g++ {
		var p float64
		switch x := rng.Float64(); {
		case x < fullGroupShare:
			p = 1
		case x < fullGroupShare+partialGroupShare:
			p = 0.2 + 0.6*rng.Float64()
		}
		for i := g * zonesPerLeaf; i < min((g+1)*zonesPerLeaf, nodes); i++ {
			for numa := 0; numa < 2; numa++ {
				if p == 0 || rng.Float64() >= p {
					continue
				}
				c.Pods = append(c.Pods, PreboundPod(builders.NodeName(i), numa, nics[i][numa], created))
			}
		}
	}
}
