// Package topologypreempt is the topology-preempt Volcano action, a
// replacement for preempt. For each pending RDMA gang, highest priority
// first (the session's job order), that the planner cannot place within its
// hard tier (hard mode) or at all (soft mode), it evicts the cheapest set of
// running pods of strictly lower priority after which the whole gang fits
// at the tier it allows, and keeps the freed NICs for the gang until it
// binds.
//
// With the reclaim policy (NewReclaim, registered as topology-reclaim by
// actions/topologyreclaim) the same code takes victims from other queues
// instead; policy.go says what differs.
//
// Victims. A candidate is a running pod holding NICs in the ledger (every
// pod its node's KCNR lists, annotated by rdmatopo or not), in the
// preemptor's queue, not marked volcano.sh/preemptable "false" (pod or
// PodGroup), whose priority (the higher of its job's, from the PodGroup's
// priorityClassName, and its own) is strictly below the preemptor's job
// priority, and that the session's preemptable vetoes allow (every plugin
// enabled for it, policy.allowed), except the gang plugin's: that one
// refuses every victim that takes its job to minAvailable or below, so
// stock preemption never frees a whole gang. Instead, a victim job is evicted whole (all its
// bound pods, each of which must pass the vetoes) as soon as evicting its
// pods would take it below minMember; only a job's pods beyond minMember are
// evicted one by one.
//
// Cost. Sets of evictions compare by the number of pods evicted (whole jobs
// counted in full), then the sum of their priorities, then age (the set of
// the younger pods is cheaper), then names.
//
// Search. Candidate scopes follow the gang's contract: each node (hard,
// tier node); each leaf (hard s0); each leaf, then each S1 (hard s1); each
// leaf, each S1, then the whole cluster (hard cluster, soft). Within a
// scope, the victims are the candidates whose NICs are under it, grouped
// into units (a pod beyond its job's minMember, or a whole job). A scope
// whose every unit evicted still leaves the gang unplaceable is dropped.
// Otherwise, with at most exactUnits units, every subset is tried in cost
// order on a what-if copy of the free view (placement.State.Clone and
// Release) and the first one the planner places the gang with is the
// scope's answer: exact for the unit model. With more units, units are added
// cheapest first until the gang fits and then removed again, most expensive
// first, while it still fits: a minimal set, not always the cheapest. The
// cheapest scope answer wins. A gang that holds pods already (a running
// gang whose lost pods are re-created) is planned next to them, in the
// room kept for its lost pods too (plugins/rdmatopology replace.go), and
// among answers of equal cost the one keeping more of its new pods under
// its leaves, else its S1s, wins; for it, every scope is searched at equal
// cost as well. Each evaluation is a planner call, so the
// answer is as good as the planner; what-if copies free only what the
// ledger records (NICs, GPUs and CPUs of RDMA pods): pods without RDMA are
// never victims and their resources never count as freed.
//
// No futile evictions: nothing is evicted unless the chosen set places the
// gang in the what-if copy, and the evictions and the gang's pipelined tasks
// go through one Statement that is committed only when the gang is then
// complete (the session's JobPipelined), else discarded. A soft gang the
// planner can place without evictions does not preempt.
//
// Claims. A hard gang that no allowed evictions place claims a room: the
// scope of its highest tier with the fewest pods it may not evict, where it
// would fit were every pod gone (claims.go). Younger jobs of its priority
// are then kept out of that room, here and in topology-allocate, until the
// gang is placed or preempts; the runtime keeps the claims between
// sessions (package core/preemption, plugins/rdmatopology claims.go).
//
// Holding. The gang's tasks are pipelined onto the planned nodes with their
// planned NICs reserved (a step.Pipeline hands the plugin's allocate
// handler each task's NICs); the plugin keeps them as a hold across
// sessions (step.Hold; plugins/rdmatopology holds.go, package
// core/preemption) and this action allocates the gang there once its
// nodes' resources are idle, all at once (step.RealizeHolds).
package topologypreempt

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/actions/internal/gangfit"
	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/step"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// ActionName is the name of the action in volcano-scheduler.conf.
