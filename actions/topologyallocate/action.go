// Package topologyallocate is the topology-allocate Volcano action, a
// replacement for allocate. Jobs are taken in Volcano's queue and job order.
// An RDMA gang is planned whole by framework/placement (tightest tier, best
// fit), applied through one Statement with every task checked by the session
// predicates, and committed only when the gang is ready, else discarded
// (which releases every NIC). Other jobs get allocate's per-task behaviour,
// with a deterministic node search bounded by Volcano's
// percentage-nodes-to-find options (feasibleNodes).
package topologyallocate

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// ActionName is the name of the action in volcano-scheduler.conf.
const ActionName = "topology-allocate"

// maxAttempts bounds the plans tried for one gang in one session when the
// session predicates reject a planned node.
const maxAttempts = 3

func init() {
	framework.RegisterAction(New())
}

// Action is the topology-allocate action. It keeps no state between
// sessions: everything it uses lives in the session or the plugin's runtime.
type Action struct{}

// New returns the action.
func New() *Action { return &Action{} }

// Name returns ActionName.
func (a *Action) Name() string { return ActionName }

// Initialize is a no-op.
func (a *Action) Initialize() {}

// UnInitialize is a no-op.
func (a *Action) UnInitialize() {}

// Execute allocates pending jobs queue by queue, in the session's orders.
func (a *Action) Execute(ssn *framework.Session) {
	klog.V(5).InfoS("Enter topology-allocate")
	defer klog.V(5).InfoS("Leave topology-allocate")
	topo := rdmatopology.ForSession(ssn)
	if topo == nil {
		klog.V(3).InfoS("rdma-topology plugin is not enabled; RDMA gangs are allocated task by task")
	}
	queues := util.NewPriorityQueue(ssn.QueueOrderFn)
	// One node filter per session: nodes do not change within it, so the
	// filter's per-node answers are shared by every gang.
	filters := newNodeFilter(ssn)
	jobsByQueue := map[api.QueueID]*util.PriorityQueue{}
	for _, job := range ssn.Jobs {
		if job.IsPending() {
			if conf.EnabledActionMap["enqueue"] {
				continue
			}
			// Without enqueue, pending groups move to inqueue here, as
			// allocate does.
			job.PodGroup.Status.Phase = "Inqueue"
		}
		if vr := ssn.JobValid(job); vr != nil && !vr.Pass {
			klog.V(4).InfoS("Job not valid for allocation", "job", job.UID, "reason", vr.Reason, "message", vr.Message)
			continue
		}
		if _, ok := ssn.Queues[job.Queue]; !ok {
			klog.InfoS("Skipping job of unknown queue", "job", job.UID, "queue", job.Queue)
			continue
		}
		if _, ok := jobsByQueue[job.Queue]; !ok {
			jobsByQueue[job.Queue] = util.NewPriorityQueue(ssn.JobOrderFn)
			queues.Push(ssn.Queues[job.Queue])
		}
		jobsByQueue[job.Queue].Push(job)
	}
	// Partial RDMA gangs first: some of their pods are bound (others failed
	// to bind and are pending again), so they hold GPUs and NICs while they
	// wait. The NICs their failed pods had were released when the session
	// opened; placing these gangs before anyone else lets them take those
	// slots back, inside the tier they hold, before another gang can.
	if topo != nil {
		for _, job := range partialGangs(ssn, topo, jobsByQueue) {
			if queue := ssn.Queues[job.Queue]; queue != nil && !ssn.Overused(queue) {
				allocateGang(ssn, topo, filters, queue, job)
			}
		}
	}
	for !queues.Empty() {
		queue := queues.Pop().(*api.QueueInfo)
		if ssn.Overused(queue) {
			klog.V(3).InfoS("Queue is overused", "queue", queue.Name)
			continue
		}
		jobs := jobsByQueue[queue.UID]
		if jobs == nil || jobs.Empty() {
			continue
		}
		job := jobs.Pop().(*api.JobInfo)
		if topo != nil && topo.IsRDMAJob(job) {
			allocateGang(ssn, topo, filters, queue, job)
		} else {
			allocateTasks(ssn, queue, job, framework.NewStatement(ssn), nil)
		}
		queues.Push(queue)
	}
}

