package builders

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The provider's node shape: 2 NUMA zones, each with 4 GPUs, 64 CPUs and two
// RDMA NICs; the NUMA-0 NICs go to one leaf, the NUMA-1 NICs to another.
var (
	// NUMANICs lists the NIC PCI addresses of each NUMA zone.
	NUMANICs = [2][2]string{{"0000:1a:00.0", "0000:3f:00.0"}, {"0000:d1:00.0", "0000:e7:00.0"}}
)

const (
	gpusPerNUMA     = 4
	cpuMilliPerNUMA = 64000
)

// ProviderNode starts a Node of the provider's shape: shared RDMA mode,
// katalyst deployed, 8 GPUs, 4 RDMA NICs and 128 CPUs (no S1 label).
func ProviderNode(name string) *NodeWrapper {
	return MakeNode(name).Shared().GPU(2 * gpusPerNUMA).RDMA(4).CPU("128")
}

// ProviderCNR starts the KCNR of a node of the provider's shape: policy
// SingleNUMANodeContainerLevel, NUMA zones 0 and 1 of 4 GPUs and 64 CPUs,
// the NUMA-0 NICs (NUMANICs[0]) under leaf0 and the NUMA-1 NICs under
// leaf1, nothing allocated.
func ProviderCNR(name, leaf0, leaf1 string) *CNRWrapper {
	return MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, gpusPerNUMA, cpuMilliPerNUMA).Zone(1, gpusPerNUMA, cpuMilliPerNUMA).
		NIC(NUMANICs[0][0], 0, leaf0).NIC(NUMANICs[0][1], 0, leaf0).
		NIC(NUMANICs[1][0], 1, leaf1).NIC(NUMANICs[1][1], 1, leaf1)
}

// ClusterShape describes a generated cluster in the provider's shape.
type ClusterShape struct {
	// Nodes is the number of nodes, named NodeName(0..Nodes-1).
	Nodes int
	// ZonesPerLeaf is how many NUMA zones share one leaf (S0); 16 if 0.
	// Consecutive groups of ZonesPerLeaf nodes share a pair of leaves: their
	// NUMA-0 NICs go to LeafID(2g), their NUMA-1 NICs to LeafID(2g+1).
	ZonesPerLeaf int
	// LeavesPerS1 is how many leaves form one S1 (miniPod); 8 if 0. A node of
	// group g is labelled S1Label=S1Name(2g/LeavesPerS1).
	LeavesPerS1 int
	// SpanningEvery, when > 0, gives every SpanningEvery-th node (index
	// i%SpanningEvery == SpanningEvery-1) the policy None instead of
	// SingleNUMANodeContainerLevel.
	SpanningEvery int
	// NICUnits is each NIC's RDMA units (allocatable and capacity); 1 if 0.
	// Pods requesting RDMA units then share a NIC up to its units.
	NICUnits int64
}

// GenerateCluster returns nodes and KCNRs in the provider's shape (see
// ClusterShape), all with policy SingleNUMANodeContainerLevel. The output is
// deterministic.
func GenerateCluster(nodes, zonesPerLeaf, leavesPerS1 int) ([]*corev1.Node, []*v1alpha1.CustomNodeResource) {
	return ClusterShape{Nodes: nodes, ZonesPerLeaf: zonesPerLeaf, LeavesPerS1: leavesPerS1}.Generate()
}

// TwoLeavesFourNodes is a small fixture: nodes n1..n4 in S1 "s1-0", NUMA-0
// NICs under leaf "leafA", NUMA-1 NICs under "leafB", policy
// SingleNUMANodeContainerLevel, nothing allocated.
func TwoLeavesFourNodes() ([]*corev1.Node, []*v1alpha1.CustomNodeResource) {
	var nodes []*corev1.Node
	var cnrs []*v1alpha1.CustomNodeResource
	for i := 1; i <= 4; i++ {
		name := "n" + strconv.Itoa(i)
		nodes = append(nodes, ProviderNode(name).S1("s1-0").Obj())
		cnrs = append(cnrs, ProviderCNR(name, "leafA", "leafB").Obj())
	}
	return nodes, cnrs
}

// NodeName names the i-th generated node.
func NodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// S1Name names the i-th generated S1.
func S1Name(i int) string { return "s1-" + strconv.Itoa(i) }

