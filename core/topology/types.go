// Package topology turns Kubernetes Nodes and katalyst CustomNodeResources
// (KCNRs) into an immutable model of a two-tier RDMA fabric: nodes, their NUMA
// zones with free GPUs / CPUs / NICs, the S0 leaf switch each NIC is cabled
// to, and the S1 (miniPod) each S0 belongs to.
//
// The package never imports Volcano. A Fabric is read-only once built and is
// safe for concurrent readers; a Cache applies per-node updates and hands out
// cheap Fabric snapshots.
package topology

import (
	"fmt"
)

// NICID names a NIC as its KCNR NIC zone does. A name that looks like a PCI
// address ("0000:1A:00.0", "1a:00.0") is kept in lower case, so PCI addresses
// compare in lower case; any other name ("mlx5_0", "eth-rdma0") is kept
// verbatim. See NormalizeNICName. A NIC name never contains a comma or
// whitespace: such a NIC cannot be written into the comma-separated
// rdmatopo.io/nics annotation and is not handed out (ReasonBadNICName).
type NICID string

// S0ID identifies a leaf switch. For a NIC whose leaf is known it is the opaque
// hash from the KCNR's RDMATOR/<pci> property; for a NIC of unknown leaf it is
// a synthetic id built by UnknownS0 (each such NIC is a leaf of its own).
type S0ID string

// S1ID identifies an S1 switch (miniPod). Empty when S1 membership is unknown.
type S1ID string

// Well-known names used when reading Nodes and KCNRs.
const (
	// DefaultRDMAResource is the extended resource of an RDMA NIC.
	DefaultRDMAResource = "vke.volcengine.com/rdma"
	// DefaultGPUResource is the extended resource of a GPU.
	DefaultGPUResource = "nvidia.com/gpu"
	// RDMAModeLabel marks nodes that report RDMA topology when set to "shared".
	RDMAModeLabel = "vke.node.rdma.mode"
	// RDMAModeShared is the value of RDMAModeLabel for topology-reporting nodes.
	RDMAModeShared = "shared"
	// KatalystDeployLabel marks nodes katalyst manages.
	KatalystDeployLabel = "vke.node.katalyst.deploy"
	// RDMATorPrefix prefixes the KCNR property naming a NIC's S0 switch.
	RDMATorPrefix = "RDMATOR/"
	// UnknownS0Prefix prefixes synthetic S0 ids of topology-unknown NICs.
	UnknownS0Prefix = "unknown:"
	// SyntheticNICPrefix prefixes the NIC ids ("rdma-0", "rdma-1", ...)
	// invented for a node that has RDMA capacity but no NIC topology.
	SyntheticNICPrefix = "rdma-"
)

// UnknownS0 returns the synthetic leaf of a NIC whose S0 is not known: one
// leaf per NIC, so such NICs never look closer to each other than they are.
func UnknownS0(node string, nic NICID) S0ID {
	return S0ID(UnknownS0Prefix + node + "/" + string(nic))
}

// IsUnknown reports whether the S0 is a synthetic leaf of a topology-unknown NIC.
func (s S0ID) IsUnknown() bool {
	return len(s) >= len(UnknownS0Prefix) && string(s[:len(UnknownS0Prefix)]) == UnknownS0Prefix
}

// ReasonCode is the typed cause of a topology problem on a node or NIC.
type ReasonCode string

