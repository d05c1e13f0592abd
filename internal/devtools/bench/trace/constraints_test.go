package trace

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestConstrainCluster: a third of the nodes tainted, every eighth a head
// node, every fifth memory-tight.
func TestConstrainCluster(t *testing.T) {
	c, err := NewFabricCluster(FabricProvider, 120, 1)
	if err != nil {
		t.Fatal(err)
	}
	ConstrainCluster(c)
	nodes := ConstraintsOf(c.Nodes)
	tainted, head, tight := 0, 0, 0
	for _, nc := range nodes {
		if nc.Tainted {
			tainted++
		}
		if nc.Pool == builders.PoolHead {
			head++
		}
		if nc.Memory < 100<<30 {
			tight++
		}
	}
	if tainted != 40 || head != 15 || tight != 24 {
		t.Errorf("tainted %d, head %d, memory-tight %d of 120; want 40, 15, 24", tainted, head, tight)
	}
}

// TestConstrainTrace: the constraints leave the gangs' sizes, kinds and
// arrivals alone, are deterministic, and each kind appears.
func TestConstrainTrace(t *testing.T) {
	plain := NewFabricTrace(FabricRail, 400, 5)
	a, b := NewFabricTrace(FabricRail, 400, 5), NewFabricTrace(FabricRail, 400, 5)
	ConstrainTrace(a, FabricRail, 5)
	ConstrainTrace(b, FabricRail, 5)
	counts := map[string]int{}
	for i, g := range a.Gangs {
		p := plain.Gangs[i]
		if g.Pods != p.Pods || g.Kind != p.Kind || g.Arrive != p.Arrive || g.Duration != p.Duration {
			t.Fatalf("gang %d changed: %+v, was %+v", i, g, p)
		}
		bg := b.Gangs[i]
		if g.Tolerates != bg.Tolerates || g.Pools != bg.Pools || g.MemoryGi != bg.MemoryGi || g.HostPort != bg.HostPort ||
			(g.Master == nil) != (bg.Master == nil) || g.Master != nil && *g.Master != *bg.Master {
			t.Fatalf("gang %d differs between two runs: %+v and %+v", i, g, bg)
		}
		if g.Master != nil {
			counts["mixed"]++
			if *g.Master == g.Kind {
				t.Errorf("gang %d: master of the workers' kind %s", i, g.Kind)
			}
			if g.Mode == placement.ModeHard && g.HighestTier == placement.TierS0 && g.Master.Shape().NICs > 1 {
				t.Errorf("gang %d: hard s0 on rail with a %s master", i, g.Master)
			}
		}
		for name, set := range map[string]bool{"tolerates": g.Tolerates, "pools": g.Pools, "memory": g.MemoryGi > 0, "hostPort": g.HostPort != 0} {
			if set {
				counts[name]++
			}
		}
	}
	for _, name := range []string{"mixed", "tolerates", "pools", "memory", "hostPort"} {
		if counts[name] == 0 {
			t.Errorf("no gang with %s in 400: %v", name, counts)
		}
	}
	if counts["tolerates"] < 300 {
		t.Errorf("%d of 400 gangs tolerate the GPU taint, want about 85%%", counts["tolerates"])
	}
}

// TestGangSetConstraints: the pods carry what the gang's constraints say.
func TestGangSetConstraints(t *testing.T) {
	master := KindGPUOnly
	g := GangSpec{Name: "g", Pods: 3, Kind: KindHalf, Master: &master, Tolerates: true, Pools: true, MemoryGi: 64, HostPort: 20007}
	set := GangSet(g, time.Unix(0, 0))
	if len(set.Pods) != 3 {
		t.Fatalf("%d pods, want 3", len(set.Pods))
	}
	for i, p := range set.Pods {
		req := p.Spec.Containers[0].Resources.Requests
		if _, ok := req[builders.RDMAResource]; ok != (i > 0) {
			t.Errorf("pod %d: RDMA request %v, want one on workers only", i, req)
		}
		if q := req[corev1.ResourceMemory]; q.Value() != 64<<30 {
			t.Errorf("pod %d: memory %s, want 64Gi", i, q.String())
		}
		want := builders.PoolGPU
		if i == 0 {
			want = builders.PoolHead
		}
		if got := p.Spec.NodeSelector[builders.PoolLabel]; got != want {
			t.Errorf("pod %d: pool %q, want %q", i, got, want)
		}
		if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Key != builders.GPUTaint.Key {
			t.Errorf("pod %d: tolerations %v", i, p.Spec.Tolerations)
		}
		if ports := p.Spec.Containers[0].Ports; len(ports) != 1 || ports[0].HostPort != 20007 {
			t.Errorf("pod %d: ports %v", i, ports)
		}
	}
}

// TestOracleGangOf: which nodes each pod may use and how many of the
// gang's pods a node admits, as the optimum reads them.
func TestOracleGangOf(t *testing.T) {
	nodes := map[string]NodeConstraint{
		"plain":   {Pool: builders.PoolGPU, Memory: 2 << 40},
		"tainted": {Tainted: true, Pool: builders.PoolGPU, Memory: 2 << 40},
		"head":    {Pool: builders.PoolHead, Memory: 2 << 40},
		"tight":   {Pool: builders.PoolGPU, Memory: 96 << 30},
	}
	used := func(node string) int64 {
		if node == "plain" {
			return (2 << 40) - 100<<30 // 100Gi left
		}
		return 0
	}
	master := KindSmall
	tests := []struct {
		name    string
		g       GangSpec
		allowed map[string][2]bool // node -> {workers, master}
		maxPods map[string]int
	}{
		{name: "no constraints but an untolerated taint",
			g:       GangSpec{Pods: 2, Kind: KindHalf},
			allowed: map[string][2]bool{"plain": {true, true}, "tainted": {false, false}, "head": {true, true}},
			maxPods: map[string]int{"plain": -1, "tight": -1}},
		{name: "tolerating, pools, memory",
			g:       GangSpec{Pods: 2, Kind: KindHalf, Master: &master, Tolerates: true, Pools: true, MemoryGi: 64},
			allowed: map[string][2]bool{"plain": {true, false}, "tainted": {true, false}, "head": {false, true}},
			maxPods: map[string]int{"plain": 1, "tight": 1, "head": 32}},
		{name: "host port",
			g:       GangSpec{Pods: 2, Kind: KindHalf, Tolerates: true, HostPort: 20001},
			maxPods: map[string]int{"plain": 1, "tight": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			og := OracleGangOf(tc.g, nodes, used)
			for node, want := range tc.allowed {
				if got := [2]bool{og.Allowed(node, groupWorkers), og.Allowed(node, groupMaster)}; got != want {
					t.Errorf("Allowed(%s) workers/master = %v, want %v", node, got, want)
				}
			}
			for node, want := range tc.maxPods {
				if got := og.MaxPods(node); got != want {
					t.Errorf("MaxPods(%s) = %d, want %d", node, got, want)
				}
			}
		})
	}
}
