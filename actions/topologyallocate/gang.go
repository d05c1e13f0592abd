// A job's turn: an RDMA gang planned whole, the plan applied through a
// statement; then the pods without a gang plan (beyond minMember, without
// RDMA) placed one at a time, as allocate places them.

package topologyallocate

import (
	"fmt"
	"strings"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/actions/internal/gangfit"
	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/step"
)

// allocateGang plans the job's pending RDMA tasks as one gang and applies
// the plan through a Statement, with the job's other tasks allocated in the
// same statement, in task order until the gang is ready. The statement is
// committed only if the gang is ready; the tasks left are the job's pods
// beyond minMember, and the job is pushed back for them.
func (r *run) allocateGang(queue *api.QueueInfo, job *api.JobInfo, tasks *util.PriorityQueue) {
	ssn, topo := r.ssn, r.topo
	j, err := topo.Gang(job)
	var all, rdma []*api.TaskInfo
	others := 0
	for !tasks.Empty() {
		t := tasks.Pop().(*api.TaskInfo)
		all = append(all, t)
		if j.Requests(string(t.UID)) {
			rdma = append(rdma, t)
		} else {
			others++
		}
	}
	if len(rdma) == 0 {
		for _, t := range all {
			tasks.Push(t)
		}
		r.allocateTasks(queue, job, tasks)
		return
	}
	c, relaxed := j.Contract, j.Relaxed
	if err != nil {
		// Never placed under a contract it does not have.
		klog.InfoS("Gang not placed: invalid job contract", "job", job.UID, "err", err)
		topo.Report(job, nil, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
		return
	}
	if relaxed {
		klog.V(3).InfoS("Gang waited max-wait for its highest tier; planning it as soft", "job", job.UID, "maxWait", c.MaxWait)
	}
	g, err := r.fit.Request(job, rdma, others)
	if err != nil {
		klog.InfoS("Gang not placed: invalid rank", "job", job.UID, "err", err)
		topo.Report(job, nil, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
		return
	}
	// An older waiting gang of the job's priority keeps the room it claimed.
	claimedBy, claimed := preemption.KeepOff(&g, gangfit.ClaimedAgainst(ssn, topo.Preemption(), job))
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		plan, fail := topo.Plan(g, nil)
		if plan == nil {
			fail = r.explainNoNodes(fail, g)
			fail = preemption.ClaimedFailure(fail, claimedBy, claimed)
			klog.V(3).InfoS("No placement for gang", "job", job.UID, "reason", fail.Message)
			topo.Report(job, nil, fail)
			return
		}
		klog.V(3).InfoS("Planned gang", "job", job.UID, "tier", plan.Tier, "s0s", len(plan.S0s), "pods", len(plan.Assignments), "attempt", attempt)
		stmt := framework.NewStatement(ssn)
		left, bad, err := r.applyGang(queue, job, stmt, plan, all)
		if err == nil {
			if gangfit.GangMet(job) && ssn.JobReady(job) {
				plugin.Settle(topo, stmt, step.Settle{Commit: true})
				r.commits++
				r.fit.Changed(all)
				topo.Report(job, plan, nil)
				for _, t := range left {
					tasks.Push(t)
				}
				if !tasks.Empty() {
					r.pushBack(job)
				}
				return
			}
			err = fmt.Errorf("gang is not ready after its plan was applied")
		}
		plugin.Settle(topo, stmt, step.Settle{})
		klog.V(3).InfoS("Discarded gang plan", "job", job.UID, "attempt", attempt, "err", err)
		if bad == "" {
			topo.Report(job, nil, &placement.Failure{Code: placement.ReasonNoCapacity, Message: err.Error()})
			return
		}
		g.Exclude[bad] = true
	}
	topo.Report(job, nil, &placement.Failure{Code: placement.ReasonNoCapacity,
		Message: fmt.Sprintf("planned nodes kept failing the session predicates after %d attempts", maxAttempts)})
}

// applyGang allocates the planned RDMA tasks where the plan puts them,
// then the gang's other tasks in task order, as allocate does, until the
// gang is ready: the others take what the plan left, never the GPUs or
// CPUs of a planned node before its RDMA pod is there. It returns the
// tasks not reached or not planned, and the node to exclude when a planned
// one refuses.
func (r *run) applyGang(queue *api.QueueInfo, job *api.JobInfo, stmt *framework.Statement, plan *placement.Plan, tasks []*api.TaskInfo) ([]*api.TaskInfo, string, error) {
	planned := make(map[string]placement.Assignment, len(plan.Assignments))
	for _, a := range plan.Assignments {
		planned[a.PodUID] = a
	}
	j := r.topo.RDMAOf(job)
	var left, others []*api.TaskInfo
	for i, task := range tasks {
		if gangfit.GangMet(job) && r.ssn.JobReady(job) {
			// Ready: the rest are pods beyond minMember, placed on a
			// later turn as allocate would.
			return append(append(left, others...), tasks[i:]...), "", nil
		}
		if !j.Requests(string(task.UID)) {
			others = append(others, task)
			continue
		}
		a, ok := planned[string(task.UID)]
		if !ok {
			left = append(left, task)
			continue
		}
		if bad, err := applyAssignment(r.ssn, r.topo, queue, stmt, task, a); err != nil {
			return nil, bad, err
		}
	}
	for i, task := range others {
		if gangfit.GangMet(job) && r.ssn.JobReady(job) {
			return append(left, others[i:]...), "", nil
		}
		r.allocateTask(queue, job, stmt, task, nil)
	}
	return left, "", nil
}

// applyPlan allocates every planned task on its node, checked by the
// session predicates. It returns the node to exclude when one refuses.
func applyPlan(ssn *framework.Session, topo plugin.Topology, queue *api.QueueInfo, stmt *framework.Statement, plan *placement.Plan, byUID map[string]*api.TaskInfo) (string, error) {
	for _, a := range plan.Assignments {
		task := byUID[a.PodUID]
		if task == nil {
			return a.Node, fmt.Errorf("plan names unknown task %s", a.PodUID)
		}
		if bad, err := applyAssignment(ssn, topo, queue, stmt, task, a); err != nil {
			return bad, err
		}
	}
	return "", nil
}

// applyAssignment allocates one planned task on its node, checked by the
// session predicates and, unless its gang is partial (partialGang: it was
// admitted whole), the queue's share. It returns the node to exclude when
// the node refuses.
func applyAssignment(ssn *framework.Session, topo plugin.Topology, queue *api.QueueInfo, stmt *framework.Statement, task *api.TaskInfo, a placement.Assignment) (string, error) {
	node := ssn.Nodes[a.Node]
	if node == nil {
		return a.Node, fmt.Errorf("plan names unknown node %s", a.Node)
	}
	if job := ssn.Jobs[task.Job]; (job == nil || !partialGang(topo, job)) && !ssn.Allocatable(queue, task) {
		return "", fmt.Errorf("queue %s cannot take task %s/%s", queue.Name, task.Namespace, task.Name)
	}
	if err := ssn.PrePredicateFn(task); err != nil {
		return "", fmt.Errorf("pre-predicate of %s/%s: %w", task.Namespace, task.Name, err)
	}
	if err := topo.Apply(stmt, step.Allocate{Job: string(task.Job), Pod: string(task.UID), Node: node.Name, Planned: &a}); err != nil {
		return a.Node, err
	}
	return "", nil
}

// explainNoNodes adds to a NoNodes failure why the predicates refuse the
// gang's pods everywhere, in Volcano's words ("0/N nodes are unavailable:
// ..."), for each group of pods no node admits.
func (r *run) explainNoNodes(fail *placement.Failure, g placement.Gang) *placement.Failure {
	if fail == nil || fail.Code != placement.ReasonNoNodes || r.fit == nil {
		return fail
	}
	seen := map[int]bool{}
	var why []string
	for _, p := range g.Pods {
		if seen[p.Group] {
			continue
		}
		seen[p.Group] = true
		if msg := r.fit.Refused(p.Group); msg != "" {
			why = append(why, p.Name+": "+msg)
		}
	}
	if len(why) == 0 {
		return fail
	}
	out := *fail
	out.Message = fail.Message + " (" + strings.Join(why, "; ") + ")"
	return &out
}

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
