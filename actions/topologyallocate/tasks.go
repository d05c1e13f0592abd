// A task's turn: pods without a gang plan (beyond minMember, without RDMA)
// placed one at a time, as allocate places them.

package topologyallocate

import (
	"fmt"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/actions/internal/gangfit"
	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/preemption"
	"github.com/rdmatopo/rdmatopo/framework/step"
)

// allocateTasks is allocate's per-task turn of a job: tasks are taken in
// task order and each is placed (an RDMA task next to what its gang holds,
// see allocateRDMATask); as soon as the job is ready with tasks left, it
// is pushed back so that others get their turn. The statement is committed
// if the job is ready, else discarded unless the job may pipeline.
func (r *run) allocateTasks(queue *api.QueueInfo, job *api.JobInfo, tasks *util.PriorityQueue) {
	ssn := r.ssn
	stmt := framework.NewStatement(ssn)
	for !tasks.Empty() {
		task := tasks.Pop().(*api.TaskInfo)
		if !r.allocateTask(queue, job, stmt, task, nil) {
			break
		}
		if ssn.JobReady(job) && !tasks.Empty() {
			r.pushBack(job)
			break
		}
	}
	ready := ssn.JobReady(job)
	plugin.Settle(r.topo, stmt, step.Settle{Commit: ready, Keep: !ready && ssn.JobPipelined(job)})
	if ready {
		r.commits++
	}
}

// allocateTask places one task as allocate does: predicates, node order,
// best node, idle first, else pipelined on future idle, on the nodes
// within (nil: every node of the session). RDMA tasks are planned by
// allocateRDMATask instead, or refused when the session cannot place RDMA
// pods. It returns false when the job's turn should end (allocate's
// break).
func (r *run) allocateTask(queue *api.QueueInfo, job *api.JobInfo, stmt *framework.Statement, task *api.TaskInfo, within []*api.NodeInfo) bool {
	ssn := r.ssn
	if !ssn.Allocatable(queue, task) || job.TaskHasFitErrors(task) {
		return true
	}
	if r.refuse != nil && requestsRDMA(task) {
		setFitError(job, task, r.refuse.Error())
		return true
	}
	rdma := r.topo != nil && requestsRDMAOf(r.topo, job, task)
	var refusals map[string]error
	if r.fit != nil && !rdma {
		// The fabric nodes the chain refuses pods like this one on, as the
		// session's node sets know them: not walked again for it. Read
		// before the task's pre-predicates, as a set's walk runs its own.
		refusals = r.fit.Refusals(r.fit.Group(task))
	}
	if err := ssn.PrePredicateFn(task); err != nil {
		fe := api.NewFitErrors()
		for _, n := range ssn.NodeList {
			fe.SetNodeError(n.Name, err)
		}
		job.NodesFitErrors[task.UID] = fe
		return false
	}
	if rdma {
		r.allocateRDMATask(queue, job, stmt, task)
		return true
	}
	claimed := r.claimedAgainst(job)
	if within == nil {
		within = ssn.NodeList
	}
	nodes, fe := feasibleNodes(task, within, func(t *api.TaskInfo, n *api.NodeInfo) error {
		if by, ok := claimed[n.Name]; ok {
			return api.NewFitErrWithStatus(t, n, &api.Status{Code: api.Unschedulable,
				Reason: "node kept for " + by + ", an older waiting gang of the same priority"})
		}
		scratch := scratches.Get().(*gangfit.Scratch)
		ok, res := t.InitResreq.LessEqualWithResourcesName(scratch.FutureIdle(n), api.Zero)
		scratches.Put(scratch)
		if !ok {
			return api.NewFitErrWithStatus(t, n, &api.Status{Code: api.Unschedulable, Reason: api.WrapInsufficientResourceReason(res)})
		}
		if err, refused := refusals[n.Name]; refused {
			return err
		}
		return ssn.PredicateForAllocateAction(t, n)
	})
	if len(nodes) == 0 {
		job.NodesFitErrors[task.UID] = fe
		return job.NeedContinueAllocating()
	}
	best := bestNode(ssn, task, nodes)
	if best == nil {
		return true
	}
	if task.InitResreq.LessEqual(best.Idle, api.Zero) {
		if err := stmt.Allocate(task, best); err != nil {
			klog.ErrorS(err, "Allocate failed", "task", klog.KRef(task.Namespace, task.Name), "node", best.Name)
		} else {
			r.fit.Changed([]*api.TaskInfo{task})
		}
	} else if task.InitResreq.LessEqual(best.FutureIdle(), api.Zero) {
		if err := stmt.Pipeline(task, best.Name, false); err != nil {
			klog.ErrorS(err, "Pipeline failed", "task", klog.KRef(task.Namespace, task.Name), "node", best.Name)
		}
	}
	return true
}

