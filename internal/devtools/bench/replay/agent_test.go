package replay

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// figures are a run's planned (plannedOf) or realized (realizedOf) quality
// figures, for comparison.
type figures struct {
	MeanS0, AtOptimumFrac                float64
	OracleUnknown, OracleInfeasible      int
	BelowOptimum, OneNode, NICMismatches int
}

func plannedOf(r *RunResult) figures {
	return figures{MeanS0: r.MeanS0, AtOptimumFrac: r.AtOptimumFrac, OracleUnknown: r.OracleUnknown,
		OracleInfeasible: r.OracleInfeasible, BelowOptimum: r.BelowOptimum, OneNode: r.OneNode}
}

func realizedOf(r *RunResult) figures {
	return figures{MeanS0: r.RealizedMeanS0, AtOptimumFrac: r.RealizedAtOptimumFrac, OracleUnknown: r.RealizedOracleUnknown,
		OracleInfeasible: r.RealizedOracleInfeasible, BelowOptimum: r.RealizedBelowOptimum, OneNode: r.RealizedOneNode,
		NICMismatches: r.NICMismatches}
}

// TestExactAgentRealizesThePlan replays small traces with the node agent
// that gives every pod its annotated NICs: the realized figures are the
// planned ones, for both confs.
func TestExactAgentRealizesThePlan(t *testing.T) {
	tests := []struct {
		fabric string
		nodes  int
		gangs  int
	}{
		{fabric: trace.FabricProvider, nodes: 48, gangs: 12},
		{fabric: trace.FabricRail, nodes: 64, gangs: 12},
	}
	for _, tc := range tests {
		t.Run(tc.fabric, func(t *testing.T) {
			confs, err := Confs()
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range ConfOrder {
				cluster, err := trace.NewFabricCluster(tc.fabric, tc.nodes, 3)
				if err != nil {
					t.Fatal(err)
				}
				opts := SimOptions(0)
				opts.NodeAgent = nodeagent.Exact
				r, err := Replay(confs[name], cluster, trace.NewFabricTrace(tc.fabric, tc.gangs, 3), opts)
				if err != nil {
					t.Fatal(err)
				}
				if r.RDMAGangs == 0 {
					t.Errorf("%s: no multi-pod RDMA gang to compare", name)
				}
				if diff := cmp.Diff(plannedOf(r), realizedOf(r)); diff != "" {
					t.Errorf("%s: realized figures differ from the planned ones (-planned +realized):\n%s", name, diff)
				}
				if r.NodeAgent != nodeagent.Exact {
					t.Errorf("%s: node agent %q, want %q", name, r.NodeAgent, nodeagent.Exact)
				}
			}
		})
	}
}

// threeNodeCluster is three provider nodes of one group (leaf A: their
// NUMA-0 NICs, leaf B: their NUMA-1 NICs) whose NUMA 0 is taken on nodes 0
// and 1: leaf A has one free zone (node 2's), leaf B three.
func threeNodeCluster(t *testing.T) *workload.Cluster {
	t.Helper()
	c, nics := trace.ProviderPart(3)
	for _, n := range c.Nodes {
		q := *resource.NewQuantity(trace.PodsPerNode, resource.DecimalSI)
		n.Status.Allocatable[corev1.ResourcePods] = q
		n.Status.Capacity[corev1.ResourcePods] = q
	}
	created := workload.Epoch.Add(-time.Hour)
	for _, i := range []int{0, 1} {
		c.Pods = append(c.Pods, trace.PreboundPod(builders.NodeName(i), 0, nics[i][0], created))
	}
	return c
}

