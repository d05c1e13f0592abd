package trace

// The high-load trace's queues and marks: which queue each gang runs in,
// which low jobs carry preemptable: false and which run from before the
// install. The replay (package replay, queues.go) submits them and checks
// the evictions against them.

import (
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
}{{QueueProd, 3, false}, {QueueBatch, 1, true}}

// The high-load trace's queue names.
const (
	QueueProd  = "bench-prod"
	QueueBatch = "bench-batch"
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
			g.Queue = QueueProd
		case g.Class == ClassMedium:
			g.Queue = QueueBatch
		case i%prodLowEvery == 0:
			g.Queue = QueueProd
		default:
			g.Queue = QueueBatch
		}
		if g.Class == ClassLow {
			g.NonPreemptable = i%nonPreemptableEvery == 1
			g.Unannotated = i%unannotatedEvery == 0
		}
	}
}

// Reclaimable reports whether other queues may reclaim from the named
// queue (the default queue is).
func Reclaimable(queue string) bool {
	for _, q := range loadQueues {
		if q.name == queue {
			return q.reclaimable
		}
	}
	return true
}

// LoadQueueObjects returns the trace's Queues.
func LoadQueueObjects() []*schedulingv1beta1.Queue {
	out := make([]*schedulingv1beta1.Queue, 0, len(loadQueues))
	for _, q := range loadQueues {
		out = append(out, workload.NewQueue(q.name, q.weight, q.reclaimable))
	}
	return out
}
