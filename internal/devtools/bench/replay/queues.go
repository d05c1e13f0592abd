package replay

// Queues, preemptable: false pods and pods running from before the install
// in the high-load replay, and the two eviction checks they bring
// (wrongQueueEvictions, nonPreemptableEvictions). Kept apart from the
// replay loop (loadrun.go), which calls in at submission, after the first
// cycle and per eviction; the queues themselves are the trace's
// (trace.LoadQueueObjects).

import (
	"slices"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// placeInQueue puts a submission's set into its queue and marks its pods
// non-preemptable where the trace says so.
func placeInQueue(set *workload.Set, g trace.LoadGang) {
	if g.Queue != "" {
		set.Queues = append(set.Queues, trace.LoadQueueObjects()...)
		set.PodGroups[0].Spec.Queue = g.Queue
	}
	if !g.NonPreemptable {
		return
	}
	for _, p := range set.Pods {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[schedulingv1beta1.PodPreemptable] = "false"
	}
}

// reinstall turns the gangs the trace marks Unannotated that run after the
// first cycle into pods rdmatopo did not place: their annotations go and
// the scheduler restarts (sim.Simulator.Reinstall), as when rdmatopo is
// installed on a busy cluster. It returns how many pods that concerned
// (none, and no restart, when the trace marks none).
func (r *loadReplay) reinstall() (int, error) {
	var keys []string
	for _, g := range r.latest {
		if g == nil || g.placed == 0 || g.killed || !g.spec.Unannotated {
			continue
		}
		for _, name := range g.pods {
			keys = append(keys, workload.DefaultNamespace+"/"+name)
		}
	}
	if len(keys) == 0 {
		return 0, nil
	}
	return len(keys), r.s.Reinstall(keys)
}

// checkEviction counts an eviction against the queue rule: wrong-queue
// when the victim's queue may not be reclaimed from and, of the gangs that
// used its node (users) and those the scheduler evicted it for, none is of
// its queue (nothing to judge when none is known). Evictions of pods that
// carry volcano.sh/preemptable: "false" are counted as they happen.
func (r *loadReplay) checkEviction(e evictionRec, users []*loadGang) {
	g := e.victim
	preemptors := append(slices.Clip(users), e.claimed...)
	if trace.Reclaimable(g.spec.Queue) || len(preemptors) == 0 {
		return
	}
	for _, p := range preemptors {
		if p.spec.Queue == g.spec.Queue {
			return
		}
	}
	r.res.WrongQueueEvictions++
}
