// An RDMA gang's turn: planned whole, the plan applied through a statement.

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
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/preemption"
	"github.com/rdmatopo/rdmatopo/framework/step"
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
// session predicates. It returns the node to exclude when the node refuses.
func applyAssignment(ssn *framework.Session, topo plugin.Topology, queue *api.QueueInfo, stmt *framework.Statement, task *api.TaskInfo, a placement.Assignment) (string, error) {
	node := ssn.Nodes[a.Node]
	if node == nil {
		return a.Node, fmt.Errorf("plan names unknown node %s", a.Node)
	}
	if !ssn.Allocatable(queue, task) {
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