// LeafID returns the opaque hash of the i-th generated leaf (40 hex digits,
// like the provider's).
func LeafID(i int) string {
	sum := sha1.Sum([]byte("leaf-" + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:])
}

// Generate builds the cluster.
func (s ClusterShape) Generate() ([]*corev1.Node, []*v1alpha1.CustomNodeResource) {
	if s.ZonesPerLeaf <= 0 {
		s.ZonesPerLeaf = 16
	}
	if s.LeavesPerS1 <= 0 {
		s.LeavesPerS1 = 8
	}
	if s.NICUnits <= 0 {
		s.NICUnits = 1
	}
	nodes := make([]*corev1.Node, 0, s.Nodes)
	cnrs := make([]*v1alpha1.CustomNodeResource, 0, s.Nodes)
	var leaves []string
	for i := 0; i < s.Nodes; i++ {
		g := i / s.ZonesPerLeaf
		for len(leaves) < 2*g+2 {
			leaves = append(leaves, LeafID(len(leaves)))
		}
		name := NodeName(i)
		nodes = append(nodes, generatedNode(name, S1Name(2*g/s.LeavesPerS1), s.NICUnits))
		policy := v1alpha1.TopologyPolicySingleNUMANodeContainerLevel
		if s.SpanningEvery > 0 && i%s.SpanningEvery == s.SpanningEvery-1 {
			policy = v1alpha1.TopologyPolicyNone
		}
		cnrs = append(cnrs, generatedCNR(name, policy, [2]string{leaves[2*g], leaves[2*g+1]}, s.NICUnits))
	}
	return nodes, cnrs
}

func qty(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

func generatedNode(name, s1 string, nicUnits int64) *corev1.Node {
	res := func() corev1.ResourceList {
		return corev1.ResourceList{
			corev1.ResourceCPU:    qty(2 * cpuMilliPerNUMA / 1000),
			corev1.ResourceMemory: *resource.NewQuantity(2<<40, resource.BinarySI),
			GPUResource:           qty(2 * gpusPerNUMA),
			RDMAResource:          qty(4 * nicUnits),
		}
	}
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			RDMAModeLabel:       "shared",
			KatalystDeployLabel: "true",
			S1Label:             s1,
		}},
		Status: corev1.NodeStatus{Capacity: res(), Allocatable: res()},
	}
}

func generatedCNR(name string, policy v1alpha1.TopologyPolicy, leaves [2]string, nicUnits int64) *v1alpha1.CustomNodeResource {
	cnr := &v1alpha1.CustomNodeResource{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "CustomNodeResource"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	cnr.Status.TopologyPolicy = policy
	for numa := 0; numa < 2; numa++ {
		id := strconv.Itoa(numa)
		res := func() *corev1.ResourceList {
			return &corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMilliPerNUMA, resource.DecimalSI),
				GPUResource:        qty(gpusPerNUMA),
				RDMAResource:       qty(2 * nicUnits),
			}
		}
		z := &v1alpha1.TopologyZone{
			Type:      v1alpha1.TopologyTypeNuma,
			Name:      id,
			Resources: v1alpha1.Resources{Allocatable: res(), Capacity: res()},
		}
		for _, pci := range NUMANICs[numa] {
			z.Children = append(z.Children, &v1alpha1.TopologyZone{
				Type: v1alpha1.TopologyTypeNIC,
				Name: pci,
				Resources: v1alpha1.Resources{
					Allocatable: &corev1.ResourceList{RDMAResource: qty(nicUnits)},
					Capacity:    &corev1.ResourceList{RDMAResource: qty(nicUnits)},
				},
			})
			cnr.Spec.NodeResourceProperties = append(cnr.Spec.NodeResourceProperties, &v1alpha1.Property{
				PropertyName:   RDMATorPrefix + pci,
				PropertyValues: []string{leaves[numa]},
			})
		}
		cnr.Status.TopologyZone = append(cnr.Status.TopologyZone, &v1alpha1.TopologyZone{
			Type:     v1alpha1.TopologyTypeSocket,
			Name:     id,
			Children: []*v1alpha1.TopologyZone{z},
		})
	}
	return cnr
}
