package topologyallocate_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// zonePod is a running pod holding one whole NUMA zone of a node (4 GPU,
// both NICs), listed in the node's KCNR and annotated as rdmatopo
// annotates the pods it places.
type zonePod struct {
	group, name string
	numa        int
}

// addNodeHolding adds a provider-shaped node (NUMA 0 on leaf0, NUMA 1 on
// leaf1) with the given running pods; their PodGroups must exist.
func (c *cluster) addNodeHolding(name, leaf0, leaf1 string, pods ...zonePod) {
	c.addNode(name, leaf0, leaf1)
	w := builders.ProviderCNR(name, leaf0, leaf1)
	for _, zp := range pods {
		uid := "u-" + zp.name
		consumer := builders.Consumer("ns", zp.name, uid)
		nics := builders.NUMANICs[zp.numa]
		w.UseNIC(nics[0], consumer).UseNIC(nics[1], consumer).
			Alloc(zp.numa, consumer, corev1.ResourceList{builders.GPUResource: resource.MustParse("4")})
		c.pods = append(c.pods, builders.MakePod("ns", zp.name).UID(uid).Node(name).Phase(corev1.PodRunning).Group(zp.group).
			Req("cpu", "4").Req("memory", "8Gi").Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").
			Annotation(ledger.AnnotationNICs, nics[0]+","+nics[1]).Annotation(ledger.AnnotationNUMA, fmt.Sprint(zp.numa)).
			SchedulerName("volcano").Obj())
	}
	c.cnrs[len(c.cnrs)-1] = w.Obj()
}

// addRunningGroup adds a running PodGroup of minMember pods.
func (c *cluster) addRunningGroup(name string, minMember int, ann map[string]string) {
	c.pgs = append(c.pgs, builders.MakePodGroup("ns", name).MinMember(int32(minMember)).Annotations(ann).
		Phase(schedulingv1beta1.PodGroupRunning).Obj())
}

