package trace

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/oracle"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Constraints (`--constraints on`, the default) give the generated cluster
// and trace what real clusters and jobs carry, so both schedulers are
// graded on what Kubernetes admits rather than on GPUs and NICs alone:
//
//   - a third of the nodes carry the GPU operator's taint
//     nvidia.com/gpu=present:NoSchedule, and most gangs tolerate it;
//   - every eighth node is labelled pool=head, the others pool=gpu, and some
//     gangs with a master put it on pool=head and their workers on pool=gpu;
//   - every fifth node has 96Gi of memory (memory-tight: one 64Gi pod), and
//     some gangs request 64Gi per pod;
//   - some gangs declare a host port (one of their pods per node);
//   - about a fifth of the gangs of several pods are of mixed shapes: a
//     master of another kind than its workers, or a GPU-only pod beside the
//     RDMA pods.
//
// The benchmark's optimum (MinLeavesGang) reads the same constraints from
// the generated objects with its own code (ConstraintsOf), not the
// scheduler's.

// Constraint settings of --constraints.
const (
	ConstraintsOn  = "on"
	ConstraintsOff = "off"
)

// CheckConstraints validates a --constraints value.
func CheckConstraints(v string) error {
	if v != ConstraintsOn && v != ConstraintsOff {
		return fmt.Errorf("--constraints must be %s or %s, got %q", ConstraintsOn, ConstraintsOff, v)
	}
	return nil
}

// Shares of the trace's gangs given each constraint.
const (
	tolerateShare = 0.85
	mixedShare    = 0.20
	poolsShare    = 0.50 // of the mixed gangs
	memoryShare   = 0.10
	hostPortShare = 0.05
	// gangMemoryGi is what a memory-requesting gang asks per pod.
	gangMemoryGi = 64
	// firstHostPort is the host port of the first gang that declares one;
	// each such gang has its own.
	firstHostPort = 20000
)

// ConstrainCluster taints, labels and sizes the cluster's nodes as above.
func ConstrainCluster(c *workload.Cluster) { builders.GeneratedNodeConstraints.Apply(c.Nodes) }

// ConstrainTrace draws the gangs' constraints from seed with a generator of
// their own, so the trace's gangs (sizes, kinds, arrivals) stay those of
// --constraints off. A hard s0 gang whose master has several NICs is held
// to s1 on rail cabling, where such a pod's NICs hang off several leaves.
func ConstrainTrace(t *Trace, fabric string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x636f6e73))
	for i := range t.Gangs {
		g := &t.Gangs[i]
		g.Tolerates = rng.Float64() < tolerateShare
		if g.Pods >= 2 && g.Kind.Shape().NICs > 0 && rng.Float64() < mixedShare {
			others := []PodKind{KindHalf, KindSmall, KindGPUOnly}
			var pick []PodKind
			for _, k := range others {
				if k != g.Kind {
					pick = append(pick, k)
				}
			}
			m := pick[rng.IntN(len(pick))]
			g.Master = &m
			g.Pools = rng.Float64() < poolsShare
		}
		if rng.Float64() < memoryShare {
			g.MemoryGi = gangMemoryGi
		}
		if rng.Float64() < hostPortShare {
			g.HostPort = int32(firstHostPort + i)
		}
		if g.Master != nil && g.Mode == placement.ModeHard && g.HighestTier == placement.TierS0 &&
			fabric != FabricProvider && g.Master.Shape().NICs > 1 {
			// A pod of several NICs is never under one rail leaf.
			g.HighestTier = placement.TierS1
		}
	}
}

// NodeConstraint is what the optimum reads of a node: its GPU taint, pool
// and allocatable memory.
type NodeConstraint struct {
	Tainted bool
	Pool    string
	Memory  int64
}

// ConstraintsOf reads the nodes' taints, pool labels and memory.
func ConstraintsOf(nodes []*corev1.Node) map[string]NodeConstraint {
	out := make(map[string]NodeConstraint, len(nodes))
	for _, n := range nodes {
		nc := NodeConstraint{Pool: n.Labels[builders.PoolLabel]}
		for _, t := range n.Spec.Taints {
			if t.Key == builders.GPUTaint.Key && t.Effect == corev1.TaintEffectNoSchedule {
				nc.Tainted = true
			}
		}
		if q, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok {
			nc.Memory = q.Value()
		}
		out[n.Name] = nc
	}
	return out
}

// Node groups of a gang's pods in the optimum: workers, and a master with a
// node selector of its own.
const (
	groupWorkers = 0
	groupMaster  = 1
)

// OracleGangOf builds the optimum's view of gang g: each pod's shape, the
// nodes each may use (taint and pool) and how many of its pods a node
// admits (host port, memory left by the other pods the tracker holds).
func OracleGangOf(g GangSpec, nodes map[string]NodeConstraint, memUsed func(string) int64) oracle.OracleGang {
	og := oracle.OracleGang{Groups: make([]int, g.Pods)}
	for i := 0; i < g.Pods; i++ {
		sh := g.ShapeOf(i)
		og.Pods = append(og.Pods, oracle.OracleShape{GPU: sh.GPU, CPUMilli: sh.CPUMilli, NICs: sh.NICs})
		if i == 0 && g.Pools {
			og.Groups[i] = groupMaster
		}
	}
	og.Allowed = func(node string, group int) bool {
		nc := nodes[node]
		if nc.Tainted && !g.Tolerates {
			return false
		}
		if !g.Pools {
			return true
		}
		if group == groupMaster {
			return nc.Pool == builders.PoolHead
		}
		return nc.Pool == builders.PoolGPU
	}
	og.MaxPods = func(node string) int {
		limit := -1
		if g.HostPort != 0 {
			limit = 1
		}
		if g.MemoryGi > 0 {
			free := nodes[node].Memory - memUsed(node)
			if n := int(max(free, 0) / (g.MemoryGi << 30)); limit < 0 || n < limit {
				limit = n
			}
		}
		return limit
	}
	return og
}
