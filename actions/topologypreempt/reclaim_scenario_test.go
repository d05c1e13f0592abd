package topologypreempt_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			rt := newRuntime()
			o := runSession(t, c, rt)
			if diff := cmp.Diff(tc.wantEvicted, o.evicted); diff != "" {
				t.Fatalf("evicted (-want,+got):\n%s", diff)
			}
			if len(o.evicted) == 0 {
				if got := bound(o, "big"); got != 0 {
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
			o = runSession(t, c.without(o.evicted), rt)
			if len(o.evicted) > 0 {
				t.Errorf("second session evicted %v, want none", o.evicted)
			}
			if got := bound(o, "big"); got != 4 {
				t.Fatalf("big: %d pods bound, want 4", got)
			}
			if diff := cmp.Diff(tc.wantLeaves, leavesOf(o, "big")); diff != "" {
				t.Errorf("big leaves (-want,+got):\n%s", diff)
			}
		})
	}
}
