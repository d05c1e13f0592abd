package bench

// Queues, preemptable: false pods and pods running from before the install
// in the high-load trace, and the two eviction checks they bring
// (wrongQueueEvictions, nonPreemptableEvictions). Kept apart from the
// replay loop (loadrun.go), which calls in at submission, after the first
// cycle and per eviction.

import (
	"slices"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// loadQueues are the high-load trace's Queues: "prod" deserves three times
// "batch"'s share and may not be reclaimed from; "batch" may. Volcano's
// proportion plugin computes each one's deserved share from the weights and
// what its jobs ask for.
var loadQueues = []struct {
	name        string
	weight      int32
	reclaimable bool
}{{"bench-prod", 3, false}, {"bench-batch", 1, true}}

// Indices into loadQueues.
const (
	queueProd = iota
	queueBatch
)

// Shares of the trace's low jobs, chosen by trace index (every n-th), so
// the trace's arrivals and sizes stay what the generator drew.
const (
	// prodLowEvery: every third low job runs in prod, the others in batch.
	prodLowEvery = 3
	// nonPreemptableEvery: every eighth low job carries
	// volcano.sh/preemptable: "false".
	nonPreemptableEvery = 8
	// unannotatedEvery: every second low job running after the first
	// cycle is one rdmatopo did not place.
	unannotatedEvery = 2
)

// assignQueues sets the high-load trace's queues and marks: large gangs in
// prod, medium soft gangs in batch, low jobs split (prodLowEvery), some low
// jobs non-preemptable (nonPreemptableEvery) and some running from before
// the install (unannotatedEvery).
func assignQueues(t *LoadTrace) {
	for i := range t.Gangs {
		g := &t.Gangs[i]
		switch {
		case g.Big:
			g.Queue = loadQueues[queueProd].name
		case g.Class == classMedium:
			g.Queue = loadQueues[queueBatch].name
		case i%prodLowEvery == 0:
			g.Queue = loadQueues[queueProd].name
		default:
			g.Queue = loadQueues[queueBatch].name
		}
		if g.Class == classLow {
			g.NonPreemptable = i%nonPreemptableEvery == 1
			g.Unannotated = i%unannotatedEvery == 0
		}
	}
}

// reclaimable reports whether other queues may reclaim from the named
// queue (the default queue is reclaimable).
func reclaimable(queue string) bool {
	for _, q := range loadQueues {
		if q.name == queue {
			return q.reclaimable
		}
	}
	return true
}

// loadQueueObjects returns the trace's Queues.
func loadQueueObjects() []*schedulingv1beta1.Queue {
	out := make([]*schedulingv1beta1.Queue, 0, len(loadQueues))
	for _, q := range loadQueues {
		out = append(out, workload.NewQueue(q.name, q.weight, q.reclaimable))
	}
	return out
}

// placeInQueue puts a submission's set into its queue and marks its pods
// non-preemptable where the trace says so.
func placeInQueue(set *workload.Set, g LoadGang) {
	if g.Queue != "" {
		set.Queues = append(set.Queues, loadQueueObjects()...)
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
	if reclaimable(g.spec.Queue) || len(preemptors) == 0 {
		return
	}
	for _, p := range preemptors {
		if p.spec.Queue == g.spec.Queue {
			return
		}
	}
	r.res.WrongQueueEvictions++
}