// Reason codes. Each marks the node (or NIC) topology-unknown in a defined way;
// none is ever a panic or a silent drop.
const (
	// ReasonNoKCNR: the node has RDMA capacity but no KCNR.
	ReasonNoKCNR ReasonCode = "NoKCNR"
	// ReasonNotShared: the node lacks the vke.node.rdma.mode=shared label.
	ReasonNotShared ReasonCode = "RDMANotShared"
	// ReasonNICWithoutLeaf: a NIC has no (usable) RDMATOR/<pci> property.
	ReasonNICWithoutLeaf ReasonCode = "NICWithoutLeaf"
	// ReasonEmptyProperty: an RDMATOR property is nil or has no value.
	ReasonEmptyProperty ReasonCode = "EmptyProperty"
	// ReasonMalformedZone: a topology zone is nil, untyped, misplaced or has a
	// bad name (non-decimal NUMA id, empty NIC name).
	ReasonMalformedZone ReasonCode = "MalformedZone"
	// ReasonDuplicateNIC: the same NIC is listed under two NUMA zones; it is
	// counted once, under the first zone.
	ReasonDuplicateNIC ReasonCode = "DuplicateNIC"
	// ReasonLeafWithoutNIC: an RDMATOR property names a NIC not in any zone.
	ReasonLeafWithoutNIC ReasonCode = "LeafWithoutNIC"
	// ReasonNoTopology: the KCNR has no NUMA zones at all.
	ReasonNoTopology ReasonCode = "NoTopology"
	// ReasonBadQuantity: a resource quantity is negative or unparsable.
	ReasonBadQuantity ReasonCode = "BadQuantity"
	// ReasonNameMismatch: the KCNR name does not match the node name.
	ReasonNameMismatch ReasonCode = "NameMismatch"
	// ReasonBadProperty: an RDMATOR property value cannot name a leaf (it
	// carries surrounding spaces, a comma or the reserved UnknownS0Prefix); the
	// NIC is treated as having no leaf.
	ReasonBadProperty ReasonCode = "BadProperty"
	// ReasonDuplicateProperty: two RDMATOR properties name the same NIC with
	// different leaves; the first one is used.
	ReasonDuplicateProperty ReasonCode = "DuplicateProperty"
	// ReasonS1Mismatch: the nodes under one leaf carry different S1 labels;
	// the leaf takes the S1 of its first node by name.
	ReasonS1Mismatch ReasonCode = "S1Mismatch"
	// ReasonUnknownPolicy: status.topologyPolicy is set to a value katalyst
	// does not define (a misspelling such as "SingleNUMANodeContainerLvl");
	// the node is read as SingleNUMANodePodLevel (PolicySingleNUMA), the
	// strictest reading.
	ReasonUnknownPolicy ReasonCode = "UnknownPolicy"
	// ReasonBadNICName: a NIC zone's name holds a comma, whitespace or
	// invalid UTF-8, so it cannot round-trip through the rdmatopo.io/nics
	// annotation; the NIC is skipped (never handed out).
	ReasonBadNICName ReasonCode = "BadNICName"
	// ReasonDuplicateNUMA: two Numa zones of one node carry the same id; the
	// later zone (and everything under it) is skipped.
	ReasonDuplicateNUMA ReasonCode = "DuplicateNUMA"
	// ReasonMultiplePropertyValues: an RDMATOR property lists more than one
	// value; propertyValues[0] names the leaf, the others are ignored.
	ReasonMultiplePropertyValues ReasonCode = "MultiplePropertyValues"
)

// Reason is one topology problem: which node (and NIC, if any), its code and a
// human-readable message naming the field.
type Reason struct {
	Node    string
	NIC     NICID
	Code    ReasonCode
	Message string
}

func (r Reason) String() string {
	if r.NIC != "" {
		return fmt.Sprintf("node %s NIC %s: %s: %s", r.Node, r.NIC, r.Code, r.Message)
	}
	return fmt.Sprintf("node %s: %s: %s", r.Node, r.Code, r.Message)
}

// Policy is a node's katalyst topology policy reduced to what placement needs.
type Policy int

const (
	// PolicySingleNUMA: each pod's GPUs, NICs and CPUs come from one NUMA
	// zone (SingleNUMANodePodLevel, and any value katalyst does not define,
	// reported as ReasonUnknownPolicy: the strictest reading).
	PolicySingleNUMA Policy = iota
	// PolicySpanning: a pod may span NUMA zones (None, BestEffort*,
	// Restricted*, Numeric*, or an unset policy, which katalyst reads as its
	// default None).
	PolicySpanning
	// PolicySingleNUMAContainer: each container's GPUs, NICs and CPUs come
	// from one NUMA zone; the containers of one pod may use different zones
	// (SingleNUMANodeContainerLevel: kubelet's topology manager with policy
	// single-numa-node and scope container). A pod of one container is
	// placed as under PolicySingleNUMA.
	PolicySingleNUMAContainer
)

