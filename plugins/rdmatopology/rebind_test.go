package rdmatopology

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// rebindJob builds job "ns/g" of minMember pods g-0, g-1, ...: those in
// running are bound to n1, the others pending.
func rebindJob(minMember int32, pods int, running ...int) *api.JobInfo {
	j := api.NewJobInfo("ns/g")
	j.Namespace, j.Name, j.MinAvailable = "ns", "g", minMember
	for i := 0; i < pods; i++ {
		w := builders.MakePod("ns", fmt.Sprintf("g-%d", i)).UID(fmt.Sprintf("u-g-%d", i)).Group("g")
		if slices.Contains(running, i) {
			w.Node("n1")
		}
		j.AddTaskInfo(api.NewTaskInfo(w.Obj()))
	}
	return j
}

// sentTo is a sent bind of pod g-i of "ns/g" to node, on the NICs of zone
// numa, with the victims of the hold it came from.
func sentTo(i int, node string, numa int, victims ...string) sentBind {
	a := placement.Assignment{PodUID: fmt.Sprintf("u-g-%d", i), Node: node, Zones: zoneRes("u", "ns/g", node, numa).Zones}
	return sentBind{job: "ns/g", victims: victims, task: preemption.HoldTask{UID: a.PodUID, Name: fmt.Sprintf("ns/g-%d", i),
		Node: node, RDMA: true, Assignment: a}}
}

// TestHoldFailedBinds: the last session's binds that failed become a
// rebind hold only for a gang with pods bound but fewer than minMember,
// and only for pods still pending; the victims of the hold the pods were
// allocated from come with them.
func TestHoldFailedBinds(t *testing.T) {
	cases := map[string]struct {
		job      *api.JobInfo // nil: the job is gone
		sent     []sentBind
		existing *preemption.Hold
		want     []string // held pods, "name on node"
		victims  []string
	}{
		"partial gang keeps the failed pod's slot": {
			job: rebindJob(3, 3, 0, 1), sent: []sentBind{sentTo(0, "n1", 0), sentTo(1, "n1", 1), sentTo(2, "n2", 0, "ns/v-0")},
			want: []string{"ns/g-2 on n2"}, victims: []string{"ns/v-0"},
		},
		"two failed binds, one hold": {
			job: rebindJob(3, 3, 0), sent: []sentBind{sentTo(0, "n1", 0), sentTo(1, "n2", 1), sentTo(2, "n2", 0)},
			want: []string{"ns/g-1 on n2", "ns/g-2 on n2"},
		},
		"nothing bound: planned whole again": {
			job: rebindJob(2, 2), sent: []sentBind{sentTo(0, "n1", 0), sentTo(1, "n2", 0)},
		},
		"whole without the pod": {
			job: rebindJob(1, 2, 0), sent: []sentBind{sentTo(0, "n1", 0), sentTo(1, "n2", 0)},
		},
		"every bind succeeded": {
			job: rebindJob(2, 2, 0, 1), sent: []sentBind{sentTo(0, "n1", 0), sentTo(1, "n1", 1)},
		},
		"job gone": {
			sent: []sentBind{sentTo(0, "n1", 0)},
		},
		"a hold the gang has already stays": {
			job: rebindJob(2, 2, 0), sent: []sentBind{sentTo(1, "n2", 0)},
			existing: &preemption.Hold{Job: "ns/g", Name: "ns/g", Tasks: []preemption.HoldTask{{Name: "ns/g-1", Node: "n3"}}},
			want:     []string{"ns/g-1 on n3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobs := map[api.JobID]*api.JobInfo{}
			if tc.job != nil {
				jobs[tc.job.UID] = tc.job
			}
			s := testSession(nil, &framework.Session{Jobs: jobs}, nil)
			if tc.existing != nil {
				s.rt.preemption.Holds.Put(tc.existing.Job, tc.existing)
			}
			s.rt.sent = tc.sent
			s.holdFailedBinds()
			if s.rt.sent != nil {
				t.Errorf("sent binds kept after the session opened: %v", s.rt.sent)
			}
			var got, victims []string
			for _, h := range s.rt.preemption.Holds.Values() {
				for _, task := range h.Tasks {
					got = append(got, task.Name+" on "+task.Node)
				}
				victims = append(victims, h.Victims...)
				if tc.existing == nil && !h.Rebind {
					t.Errorf("hold of %s is not a rebind hold", h.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("held pods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.victims, victims); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRebindHoldAndListings: a KCNR listing on a held NIC ends a rebind
// hold only when the listed pod is alive (the node gave it the NIC); the
// listing of a pod that is gone keeps the hold, and its pods wait for the
// listing to go (Listed); a victim's listing is neither.
func TestRebindHoldAndListings(t *testing.T) {
	nic := builders.NUMANICs[0][0]
	cases := map[string]struct {
		consumer   string // listed on the held NIC ("" none)
		broken     bool
		waitsFor   string
		preemptToo bool // the same listing breaks a preempting gang's hold
	}{
		"free NIC":             {},
		"a live pod has it":    {consumer: builders.Consumer("ns", "other-0", "u-o"), broken: true, preemptToo: true},
		"a pod gone is listed": {consumer: builders.Consumer("ns", "done-0", "u-d"), waitsFor: builders.Consumer("ns", "done-0", "u-d"), preemptToo: true},
		"a victim is listed":   {consumer: builders.Consumer("ns", "v-0", "u-v")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
				Zone(0, 4, 64000).Zone(1, 4, 64000).
				NIC(nic, 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
				NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B")
			if tc.consumer != "" {
				w.UseNIC(nic, tc.consumer)
			}
			node := builders.MakeNode("n1").Shared().GPU(8).RDMA(4).CPU("128").Obj()
			f := topology.Build(topology.Config{}.WithDefaults(), []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{w.Obj()})
			job := rebindJob(2, 2, 0)
			other := api.NewTaskInfo(builders.MakePod("ns", "other-0").UID("u-o").Node("n1").Obj())
			ni := api.NewNodeInfo(node)
			if err := ni.AddTask(other); err != nil {
				t.Fatal(err)
			}
			rt := NewRuntime(topology.Config{})
			s := testSession(rt, &framework.Session{Jobs: map[api.JobID]*api.JobInfo{job.UID: job}, Nodes: map[string]*api.NodeInfo{"n1": ni}}, f)
			task := sentTo(1, "n1", 0).task
			for _, rebind := range []bool{true, false} {
				h := &preemption.Hold{Job: string(job.UID), Name: "ns/g", Tasks: []preemption.HoldTask{task}, Victims: []string{"ns/v-0"}, Since: rt.Now(), Rebind: rebind}
				broken := s.holdBroken(h, rt.Now()) != ""
				want := tc.broken
				if !rebind {
					want = tc.preemptToo
				}
				if broken != want {
					t.Errorf("rebind=%v: holdBroken = %q, want broken %v", rebind, s.holdBroken(h, rt.Now()), want)
				}
				if rebind && !tc.broken {
					if got := s.Listed(h); got != tc.waitsFor {
						t.Errorf("Listed = %q, want %q", got, tc.waitsFor)
					}
				}
				if late := s.holdBroken(h, rt.Now().Add(preemption.Timeout+time.Second)); late == "" {
					t.Errorf("rebind=%v: hold outlives preemption.Timeout", rebind)
				}
			}
		})
	}
}
