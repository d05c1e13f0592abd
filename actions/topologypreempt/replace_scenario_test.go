package topologypreempt_test

import (
	"fmt"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// poolLabel marks the nodes a gang's master may use.
const poolLabel = "example.com/pool"

// replacementGang builds the start of the replacement scenarios: a running
// high gang "g" of three (minMember 3) whose master g-0 (node selector
// pool=m) runs on n3 NUMA 0 (leaf C) and whose workers run under leaf A
// (n1 and n2 NUMA 0); "x" (high, not a victim) holds n1 and n2 NUMA 1
// (leaf B); "v" (low) runs on n3 NUMA 1 (leaf D). extra adds nodes and
// pods before the scenario starts.
func replacementGang(t *testing.T, extra func(c *cluster)) *run {
	t.Helper()
	c := &cluster{}
	c.addNode("n1", "A", "B")
	c.addNode("n2", "A", "B")
	c.addNode("n3", "C", "D")
	c.nodes[2].Labels[poolLabel] = "m"
	c.addRunning("g", "high", 3, slot{"n3", 0}, slot{"n1", 0}, slot{"n2", 0})
	c.addRunning("x", "high", 1, slot{"n1", 1}, slot{"n2", 1})
	c.addRunning("v", "low", 1, slot{"n3", 1})
	if extra != nil {
		extra(c)
	}
	for _, p := range c.pods {
		if p.Name == "g-0" {
			p.Spec.NodeSelector = map[string]string{poolLabel: "m"}
		}
	}
	r := start(t, c)
	if o := r.session(); len(o.binds)+len(o.evicted) != 0 {
		t.Fatalf("first session bound %d and evicted %v, want nothing", len(o.binds), o.evicted)
	}
	return r
}

// loseMasterAndWorker fails n3's NUMA-0 NICs (gone from its KCNR, so leaf C
// is lost whole), deletes g-0 (on them) and g-1 (a worker that failed under
// leaf A) and re-creates both, pending, as a job controller does.
func loseMasterAndWorker(t *testing.T, r *run) {
	t.Helper()
	r.sc.Sim.UpsertCNR(builders.MakeCNR("n3").Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(builders.NUMANICs[1][0], 1, "D").NIC(builders.NUMANICs[1][1], 1, "D").Obj())
	r.finish("ns/g-0", "ns/g-1")
	for i, name := range []string{"g-0", "g-1"} {
		p := builders.MakePod("ns", name).Group("g").
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").Req("memory", "8Gi").
			SchedulerName("volcano").Obj()
		p.UID = types.UID(fmt.Sprintf("u-%s-again", name))
		if i == 0 {
			p.Spec.NodeSelector = map[string]string{poolLabel: "m"}
		}
		if err := r.sc.Sim.AddPod(p); err != nil {
			t.Fatalf("re-create %s: %v", name, err)
		}
	}
}

// TestReplacementsPlacedByPreemption: a running gang loses its master (its
// NICs fail) and a worker. The master fits only where a low pod runs, so
// topology-allocate cannot place the two and topology-preempt does. The
// worker's replacement must go back under the gang's leaf A, into the room
// kept for it there, whichever scope of equal cost the search meets first;
// the master's goes where its victim was.
func TestReplacementsPlacedByPreemption(t *testing.T) {
	cases := map[string]struct {
		extra       func(c *cluster)
		wantEvicted []string
		wantMaster  string // node/leaf
	}{
		// Without the gang's own kept room the what-if plan finds no
		// place for the worker, and nothing is evicted at all.
		"the gang's kept room": {
			wantEvicted: []string{"ns/v-0"},
			wantMaster:  "n3/D",
		},
		// Evicting v2 under leaf E frees room for the master on n4 and
		// leaf E has a free slot on n5 too: the scope of leaf E, searched
		// before the cluster, places both there at the same cost as the
		// cluster's plan, which puts the worker back under A (v2, the
		// younger victim, is the cheaper one).
		"a scope of equal cost elsewhere": {
			extra: func(c *cluster) {
				c.addNode("n4", "E", "F")
				c.nodes[3].Labels[poolLabel] = "m"
				c.addNode("n5", "E", "G")
				c.addRunning("v2", "low", 1, slot{"n4", 0})
				c.addRunning("x2", "high", 1, slot{"n4", 1}, slot{"n5", 1})
			},
			wantEvicted: []string{"ns/v2-0"},
			wantMaster:  "n4/E",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := replacementGang(t, tc.extra)
			loseMasterAndWorker(t, r)
			var evicted []string
			where := map[string]string{}
			for i := 0; i < 5 && len(where) < 2; i++ {
				o := r.session()
				evicted = append(evicted, o.evicted...)
				for _, name := range []string{"g-0", "g-1"} {
					if b := o.binds["ns/"+name]; b != nil {
						where[name] = b.Node + "/" + b.Pod.Annotations[ledger.AnnotationS0]
					}
				}
			}
			if fmt.Sprint(evicted) != fmt.Sprint(tc.wantEvicted) {
				t.Errorf("evicted %v, want %v", evicted, tc.wantEvicted)
			}
			if where["g-1"] != "n1/A" {
				t.Errorf("worker's replacement g-1 on %q, want n1/A (the room kept for it under the gang's leaf)", where["g-1"])
			}
			if where["g-0"] != tc.wantMaster {
				t.Errorf("master's replacement g-0 on %q, want %s", where["g-0"], tc.wantMaster)
			}
		})
	}
}
