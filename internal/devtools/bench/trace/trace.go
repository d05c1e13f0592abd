package trace

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// PodKind is one of the trace's pod shapes.
type PodKind int

// Pod kinds of the trace.
const (
	// KindHalf is 4 GPU + 2 RDMA: one NUMA zone.
	KindHalf PodKind = iota
	// KindFull is 8 GPU + 4 RDMA: a whole node; only spanning-policy nodes
	// can hold it.
	KindFull
	// KindSmall is 1 GPU + 1 RDMA.
	KindSmall
	// KindCPU requests CPU only.
	KindCPU
	// KindGPUOnly is 4 GPU without RDMA: a pod beside a gang's RDMA pods
	// (--constraints on only).
	KindGPUOnly
)

// String names the kind for tables.
func (k PodKind) String() string {
	switch k {
	case KindHalf:
		return "4gpu-2rdma"
	case KindFull:
		return "8gpu-4rdma"
	case KindSmall:
		return "1gpu-1rdma"
	case KindCPU:
		return "cpu"
	case KindGPUOnly:
		return "4gpu"
	}
	return "kind-" + strconv.Itoa(int(k))
}

// cpuPerGPU is the CPU (cores) a GPU pod requests per GPU; cpuOnlyCores is
// what a CPU-only pod requests. Neither ever limits placement in the trace
// (a NUMA zone has 64 cores and 4 GPUs).
const (
	cpuPerGPU    = 4
	cpuOnlyCores = 2
)

// MarshalText renders the kind by name (String) in JSON reports.
func (k PodKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind as MarshalText writes it, so that the reports
// read back (the plot reads the committed JSON).
func (k *PodKind) UnmarshalText(b []byte) error {
	for c := KindHalf; c <= KindGPUOnly; c++ {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	if n, ok := strings.CutPrefix(string(b), "kind-"); ok {
		if i, err := strconv.Atoi(n); err == nil {
			*k = PodKind(i)
			return nil
		}
	}
	return fmt.Errorf("pod kind %q: want one of 4gpu-2rdma, 8gpu-4rdma, 1gpu-1rdma, cpu, 4gpu", b)
}

// Shape returns what a pod of the kind needs on a node, as the placement
// planner sees it. CPU is left out: it never binds in the trace, and the
// optimum is computed on GPUs and NICs.
func (k PodKind) Shape() placement.Shape {
	switch k {
	case KindHalf:
		return placement.Shape{GPU: 4, NICs: 2}
	case KindFull:
		return placement.Shape{GPU: 8, NICs: 4}
	case KindSmall:
		return placement.Shape{GPU: 1, NICs: 1}
	case KindGPUOnly:
		return placement.Shape{GPU: 4}
	}
	return placement.Shape{}
}

// GangSpec is one gang of the trace.
type GangSpec struct {
	// Name is the PodGroup's name (namespace DefaultNamespace).
	Name string
	// Pods is the gang size; minMember equals it.
	Pods int
	Kind PodKind
	// Mode and HighestTier are the rdmatopo job contract (ignored by the
	// baseline).
	Mode        placement.Mode
	HighestTier placement.Tier
	// Arrive is the cycle (1-based) before which the gang is submitted.
	Arrive int
	// Duration is how many cycles the gang runs once placed; it is deleted
	// before cycle placedCycle+Duration.
	Duration int

	// What --constraints on adds (constraints.go); zero values otherwise.
	// Master, when set, is pod 0's kind, other than the workers' Kind.
	Master *PodKind
	// Tolerates says whether the pods tolerate the GPU taint.
	Tolerates bool
	// Pools puts the master on pool=head nodes and the workers on
	// pool=gpu ones (node selectors).
	Pools bool
	// MemoryGi is each pod's memory request in GiB (0: none).
	MemoryGi int64
	// HostPort, when not 0, is a host port every pod declares.
	HostPort int32
}

// KindOf is the kind of pod i of the gang.
func (g GangSpec) KindOf(i int) PodKind {
	if i == 0 && g.Master != nil {
		return *g.Master
	}
	return g.Kind
}

// ShapeOf is the shape of pod i of the gang.
func (g GangSpec) ShapeOf(i int) placement.Shape { return g.KindOf(i).Shape() }

// RDMA reports whether some pod of the gang requests RDMA NICs.
func (g GangSpec) RDMA() bool {
	return g.Kind.Shape().NICs > 0 || g.Master != nil && g.Master.Shape().NICs > 0
}

// Trace is a replayable workload.
type Trace struct {
	Gangs []GangSpec
	// Cycles is how many scheduling cycles a replay runs.
	Cycles int
}

// Trace generation parameters.
const (
	// ArrivalCycles is the window over which gangs arrive, evenly spread.
	ArrivalCycles = 40
	// DrainCycles are run after the last arrival.
	DrainCycles = 30
	// minDuration and maxDuration bound a gang's run time in cycles.
	minDuration = 5
	maxDuration = 60
	// hardShare is the share of gangs in hard mode.
	hardShare = 0.3
)

// sizeBuckets skews gang sizes to small: weight per power-of-two bucket.
var sizeBuckets = []struct {
	size   int
	weight float64
}{{1, 0.30}, {2, 0.20}, {4, 0.18}, {8, 0.14}, {16, 0.10}, {32, 0.05}, {64, 0.03}}

// kindWeights is the share of gangs of each pod kind.
var kindWeights = []struct {
	kind   PodKind
	weight float64
}{{KindHalf, 0.45}, {KindSmall, 0.25}, {KindFull, 0.10}, {KindCPU, 0.20}}

// maxFullGang caps gangs of whole-node pods (only a quarter of the nodes
// can hold them).
const maxFullGang = 16

// NewTrace generates gangs gangs from seed for the provider's fabric. The
// result is deterministic.
func NewTrace(gangs int, seed uint64) *Trace {
	return NewFabricTrace(FabricProvider, gangs, seed)
}

// NewFabricTrace generates gangs gangs from seed for the named fabric
// (CheckFabric). Every fabric gets the same gangs (sizes, shapes, arrivals,
// durations, which gangs are hard); only the tier a hard gang is held to
// depends on the fabric (hardTier). The result is deterministic.
func NewFabricTrace(fabric string, gangs int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 0x7261636b))
	t := &Trace{Cycles: ArrivalCycles + DrainCycles}
	for i := 0; i < gangs; i++ {
		g := GangSpec{
			Name:     fmt.Sprintf("gang-%05d", i),
			Kind:     pickKind(rng),
			Pods:     pickSize(rng),
			Arrive:   1 + i*ArrivalCycles/max(gangs, 1),
			Duration: minDuration + rng.IntN(maxDuration-minDuration+1),
			Mode:     placement.ModeSoft,
		}
		if g.Kind == KindFull {
			g.Pods = min(g.Pods, maxFullGang)
		}
		g.HighestTier = placement.TierS1
		if rng.Float64() < hardShare {
			if tier, ok := hardTier(fabric, g.Kind, g.Pods); ok {
				g.Mode, g.HighestTier = placement.ModeHard, tier
			}
		}
		t.Gangs = append(t.Gangs, g)
	}
	return t
}

