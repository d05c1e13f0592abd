package placement

import (
	"fmt"
	"strings"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Tier is how far apart a gang's pods are; lower is tighter.
type Tier int

// Tiers, tightest first. TierNone marks "no placement" (and non-RDMA jobs).
const (
	TierNode Tier = iota
	TierS0
	TierS1
	TierCluster
	TierNone Tier = -1
)

// String returns the name of the tier (docs/design.md "Tiers") ("" for TierNone).
func (t Tier) String() string {
	switch t {
	case TierNode:
		return "node"
	case TierS0:
		return "s0"
	case TierS1:
		return "s1"
	case TierCluster:
		return "cluster"
	}
	return ""
}

// ParseTier reads a tier name as written in rdmatopo.io/highest-tier.
func ParseTier(s string) (Tier, error) {
	switch strings.TrimSpace(s) {
	case "node":
		return TierNode, nil
	case "s0":
		return TierS0, nil
	case "s1":
		return TierS1, nil
	case "cluster":
		return TierCluster, nil
	}
	return TierNone, fmt.Errorf("unknown tier %q (want node, s0, s1 or cluster)", s)
}

// Mode says whether the highest tier is a limit (hard) or a preference (soft).
type Mode int

const (
	// ModeSoft places the gang at the tightest tier available, however wide.
	ModeSoft Mode = iota
	// ModeHard never places the gang wider than its highest tier.
	ModeHard
)

// String returns "soft" or "hard".
func (m Mode) String() string {
	if m == ModeHard {
		return "hard"
	}
	return "soft"
}

// ParseMode reads rdmatopo.io/mode.
func ParseMode(s string) (Mode, error) {
	switch strings.TrimSpace(s) {
	case "soft":
		return ModeSoft, nil
	case "hard":
		return ModeHard, nil
	}
	return ModeSoft, fmt.Errorf("unknown mode %q (want hard or soft)", s)
}

// Defaults of the job contract (docs/design.md "Job contract").
const (
	DefaultMode        = ModeSoft
	DefaultHighestTier = TierS1
)

// Shape is what one pod needs on one node: GPU, NICs and CPUMilli are the
// whole pod's as kubelet's topology manager aligns it in NUMA zones (its
// effective request, init containers and sidecars counted as Kubernetes
// counts them, without the pod overhead).
type Shape struct {
	GPU      int64
	NICs     int64
	CPUMilli int64
	// NodeExtra is what the pod takes from its node beyond what is aligned
	// in zones (a RuntimeClass's pod overhead, as the session counts the
	// pod): it counts against the node's Cap, never against a zone.
	NodeExtra Cap
	// Containers, when not empty, splits the need among the pod's
	// containers (containers.go, built by SplitShape), for nodes whose
	// policy binds each container to one zone
	// (topology.PolicySingleNUMAContainer): there each part takes one
	// zone, and different parts may take different zones. Empty for a pod
	// whose need sits in one container; the shape is then one part. It is
	// an encoding, so that shapes stay comparable.
	Containers string
}

// String renders a shape for reasons, e.g. "4 GPU + 2 RDMA".
func (s Shape) String() string {
	var parts []string
	if s.GPU > 0 {
		parts = append(parts, fmt.Sprintf("%d GPU", s.GPU))
	}
	if s.NICs > 0 {
		parts = append(parts, fmt.Sprintf("%d RDMA", s.NICs))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%dm CPU", s.CPUMilli))
	}
	out := strings.Join(parts, " + ")
	if n := len(s.Parts()); n > 1 {
		out += fmt.Sprintf(" in %d containers", n)
	}
	return out
}

// Pod is one pending pod of a gang.
type Pod struct {
	// UID identifies the pod; assignments are keyed by it.
	UID string
	// Name is "namespace/name", for messages.
	Name  string
	Shape Shape
	// Group indexes the pod's node filter (pods of one task share one).
	Group int
	// Rank is the pod's rank in its gang (Ranks); the planner lays the
	// gang's pods out in rank order (rankorder.go).
	Rank int
}

// Occupancy is where a gang's placed pods (bound or allocated) already
// are: their nodes, the leaves of their NICs and those leaves' S1s.
type Occupancy struct {
	Nodes map[string]bool
	S0s   map[topology.S0ID]bool
	S1s   map[topology.S1ID]bool
	// Pods counts the placed pods that use RDMA.
	Pods int
	// Ranks lists held pods with their ranks in the gang, in rank order,
	// when the caller ranked the held and the pending pods together (the
	// ranks of Gang.Pods then count the held pods too): a late pod is
	// placed next to its rank neighbours (neighbours.go) and a segment's
	// late pods go where its held pods are (segments.go). Empty: the
	// pending pods are ranked among themselves.
	Ranks []OccupiedRank
	// Home are the leaves the gang held when it lost the pods it plans
	// again (replacements after a failure: the lost pods' own leaves and
	// those of the pods it still holds, failed leaves left out). Its late
	// pods go back under them, as many as there is room for, before
	// anywhere else in its S1s (neighbours.go). Nil: no lost pods.
	Home map[topology.S0ID]bool
}

// OccupiedRank is one placed pod of a gang: its rank and where it sits.
type OccupiedRank struct {
	Rank int
	Node string
	// Leaves are the leaves of its NICs, sorted.
	Leaves []topology.S0ID
}

// leafKey names the leaves of a held pod as place.leaf does.
func (r OccupiedRank) leafKey() string {
	parts := make([]string, len(r.Leaves))
	for i, id := range r.Leaves {
		parts[i] = string(id)
	}
	return strings.Join(parts, ",")
}

// ranked reports whether the held pods carry ranks (Occupancy.Ranks).
func (h *Occupancy) ranked() bool { return h != nil && len(h.Ranks) > 0 }

// Empty reports whether the gang has no pod placed.
func (h *Occupancy) Empty() bool { return h == nil || len(h.Nodes) == 0 }

// Gang is the request: the gang's pending RDMA pods and its contract.
type Gang struct {
	// Job is "namespace/podgroup", for messages and ledger entries.
	Job string
	// Pods are the pending pods that request RDMA, in rank order.
	Pods []Pod
	// Need is how many of Pods must be placed for the gang to run (minMember
	// minus pods already placed); the planner places all Pods if it can,
	// else exactly Need of them: Fewer when it is set, else the first Need.
	Need int
	// Fewer, when set, are the Need pods of Pods (in rank order) to place
	// when not all fit: those that meet every minimum the scheduler checks
	// (a task role's minAvailable), which the first Need by rank may not.
	Fewer []Pod
	// Mode and HighestTier come from the PodGroup annotations.
	Mode        Mode
	HighestTier Tier
	// Occupancy is the placement the gang already has, if some pods are placed.
	Occupancy *Occupancy
	// Allowed filters nodes per pod group: the nodes the session's
	// predicates admit pods of that group on (taints and tolerations,
	// selectors, affinity, ports, pod counts, volumes). Pods of one gang
	// may have different groups, so different node sets. Nil allows every
	// node.
	Allowed func(node string, group int) bool
	// Admit, if set, says whether node takes pod next to the gang's pods
	// on it already in this plan (on, in the order placed): what the
	// fabric model does not hold, such as memory, ephemeral storage, the
	// node's pod limit, other extended resources, and conflicts among the
	// gang's own pods (host ports, required anti-affinity). Nil admits.
	Admit func(node string, pod Pod, on []Pod) bool
	// Exclude lists nodes a previous attempt found unusable.
	Exclude map[string]bool
	// ExcludeS0s lists leaves whose NICs the gang may not use (another
	// gang's claim on them); nil excludes none.
	ExcludeS0s map[topology.S0ID]bool
	// Segment keeps blocks of consecutive ranks within one domain
	// (segments.go); the zero value asks nothing.
	Segment Segment
	// Members is how many pods the gang's ranks number (the held pods of
	// Occupancy.Ranks, Pods, and pending pods planned later), which a segment
	// size must divide; 0 means len(Pods) plus len(Occupancy.Ranks).
	Members int
}

// Assignment is where one pod goes.
type Assignment struct {
	PodUID string
	Node   string
	// Zones are the NUMA zones used (one unless the pod spans zones).
	Zones []ledger.ZoneUse
	// Containers says where each container is when the pod's containers
	// were put in different zones (a split Shape on a container-level
	// node); nil otherwise.
	Containers []ledger.ContainerUse
}

// AssignmentOf is the assignment a reservation holds: its pod, node,
// zones and container split.
func AssignmentOf(r ledger.Reservation) Assignment {
	return Assignment{PodUID: r.UID, Node: r.Node, Zones: r.Zones, Containers: r.Containers}
}

// NICs lists the assignment's NICs in zone order.
func (a Assignment) NICs() []topology.NICID {
	var out []topology.NICID
	for _, z := range a.Zones {
		out = append(out, z.NICs...)
	}
	return out
}

// Plan is a complete placement for a gang.
type Plan struct {
	Tier Tier
	// S0s and S1s used by the whole gang (held pods included), sorted.
	S0s []topology.S0ID
	S1s []topology.S1ID
	// Assignments in the order of Gang.Pods (only placed pods).
	Assignments []Assignment
	// Leftover is the free NIC count left in the chosen leaves (best-fit key).
	Leftover int64
}

// ReasonCode is the typed cause of an unplaced gang.
type ReasonCode string

// Reason codes for unplaced gangs.
const (
	// ReasonNoCapacity: the whole fabric cannot hold the gang.
	ReasonNoCapacity ReasonCode = "NoCapacity"
	// ReasonTierLimit: the gang fits only wider than its hard highest tier.
	ReasonTierLimit ReasonCode = "TierLimit"
	// ReasonNoNodes: no node passes the gang's node filters.
	ReasonNoNodes ReasonCode = "NoNodes"
)

// Failure says why a gang could not be placed.
type Failure struct {
	Code ReasonCode
	// Message is human-readable, e.g. "no S0 can hold 8 pods of 4 GPU + 2
	// RDMA; the largest holds 5".
	Message string
	// Largest is the most pods of the gang's main shape one unit of the
	// limiting tier can hold.
	Largest int
}

func (f *Failure) Error() string { return string(f.Code) + ": " + f.Message }