const ActionName = "topology-preempt"

// Event reasons.
const (
	// ReasonPreempting is the Event on the preemptor's PodGroup.
	ReasonPreempting = "TopologyPreempting"
	// ReasonPreempted is the Event on each victim's PodGroup.
	ReasonPreempted = "TopologyPreempted"
)

// Action is the topology-preempt action, or with the reclaim policy
// topology-reclaim (NewReclaim). Holds and claims live in the plugin's
// runtime; between sessions the action keeps only the node sets it may
// carry over (gangfit.Carry).
type Action struct {
	rt     *rdmatopology.Runtime
	policy *policy
	carry  gangfit.Carry
}

var _ framework.Action = (*Action)(nil)

// New returns topology-preempt, which finds the rdma-topology plugin's
// state in each session through rt.
func New(rt *rdmatopology.Runtime) *Action { return &Action{rt: rt, policy: preemptPolicy} }

// NewReclaim returns topology-reclaim: the same search, futility rule and
// holds as topology-preempt, with victims in other, reclaimable queues
// (see policy). Package actions/topologyreclaim names it.
func NewReclaim(rt *rdmatopology.Runtime) *Action { return &Action{rt: rt, policy: reclaimPolicy} }

// Name returns ActionName, or ReclaimActionName for topology-reclaim.
func (a *Action) Name() string { return a.policy.action }

// Initialize is a no-op.
func (a *Action) Initialize() {}

// UnInitialize is a no-op.
func (a *Action) UnInitialize() {}

// Execute first allocates the gangs whose holds can now be realized, then
// preempts for pending RDMA gangs in job order.
func (a *Action) Execute(ssn *framework.Session) {
	klog.V(5).InfoS("Enter action", "action", a.policy.action)
	defer klog.V(5).InfoS("Leave action", "action", a.policy.action)
	topo, err := plugin.For(a.rt, ssn)
	if topo == nil {
		klog.ErrorS(err, "Scheduler conf enables the action without a working rdma-topology plugin; nothing is evicted",
			"action", a.policy.action)
		return
	}
	if err := topo.Apply(nil, step.RealizeHolds{}); err != nil {
		klog.ErrorS(err, "Cannot realize holds", "action", a.policy.action)
	}
	r := &run{ssn: ssn, topo: topo, policy: a.policy, carry: &a.carry, claimed: map[api.JobID]bool{}}
	jobs := util.NewPriorityQueue(ssn.JobOrderFn)
	for _, job := range ssn.Jobs {
		if r.wantsPreemption(job) {
			jobs.Push(job)
		}
	}
	for !jobs.Empty() {
		r.preempt(jobs.Pop().(*api.JobInfo))
	}
	if !r.policy.otherQueues {
		// Claims of gangs placed, preempting or gone since lapse here;
		// a gang that still waits but claimed nothing this session keeps
		// its claim for preemption.ClaimGrace (topology-reclaim makes
		// none: a claim keeps a room from younger gangs of the claimant's
		// priority, which is preemption's business).
		now := topo.Now()
		topo.Preemption().RetainClaims(func(c *preemption.Claim) bool {
			if r.claimed[api.JobID(c.Job)] {
				return true
			}
			job := ssn.Jobs[api.JobID(c.Job)]
			return job != nil && r.wantsPreemption(job) && !c.Lapsed(now)
		})
	}
}

// run is one Execute.
type run struct {
	ssn  *framework.Session
	topo plugin.Topology
	// policy says whose pods are victims (preempt or reclaim).
	policy *policy
	// fit says where the predicates admit a preemptor's pods once
	// victims are gone (failures evictions resolve do not count); made
	// for the first gang planned (nodes), over the action's carry.
	fit   *gangfit.Nodes
	carry *gangfit.Carry
	// claimed are the gangs that claimed a room in this session.
	claimed map[api.JobID]bool
	// scopeLists caches scopes per contract kind; held caches the ledger's
	// reservations and their leaves for room, until apply changes them.
	scopeLists map[scopeKey][]scope
	reserved   []preemption.ReservedPod
	// reservedByUID indexes reserved by pod UID.
	reservedByUID map[string]int
}

