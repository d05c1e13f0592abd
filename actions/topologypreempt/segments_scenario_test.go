package topologypreempt_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestPreemptionKeepsSegments: the fabric is full; low single pods sit on
// n1 (A, B) and n5 (C, D), the youngest, and on n2 (A, B), older; the rest
// is held at the preemptor's priority. A soft gang of 4 frees the four
// youngest pods, one per leaf. With segments of 2 under one S0 those four
// slots hold no segment: the gang evicts the two pods of A and of B
// instead, as many pods but older, and each segment binds under one leaf.
func TestPreemptionKeepsSegments(t *testing.T) {
	build := func(ann map[string]string) func(c *cluster) {
		return func(c *cluster) {
			c.eightNodes()
			c.addRunning("oa", "low", 1, slot{"n2", 0})
			c.addRunning("ob", "low", 1, slot{"n2", 1})
			c.addRunning("hx", "high", 1, slot{"n3", 0}, slot{"n3", 1}, slot{"n4", 0}, slot{"n4", 1},
				slot{"n6", 0}, slot{"n6", 1}, slot{"n7", 0}, slot{"n7", 1}, slot{"n8", 0}, slot{"n8", 1})
			c.addRunning("sa", "low", 1, slot{"n1", 0})
			c.addRunning("sb", "low", 1, slot{"n1", 1})
			c.addRunning("sc", "low", 1, slot{"n5", 0})
			c.addRunning("sd", "low", 1, slot{"n5", 1})
			c.addPending("seg", "high", 4, ann)
		}
	}
	cases := map[string]struct {
		build       func(c *cluster)
		wantEvicted []string
		wantLeaves  []string
		// segment is the segment size to check on the bound pods (0: none).
		segment int
	}{
		"without segments the four youngest pods go, one per leaf": {
			build:       build(nil),
			wantEvicted: sorted(pods("sa", 1), pods("sb", 1), pods("sc", 1), pods("sd", 1)),
			wantLeaves:  []string{"A", "B", "C", "D"},
		},
		"segments of 2 under one S0 free two slots under each of two leaves": {
			build:       build(map[string]string{placement.AnnotationSegmentSize: "2", placement.AnnotationSegmentTier: "s0"}),
			wantEvicted: sorted(pods("oa", 1), pods("ob", 1), pods("sa", 1), pods("sb", 1)),
			wantLeaves:  []string{"A", "B"}, segment: 2,
		},
		"hard s1 gang with segments of 2 under one S0": {
			build: build(map[string]string{placement.AnnotationSegmentSize: "2", placement.AnnotationSegmentTier: "s0",
				ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s1"}),
			wantEvicted: sorted(pods("oa", 1), pods("ob", 1), pods("sa", 1), pods("sb", 1)),
			wantLeaves:  []string{"A", "B"}, segment: 2,
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
			// The victims are gone.
			o = r.session()
			if got := o.binds.Count("ns", "seg"); got != 4 {
				t.Fatalf("seg: %d pods bound, want 4", got)
			}
			if diff := cmp.Diff(tc.wantLeaves, o.binds.Leaves("ns", "seg")); diff != "" {
				t.Errorf("seg leaves (-want,+got):\n%s", diff)
			}
			for start := 0; tc.segment > 0 && start < 4; start += tc.segment {
				leaves := map[string]bool{}
				for _, name := range pods("seg", 4)[start : start+tc.segment] {
					for _, l := range strings.Split(o.binds[name].Pod.Annotations[ledger.AnnotationS0], ",") {
						leaves[l] = true
					}
				}
				if len(leaves) != 1 {
					t.Errorf("segment of ranks %d-%d spans leaves %v", start, start+tc.segment-1, leaves)
				}
			}
		})
	}
}

// TestPreemptionForLatePodKeepsSegment: a high gang of 4 runs ranks 0-1
// under A and rank 2 under B; rank 3, re-created, waits on a full fabric.
// The cheapest eviction is the youngest low pod, under C; with segments
// of 2 under one S0 rank 3 belongs under B, so the low pod there goes.
func TestPreemptionForLatePodKeepsSegment(t *testing.T) {
	build := func(ann map[string]string) func(c *cluster) {
		return func(c *cluster) {
			c.eightNodes()
			c.addRunning("g", "high", 4, slot{"n1", 0}, slot{"n2", 0}, slot{"n1", 1})
			for k, v := range ann {
				c.podGroupMeta("g", false, k, v)
			}
			c.addRunning("hx", "high", 1, slot{"n3", 0}, slot{"n3", 1}, slot{"n4", 0}, slot{"n4", 1},
				slot{"n5", 1}, slot{"n6", 0}, slot{"n6", 1}, slot{"n7", 0}, slot{"n7", 1}, slot{"n8", 0}, slot{"n8", 1})
			c.addRunning("lb", "low", 1, slot{"n2", 1})
			c.addRunning("lc", "low", 1, slot{"n5", 0})
			c.pods = append(c.pods, builders.MakePod("ns", "g-3").Group("g").
				Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").Req("memory", "8Gi").
				SchedulerName("volcano").Obj())
		}
	}
	cases := map[string]struct {
		build       func(c *cluster)
		wantEvicted []string
		wantLeaf    string
	}{
		"without segments the youngest pod goes": {
			build: build(nil), wantEvicted: pods("lc", 1), wantLeaf: "C",
		},
		"with segments of 2 under one S0 the pod under its segment's leaf goes": {
			build:       build(map[string]string{placement.AnnotationSegmentSize: "2", placement.AnnotationSegmentTier: "s0"}),
			wantEvicted: pods("lb", 1), wantLeaf: "B",
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
			// The victims are gone.
			o = r.session()
			task := o.binds["ns/g-3"]
			if task == nil {
				t.Fatalf("g-3 not bound")
			}
			if got := task.Pod.Annotations[ledger.AnnotationS0]; got != tc.wantLeaf {
				t.Errorf("g-3 under %s, want %s", got, tc.wantLeaf)
			}
		})
	}
}
