package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// TestMaxWait: a hard s0 gang that no leaf holds waits; with max-wait it
// is placed as soft once that much simulated time has passed since its
// first failed attempt, the run cycling on while the deadline is pending.
func TestMaxWait(t *testing.T) {
	type outcome struct {
		Placed  bool
		Tier    string
		Waited  time.Duration
		Cycles  int
		Pending bool // a deadline is still pending after the run
	}
	cases := map[string]struct {
		maxWait   string
		period    time.Duration
		maxCycles int
		// restartAfter, when set, restarts the scheduler after that many
		// cycles (the wait survives: it is on the PodGroup).
		restartAfter int
		want         outcome
	}{
		"30s at 1s per cycle": {
			maxWait: "30s", period: time.Second, maxCycles: 100,
			// First attempt at cycle 1 (t=0), relaxed and placed at t=30
			// (cycle 31), then a cycle binding nothing.
			want: outcome{Placed: true, Tier: "s1", Waited: 30 * time.Second, Cycles: 32},
		},
		"30s with a restart while waiting": {
			maxWait: "30s", period: time.Second, maxCycles: 100, restartAfter: 10,
			want: outcome{Placed: true, Tier: "s1", Waited: 30 * time.Second, Cycles: 32},
		},
		"30s at 10s per cycle": {
			maxWait: "30s", period: 10 * time.Second, maxCycles: 100,
			want: outcome{Placed: true, Tier: "s1", Waited: 30 * time.Second, Cycles: 5},
		},
		"no max-wait: waits for good": {
			period: time.Second, maxCycles: 100,
			// One cycle that binds nothing ends the run: it waited 0s so far.
			want: outcome{Cycles: 1},
		},
		"cycle cap before the deadline": {
			maxWait: "30s", period: time.Second, maxCycles: 10,
			want: outcome{Waited: 9 * time.Second, Cycles: 10, Pending: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := builders.TwoLeavesFourNodes()
			set := gang("hard", 3, 0)
			set.PodGroups[0].Annotations = map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
			if tc.maxWait != "" {
				set.PodGroups[0].Annotations[ledger.AnnotationMaxWait] = tc.maxWait
			}
			// Two nodes: each leaf has two zones, the gang needs three.
			s := newSim(t, minipodConf, withPodRoom(nodes[:2], cnrs[:2]),
				Options{Period: tc.period, Start: workload.Epoch.Add(time.Hour), NodeAgent: nodeagent.NUMA}, set)
			if tc.restartAfter > 0 {
				_, err := s.Run(tc.restartAfter)
				require.NoError(t, err)
				s.Restart()
			}
			_, err := s.Run(tc.maxCycles)
			require.NoError(t, err)
			job := BuildReport(s).Jobs[0]
			_, pending := s.PendingDeadline()
			got := outcome{Placed: job.Placed, Tier: job.Tier, Waited: time.Duration(job.WaitedSeconds * float64(time.Second)),
				Cycles: s.Cycle(), Pending: pending}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nreason: %s", diff, job.Reason)
			}
			if got.Placed {
				require.GreaterOrEqual(t, job.WaitedSeconds, 30.0)
				require.LessOrEqual(t, job.WaitedSeconds, 40.0)
			}
		})
	}
}

// runningGang returns a running job of priority class class (value prio):
// one pod of 4 GPUs and 2 NICs on each node's NUMA zone numa, annotated
// as the scheduler binds them, created a minute apart from at minutes
// after workload.Epoch.
func runningGang(name, class string, prio int32, minMember, numa, at int, nodes ...string) *workload.Set {
	set := gang(name, 0, at)
	set.PodGroups[0].Spec.MinMember = int32(minMember)
	set.PodGroups[0].Spec.PriorityClassName = class
	set.PodGroups[0].Status.Phase = schedulingv1beta1.PodGroupRunning
	set.PriorityClasses = []*schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: prio}}
	for i, node := range nodes {
		p := builders.MakePod("default", fmt.Sprintf("%s-%d", name, i)).Node(node).Group(name).
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req(corev1.ResourceCPU, "8").
			Annotation(ledger.AnnotationNICs, builders.NUMANICs[numa][0]+","+builders.NUMANICs[numa][1]).
			Annotation(ledger.AnnotationNUMA, fmt.Sprint(numa)).
			Created(workload.Epoch.Add(time.Duration(at+i) * time.Minute)).Obj()
		p.Spec.Priority = &prio
		p.Spec.PriorityClassName = class
		set.Pods = append(set.Pods, p)
	}
	return set
}

// highHardGang is a pending hard s0 gang "high" of 3 pods of priority class
// "high" (1000), created at 100 s.
func highHardGang() *workload.Set {
	high := gang("high", 3, 100)
	high.PodGroups[0].Annotations = map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	high.PodGroups[0].Spec.PriorityClassName = "high"
	high.PriorityClasses = []*schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}}
	prio := int32(1000)
	for _, p := range high.Pods {
		p.Spec.Priority = &prio
		p.Spec.PriorityClassName = "high"
	}
	return high
}