// nodes returns the run's node sets, made on first use.
func (r *run) nodes() *gangfit.Nodes {
	if r.fit == nil {
		r.fit = gangfit.New(r.ssn, r.topo, gangfit.ForPreempt, r.carry)
	}
	return r.fit
}

// wantsPreemption reports whether the job is a pending RDMA gang that may
// preempt: enqueued, valid, short of minMember, not already holding
// resources its victims release.
func (r *run) wantsPreemption(job *api.JobInfo) bool {
	if job.PodGroup == nil || job.PodGroup.Status.Phase == scheduling.PodGroupPending {
		return false
	}
	if _, ok := r.ssn.Queues[job.Queue]; !ok {
		return false
	}
	j := r.topo.RDMAOf(job)
	if !j.IsRDMA() || gangfit.GangMet(job) || r.topo.Preemption().HasHold(string(job.UID)) {
		return false
	}
	if vr := r.ssn.JobValid(job); vr != nil && !vr.Pass {
		return false
	}
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !t.SchGated && j.Requests(string(t.UID)) {
			return true
		}
	}
	return false
}

// pendingTasks returns the job's schedulable pending tasks in task order,
// split into those requesting RDMA and the others.
func (r *run) pendingTasks(job *api.JobInfo) (rdma, others []*api.TaskInfo) {
	pq := util.NewPriorityQueue(r.ssn.TaskOrderFn)
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if t.SchGated || t.Resreq.IsEmpty() {
			continue
		}
		pq.Push(t)
	}
	j := r.topo.RDMAOf(job)
	for !pq.Empty() {
		t := pq.Pop().(*api.TaskInfo)
		if j.Requests(string(t.UID)) {
			rdma = append(rdma, t)
		} else {
			others = append(others, t)
		}
	}
	return rdma, others
}

// preempt finds and applies the cheapest evictions for one gang.
func (r *run) preempt(job *api.JobInfo) {
	j, err := r.topo.Gang(job)
	c := j.Contract
	if err != nil {
		return // never placed under a contract it does not have
	}
	rdma, others := r.pendingTasks(job)
	if len(rdma) == 0 {
		return
	}
	// A gang that may claim no room acts only by evicting: without a pod
	// it may evict, or a queue that may not act, there is nothing to plan.
	// (A gang that may claim one is preempt's, whose queue always may act.)
	var cands map[api.JobID]*victimJob
	claims := !r.policy.otherQueues && c.Mode == placement.ModeHard && c.HighestTier != placement.TierCluster
	if !claims {
		if !r.policy.gangMayAct(r.ssn, job, rdma[0]) {
			klog.V(4).InfoS("Queue may not take resources from other queues", "job", klog.KRef(job.Namespace, job.Name),
				"queue", job.Queue, "action", r.policy.action)
			return
		}
		if cands = r.candidates(job, rdma[0]); len(cands) == 0 {
			klog.V(4).InfoS("No pod the gang may evict", "action", r.policy.action, "job", klog.KRef(job.Namespace, job.Name))
			return
		}
	}
	// Ranked over the whole gang, held pods included, as topology-allocate
	// plans it (so a segment holds for the evictions too).
	g, err := r.nodes().Request(job, rdma, len(others))
	if err != nil {
		return // topology-allocate reports the invalid rank
	}
	claimedBy, _ := preemption.KeepOff(&g, gangfit.ClaimedAgainst(r.ssn, r.topo.Preemption(), job))
	if plan, fail := r.topo.Plan(g, nil); fail == nil && plan != nil {
		// Placeable without evictions (topology-allocate's turn, or
		// blocked by something evictions do not change).
		klog.V(4).InfoS("Gang fits without preemption", "job", klog.KRef(job.Namespace, job.Name), "tier", plan.Tier)
		return
	}
	start := time.Now()
	if cands == nil {
		cands = r.candidates(job, rdma[0])
	}
	var best *choice
	if len(cands) > 0 {
		best = r.search(g, c, cands, rdma)
	}
	klog.V(4).InfoS("Preemption search", "action", r.policy.action, "job", klog.KRef(job.Namespace, job.Name), "candidates", len(cands),
		"found", best != nil, "duration", time.Since(start))
	if best != nil {
		r.apply(job, rdma, others, best)
		return
	}
	klog.V(3).InfoS("No allowed evictions let the gang fit; evicting nothing", "action", r.policy.action, "job", klog.KRef(job.Namespace, job.Name),
		"mode", c.Mode, "highestTier", c.HighestTier, "candidates", len(cands), "keptOutBy", claimedBy)
	if r.policy.otherQueues {
		return
	}
	if cl := r.room(job, g, c, cands, rdma); cl != nil {
		cl.Renewed = metav1.NewTime(r.topo.Now())
		r.topo.Preemption().Claim(cl)
		r.claimed[job.UID] = true
		klog.V(3).InfoS("Waiting gang claims a room", "job", cl.Name, "room", cl.Room, "nodes", len(cl.Nodes))
	}
}