// TestNodeAgentMovesAPod replays one hard-s0 gang of three one-zone pods,
// which only leaf B holds, under each node agent. The plan is the same
// (one S0, the optimum); the blind agent puts node 2's pod on its free
// NUMA 0, under leaf A, so the realized gang spans two S0s.
func TestNodeAgentMovesAPod(t *testing.T) {
	confs, err := Confs()
	if err != nil {
		t.Fatal(err)
	}
	gangs := &trace.Trace{Cycles: 3, Gangs: []trace.GangSpec{{Name: "g0", Pods: 3, Kind: trace.KindHalf,
		Mode: placement.ModeHard, HighestTier: placement.TierS0, Arrive: 1, Duration: 10}}}
	tests := []struct {
		agent nodeagent.Mode
		want  figures
	}{
		{agent: nodeagent.Exact, want: figures{MeanS0: 1, AtOptimumFrac: 1}},
		{agent: nodeagent.NUMA, want: figures{MeanS0: 1, AtOptimumFrac: 1}},
		{agent: nodeagent.Blind, want: figures{MeanS0: 2, AtOptimumFrac: 0, NICMismatches: 1}},
	}
	for _, tc := range tests {
		t.Run(string(tc.agent), func(t *testing.T) {
			opts := SimOptions(0)
			opts.NodeAgent = tc.agent
			r, err := Replay(confs[ConfRDMATopo], threeNodeCluster(t), gangs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(figures{MeanS0: 1, AtOptimumFrac: 1}, plannedOf(r)); diff != "" {
				t.Errorf("planned figures (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, realizedOf(r)); diff != "" {
				t.Errorf("realized figures (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAgentAssignWithoutHint checks what the node agent gives a pod that
// carries no rdmatopo annotation and no numa_bind_result (the baseline's):
// numa has no hint to honour and takes the first zone with room, as blind
// does; exact has no NICs to follow, so the pod gets the tracker's own
// model of the node (the fewest free NICs left), as in the planned figures.
func TestAgentAssignWithoutHint(t *testing.T) {
	nic := func(numa, i int) topology.NICID { return topology.NICID(builders.NUMANICs[numa][i]) }
	small := func(numa, k int) placement.Assignment {
		return placement.Assignment{Node: builders.NodeName(0), Zones: []ledger.ZoneUse{{NUMA: numa, GPU: 1, NICs: []topology.NICID{nic(numa, k)}}}}
	}
	tests := []struct {
		agent nodeagent.Mode
		want  placement.Assignment
	}{
		{agent: nodeagent.NUMA, want: small(0, 0)},
		{agent: nodeagent.Blind, want: small(0, 0)},
		{agent: nodeagent.Exact, want: small(1, 1)},
	}
	for _, tc := range tests {
		t.Run(string(tc.agent), func(t *testing.T) {
			nodes, cnrs := builders.ClusterShape{Nodes: 32, ZonesPerLeaf: 16, LeavesPerS1: 8, SpanningEvery: 4}.Generate()
			tr := grade.NewTracker(nodes, cnrs)
			// A small pod already holds NUMA 1's first NIC.
			if err := tr.Reserve("uid-held", small(1, 0)); err != nil {
				t.Fatal(err)
			}
			p := trace.GangSet(trace.GangSpec{Name: "b", Pods: 1, Kind: trace.KindSmall, Arrive: 1, Duration: 5}, workload.Epoch).Pods[0]
			p.Spec.NodeName = builders.NodeName(0)
			got, err := agentAssign(tr, tc.agent, topology.Config{}, cnrs[0], p, builders.NodeName(0), trace.KindSmall.Shape())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("agentAssign(%s) (-want +got):\n%s", tc.agent, diff)
			}
		})
	}
}

// TestListRunning checks that the KCNRs the simulator gets list the
// pre-bound pods where their annotations put them.
func TestListRunning(t *testing.T) {
	c := threeNodeCluster(t)
	cnrs := listRunning(topology.Config{}, c.CNRs, c.Pods)
	tests := []struct {
		node int
		want placement.Assignment
		ok   bool
	}{
		{node: 0, want: zoneOf(0, 0), ok: true},
		{node: 1, want: zoneOf(1, 0), ok: true},
		{node: 2, ok: false},
	}
	for _, tc := range tests {
		name := builders.NodeName(tc.node)
		t.Run(name, func(t *testing.T) {
			consumer := trace.PreboundNamespace + "/" + name + "-numa0/"
			var got placement.Assignment
			ok := false
			for _, p := range c.Pods {
				if p.Spec.NodeName == name {
					consumer += string(p.UID)
					got, ok = listedAssignment(topology.Config{}, name, cnrs[tc.node], consumer)
				}
			}
			if ok != tc.ok {
				t.Fatalf("listed = %v, want %v", ok, tc.ok)
			}
			if tc.ok {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("listed assignment (-want +got):\n%s", diff)
				}
			}
			if len(c.CNRs[tc.node].Status.TopologyZone) > 0 && len(nodeagent.ListedNICs(c.CNRs[tc.node])) != 0 {
				t.Errorf("listRunning modified the cluster's KCNR of %s", name)
			}
		})
	}
}

// zoneOf is the assignment of one NUMA zone's GPUs and NICs on generated
// node i.
func zoneOf(i, numa int) placement.Assignment {
	return placement.Assignment{Node: builders.NodeName(i), Zones: []ledger.ZoneUse{{
		NUMA: numa, GPU: 4,
		NICs: []topology.NICID{topology.NICID(builders.NUMANICs[numa][0]), topology.NICID(builders.NUMANICs[numa][1])},
	}}}
}
