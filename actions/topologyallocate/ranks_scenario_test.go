package topologyallocate_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// zonesBusy lists NUMA zones wholly taken (4 GPU, both NICs) by a running
// pod of another job, for addBusyNode.
func zonesBusy(numas ...int) []busy {
	var out []busy
	for _, n := range numas {
		out = append(out, busy{numa: n, gpu: 4, nics: []int{0, 1}})
	}
	return out
}

// gangPod is one pod of addGang.
type gangPod struct {
	name      string
	gpu, nics int
	labels    map[string]string
	ann       map[string]string
}

// addGang adds a PodGroup holding the given pods (minMember: all of them).
func (c *cluster) addGang(name string, pods []gangPod) {
	c.pgs = append(c.pgs, builders.MakePodGroup("ns", name).MinMember(int32(len(pods))).
		Phase(schedulingv1beta1.PodGroupInqueue).Obj())
	for _, gp := range pods {
		w := builders.MakePod("ns", gp.name).Group(name).Req("cpu", "4").Req("memory", "8Gi").
			Req(builders.GPUResource, fmt.Sprint(gp.gpu)).Req(builders.RDMAResource, fmt.Sprint(gp.nics)).SchedulerName("volcano")
		for k, v := range gp.labels {
			w = w.Label(k, v)
		}
		for k, v := range gp.ann {
			w = w.Annotation(k, v)
		}
		c.pods = append(c.pods, w.Obj())
	}
}

// boundRing lists "node/leaf" of the named pods, in the order given (rank
// order), as bound.
func boundRing(t *testing.T, o *outcome, names []string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		task := o.binds["ns/"+n]
		if task == nil {
			t.Fatalf("pod %s not bound", n)
		}
		out = append(out, task.Node+"/"+task.Pod.Annotations[ledger.AnnotationS0])
	}
	return out
}

// leafCrossings counts the leaf changes along a ring of "node/leaf" items.
func leafCrossings(ring []string) (crossings, leaves int) {
	seen := map[string]bool{}
	leafOf := func(s string) string { return s[strings.IndexByte(s, '/')+1:] }
	for i, s := range ring {
		seen[leafOf(s)] = true
		if len(ring) > 1 && leafOf(s) != leafOf(ring[(i+1)%len(ring)]) {
			crossings++
		}
	}
	return crossings, len(seen)
}

