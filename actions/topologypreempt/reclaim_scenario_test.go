package topologypreempt_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"

	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
)

// reclaimCluster: queue "batch" holds single low pods in twelve of the
// sixteen slots: every slot of leaves A, C and D but those kept by "hold"
// (queue "hold", never reclaimable), and two of B's (n1 and n2, NUMA 1).
// B has two free slots. Queue "train" has a high-priority hard-s0 gang of
// 4 pending. Every queue has weight 1.
func reclaimCluster(c *cluster, batchReclaimable bool) {
	c.eightNodes()
	c.addQueue("batch", batchReclaimable)
	c.addQueue("hold", false)
	c.addQueue("train", true)
	var batch []string
	add := func(n string, numa int) {
		name := fmt.Sprintf("b%d", len(batch))
		c.addRunning(name, "low", 1, slot{n, numa})
		batch = append(batch, name)
	}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		add(n, 0)
	}
	add("n1", 1)
	add("n2", 1)
	for _, n := range []string{"n5", "n6", "n7", "n8"} {
		add(n, 1)
	}
	c.addRunning("hc", "low", 1, slot{"n5", 0}, slot{"n6", 0}, slot{"n7", 0}, slot{"n8", 0})
	c.inQueue("batch", batch...)
	c.inQueue("hold", "hc")
	c.addPending("big", "high", 4, hardS0)
	c.inQueue("train", "big")
}

// TestReclaimScenarios: victims in other queues are taken only by
// topology-reclaim, only from reclaimable queues above their deserved
// share (proportion's veto), with the same cheapest-set search.
func TestReclaimScenarios(t *testing.T) {
	cases := map[string]struct {
		build       func(c *cluster)
		wantEvicted []string
		wantLeaves  []string
	}{
		"a reclaimable queue over its share gives up the cheapest pods": {
			// batch holds 40 GPUs, deserves about a third of 64 plus what
			// train does not ask for: over its share.
			build:       func(c *cluster) { reclaimCluster(c, true) },
			wantEvicted: []string{"ns/b4-0", "ns/b5-0"},
			wantLeaves:  []string{"B"},
		},
		"a queue that is not reclaimable keeps its pods": {
			build: func(c *cluster) { reclaimCluster(c, false) },
		},
		"a reclaimable queue at its deserved share keeps its pods": {
			// batch keeps only B's two pods (8 GPUs, what it asks for and
			// so what it deserves); hold fills the rest.
			build: func(c *cluster) {
				c.eightNodes()
				c.addQueue("batch", true)
				c.addQueue("hold", false)
				c.addQueue("train", true)
				c.addRunning("b0", "low", 1, slot{"n1", 1})
				c.addRunning("b1", "low", 1, slot{"n2", 1})
				c.inQueue("batch", "b0", "b1")
				var slots []slot
				for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"} {
					slots = append(slots, slot{n, 0})
				}
				slots = append(slots, slot{"n5", 1}, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
				c.addRunning("hc", "low", 1, slots...)
				c.inQueue("hold", "hc")
				c.addPending("big", "high", 4, hardS0)
				c.inQueue("train", "big")
			},
		},
		"a gang that would take its queue beyond its deserved share reclaims nothing": {
			// train deserves 16 of the 64 GPUs (weight 1 of 4: wait asks
			// for 64 with weight 2, batch for 48), holds 4 (t0) and asks
			// for 16 more: its first pod fits within the share, the gang
			// does not. Every pod the gang pipelines is asked the
			// session's Allocatable (proportion bounds it by the deserved
			// share), as Volcano's reclaim asks it and Preemptive of each
			// task, so no pod of the gang may take the queue past its
			// share; batch (48 held, 16 deserved) would otherwise give up
			// a leaf.
			build: func(c *cluster) {
				c.eightNodes()
				c.addQueue("batch", true)
				c.addQueue("train", true)
				c.addQueue("wait", true)
				c.queues[len(c.queues)-1].Spec.Weight = 2
				var batch []string
				for i, s := range []slot{{"n1", 0}, {"n2", 0}, {"n3", 0}, {"n4", 0}, {"n5", 0}, {"n6", 0}, {"n7", 0}, {"n8", 0},
					{"n5", 1}, {"n6", 1}, {"n7", 1}, {"n8", 1}} {
					name := fmt.Sprintf("b%d", i)
					c.addRunning(name, "low", 1, s)
					batch = append(batch, name)
				}
				c.inQueue("batch", batch...)
				c.addRunning("t0", "high", 1, slot{"n1", 1})
				c.addPending("big", "high", 4, hardS0)
				c.inQueue("train", "t0", "big")
				c.addUnplaceable("idle", "low", 16)
				c.inQueue("wait", "idle")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			r := start(t, c)
			o := r.session()
			if diff := cmp.Diff(tc.wantEvicted, o.evicted); diff != "" {
				t.Fatalf("evicted (-want,+got):\n%s", diff)
			}
			if len(o.evicted) == 0 {
				if got := o.binds.Count("ns", "big"); got != 0 {
					t.Errorf("big bound %d pods with nothing evicted, want 0", got)
				}
				return
			}
			for _, e := range o.events {
				if strings.Contains(e, topologypreempt.ReasonPreempting) || strings.Contains(e, topologypreempt.ReasonPreempted) {
					t.Errorf("cross-queue eviction recorded as preemption: %s", e)
				}
			}
			checkEventsOf(t, o, "big", topologypreempt.ReasonReclaiming, topologypreempt.ReasonReclaimed)
			// The victims are gone.
			o = r.session()
			if len(o.evicted) > 0 {
				t.Errorf("second session evicted %v, want none", o.evicted)
			}
			if got := o.binds.Count("ns", "big"); got != 4 {
				t.Fatalf("big: %d pods bound, want 4", got)
			}
			if diff := cmp.Diff(tc.wantLeaves, o.binds.Leaves("ns", "big")); diff != "" {
				t.Errorf("big leaves (-want,+got):\n%s", diff)
			}
		})
	}
}

// addUnplaceable adds a pending job of n pods of 4 GPUs, no NICs, that no
// node's labels match: it asks its queue for a share and never runs.
func (c *cluster) addUnplaceable(name, class string, n int) {
	c.podGroup(name, class, n, schedulingv1beta1.PodGroupInqueue, nil)
	for i := 0; i < n; i++ {
		p := builders.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Group(name).
			Req(builders.GPUResource, "4").Req("cpu", "1").SchedulerName("volcano").Obj()
		p.Spec.NodeSelector = map[string]string{"pool": "none"}
		c.pods = append(c.pods, p)
	}
}
