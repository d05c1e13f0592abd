// Package topologyallocate is the topology-allocate Volcano action, a
// replacement for allocate. Jobs are taken in Volcano's queue and job order.
// An RDMA gang is planned whole by core/placement (tightest tier, best
// fit), applied through one Statement with every task checked by the session
// predicates, and committed only when the gang is ready, else discarded
// (which releases every NIC). Other jobs get allocate's per-task behaviour,
// with a deterministic node search bounded by Volcano's
// percentage-nodes-to-find options (feasibleNodes). A job is kept out of the
// rooms older waiting gangs of its priority claim (topology-preempt's
// claims): an RDMA gang off their leaves, other pods off their nodes.
// Before any job's turn, the pods of partial gangs whose binds failed are
// allocated back to the places the plugin kept for them (rebind holds).
package topologyallocate

import (
	"sync"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/actions/internal/gangfit"
	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/step"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// ActionName is the name of the action in volcano-scheduler.conf.
const ActionName = "topology-allocate"

// maxAttempts bounds the plans tried for one gang in one session when the
// session predicates reject a planned node.
const maxAttempts = 3

// Action is the topology-allocate action. Between sessions it keeps only
// the node sets the predicates admit (gangfit.Carry, checked against what
// changed each session); everything else it uses lives in the session or
// the plugin's runtime.
type Action struct {
	rt    *rdmatopology.Runtime
	carry gangfit.Carry
}

var _ framework.Action = (*Action)(nil)

// New returns the action, which finds the rdma-topology plugin's state in
// each session through rt.
func New(rt *rdmatopology.Runtime) *Action { return &Action{rt: rt} }

// Name returns ActionName.
func (a *Action) Name() string { return ActionName }

// Initialize is a no-op.
func (a *Action) Initialize() {}

// UnInitialize is a no-op.
func (a *Action) UnInitialize() {}

// Execute allocates pending jobs queue by queue, in the session's orders,
// as allocate does: a job is popped from the best queue, given tasks until
// it is ready, and pushed back while it has pending tasks, so jobs and
// queues are re-ordered after every task once a job runs. The first
// placement of an RDMA gang (up to minMember) is planned whole.
func (a *Action) Execute(ssn *framework.Session) {
	klog.V(5).InfoS("Enter topology-allocate")
	defer klog.V(5).InfoS("Leave topology-allocate")
	topo, missing := plugin.For(a.rt, ssn)
	st := &run{ssn: ssn, topo: topo, refuse: checkConf(missing),
		jobs:   map[api.QueueID]*util.PriorityQueue{},
		tasks:  map[api.JobID]*util.PriorityQueue{},
		claims: map[api.JobID]claimedNodes{},
	}
	if topo != nil {
		// The pods of partial gangs whose binds failed go back to the
		// places kept for them before any job's turn (rebind holds).
		if err := topo.Apply(nil, step.RealizeHolds{RebindOnly: true}); err != nil {
			klog.ErrorS(err, "Cannot realize rebind holds")
		}
		// One set of node answers per session, shared by every gang and
		// renewed only when a placed pod changes them.
		st.fit = gangfit.New(ssn, topo, gangfit.ForAllocate, &a.carry)
	}
	queues := util.NewPriorityQueue(ssn.QueueOrderFn)
	// Partial RDMA gangs first: some of their pods are bound (others failed
	// to bind and are pending again), so they hold GPUs and NICs while they
	// wait. The NICs their failed pods had were released when the session
	// opened; placing these gangs before anyone else lets them take those
	// places back, inside the tier they hold, before another gang can. Once
	// whole, they compete in their queue like every other job.
	partial := util.NewPriorityQueue(ssn.JobOrderFn)
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
		if topo != nil && partialGang(topo, job) {
			partial.Push(job)
			continue
		}
		if _, ok := st.jobs[job.Queue]; !ok {
			st.jobs[job.Queue] = util.NewPriorityQueue(ssn.JobOrderFn)
			queues.Push(ssn.Queues[job.Queue])
		}
		st.jobs[job.Queue].Push(job)
	}
	for !partial.Empty() {
		// A partial gang was admitted whole within its queue's share and
		// its bound pods wait for the rest: the pods it lacks (failed
		// binds a restart forgot, replacements of lost pods) complete it
		// whatever the share proportion computes this session, as a
		// rebind hold's do (the share is not asked: applyAssignment).
		job := partial.Pop().(*api.JobInfo)
		if queue := ssn.Queues[job.Queue]; queue != nil {
			st.allocateJob(queue, job)
		}
	}
	for !queues.Empty() {
		queue := queues.Pop().(*api.QueueInfo)
		if ssn.Overused(queue) {
			klog.V(3).InfoS("Queue is overused", "queue", queue.Name)
			continue
		}
		jobs := st.jobs[queue.UID]
		if jobs == nil || jobs.Empty() {
			continue
		}
		st.allocateJob(queue, jobs.Pop().(*api.JobInfo))
		// Pushed back after each job's turn, so the queue order sees the
		// latest allocation.
		queues.Push(queue)
	}
}