func TestRankContiguousScenarios(t *testing.T) {
	workers := func(prefix string, n int, typ string) []gangPod {
		var out []gangPod
		for i := 0; i < n; i++ {
			out = append(out, gangPod{name: fmt.Sprintf("%s-%s-%d", prefix, typ, i), gpu: 4, nics: 2,
				labels: map[string]string{placement.LabelReplicaType: typ, placement.LabelReplicaIndex: fmt.Sprint(i)}})
		}
		return out
	}
	cases := map[string]struct {
		build func(c *cluster)
		// ranks are the gang's pods in rank order.
		ranks []string
		// want is each rank's node/leaf; empty: only the crossings count.
		want      []string
		leaves    int
		tasks     map[string][]string
		crossings int
	}{
		// 24 nodes under 4 leaf pairs, 27 of 48 zones busy: leaves A and B
		// have 6 free zones each, so 14 pods take A, B and one more leaf.
		// The fill alternates A and B node by node; in rank order the ring
		// goes A six times, B six times, then C.
		"PodGroup ranked by name ordinal, 14 pods on 3 leaves": {
			build: func(c *cluster) {
				for i := 1; i <= 6; i++ {
					c.addBusyNode(fmt.Sprintf("a%d", i), "A", "B")
				}
				c.addBusyNode("c1", "C", "D")
				c.addBusyNode("c2", "C", "D", zonesBusy(1)...)
				for i := 3; i <= 6; i++ {
					c.addBusyNode(fmt.Sprintf("c%d", i), "C", "D", zonesBusy(0, 1)...)
				}
				for _, pair := range [][2]string{{"E", "F"}, {"G", "H"}} {
					p := strings.ToLower(pair[0])
					c.addBusyNode(p+"1", pair[0], pair[1], zonesBusy(1)...)
					c.addBusyNode(p+"2", pair[0], pair[1], zonesBusy(0)...)
					c.addBusyNode(p+"3", pair[0], pair[1], zonesBusy(1)...)
					for i := 4; i <= 6; i++ {
						c.addBusyNode(fmt.Sprintf("%s%d", p, i), pair[0], pair[1], zonesBusy(0, 1)...)
					}
				}
				var pods []gangPod
				// Created out of order: the name's ordinal decides.
				for _, i := range []int{13, 2, 7, 0, 11, 5, 9, 1, 12, 3, 8, 6, 10, 4} {
					pods = append(pods, gangPod{name: fmt.Sprintf("g-%d", i), gpu: 4, nics: 2})
				}
				c.addGang("g", pods)
			},
			ranks: func() []string {
				var out []string
				for i := 0; i < 14; i++ {
					out = append(out, fmt.Sprintf("g-%d", i))
				}
				return out
			}(),
			leaves: 3, crossings: 3,
		},
		// Leaves A and B have 3 free zones each, C and D 2 (both zones of
		// a1..a3 and c1, c2): 1 master of its own shape and 9 workers need
		// all four. The master is rank 0, worker i rank i+1.
		"PyTorchJob ranked by replica index, 1 master and 9 workers on 4 leaves": {
			build: func(c *cluster) {
				for i := 1; i <= 6; i++ {
					var busyA, busyC []int
					if i > 3 {
						busyA = []int{0, 1}
					}
					if i > 2 {
						busyC = []int{0, 1}
					}
					c.addBusyNode(fmt.Sprintf("a%d", i), "A", "B", zonesBusy(busyA...)...)
					c.addBusyNode(fmt.Sprintf("c%d", i), "C", "D", zonesBusy(busyC...)...)
				}
				pods := []gangPod{{name: "pt-master-0", gpu: 1, nics: 1,
					labels: map[string]string{placement.LabelReplicaType: "master", placement.LabelReplicaIndex: "0"}}}
				c.addGang("pt", append(pods, workers("pt", 9, "worker")...))
			},
			ranks: func() []string {
				out := []string{"pt-master-0"}
				for i := 0; i < 9; i++ {
					out = append(out, fmt.Sprintf("pt-worker-%d", i))
				}
				return out
			}(),
			leaves: 4, crossings: 4,
		},
		// Two nodes, each zone's NICs on its own leaf: 4 pods take both
		// leaves. The Job lists task "worker" before "chief", so the
		// workers are ranks 0 and 1 and take leaf A (first by name); by task
		// name the chiefs would.
		"Volcano Job ranked by spec.tasks order, then task index": {
			build: func(c *cluster) {
				c.addBusyNode("n1", "A", "B")
				c.addBusyNode("n2", "A", "B")
				var pods []gangPod
				for _, task := range []string{"chief", "worker"} {
					for i := 0; i < 2; i++ {
						idx := fmt.Sprint(i)
						pods = append(pods, gangPod{name: fmt.Sprintf("vj-%s-%d", task, i), gpu: 4, nics: 2,
							labels: map[string]string{placement.KeyTaskSpec: task, placement.KeyTaskIndex: idx},
							ann:    map[string]string{placement.KeyTaskSpec: task, placement.KeyTaskIndex: idx, "volcano.sh/job-name": "vj"}})
					}
				}
				c.addGang("vj", pods)
			},
			tasks:  map[string][]string{"ns/vj": {"worker", "chief"}},
			ranks:  []string{"vj-worker-0", "vj-worker-1", "vj-chief-0", "vj-chief-1"},
			want:   []string{"n1/A", "n2/A", "n1/B", "n2/B"},
			leaves: 2, crossings: 2,
		},
		"rdmatopo.io/rank overrides the name": {
			build: func(c *cluster) {
				c.addBusyNode("n1", "A", "B")
				c.addBusyNode("n2", "A", "B")
				var pods []gangPod
				for i, r := range []string{"3", "2", "1", "0"} {
					pods = append(pods, gangPod{name: fmt.Sprintf("u-%d", i), gpu: 4, nics: 2, ann: map[string]string{placement.AnnotationRank: r}})
				}
				c.addGang("u", pods)
			},
			ranks:  []string{"u-3", "u-2", "u-1", "u-0"},
			want:   []string{"n1/A", "n2/A", "n1/B", "n2/B"},
			leaves: 2, crossings: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			c.tasks = tc.tasks
			o := runSession(t, c)
			checkBinds(t, o)
			ring := boundRing(t, o, tc.ranks)
			if len(tc.want) > 0 {
				if diff := cmp.Diff(tc.want, ring); diff != "" {
					t.Errorf("node/leaf per rank (-want,+got):\n%s", diff)
				}
			}
			crossings, leaves := leafCrossings(ring)
			if leaves != tc.leaves || crossings != tc.crossings {
				t.Errorf("ring over %d leaves crosses %d leaf boundaries, want %d over %d: %v", leaves, crossings, tc.crossings, tc.leaves, ring)
			}
			// The PodGroup's placement annotation says the same.
			gang, _, _ := strings.Cut(tc.ranks[0], "-")
			key := "ns/" + gang
			if pg := o.pgs[key]; pg == nil {
				t.Errorf("PodGroup %s was not written back", key)
			} else {
				var pl struct {
					RingCrossings *int `json:"ringCrossings"`
				}
				if err := json.Unmarshal([]byte(pg.Annotations[ledger.AnnotationPlacement]), &pl); err != nil {
					t.Fatalf("%s placement annotation: %v", key, err)
				}
				if pl.RingCrossings == nil || *pl.RingCrossings != tc.crossings {
					t.Errorf("%s placement annotation %s: ringCrossings want %d", key, pg.Annotations[ledger.AnnotationPlacement], tc.crossings)
				}
			}
		})
	}
}

