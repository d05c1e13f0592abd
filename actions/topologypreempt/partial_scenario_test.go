package topologypreempt_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestPartialGangCompletesBeyondItsQueueShare: gang "g" (queue "batch",
// minMember 2) has one pod running on n2 and lost the other (a failed
// bind the restarted scheduler does not know, a pod lost with its
// hardware). Queue "batch" also runs "r" (8 GPUs): with "train" asking for
// all 16 GPUs, proportion gives batch a share of 8 and batch holds 12, so
// Volcano's share check would refuse g's pod, and g's running pod would
// wait for it while batch stays over its share. The gang was admitted
// whole: its missing pod is placed where it fits (n2's free zone).
func TestPartialGangCompletesBeyondItsQueueShare(t *testing.T) {
	c := &cluster{}
	c.addNode("n1", "A", "B")
	c.addNode("n2", "C", "D")
	c.addQueue("batch", false)
	c.addQueue("train", false)
	c.addRunning("r", "low", 2, slot{"n1", 0}, slot{"n1", 1})
	c.addRunning("g", "low", 2, slot{"n2", 0})
	c.pods = append(c.pods, builders.MakePod("ns", "g-1").Group("g").
		Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").Req("memory", "8Gi").
		SchedulerName("volcano").Obj())
	c.inQueue("batch", "r", "g")
	c.addPending("big", "low", 4, nil)
	c.inQueue("train", "big")
	r := start(t, c)
	o := r.session()
	if got := o.binds.Count("ns", "g"); got != 1 {
		t.Fatalf("%d pods of g bound, want its missing pod", got)
	}
	if got := o.binds.Leaves("ns", "g"); len(got) != 1 || got[0] != "D" {
		t.Errorf("g's missing pod on leaves %v, want [D] (n2's free zone)", got)
	}
	if got := o.binds.Count("ns", "big"); got != 0 {
		t.Errorf("%d pods of big bound, want none (4 GPUs free for 16)", got)
	}
	if len(o.evicted) != 0 {
		t.Errorf("evicted %v, want none", o.evicted)
	}
}

// TestHeldGangWaitsForVictimsInItsZone: hard-s0 gang "g" (2 pods) fits
// only under leaf B, on n1's NUMA 1 (held by low "v") and n2's NUMA 1.
// It evicts v. While v terminates, n1's other zone is idle, so the node
// holds g's pod by its count; but the node agent would find the held zone
// taken and put the pod elsewhere (out of leaf B). The gang is bound only
// once v is gone, under leaf B.
func TestHeldGangWaitsForVictimsInItsZone(t *testing.T) {
	c := &cluster{}
	c.addNode("n1", "A", "B")
	c.addNode("n2", "X", "B")
	c.addRunning("v", "low", 1, slot{"n1", 1})
	c.addPending("g", "high", 2, hardS0)
	r := startWith(t, c, sim.Options{EvictionGrace: 2})
	o := r.session()
	if diff := cmp.Diff([]string{"ns/v-0"}, o.evicted); diff != "" {
		t.Fatalf("evicted (-want,+got):\n%s", diff)
	}
	for i := 0; i < 2; i++ {
		o = r.session()
		if got := o.binds.Count("ns", "g"); got != 0 {
			t.Fatalf("session %d: g bound %d pods on leaves %v while its victim terminates, want none", i+2, got, o.binds.Leaves("ns", "g"))
		}
	}
	bound := 0
	for i := 0; i < 3 && bound == 0; i++ {
		o = r.session()
		bound = o.binds.Count("ns", "g")
	}
	if bound != 2 {
		t.Fatalf("g bound %d pods once its victim is gone, want 2", bound)
	}
	if diff := cmp.Diff([]string{"B"}, o.binds.Leaves("ns", "g")); diff != "" {
		t.Errorf("g's leaves (-want,+got):\n%s", diff)
	}
}
