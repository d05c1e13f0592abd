package soak

import (
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestConstrain: hard gangs only tolerate the taint; soft gangs get each
// constraint, and a master is never of the workers' shape.
func TestConstrain(t *testing.T) {
	r := &runner{cfg: Config{ZonesPerLeaf: 4}, rng: rand.New(rand.NewSource(3))}
	counts := map[string]int{}
	for i := 0; i < 2000; i++ {
		g := r.constrain(r.nextGang())
		c := g.cons
		if g.contract.mode == "hard" {
			if !c.tolerates || c.master != nil || c.pools || c.memoryGi != 0 || c.hostPort != 0 {
				t.Fatalf("hard gang %+v carries constraints %+v", g, c)
			}
			continue
		}
		if c.master != nil && *c.master == g.shape {
			t.Fatalf("master of the workers' shape: %+v", g)
		}
		for name, set := range map[string]bool{"untolerating": !c.tolerates, "mixed": c.master != nil, "pools": c.pools,
			"memory": c.memoryGi > 0, "hostPort": c.hostPort != 0} {
			if set {
				counts[name]++
			}
		}
	}
	for _, name := range []string{"untolerating", "mixed", "pools", "memory", "hostPort"} {
		if counts[name] == 0 {
			t.Errorf("no soft gang %s of 2000: %v", name, counts)
		}
	}
}

// TestConstrainPod: what a constrained gang's pods carry.
func TestConstrainPod(t *testing.T) {
	m := shapeGPUOnly
	g := gangSpec{shape: shapeHalf, pods: 2, cons: gangConstraints{master: &m, tolerates: true, pools: true, memoryGi: 64, hostPort: hostPort}}
	for i, want := range []string{builders.PoolHead, builders.PoolGPU} {
		p := builders.MakePod(Namespace, "p").Req(builders.GPUResource, "4").Obj()
		constrainPod(p, g, i)
		if p.Spec.NodeSelector[builders.PoolLabel] != want || len(p.Spec.Tolerations) != 1 || len(p.Spec.Containers[0].Ports) != 1 {
			t.Errorf("pod %d: selector %v, tolerations %v, ports %v", i, p.Spec.NodeSelector, p.Spec.Tolerations, p.Spec.Containers[0].Ports)
		}
		if q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; q.Value() != 64<<30 {
			t.Errorf("pod %d: memory %s, want 64Gi", i, q.String())
		}
	}
	if g.shapeOf(0) != shapeGPUOnly || g.shapeOf(1) != shapeHalf {
		t.Errorf("shapes %v %v, want the master's then the workers'", g.shapeOf(0), g.shapeOf(1))
	}
}

// TestSoakConstraints: the small soak with constraints on: no violation,
// no plan the predicates refuse.
func TestSoakConstraints(t *testing.T) {
	res, err := Run(Config{Jobs: 300, BindFailureRate: 0.05, KCNRLag: 3, RestartEvery: 100, DrainEvery: 25, Seed: 2,
		NodeAgent: nodeagent.NUMA, Constraints: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, v := range res.Found {
		t.Errorf("violation: %s", v)
	}
	if res.PlanRefused != 0 {
		t.Errorf("%d planned nodes refused by the predicates, want 0", res.PlanRefused)
	}
	if got := res.JobsCompleted + res.JobsKilled; got != 300 {
		t.Errorf("jobs completed + killed = %d, want 300", got)
	}
}