// partialGangs removes from the queues, and returns in job order, the RDMA
// gangs that have some but fewer than minMember pods placed.
func partialGangs(ssn *framework.Session, topo *rdmatopology.Session, jobsByQueue map[api.QueueID]*util.PriorityQueue) []*api.JobInfo {
	partial := util.NewPriorityQueue(ssn.JobOrderFn)
	for qid, jobs := range jobsByQueue {
		rest := util.NewPriorityQueue(ssn.JobOrderFn)
		for !jobs.Empty() {
			job := jobs.Pop().(*api.JobInfo)
			if ready := job.ReadyTaskNum(); ready > 0 && ready < job.MinAvailable && topo.IsRDMAJob(job) {
				partial.Push(job)
			} else {
				rest.Push(job)
			}
		}
		jobsByQueue[qid] = rest
	}
	var out []*api.JobInfo
	for !partial.Empty() {
		out = append(out, partial.Pop().(*api.JobInfo))
	}
	return out
}

// pendingTasks returns the job's schedulable pending tasks in task order.
func pendingTasks(ssn *framework.Session, job *api.JobInfo) []*api.TaskInfo {
	pq := util.NewPriorityQueue(ssn.TaskOrderFn)
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if t.SchGated || t.Resreq.IsEmpty() {
			continue
		}
		pq.Push(t)
	}
	var out []*api.TaskInfo
	for !pq.Empty() {
		out = append(out, pq.Pop().(*api.TaskInfo))
	}
	return out
}