// TestPreemptRunningWorkload: the workload's running low-priority jobs
// hold their annotated NICs (no KCNR lists them); a high-priority hard s0
// gang evicts the cheapest of them, the evicted pods are gone (not
// recreated) and reported with the preemptor, and the gang binds.
func TestPreemptRunningWorkload(t *testing.T) {
	all := []string{"n1", "n2", "n3", "n4"}
	cases := map[string]struct {
		running []*workload.Set
		want    []Eviction
		placed  bool
	}{
		"whole gang on leaf A costs 4, three pods of the loose job on leaf B cost 3": {
			running: []*workload.Set{
				runningGang("low-a", "low", 10, 4, 0, 0, all...),
				runningGang("low-b", "low", 10, 1, 1, 10, all...),
			},
			want: []Eviction{
				{Namespace: "default", Name: "low-b-1", Job: "default/low-b", Preemptor: "default/high"},
				{Namespace: "default", Name: "low-b-2", Job: "default/low-b", Preemptor: "default/high"},
				{Namespace: "default", Name: "low-b-3", Job: "default/low-b", Preemptor: "default/high"},
			},
			placed: true,
		},
		"equal priority is never evicted": {
			running: []*workload.Set{
				runningGang("peer-a", "high", 1000, 4, 0, 0, all...),
				runningGang("peer-b", "high", 1000, 4, 1, 10, all...),
			},
			want: []Eviction{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			high := highHardGang()
			sets := append(append([]*workload.Set(nil), tc.running...), high)
			s := newSim(t, config.SchedulerConf, fourNodes(), Options{NodeAgent: nodeagent.NUMA}, sets...)
			_, err := s.Run(50)
			require.NoError(t, err)
			rep := BuildReport(s)
			got := rep.Evictions
			for i := range got {
				got[i].Reason = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("evictions (-want +got):\n%s", diff)
			}
			evicted := map[string]bool{}
			for _, e := range tc.want {
				evicted[e.Name] = true
			}
			for _, p := range rep.Pods {
				require.Equal(t, evicted[p.Name], p.Evicted != "", p.Name)
				if evicted[p.Name] {
					require.Empty(t, p.Node, "an evicted pod is gone: %s", p.Name)
				}
			}
			var job JobPlacement
			for _, j := range rep.Jobs {
				if j.Name == "high" {
					job = j
				}
			}
			require.Equal(t, tc.placed, job.Placed, job.Reason)
			if tc.placed {
				require.Equal(t, "s0", job.Tier)
			}
		})
	}
}

// TestMaxWaitSurvivesFailedBind: a hard s0 gang relaxed after its max-wait
// is placed as soft, one of its binds fails, and the pod left pending is
// placed at once as soft too: the wait ends only once the gang is whole,
// not when it was placed, so the gang does not wait max-wait again for its
// last pod.
func TestMaxWaitSurvivesFailedBind(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	set := gang("hard", 3, 0)
	set.PodGroups[0].Annotations = map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0",
		ledger.AnnotationMaxWait: "30s"}
	failed := false
	hook := func(p *corev1.Pod, node string) error {
		if !failed && p.Name == "hard-0" {
			failed = true
			return fmt.Errorf("injected bind failure")
		}
		return nil
	}
	s := newSim(t, minipodConf, withPodRoom(nodes[:2], cnrs[:2]),
		Options{Start: workload.Epoch.Add(time.Hour), NodeAgent: nodeagent.NUMA, BindHook: hook}, set)
	var placedAt []int
	for c := 1; c <= 40; c++ {
		rep, err := s.RunCycle()
		require.NoError(t, err)
		if len(rep.Binds) > 0 {
			placedAt = append(placedAt, c)
		}
		if len(rep.FailedBinds) > 0 {
			require.Equal(t, 31, c, "the relaxed placement binds at t=30s (cycle 31)")
		}
	}
	require.True(t, failed, "the bind hook never ran")
	// Cycle 31 binds two pods, cycle 32 the third (its wait is not reset).
	require.Equal(t, []int{31, 32}, placedAt)
	job := BuildReport(s).Jobs[0]
	require.True(t, job.Placed, "reason: %s", job.Reason)
}

// TestEvictionGrace: with EvictionGrace the victims of a preemption stay on
// their nodes, terminating, for that many cycles; the preemptor binds only
// once they are gone, on the NICs they held, and no other pod is evicted
// meanwhile.
func TestEvictionGrace(t *testing.T) {
	all := []string{"n1", "n2", "n3", "n4"}
	for _, grace := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("grace %d", grace), func(t *testing.T) {
			high := highHardGang()
			s := newSim(t, config.SchedulerConf, fourNodes(), Options{NodeAgent: nodeagent.NUMA, EvictionGrace: grace},
				runningGang("low-a", "low", 10, 4, 0, 0, all...), runningGang("low-b", "low", 10, 1, 1, 10, all...), high)
			evictedAt, goneAt, boundAt := 0, 0, 0
			evicted := 0
			for c := 1; c <= 10; c++ {
				rep, err := s.RunCycle()
				require.NoError(t, err)
				if len(rep.Evicted) > 0 {
					require.Zero(t, evictedAt, "evictions in cycles %d and %d", evictedAt, c)
					evictedAt, evicted = c, len(rep.Evicted)
				}
				if len(rep.Terminated) > 0 {
					require.Len(t, rep.Terminated, evicted)
					goneAt = c
				}
				if len(rep.Binds) > 0 && boundAt == 0 {
					boundAt = c
				}
			}
			require.Equal(t, 3, evicted)
			require.Equal(t, 1, evictedAt)
			if grace == 0 {
				require.Zero(t, goneAt, "without grace evicted pods are gone at once")
				require.Equal(t, 2, boundAt)
				return
			}
			require.Equal(t, evictedAt+1+grace, goneAt)
			require.Equal(t, goneAt, boundAt, "the preemptor binds in the cycle its victims are gone")
		})
	}
}