// Aligned reports whether the policy binds each pod (PolicySingleNUMA) or
// each container (PolicySingleNUMAContainer) to one NUMA zone.
func (p Policy) Aligned() bool { return p != PolicySpanning }

// NIC is one RDMA NIC, counted in units of the RDMA resource.
//
// Units is the NIC zone's resources.allocatable of the RDMA resource (1 when
// the zone does not list it, as katalyst reports one unit per NIC; a negative
// value is reported and read as 0). FreeUnits is Units minus the RDMA
// requests of the zone's allocations, clamped at 0. An allocation whose
// consumer is set but whose requests are missing or name no RDMA resource
// holds the whole NIC (FreeUnits 0): the node agent gave the NIC to that
// pod without saying how much of it. An allocation with neither consumer nor
// RDMA request holds nothing. Synthetic NICs of a node without topology
// have one unit.
type NIC struct {
	ID NICID
	// NUMA is the id of the NUMA zone the NIC hangs off.
	NUMA int
	// S0 is the NIC's leaf switch (synthetic when unknown).
	S0 S0ID
	// Free is true when the NIC has at least one free unit (FreeUnits > 0).
	Free bool
	// Consumers are the KCNR consumers ("namespace/name/uid") holding the NIC.
	Consumers []string
	// Units is the NIC's allocatable RDMA units (>= 0).
	Units int64
	// FreeUnits is Units minus the units the KCNR allocations hold, in
	// [0, Units].
	FreeUnits int64
}

// Zone is one NUMA zone of a node.
type Zone struct {
	// ID is the NUMA id (decimal name of the KCNR zone).
	ID int
	// FreeGPU and FreeCPUMilli are allocatable minus KCNR allocations, >= 0.
	FreeGPU      int64
	FreeCPUMilli int64
	// NICs hang off this zone, sorted by ID.
	NICs []NIC
}

// Node is the fabric view of one node. Immutable once built.
type Node struct {
	Name string
	// S1 is the node's miniPod (from the configured label), empty if unknown.
	S1 S1ID
	// KCNROnly is true when the node is known from its KCNR alone, with no
	// Node object (deleted, or not created yet): its S1 is unknown, so it
	// decides no leaf's S1 (newLeaf).
	KCNROnly bool
	// Policy is the node's topology policy.
	Policy Policy
	// Known is true when every NIC of the node has a known S0.
	Known bool
	// Zones sorted by ID.
	Zones []Zone
	// Reasons lists the problems found while reading the node (sorted).
	Reasons []Reason
	// Consumers maps a KCNR consumer ("namespace/name/uid") listed anywhere
	// on the node to true, so a ledger can confirm reservations.
	Consumers map[string]bool
	// Generation counts rebuilds of this node in a Cache.
	Generation int64
}

// Config selects the resources and labels read from Nodes and KCNRs.
type Config struct {
	RDMAResource string // default DefaultRDMAResource
	GPUResource  string // default DefaultGPUResource
	// S1Source is where a node's S1 comes from (default S1FromLabel).
	S1Source S1Source
	// S1NodeLabel names the S1 label (S1FromLabel); empty: all S0s form
	// one S1 ("").
	S1NodeLabel string
	// S1HyperNodeTier is the HyperNode tier read as S1 (S1FromHyperNode;
	// default DefaultS1HyperNodeTier).
	S1HyperNodeTier int
}

// Slot is one NUMA zone of one node, seen from one leaf: the zone's NICs that
// are cabled to that leaf. A zone whose NICs go to two leaves appears as one
// slot in each; its GPUs and CPUs are shared between those slots.
type Slot struct {
	// Node is the node the zone belongs to.
	Node *Node
	// Zone indexes Node.Zones.
	Zone int
	// NICs are the zone's NICs under this leaf (sorted), free or not.
	NICs []NICID
}

// Leaf is an S0 switch and every slot that has a NIC under it. Immutable.
type Leaf struct {
	ID S0ID
	// S1 is the miniPod of the leaf (the S1 of its nodes; "" if unknown).
	S1 S1ID
	// Slots sorted by node name, then zone id.
	Slots []Slot
	// Reasons lists problems seen on the leaf as a whole (ReasonS1Mismatch),
	// sorted by node, code, NIC and message.
	Reasons []Reason
}