// allocateGang plans the job's RDMA tasks as one gang and applies the plan
// through a Statement; the job's other tasks are allocated in the same
// statement. The statement is committed only if the job is ready.
func allocateGang(ssn *framework.Session, topo *rdmatopology.Session, filters *nodeFilter, queue *api.QueueInfo, job *api.JobInfo) {
	tasks := pendingTasks(ssn, job)
	var rdma, other []*api.TaskInfo
	for _, t := range tasks {
		if topo.RequestsRDMA(t) {
			rdma = append(rdma, t)
		} else {
			other = append(other, t)
		}
	}
	if len(rdma) == 0 {
		allocateTasks(ssn, queue, job, framework.NewStatement(ssn), nil)
		return
	}
	c, relaxed, err := topo.EffectiveContract(job)
	if err != nil {
		// Never placed under a contract it does not have.
		klog.InfoS("Gang not placed: invalid job contract", "job", job.UID, "err", err)
		topo.RecordFailure(job, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
		return
	}
	if relaxed {
		klog.V(3).InfoS("Gang waited max-wait for its highest tier; planning it as soft", "job", job.UID, "maxWait", c.MaxWait)
	}
	g := buildGang(topo, filters, job, c, rdma, len(other))
	byUID := make(map[string]*api.TaskInfo, len(rdma))
	for _, t := range rdma {
		byUID[string(t.UID)] = t
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		start := time.Now()
		plan, fail := topo.State.Plan(g)
		rdmatopology.ObservePlan(time.Since(start))
		if plan == nil {
			klog.V(3).InfoS("No placement for gang", "job", job.UID, "reason", fail.Message)
			topo.RecordFailure(job, fail)
			return
		}
		klog.V(3).InfoS("Planned gang", "job", job.UID, "tier", plan.Tier, "s0s", len(plan.S0s), "pods", len(plan.Assignments), "attempt", attempt)
		stmt := framework.NewStatement(ssn)
		bad, err := applyPlan(ssn, topo, queue, stmt, plan, byUID)
		if err == nil {
			allocateTasks(ssn, queue, job, stmt, plan)
			if ssn.JobReady(job) {
				stmt.Commit()
				topo.ClearPlanned()
				rdmatopology.ObservePlaced(plan)
				return
			}
			err = fmt.Errorf("gang is not ready after its plan was applied")
		}
		stmt.Discard()
		topo.ClearPlanned()
		klog.V(3).InfoS("Discarded gang plan", "job", job.UID, "attempt", attempt, "err", err)
		if bad == "" {
			topo.RecordFailure(job, &placement.Failure{Code: placement.ReasonNoCapacity, Message: err.Error()})
			return
		}
		g.Exclude[bad] = true
	}
	topo.RecordFailure(job, &placement.Failure{Code: placement.ReasonNoCapacity,
		Message: fmt.Sprintf("planned nodes kept failing the session predicates after %d attempts", maxAttempts)})
}

// applyPlan allocates every planned task on its node, checked by the
// session predicates. It returns the node to exclude when one refuses.
func applyPlan(ssn *framework.Session, topo *rdmatopology.Session, queue *api.QueueInfo, stmt *framework.Statement, plan *placement.Plan, byUID map[string]*api.TaskInfo) (string, error) {
	for _, a := range plan.Assignments {
		task := byUID[a.PodUID]
		node := ssn.Nodes[a.Node]
		if task == nil || node == nil {
			return a.Node, fmt.Errorf("plan names unknown task %s or node %s", a.PodUID, a.Node)
		}
		if !ssn.Allocatable(queue, task) {
			return "", fmt.Errorf("queue %s cannot take task %s/%s", queue.Name, task.Namespace, task.Name)
		}
		if !task.InitResreq.LessEqual(node.Idle, api.Zero) {
			return a.Node, fmt.Errorf("node %s has too few idle resources for %s/%s", a.Node, task.Namespace, task.Name)
		}
		if err := ssn.PrePredicateFn(task); err != nil {
			return "", fmt.Errorf("pre-predicate of %s/%s: %w", task.Namespace, task.Name, err)
		}
		topo.SetPlanned(task.UID, a)
		if err := ssn.PredicateForAllocateAction(task, node); err != nil {
			return a.Node, fmt.Errorf("predicates refuse %s/%s on %s: %w", task.Namespace, task.Name, a.Node, err)
		}
		if err := stmt.Allocate(task, node); err != nil {
			return a.Node, fmt.Errorf("allocate %s/%s on %s: %w", task.Namespace, task.Name, a.Node, err)
		}
	}
	return "", nil
}

// buildGang turns the job's pending RDMA tasks into a planner request under
// contract c.
func buildGang(topo *rdmatopology.Session, filters *nodeFilter, job *api.JobInfo, c placement.Contract, rdma []*api.TaskInfo, others int) placement.Gang {
	g := placement.Gang{Job: string(job.UID), Mode: c.Mode, HighestTier: c.HighestTier, Held: topo.Held(job.UID),
		Exclude: map[string]bool{}, Allowed: filters.allowed}
	pods := make([]*v1.Pod, 0, len(rdma))
	for _, t := range rdma {
		g.Pods = append(g.Pods, placement.Pod{UID: string(t.UID), Name: t.Namespace + "/" + t.Name,
			Shape: topo.Shape(t), Group: filters.group(t.Pod)})
		pods = append(pods, t.Pod)
	}
	if !filters.constrained(pods) {
		g.Allowed = nil
	}
	need := int(job.MinAvailable) - int(job.ReadyTaskNum()) - others
	g.Need = max(0, min(need, len(rdma)))
	return g
}

// allocateTasks allocates the job's pending tasks that have no planned
// placement one by one, as allocate does: predicates, node order, best node,
// idle first, else pipelined on future idle. It commits the statement when
// the job is ready and plan is nil (a gang's caller commits itself);
// otherwise it discards, unless the job may pipeline.
func allocateTasks(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo, stmt *framework.Statement, plan *placement.Plan) {
	planned := map[api.TaskID]bool{}
	if plan != nil {
		for _, a := range plan.Assignments {
			planned[api.TaskID(a.PodUID)] = true
		}
	}
	for _, task := range pendingTasks(ssn, job) {
		if planned[task.UID] || task.Status != api.Pending {
			continue
		}
		if !ssn.Allocatable(queue, task) || job.TaskHasFitErrors(task) {
			continue
		}
		if err := ssn.PrePredicateFn(task); err != nil {
			fe := api.NewFitErrors()
			for _, n := range ssn.NodeList {
				fe.SetNodeError(n.Name, err)
			}
			job.NodesFitErrors[task.UID] = fe
			break
		}
		nodes, fe := feasibleNodes(task, ssn.NodeList, func(t *api.TaskInfo, n *api.NodeInfo) error {
			if ok, res := t.InitResreq.LessEqualWithResourcesName(n.FutureIdle(), api.Zero); !ok {
				return api.NewFitErrWithStatus(t, n, &api.Status{Code: api.Unschedulable, Reason: api.WrapInsufficientResourceReason(res)})
			}
			return ssn.PredicateForAllocateAction(t, n)
		})
		if len(nodes) == 0 {
			job.NodesFitErrors[task.UID] = fe
			if job.NeedContinueAllocating() {
				continue
			}
			break
		}
		best := bestNode(ssn, task, nodes)
		if best == nil {
			continue
		}
		if task.InitResreq.LessEqual(best.Idle, api.Zero) {
			if err := stmt.Allocate(task, best); err != nil {
				klog.ErrorS(err, "Allocate failed", "task", klog.KRef(task.Namespace, task.Name), "node", best.Name)
			}
		} else if task.InitResreq.LessEqual(best.FutureIdle(), api.Zero) {
			if err := stmt.Pipeline(task, best.Name, false); err != nil {
				klog.ErrorS(err, "Pipeline failed", "task", klog.KRef(task.Namespace, task.Name), "node", best.Name)
			}
		}
	}
	if plan != nil {
		return
	}
	if ssn.JobReady(job) {
		stmt.Commit()
	} else if !ssn.JobPipelined(job) {
		stmt.Discard()
	}
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
