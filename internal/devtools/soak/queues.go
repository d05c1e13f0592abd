package soak

// Queues and volcano.sh/preemptable: "false" of the soak with
// Config.Priorities, and what the checker learns of them: a victim of a
// gang of another queue must be in a reclaimable queue (topology-reclaim),
// a victim of its own queue must be of lower priority (topology-preempt),
// and no pod marked non-preemptable is ever a victim.

import (
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// soakQueues are the soak's Queues with Priorities: prod deserves three
// times batch's share and may not be reclaimed from; batch may.
var soakQueues = []struct {
	name        string
	weight      int32
	reclaimable bool
}{{"soak-prod", 3, false}, {"soak-batch", 1, true}}

// Which gangs go where, by the order they are submitted in (every n-th),
// so the soak's random draws are the same as without queues.
const (
	// batchEvery: every third low or medium gang runs in batch; high gangs
	// and the rest run in prod.
	batchEvery = 3
	// nonPreemptableEvery: every seventh low gang's pods carry
	// volcano.sh/preemptable: "false".
	nonPreemptableEvery = 7
)

// queueObjects returns the soak's Queues.
func queueObjects() []*schedulingv1beta1.Queue {
	out := make([]*schedulingv1beta1.Queue, 0, len(soakQueues))
	for _, q := range soakQueues {
		out = append(out, workload.NewQueue(q.name, q.weight, q.reclaimable))
	}
	return out
}

// queueMarks is what the soak assigned each gang ("namespace/name"), for
// the checker.
type queueMarks struct {
	// queue is each gang's Queue.
	queue map[string]string
	// nonPreemptable marks gangs whose pods carry preemptable "false".
	nonPreemptable map[string]bool
}

// assign chooses gang key's queue (none without queues: the default
// queue) and mark, as the n-th gang of class class (an index into
// soakClasses), and records them.
func (m *queueMarks) assign(key string, class, n int, queues bool) (queue string, nonPreemptable bool) {
	switch {
	case !queues:
	case class < len(soakClasses)-1 && n%batchEvery == 0:
		queue = soakQueues[1].name
	default:
		queue = soakQueues[0].name
	}
	nonPreemptable = class == 0 && n%nonPreemptableEvery == 1
	m.queue[key] = queue
	m.nonPreemptable[key] = nonPreemptable
	return queue, nonPreemptable
}

// reclaimableQueue reports whether other queues may reclaim from queue
// (the default queue, as Volcano creates it, is reclaimable).
func reclaimableQueue(queue string) bool {
	for _, q := range soakQueues {
		if q.name == queue {
			return q.reclaimable
		}
	}
	return true
}