// An rdmatopo.io/rank that is not a rank keeps the gang pending with a
// reason naming the pod and the field.
func TestInvalidRankKeepsGangPending(t *testing.T) {
	c := &cluster{}
	c.addBusyNode("n1", "A", "B")
	c.addGang("bad", []gangPod{{name: "bad-0", gpu: 4, nics: 2}, {name: "bad-1", gpu: 4, nics: 2, ann: map[string]string{placement.AnnotationRank: "first"}}})
	o := runSession(t, c)
	var bound []string
	for name := range o.binds {
		bound = append(bound, name)
	}
	sort.Strings(bound)
	if len(bound) != 0 {
		t.Errorf("bound %v, want nothing", bound)
	}
	want := `pod ns/bad-1: metadata.annotations["rdmatopo.io/rank"]: "first" is not a rank (want a non-negative integer)`
	if got := condition(o.pgs["ns/bad"]); got != want {
		t.Errorf("condition message = %q, want %q", got, want)
	}
}

func TestSegmentScenarios(t *testing.T) {
	seg := func(size, tier string) map[string]string {
		return map[string]string{placement.AnnotationSegmentSize: size, placement.AnnotationSegmentTier: tier}
	}
	// aSplit: leaf A has 6 free zones, C and D 2 each (c1, c2), E 4.
	aSplit := func(c *cluster) {
		for i := 1; i <= 6; i++ {
			c.addBusyNode(fmt.Sprintf("a%d", i), "A", "B", zonesBusy(1)...)
		}
		c.addBusyNode("c1", "C", "D")
		c.addBusyNode("c2", "C", "D")
		for i := 1; i <= 4; i++ {
			c.addBusyNode(fmt.Sprintf("e%d", i), "E", "F", zonesBusy(1)...)
		}
	}
	// threeEach: every leaf has 3 free zones, one per node.
	threeEach := func(c *cluster) {
		for i := 1; i <= 6; i++ {
			busyZone := 1
			if i > 3 {
				busyZone = 0
			}
			c.addBusyNode(fmt.Sprintf("n%d", i), "A", "B", zonesBusy(busyZone)...)
		}
	}
	names := func(prefix string, n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("%s-%d", prefix, i))
		}
		return out
	}
	cases := map[string]struct {
		build      func(c *cluster)
		ranks      []string
		size       int
		wantReason string
	}{
		// Without segments 8 pods take A (6) and C (2), the best fit: ranks
		// 4-7 would straddle A and C.
		"segments of 4 under one S0": {
			build: func(c *cluster) { aSplit(c); c.addJob("seg", 8, 4, 2, seg("4", "s0")) },
			ranks: names("seg", 8), size: 4,
		},
		"segments of 4 fit no S0: the gang waits whole": {
			build:      func(c *cluster) { threeEach(c); c.addJob("seg", 8, 4, 2, seg("4", "s0")) },
			wantReason: "no S0 holds segment 1 of 2 (ranks 0-3, 4 pods of 4 GPU + 2 RDMA) next to the segments before it: no S0 can hold 4 pods of 4 GPU + 2 RDMA; the largest holds 3",
		},
		// Without segments 4 pods take A's 3 zones and 1 of B: ranks 2-3
		// would straddle A and B.
		"PyTorchJob with segments of 2 under one S0": {
			build: func(c *cluster) {
				threeEach(c)
				pods := []gangPod{{name: "pt-master-0", gpu: 4, nics: 2,
					labels: map[string]string{placement.LabelReplicaType: "master", placement.LabelReplicaIndex: "0"}}}
				for i := 0; i < 3; i++ {
					pods = append(pods, gangPod{name: fmt.Sprintf("pt-worker-%d", i), gpu: 4, nics: 2,
						labels: map[string]string{placement.LabelReplicaType: "worker", placement.LabelReplicaIndex: fmt.Sprint(i)}})
				}
				c.addGang("pt", pods)
				c.pgs[len(c.pgs)-1].Annotations = seg("2", "s0")
			},
			ranks: []string{"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"}, size: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			o := runSession(t, c)
			checkBinds(t, o)
			if tc.wantReason != "" {
				if len(o.binds) != 0 {
					t.Errorf("%d pods bound, want none", len(o.binds))
				}
				if got := condition(o.pgs["ns/seg"]); got != tc.wantReason {
					t.Errorf("condition message = %q, want %q", got, tc.wantReason)
				}
				return
			}
			ring := boundRing(t, o, tc.ranks)
			for start := 0; start < len(ring); start += tc.size {
				if _, leaves := leafCrossings(ring[start : start+tc.size]); leaves != 1 {
					t.Errorf("segment %d (ranks %d-%d) spans %d leaves: %v", start/tc.size, start, start+tc.size-1, leaves, ring)
				}
			}
		})
	}
}