// addPendingPod adds a pending pod of 4 GPU + 2 RDMA to a group.
func (c *cluster) addPendingPod(group, name string) {
	c.pods = append(c.pods, builders.MakePod("ns", name).Group(group).Req("cpu", "4").Req("memory", "8Gi").
		Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").SchedulerName("volcano").Obj())
}

// TestLatePodScenarios: a gang of 8 runs with ranks 0-3 under leaf A and
// 4-7 under leaf B (g-i is rank i), except one pod, deleted and re-created,
// which waits. The best fit for it is elsewhere (n6, whose one free zone is
// under B); it goes next to its rank neighbours instead, and into its
// segment's leaf when the gang has segments.
func TestLatePodScenarios(t *testing.T) {
	segS0 := map[string]string{placement.AnnotationSegmentSize: "4", placement.AnnotationSegmentTier: "s0"}
	hardSegS0 := map[string]string{placement.AnnotationSegmentSize: "4", placement.AnnotationSegmentTier: "s0",
		ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s1"}
	// buildMin runs the gang but for rank late, whose zone another job took;
	// n5 has both zones free (room under A and under B), n6 its zone under
	// B only (the best fit); with bFull, no zone under B is left. The
	// gang's minMember is minMember.
	buildMin := func(late int, ann map[string]string, bFull bool, minMember int) func(c *cluster) {
		return func(c *cluster) {
			c.addRunningGroup("g", minMember, ann)
			c.addRunningGroup("other", 1, nil)
			for i := 1; i <= 4; i++ {
				var pods []zonePod
				for numa, rank := range []int{i - 1, i + 3} {
					name, group := fmt.Sprintf("g-%d", rank), "g"
					if rank == late {
						name, group = fmt.Sprintf("other-n%d-%d", i, numa), "other"
					}
					pods = append(pods, zonePod{group: group, name: name, numa: numa})
				}
				c.addNodeHolding(fmt.Sprintf("n%d", i), "A", "B", pods...)
			}
			n5 := []zonePod{}
			n6 := []zonePod{{group: "other", name: "other-n6-0", numa: 0}}
			if bFull {
				n5 = append(n5, zonePod{group: "other", name: "other-n5-1", numa: 1})
				n6 = append(n6, zonePod{group: "other", name: "other-n6-1", numa: 1})
			}
			c.addNodeHolding("n5", "A", "B", n5...)
			c.addNodeHolding("n6", "A", "B", n6...)
			c.addPendingPod("g", fmt.Sprintf("g-%d", late))
		}
	}
	build := func(late int, ann map[string]string, bFull bool) func(c *cluster) {
		return buildMin(late, ann, bFull, 8)
	}
	cases := map[string]struct {
		build func(c *cluster)
		late  string
		// want is the late pod's node/leaf; "" when it must wait.
		want       string
		wantReason string
		// crossings the ring over the whole gang makes: 2 unless set.
		crossings int
	}{
		"re-created pod goes under its neighbours' leaf, not to the best fit": {
			build: build(1, nil, false), late: "g-1", want: "n5/A",
		},
		"re-created pod of the second block goes under its neighbours' leaf": {
			build: build(5, nil, false), late: "g-5", want: "n5/B",
		},
		// minMember 4 is met: the pod is planned alone, beyond minMember.
		"pod beyond minMember goes under its neighbours' leaf": {
			build: buildMin(1, nil, false, 4), late: "g-1", want: "n5/A",
		},
		"pod beyond minMember goes into its segment's leaf": {
			build: buildMin(5, segS0, false, 4), late: "g-5", want: "n5/B",
		},
		"re-created pod goes into its segment's leaf": {
			build: build(5, segS0, false), late: "g-5", want: "n5/B",
		},
		"re-created pod of segment 1 goes under leaf A": {
			build: build(2, segS0, false), late: "g-2", want: "n5/A",
		},
		// Soft mode: without segments it would take A; its segment's leaf
		// is full, so it waits, naming the segment.
		"re-created pod waits when its segment's leaf is full": {
			build: build(6, segS0, true), late: "g-6",
			wantReason: "no S0 holds segment 2 of 2 (ranks 4-7, 1 pods of 4 GPU + 2 RDMA) where its 3 placed pods are: " +
				"no S0 can hold 1 pods of 4 GPU + 2 RDMA next to the 3 pods it holds; its S0 holds 0 more",
		},
		"re-created pod waits when its segment's leaf is full, hard mode": {
			build: build(6, hardSegS0, true), late: "g-6",
			wantReason: "no S0 holds segment 2 of 2 (ranks 4-7, 1 pods of 4 GPU + 2 RDMA) where its 3 placed pods are: " +
				"no S0 can hold 1 pods of 4 GPU + 2 RDMA next to the 3 pods it holds; its S0 holds 0 more",
		},
		"without segments the pod takes the room left under A": {
			build: build(6, nil, true), late: "g-6", want: "n5/A", crossings: 4,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			o := runSession(t, c)
			checkBinds(t, o)
			task := o.binds["ns/"+tc.late]
			if tc.want == "" {
				if task != nil {
					t.Fatalf("%s bound on %s, want it waiting", tc.late, task.Node)
				}
				if got := condition(o.pgs["ns/g"]); got != tc.wantReason {
					t.Errorf("condition message = %q, want %q", got, tc.wantReason)
				}
				return
			}
			if task == nil {
				t.Fatalf("%s not bound; condition %q", tc.late, condition(o.pgs["ns/g"]))
			}
			if got := task.Node + "/" + task.Pod.Annotations[ledger.AnnotationS0]; got != tc.want {
				t.Errorf("%s on %s, want %s", tc.late, got, tc.want)
			}
			// The ring over the whole gang crosses two leaf boundaries
			// where the room allows.
			if tc.crossings == 0 {
				tc.crossings = 2
			}
			var ring []string
			for r := 0; r < 8; r++ {
				name := fmt.Sprintf("g-%d", r)
				if name == tc.late {
					ring = append(ring, tc.want)
					continue
				}
				p := c.pod(name)
				ring = append(ring, p.Spec.NodeName+"/"+map[string]string{"0": "A", "1": "B"}[p.Annotations[ledger.AnnotationNUMA]])
			}
			if crossings, leaves := leafCrossings(ring); crossings != tc.crossings || leaves != 2 {
				t.Errorf("ring %s crosses %d leaf boundaries over %d leaves, want %d over 2", strings.Join(ring, " "), crossings, leaves, tc.crossings)
			}
		})
	}
}