// hardTier is the highest tier a hard-mode gang of pods of kind is given:
// the narrowest tier whose switch can hold the gang with half its capacity
// on an empty fabric, so that the limit can be met while other gangs run.
// A whole-node pod's NICs hang off two S0s, so it is never held under one
// S0; an S1 has spanningPerS1 nodes that can hold whole-node pods. A gang
// no tier holds that way is not made hard (ok false): a user would not ask
// for a limit the hardware can hardly meet.
//
// On the rail and mixed fabrics a pod of more than one NIC is never held
// under one S0 either (its NICs hang off one rail each), so only 1-NIC pods
// get s0; a rail leaf holds as many 1-NIC pods (32, one per node of its
// unit) and a rail S1 at least as many pods of each kind as a provider
// leaf and S1, so the other limits stay. On mixed, the limits must hold on
// every part of the fabric, which the rail rule does.
func hardTier(fabric string, kind PodKind, pods int) (tier placement.Tier, ok bool) {
	sh := kind.Shape()
	nics := int64(pods) * sh.NICs
	oneLeaf := fabric == FabricProvider || fabric == FabricUnits || sh.NICs == 1
	switch {
	case sh.NICs == 0:
		return placement.TierS1, true
	case kind != KindFull && oneLeaf && nics <= nicsPerLeaf/2:
		return placement.TierS0, true
	case kind != KindFull && nics <= nicsPerLeaf*leavesPerS1/2:
		return placement.TierS1, true
	case kind == KindFull && pods <= spanningPerS1/2:
		return placement.TierS1, true
	}
	return placement.TierCluster, false
}

// pickKind draws a pod kind.
func pickKind(rng *rand.Rand) PodKind {
	x := rng.Float64()
	for _, kw := range kindWeights {
		if x < kw.weight {
			return kw.kind
		}
		x -= kw.weight
	}
	return kindWeights[len(kindWeights)-1].kind
}

// pickSize draws a gang size in 1..64: a power-of-two bucket, and one time
// in four a size between the previous bucket and this one.
func pickSize(rng *rand.Rand) int {
	x := rng.Float64()
	size := sizeBuckets[len(sizeBuckets)-1].size
	for _, b := range sizeBuckets {
		if x < b.weight {
			size = b.size
			break
		}
		x -= b.weight
	}
	if size > 2 && rng.IntN(4) == 0 {
		size = size/2 + 1 + rng.IntN(size/2)
	}
	return size
}