// apply evicts the chosen victims and pipelines the gang onto the plan in
// one Statement, committed only when the gang is then complete.
func (r *run) apply(job *api.JobInfo, rdma, others []*api.TaskInfo, ch *choice) {
	ssn, topo := r.ssn, r.topo
	jobName := job.Namespace + "/" + job.Name
	stmt := framework.NewStatement(ssn)
	r.reserved = nil
	queue := ssn.Queues[job.Queue]
	victims := ch.victims()
	reason := r.policy.evictReason(jobName, job.Priority)
	for _, v := range victims {
		// A discarded statement re-allocates the victim onto the NICs it
		// holds rather than a new fit.
		ev := step.Evict{Job: string(v.task.Job), Pod: string(v.task.UID), Reason: reason,
			Reserved: placement.AssignmentOf(v.res)}
		if err := topo.Apply(stmt, ev); err != nil {
			klog.ErrorS(err, "Cannot evict victim; preemption abandoned", "victim", klog.KRef(v.task.Namespace, v.task.Name), "job", jobName)
			plugin.Settle(topo, stmt, step.Settle{})
			return
		}
	}
	byUID := map[string]*api.TaskInfo{}
	for _, t := range rdma {
		byUID[string(t.UID)] = t
	}
	fail := func(err error) {
		klog.V(3).InfoS("Gang not pipelined after evictions; nothing evicted", "job", jobName, "err", err)
		plugin.Settle(topo, stmt, step.Settle{})
	}
	for _, a := range ch.plan.Assignments {
		task, node := byUID[a.PodUID], ssn.Nodes[a.Node]
		if task == nil || node == nil {
			fail(fmt.Errorf("plan names unknown task %s or node %s", a.PodUID, a.Node))
			return
		}
		if err := r.pipeline(stmt, queue, task, node, &a); err != nil {
			fail(err)
			return
		}
	}
	for _, t := range others {
		if job.WaitingTaskNum()+job.ReadyTaskNum() >= job.MinAvailable && job.CheckTaskPipelined() {
			break
		}
		node := r.nodeFor(t, ch.plan)
		if node == nil {
			fail(fmt.Errorf("no node for %s/%s, which requests no RDMA", t.Namespace, t.Name))
			return
		}
		if err := r.pipeline(stmt, queue, t, node, nil); err != nil {
			fail(err)
			return
		}
	}
	names := make([]string, 0, len(victims))
	for _, v := range victims {
		names = append(names, v.name())
	}
	if err := topo.Apply(stmt, step.Hold{Job: string(job.UID), Victims: names}); err != nil {
		if errors.Is(err, step.ErrIncomplete) {
			err = fmt.Errorf("gang is not complete after its plan was pipelined")
		}
		fail(err)
		return
	}
	plugin.Settle(topo, stmt, step.Settle{Commit: true})
	r.policy.gangs.Inc()
	r.policy.pods.Add(float64(len(victims)))
	r.events(job, ch)
	klog.InfoS("Evicted for gang", "action", r.policy.action, "job", jobName, "priority", job.Priority, "tier", ch.plan.Tier,
		"s0", ch.plan.S0s, "evicted", len(victims), "victims", names, "victimPriority", ch.cost.Prio)
}

