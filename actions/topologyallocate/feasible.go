package topologyallocate

import (
	"context"
	"hash/fnv"

	"k8s.io/client-go/util/workqueue"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// predicateWorkers is how many nodes are checked in parallel, as in
// Volcano's predicate helper.
const predicateWorkers = 16

// feasibleNodes returns nodes task can run on, at most as many as Volcano's
// percentage-nodes-to-find options ask for
// (util.CalculateNumOfFeasibleNodesToFind: every node at 100%, an adaptive
// share of a large cluster by default), so the cost of placing a pod that
// needs no RDMA does not grow with the cluster once it is large.
//
// Unlike Volcano's predicate helper it is deterministic: the walk starts at
// an offset derived from the task's UID (so pods spread over the node list
// without shared state), checks nodes in parallel batches, and keeps the
// first feasible nodes in walk order. Each node checked and refused has its
// error in the returned FitErrors.
func feasibleNodes(task *api.TaskInfo, nodes []*api.NodeInfo, fn api.PredicateFn) ([]*api.NodeInfo, *api.FitErrors) {
	fe := api.NewFitErrors()
	n := len(nodes)
	if n == 0 {
		return nil, fe
	}
	want := int(util.CalculateNumOfFeasibleNodesToFind(int32(n)))
	start := walkStart(task.UID, n)
	found := make([]*api.NodeInfo, 0, min(want, n))
	for walked := 0; walked < n && len(found) < want; {
		batch := min(max(want-len(found), predicateWorkers), n-walked)
		errs := make([]error, batch)
		first := start + walked
		workqueue.ParallelizeUntil(context.Background(), predicateWorkers, batch, func(i int) {
			errs[i] = fn(task, nodes[(first+i)%n])
		})
		for i, err := range errs {
			node := nodes[(first+i)%n]
			switch {
			case err != nil:
				fe.SetNodeError(node.Name, err)
			case len(found) < want:
				found = append(found, node)
			}
		}
		walked += batch
	}
	return found, fe
}

// walkStart is where the node walk for a task begins: a hash of its UID.
func walkStart(uid api.TaskID, n int) int {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return int(h.Sum32() % uint32(n))
}