// Cluster shape of the benchmark: the provider's (16 NUMA zones per S0, 8
// S0s per S1), with every fourth node on a spanning topology policy so that
// whole-node pods have somewhere to go.
const (
	zonesPerLeaf  = 16
	leavesPerS1   = 8
	spanningEvery = 4
	// nicsPerLeaf is the NICs under one S0: two per NUMA zone.
	nicsPerLeaf = 2 * zonesPerLeaf
	// spanningPerS1 is the spanning-policy nodes under one S1: an S1's
	// leaves pair up, each pair serving zonesPerLeaf nodes.
	spanningPerS1 = zonesPerLeaf / spanningEvery * leavesPerS1 / 2
	// PodsPerNode is the pod capacity given to generated nodes.
	PodsPerNode = 110
)

// Occupancy of the pre-bound pods, per group of nodes sharing a pair of
// leaves: a share of groups is full, a share partly used (each NUMA zone
// taken with a probability drawn in [0.2, 0.8)), the rest empty. About 40%
// of the NUMA zones end up taken.
const (
	fullGroupShare    = 0.20
	partialGroupShare = 0.40
)

// PreboundNamespace holds the pods that are running when the trace starts.
const PreboundNamespace = "prebound"

// NewCluster generates nodes nodes of the provider's fabric with pre-bound
// pods (NewFabricCluster with FabricProvider): each pre-bound pod takes a
// whole NUMA zone (4 GPU + both its NICs) and carries the rdmatopo NIC
// annotations a previous placement would have written, so both schedulers
// see the same occupancy.
func NewCluster(nodes int, seed uint64) *workload.Cluster {
	c, err := NewFabricCluster(FabricProvider, nodes, seed)
	if err != nil {
		panic(err) // FabricProvider is always valid
	}
	return c
}

// PreboundPod is a running pod holding NUMA zone numa of node: 4 GPUs and
// every NIC of the zone (pcis).
func PreboundPod(node string, numa int, pcis []string, created time.Time) *corev1.Pod {
	nics := make([]topology.NICID, len(pcis))
	for i, pci := range pcis {
		nics[i] = topology.NICID(pci)
	}
	p := builders.MakePod(PreboundNamespace, fmt.Sprintf("%s-numa%d", node, numa)).
		Req(builders.GPUResource, "4").Req(builders.RDMAResource, strconv.Itoa(len(nics))).
		Req(corev1.ResourceCPU, strconv.Itoa(4*cpuPerGPU)).
		Annotation(ledger.AnnotationNICs, ledger.FormatNICs(nics)).
		Annotation(ledger.AnnotationNUMA, ledger.FormatNUMA([]int{numa})).
		Created(created).Node(node).Obj()
	p.Spec.SchedulerName = workload.DefaultSchedulerName
	return p
}

// GangSet returns the Queue, PodGroup and pending Pods of one gang.
func GangSet(g GangSpec, created time.Time) *workload.Set {
	pg := &schedulingv1beta1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: workload.APIVersionScheduling, Kind: workload.KindPodGroup},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         workload.DefaultNamespace,
			Name:              g.Name,
			UID:               types.UID("uid-pg-" + g.Name),
			CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{
				ledger.AnnotationMode:        g.Mode.String(),
				ledger.AnnotationHighestTier: g.HighestTier.String(),
			},
		},
		Spec:   schedulingv1beta1.PodGroupSpec{MinMember: int32(g.Pods), Queue: workload.DefaultQueue},
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupPending},
	}
	set := &workload.Set{Queues: []*schedulingv1beta1.Queue{workload.NewDefaultQueue()}, PodGroups: []*schedulingv1beta1.PodGroup{pg}}
	for i := 0; i < g.Pods; i++ {
		sh := g.ShapeOf(i)
		w := builders.MakePod(workload.DefaultNamespace, PodName(g.Name, i)).Group(g.Name).Created(created)
		if sh.GPU > 0 {
			w.Req(builders.GPUResource, strconv.FormatInt(sh.GPU, 10)).
				Req(corev1.ResourceCPU, strconv.FormatInt(sh.GPU*cpuPerGPU, 10))
			if sh.NICs > 0 {
				w.Req(builders.RDMAResource, strconv.FormatInt(sh.NICs, 10))
			}
		} else {
			w.Req(corev1.ResourceCPU, strconv.Itoa(cpuOnlyCores))
		}
		if g.MemoryGi > 0 {
			w.Req(corev1.ResourceMemory, strconv.FormatInt(g.MemoryGi, 10)+"Gi")
		}
		p := w.Obj()
		p.Spec.SchedulerName = workload.DefaultSchedulerName
		constrainPod(p, g, i)
		set.Pods = append(set.Pods, p)
	}
	return set
}

// constrainPod writes gang g's constraints on its pod i: the GPU taint's
// toleration, the pool selector, the host port.
func constrainPod(p *corev1.Pod, g GangSpec, i int) {
	builders.GangPodConstraints(i, g.Tolerates, g.Pools, g.HostPort).Apply(p)
}

// PodName names pod i of a gang.
func PodName(gang string, i int) string { return gang + "-" + strconv.Itoa(i) }