// claimedAgainst returns the nodes of the rooms older waiting gangs of the
// job's priority claim (gangfit.ClaimedAgainst), where its pods
// without RDMA may not go. Claims are made only in topology-preempt, but
// whether one applies changes here: not once its gang is placed (a
// statement committed), not against a job with pods placed (its ready
// count grew). The answer is cached per job for as long as neither
// happened.
func (r *run) claimedAgainst(job *api.JobInfo) map[string]string {
	if r.topo == nil {
		return nil
	}
	key := claimKey{commits: r.commits, ready: job.ReadyTaskNum()}
	if c, ok := r.claims[job.UID]; ok && c.key == key {
		return c.nodes
	}
	c := claimedNodes{key: key, nodes: preemption.ClaimedNodes(gangfit.ClaimedAgainst(r.ssn, r.topo.Preemption(), job))}
	r.claims[job.UID] = c
	return c.nodes
}

// claimKey is what a job's claimed nodes depend on within a run.
type claimKey struct {
	commits int
	ready   int32
}

// claimedNodes is a cached answer of claimedAgainst and its key.
type claimedNodes struct {
	key   claimKey
	nodes map[string]string
}

// allocateRDMATask places one RDMA pod of a gang whose minMember is met: the
// planner places it alone, next to the nodes and leaves the gang holds
// (within its hard tier), and it is allocated in stmt.
func (r *run) allocateRDMATask(queue *api.QueueInfo, job *api.JobInfo, stmt *framework.Statement, task *api.TaskInfo) {
	topo := r.topo
	if _, err := topo.Gang(job); err != nil {
		klog.V(3).InfoS("Pod not placed: invalid job contract", "pod", klog.KRef(task.Namespace, task.Name), "err", err)
		topo.Report(job, nil, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
		setFitError(job, task, err.Error())
		return
	}
	g, err := r.fit.Request(job, []*api.TaskInfo{task}, 0)
	if err != nil {
		klog.V(3).InfoS("Pod not placed: invalid rank", "pod", klog.KRef(task.Namespace, task.Name), "err", err)
		topo.Report(job, nil, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
		setFitError(job, task, err.Error())
		return
	}
	// A pod beyond minMember is planned alone, next to its rank
	// neighbours and within its segment's domain when the segment holds
	// pods already.
	g.Need = 1
	byUID := map[string]*api.TaskInfo{string(task.UID): task}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		plan, fail := topo.Plan(g, nil)
		if plan == nil {
			klog.V(3).InfoS("No placement for pod next to its gang", "pod", klog.KRef(task.Namespace, task.Name), "reason", fail.Message)
			setFitError(job, task, fail.Message)
			return
		}
		bad, err := applyPlan(r.ssn, topo, queue, stmt, plan, byUID)
		if err == nil {
			r.fit.Changed([]*api.TaskInfo{task})
			klog.V(3).InfoS("Placed pod next to its gang", "pod", klog.KRef(task.Namespace, task.Name), "node", task.NodeName, "tier", plan.Tier)
			return
		}
		klog.V(3).InfoS("Planned node refused pod", "pod", klog.KRef(task.Namespace, task.Name), "attempt", attempt, "err", err)
		if bad == "" {
			setFitError(job, task, err.Error())
			return
		}
		g.Exclude[bad] = true
	}
	setFitError(job, task, fmt.Sprintf("planned nodes kept failing the session predicates after %d attempts", maxAttempts))
}

// setFitError records why a task was not placed, for Volcano's
// Unschedulable condition and the pod's PodScheduled condition.
func setFitError(job *api.JobInfo, task *api.TaskInfo, msg string) {
	fe := api.NewFitErrors()
	fe.SetError(msg)
	job.NodesFitErrors[task.UID] = fe
}

// bestNode scores candidate nodes, preferring those with idle resources.
func bestNode(ssn *framework.Session, task *api.TaskInfo, nodes []*api.NodeInfo) *api.NodeInfo {
	var idle, future []*api.NodeInfo
	for _, n := range nodes {
		if task.InitResreq.LessEqual(n.Idle, api.Zero) {
			idle = append(idle, n)
		} else if task.InitResreq.LessEqual(n.FutureIdle(), api.Zero) {
			future = append(future, n)
		}
	}
	for _, group := range [][]*api.NodeInfo{idle, future} {
		switch len(group) {
		case 0:
			continue
		case 1:
			return group[0]
		}
		scores := util.PrioritizeNodes(task, group, ssn.BatchNodeOrderFn, ssn.NodeOrderMapFn, ssn.NodeOrderReduceFn)
		if n := ssn.BestNodeFn(task, scores); n != nil {
			return n
		}
		return util.SelectBestNode(scores)
	}
	return nil
}