// run is one Execute: the session, the plugin's state in it (nil when the
// plugin is not enabled) and the jobs and tasks still to allocate.
type run struct {
	ssn  *framework.Session
	topo plugin.Topology
	// fit says where the predicates admit the pods of a gang (nil when
	// topo is).
	fit *gangfit.Nodes
	// refuse, when set, is why no RDMA pod is placed in this session.
	refuse error
	// jobs are each queue's jobs still to allocate, in job order.
	jobs map[api.QueueID]*util.PriorityQueue
	// tasks are each job's pending tasks not yet tried in this session, in
	// task order (allocate's pendingTasks).
	tasks map[api.JobID]*util.PriorityQueue
	// claims caches claimedAgainst per job while its key holds.
	claims map[api.JobID]claimedNodes
	// commits counts the statements this run committed: each may have
	// placed a gang whose claim then no longer applies.
	commits int
}

// partialGang reports an RDMA gang that has some but fewer than minMember
// pods placed.
func partialGang(topo plugin.Topology, job *api.JobInfo) bool {
	ready := job.ReadyTaskNum()
	return ready > 0 && ready < job.MinAvailable && isRDMAJob(topo, job)
}

// isRDMAJob reports whether any task of the job requests RDMA NICs
// (plugin.Topology.RDMAOf).
func isRDMAJob(topo plugin.Topology, job *api.JobInfo) bool {
	return topo.RDMAOf(job).IsRDMA()
}

// requestsRDMAOf reports whether the job's task requests RDMA NICs
// (plugin.Topology.RDMAOf).
func requestsRDMAOf(topo plugin.Topology, job *api.JobInfo, task *api.TaskInfo) bool {
	return topo.RDMAOf(job).Requests(string(task.UID))
}

// pendingTasks returns the job's task queue, built on the job's first turn
// from its schedulable pending tasks.
func (r *run) pendingTasks(job *api.JobInfo) *util.PriorityQueue {
	if pq, ok := r.tasks[job.UID]; ok {
		return pq
	}
	pq := util.NewPriorityQueue(r.ssn.TaskOrderFn)
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if t.SchGated || t.Resreq.IsEmpty() {
			continue
		}
		pq.Push(t)
	}
	r.tasks[job.UID] = pq
	return pq
}

// pushBack returns a job to its queue's jobs, to be ordered again.
func (r *run) pushBack(job *api.JobInfo) {
	if jobs := r.jobs[job.Queue]; jobs != nil {
		jobs.Push(job)
	}
}

// allocateJob gives the job its turn. An RDMA gang whose minMember is not
// met is planned whole; any other job, and a gang's pods beyond minMember,
// get allocate's per-task turn.
//
// A gang that preempted and holds what its victims free is left to
// topology-preempt, which allocates it there once they are gone: placed
// elsewhere meanwhile, it would leave its victims evicted for nothing and
// its held NICs to whoever comes next. A gang whose rebind hold waits (for
// a KCNR to drop a pod gone) is left to the next session likewise.
func (r *run) allocateJob(queue *api.QueueInfo, job *api.JobInfo) {
	if r.topo != nil && r.topo.Preemption().HasHold(string(job.UID)) {
		klog.V(4).InfoS("Gang waits for the resources its victims free", "job", klog.KRef(job.Namespace, job.Name))
		return
	}
	tasks := r.pendingTasks(job)
	if tasks.Empty() {
		return
	}
	if r.topo != nil && isRDMAJob(r.topo, job) && !gangfit.GangMet(job) {
		r.allocateGang(queue, job, tasks)
		return
	}
	if r.topo != nil && !isRDMAJob(r.topo, job) {
		c, err := r.topo.Confine(job)
		if err != nil {
			// Never placed under a contract it does not have.
			klog.InfoS("Job not placed: invalid job contract", "job", job.UID, "err", err)
			r.topo.Report(job, nil, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
			return
		}
		if c != nil {
			r.allocateConfined(queue, job, tasks, c)
			return
		}
	}
	r.allocateTasks(queue, job, tasks)
}

// scratches are the node search's workers' resources for a node's future
// idle resources (gangfit.Scratch), instead of a fresh one per node.
var scratches = sync.Pool{New: func() any { return new(gangfit.Scratch) }}