// pipeline puts a task on node as the victims' resources are released (a:
// its planned NICs, nil without RDMA),
// once the gang's queue may take it (the session's Allocatable: proportion
// keeps a queue within its deserved share). Without that check a gang its
// queue cannot take would evict and then never be allocated where it is
// held: futile evictions.
func (r *run) pipeline(stmt *framework.Statement, queue *api.QueueInfo, task *api.TaskInfo, node *api.NodeInfo, a *placement.Assignment) error {
	if queue == nil || !r.ssn.Allocatable(queue, task) {
		return fmt.Errorf("queue %s cannot take %s/%s", queueName(queue), task.Namespace, task.Name)
	}
	if !task.InitResreq.LessEqual(node.FutureIdle(), api.Zero) {
		return fmt.Errorf("node %s will not have the resources of %s/%s", node.Name, task.Namespace, task.Name)
	}
	if err := r.ssn.PrePredicateFn(task); err != nil {
		return fmt.Errorf("pre-predicate of %s/%s: %w", task.Namespace, task.Name, err)
	}
	return r.topo.Apply(stmt, step.Pipeline{Job: string(task.Job), Pod: string(task.UID), Node: node.Name, Planned: a})
}

// nodeFor finds a node for a gang task that requests no RDMA: the plan's
// nodes first, then every node by name; the first that will have room and
// passes the predicates.
func (r *run) nodeFor(task *api.TaskInfo, plan *placement.Plan) *api.NodeInfo {
	seen := map[string]bool{}
	var order []string
	for _, a := range plan.Assignments {
		if !seen[a.Node] {
			seen[a.Node] = true
			order = append(order, a.Node)
		}
	}
	var rest []string
	for name := range r.ssn.Nodes {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range append(order, rest...) {
		node := r.ssn.Nodes[name]
		if task.InitResreq.LessEqual(node.FutureIdle(), api.Zero) && r.ssn.PredicateForPreemptAction(task, node) == nil {
			return node
		}
	}
	return nil
}

// events records, on the preemptor's PodGroup and on each victim job's,
// who preempted whom. Each evicted pod's own Event (from the evictor)
// carries the preemptor in its reason.
func (r *run) events(job *api.JobInfo, ch *choice) {
	jobName := job.Namespace + "/" + job.Name
	byJob := map[api.JobID][]string{}
	var jobIDs []string
	for _, v := range ch.victims() {
		if _, ok := byJob[v.job.UID]; !ok {
			jobIDs = append(jobIDs, string(v.job.UID))
		}
		byJob[v.job.UID] = append(byJob[v.job.UID], v.name())
	}
	sort.Strings(jobIDs)
	var jobNames []string
	for _, id := range jobIDs {
		vj := r.ssn.Jobs[api.JobID(id)]
		jobNames = append(jobNames, vj.Namespace+"/"+vj.Name)
		r.ssn.RecordPodGroupEvent(vj.PodGroup, v1.EventTypeWarning, r.policy.victim,
			fmt.Sprintf("%d pod(s) evicted (%s) for gang %s of priority %d, to place it at tier %s",
				len(byJob[api.JobID(id)]), strings.Join(byJob[api.JobID(id)], ", "), jobName, job.Priority, ch.plan.Tier))
	}
	leaves := make([]string, 0, len(ch.plan.S0s))
	for _, s := range ch.plan.S0s {
		leaves = append(leaves, string(s))
	}
	r.ssn.RecordPodGroupEvent(job.PodGroup, v1.EventTypeNormal, r.policy.acting,
		fmt.Sprintf("evicting %d pod(s) of %s to place the gang at tier %s under S0 %s",
			ch.cost.Pods, strings.Join(jobNames, ", "), ch.plan.Tier, strings.Join(leaves, ",")))
}

// queueName is a queue's name for messages ("" when there is none).
func queueName(q *api.QueueInfo) string {
	if q == nil {
		return ""
	}
	return q.Name
}
