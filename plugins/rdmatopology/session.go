package rdmatopology

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/preemption"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Session is the plugin's state in one scheduling session. The
// topology-allocate action reads it through ForSession to plan gangs and to
// hand each task its planned NICs before allocating it.
//
// Invariant: every RDMA task allocated in the session holds exactly one
// ledger reservation, indexed in byJob, and the State reflects it;
// Deallocate undoes all three.
type Session struct {
	ssn  *framework.Session
	args *Args
	rt   *Runtime

	// fabric is the snapshot taken when the session opened.
	fabric *topology.Fabric
	// state is the free view after the ledger, kept in step with it.
	state *placement.State
	// uncountable are the pending tasks with a resource quantity the
	// scheduler cannot count (findUncountable); set when the session
	// opens, read-only after.
	uncountable map[api.TaskID]*placement.QuantityIssue

	mu sync.Mutex
	// planned holds the assignment the action chose for a task, consumed by
	// the Allocate handler.
	planned map[api.TaskID]placement.Assignment
	// pipelined are the tasks a preempting gang's statement pipelined, for
	// its hold (Pipeline, Hold).
	pipelined map[api.JobID][]preemption.HoldTask
	// broken marks jobs with a task allocated without NICs: never ready.
	broken map[api.JobID]string
	// failures records why a gang was not placed in this session.
	failures map[api.JobID]*placement.Failure
	// confined marks the jobs without RDMA pods under a hard contract
	// (Confine), with where they were placed in this session ("": not
	// placed); made on first use.
	confined map[api.JobID]string
	// domainsByTier caches the domains of confined gangs per tier over
	// the session's nodes (Session.domains); made on first use.
	domainsByTier map[placement.Tier][]Domain
	// held caches each job's current placement; dropped on change.
	held map[api.JobID]*placement.Occupancy
	// byJob indexes the ledger's reservations by job (pod UID ->
	// reservation), kept in step by allocate and deallocate.
	byJob map[api.JobID]map[string]ledger.Reservation
	// holds is the session's view of the holds (holds.go).
	holds *preemption.View
	// probing counts, per task, the predicate walks in progress that ask
	// the other plugins only (WithoutNICCheck).
	probing map[api.TaskID]int
	// allocated are the tasks of RDMA gangs allocated in this session and
	// not deallocated since, handed to the runtime when it closes
	// (rebind.go).
	allocated map[api.TaskID]sentBind
	// live are the KCNR consumers of the session's pods not finished, made
	// on first use (rebind.go).
	live map[string]bool
	// contracts caches each job's contract: a session's jobs keep their
	// pods and contract annotations (the scheduler writes only its own
	// keys), and the predicates ask for it per node. Made on first use.
	contracts map[api.JobID]contractOf
	// rdmaPods caches, per job, the UIDs of its pods that request RDMA
	// NICs (Gang); a session's jobs keep their pods. Made on first use.
	rdmaPods map[api.JobID]map[string]bool
	// released are the reservations reconcile released for pods gone,
	// Failed or being deleted (replace.go); not for pods that Succeeded.
	released []ledger.Reservation
	// replaceHeld is the room kept in state for the lost pods of each job
	// (replace.go).
	replaceHeld map[api.JobID][]heldRoom
	// pipelinedRooms is the room of replaceHeld given back to jobs whose
	// tasks were pipelined onto their plan (topology-preempt) in the
	// statement not settled yet: kept again when it is discarded.
	pipelinedRooms map[api.JobID][]heldRoom
}

// openSession builds the session state: the runtime (started on first use),
// nodes synced into the fabric, the ledger reconciled with the session's
// pods, and the free view.
func openSession(rt *Runtime, ssn *framework.Session, args *Args) *Session {
	rt.ensure(ssn, args)
	rt.syncNodes(ssn)
	f := rt.Fabric.Snapshot()
	now := rt.Now()
	rt.faults.observe(now, f, args, rt.recorder)
	s := newSession(rt, ssn, args, f)
	s.uncountable = s.findUncountable()
	// The ledger counts each NIC's units as this session's fabric shows.
	rt.Ledger.UseFabric(f)
	s.reconcile()
	rt.Ledger.Each(s.indexLocked)
	s.noteLost(s.released)
	s.state = placement.NewState(f, rt.Ledger)
	s.holds = preemption.NewView(s.state)
	LimitNodes(s.state, ssn.Nodes, v1.ResourceName(args.GPUResource), v1.ResourceName(args.RDMAResource))
	// Flapping NICs in their cool-down are listed and free, but not used.
	rt.faults.keepOut(now, s.state)
	// What the last session computed about nodes nothing changed on since
	// (their views, their leaves' statistics) holds in this one.
	views, leaves := s.state.Inherit(rt.lastState)
	klog.V(5).InfoS("Planner state carried over from the last session", "nodeViews", views, "leafStatistics", leaves)
	rt.lastState = s.state
	return s
}

// newSession returns the plugin's state in ssn over the fabric snapshot f,
// before the ledger is reconciled and indexed (State is nil until then).
func newSession(rt *Runtime, ssn *framework.Session, args *Args, f *topology.Fabric) *Session {
	return &Session{
		ssn: ssn, args: args, rt: rt, fabric: f,
		planned:   map[api.TaskID]placement.Assignment{},
		pipelined: map[api.JobID][]preemption.HoldTask{},
		broken:    map[api.JobID]string{},
		failures:  map[api.JobID]*placement.Failure{},
		held:      map[api.JobID]*placement.Occupancy{},
		byJob:     map[api.JobID]map[string]ledger.Reservation{},

		replaceHeld: map[api.JobID][]heldRoom{},
	}
}

// reconcile brings the long-lived ledger in line with the session's pods:
// reservations of pods that are gone, finished, back to pending (a failed
// bind) or on another node are released; bound pods that carry the
// scheduler's annotations but have no reservation (after a restart) get one
// back from them; bound RDMA pods without those annotations get the one
// their node's KCNR lists (so every running pod the KCNRs list is in the
// ledger, however it was placed); reservations the KCNRs list are
// confirmed, and where a KCNR lists a pod on other NICs than reserved, its
// NICs are adopted (truth.go).
func (s *Session) reconcile() {
	// Pods of the session's jobs, plus every pod on a node (pods of other
	// schedulers or without a group are only there).
	tasks := map[string]*api.TaskInfo{}
	for _, node := range s.ssn.Nodes {
		for _, t := range node.Tasks {
			tasks[string(t.UID)] = t
		}
	}
	for _, job := range s.ssn.Jobs {
		for _, t := range job.Tasks {
			tasks[string(t.UID)] = t
		}
	}
	l := s.rt.Ledger
	// kept holds the reservations that stay: the pods below without one
	// may need theirs restored.
	kept := make(map[string]bool, len(tasks))
	l.Each(func(r ledger.Reservation) {
		t, ok := tasks[r.UID]
		var why string
		switch {
		case !ok:
			why = "pod is gone"
		case nodeOf(t) != "" && nodeOf(t) != r.Node:
			why = "pod is not on the reserved node"
		case t.Status == api.Pending || t.Status == api.Pipelined:
			why = "pod is pending again (bind failed)"
		case t.Status == api.Succeeded || t.Status == api.Failed:
			why = "pod finished"
		case t.Pod != nil && t.Pod.DeletionTimestamp != nil:
			why = "pod is being deleted"
		}
		if why == "" {
			kept[r.UID] = true
			return
		}
		l.Release(r.UID)
		// A pod that Succeeded finished its work: its gang is owed no
		// replacement. One gone, Failed or being deleted may come back.
		if !ok || t.Status == api.Failed || (t.Pod != nil && t.Pod.DeletionTimestamp != nil) {
			s.released = append(s.released, r)
		}
		klog.V(3).InfoS("Released NIC reservation", "pod", r.Namespace+"/"+r.Name, "node", r.Node, "nics", r.NICs(), "reason", why)
	})
	var missing, unannotated []*api.TaskInfo
	for uid, t := range tasks {
		if kept[uid] || t.Pod == nil || nodeOf(t) == "" {
			continue
		}
		if !api.AllocatedStatus(t.Status) || t.Status == api.Allocated {
			continue
		}
		// A Binding adds annotations but cannot remove them: a pod that
		// requests no RDMA may still carry a key a user forged. Only RDMA
		// pods' annotations are ours.
		if !s.wantsRDMA(t) {
			continue
		}
		if _, ok := t.Pod.Annotations[ledger.AnnotationNICs]; ok {
			missing = append(missing, t)
		} else {
			unannotated = append(unannotated, t)
		}
	}
	s.restore(tasks, missing)
	s.restoreListed(unannotated)
	s.adopt(tasks)
	s.rt.truth.forget(tasks, s.ssn.Jobs)
}

// restore gives bound pods that carry the scheduler's annotations but have
// no reservation (after a restart) their reservation back from the
// annotations (ledger.Rebuild). tasks are the session's pods by UID.
func (s *Session) restore(tasks map[string]*api.TaskInfo, bound []*api.TaskInfo) {
	if len(bound) == 0 {
		return
	}
	missing := make([]*v1.Pod, 0, len(bound))
	for _, t := range bound {
		missing = append(missing, t.Pod)
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].UID < missing[j].UID })
	rebuilt, errs := ledger.Rebuild(s.args.TopologyConfig(), missing, s.fabric)
	s.rt.reportRebuildErrors(errs)
	for _, r := range rebuilt.All() {
		if job, ok := tasks[r.UID]; ok {
			r.Job = string(job.Job)
		}
		s.reserveRestored(r, "pod annotations")
	}
}

// restoreListed enters bound RDMA pods that carry no rdmatopo.io
// annotations (placed before rdmatopo ran, by another scheduler, or
// stripped) into the ledger as their nodes' KCNRs list them
// (ledger.Listed), so they are victims, room blockers and held capacity
// like the pods rdmatopo placed. A pod no KCNR lists yet holds nothing the
// ledger could name: the KCNR's free figures and the session's idle
// resources still count it.
func (s *Session) restoreListed(bound []*api.TaskInfo) {
	sort.Slice(bound, func(i, j int) bool { return bound[i].UID < bound[j].UID })
	for _, t := range bound {
		r, ok := ledger.Listed(s.args.TopologyConfig(), t.Pod, s.fabric)
		if !ok || r.Node != nodeOf(t) {
			continue
		}
		r.Job = string(t.Job)
		s.reserveRestored(r, "the node's CustomNodeResource")
	}
}

// reserveRestored reserves a bound pod's restored reservation. A NIC
// another pod already holds stays with it; the pod keeps every other NIC,
// so none is handed out twice.
func (s *Session) reserveRestored(r ledger.Reservation, from string) {
	contested, err := s.rt.Ledger.ReserveUncontested(r)
	switch {
	case err != nil:
		klog.ErrorS(err, "Cannot restore NIC reservation of a bound pod", "pod", r.Namespace+"/"+r.Name, "from", from)
	case len(contested) > 0:
		klog.ErrorS(nil, "Restored NIC reservation without NICs another pod holds", "pod", r.Namespace+"/"+r.Name, "node", r.Node,
			"contested", contested, "from", from)
	default:
		klog.V(3).InfoS("Restored NIC reservation", "pod", r.Namespace+"/"+r.Name, "node", r.Node, "nics", r.NICs(), "from", from)
	}
}

// nodeOf is the node a task is on or being bound to. While a bind is in
// flight the scheduler cache's task has no node name yet, but its pod does.
func nodeOf(t *api.TaskInfo) string {
	if t.NodeName != "" {
		return t.NodeName
	}
	if t.Pod != nil {
		return t.Pod.Spec.NodeName
	}
	return ""
}

// requestsRDMA reports whether a task asks for the RDMA resource.
func requestsRDMA(task *api.TaskInfo, rdma string) bool {
	return task.InitResreq != nil && task.InitResreq.ScalarResources[v1.ResourceName(rdma)] > 0
}

// wantsRDMA reports whether the task asks for RDMA NICs.
func (s *Session) wantsRDMA(task *api.TaskInfo) bool {
	return requestsRDMA(task, s.args.RDMAResource)
}

// isRDMAJob reports whether any task of the job asks for RDMA NICs.
func (s *Session) isRDMAJob(job *api.JobInfo) bool {
	for _, t := range job.Tasks {
		if s.wantsRDMA(t) {
			return true
		}
	}
	return false
}

// Shape is the task's per-pod need.
func (s *Session) Shape(task *api.TaskInfo) placement.Shape {
	return ShapeOf(task.Pod, task.InitResreq, v1.ResourceName(s.args.GPUResource), v1.ResourceName(s.args.RDMAResource))
}

// occupancy returns the placement the job's further pods are planned next to:
// Realized, except that a hard gang the nodes placed otherwise than
// planned keeps the leaves (and S1s) of its plan. Hard mode bounds what
// the scheduler plans, not what the nodes did: the leaves a node added
// are its doing, and counting them would leave no leaf that holds the
// gang's remaining pods within its tier.
func (s *Session) occupancy(jobID api.JobID) *placement.Occupancy {
	h := s.realized(jobID)
	if s.ssn == nil || h.Empty() {
		return h
	}
	job, ok := s.ssn.Jobs[jobID]
	if !ok {
		return h
	}
	if c, err := s.contract(job); err != nil || c.Mode != placement.ModeHard {
		return h
	}
	plan, ok := s.plannedOf(job)
	if !ok || len(plan.S0) == 0 {
		return h
	}
	out := &placement.Occupancy{Nodes: h.Nodes, Pods: h.Pods, S0s: map[topology.S0ID]bool{}, S1s: map[topology.S1ID]bool{}}
	for _, id := range plan.S0 {
		leaf := topology.S0ID(id)
		out.S0s[leaf] = true
		if l, ok := s.fabric.Leaf(leaf); ok {
			out.S1s[l.S1] = true
		}
	}
	return out
}

// realized returns the placement the job currently holds: its reservations
// in the ledger (bound pods, as their KCNRs list them once they do, and
// pods allocated in this session).
func (s *Session) realized(jobID api.JobID) *placement.Occupancy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.occupancyLocked(jobID)
}

func (s *Session) occupancyLocked(jobID api.JobID) *placement.Occupancy {
	if h, ok := s.held[jobID]; ok {
		return h
	}
	h := occupancyOf(s.fabric, s.byJob[jobID])
	s.held[jobID] = h
	return h
}

// heldOf is the placement the reservations hold: their nodes, the leaves of
// their NICs and those leaves' S1s.
func occupancyOf(f *topology.Fabric, rs map[string]ledger.Reservation) *placement.Occupancy {
	h := &placement.Occupancy{Nodes: map[string]bool{}, S0s: map[topology.S0ID]bool{}, S1s: map[topology.S1ID]bool{}}
	for _, r := range rs {
		h.Pods++
		h.Nodes[r.Node] = true
		for _, leaf := range f.NICLeaves(r.Node, r.NICs()) {
			h.S0s[leaf] = true
			if l, ok := f.Leaf(leaf); ok {
				h.S1s[l.S1] = true
			}
		}
	}
	return h
}

// summarize is a held placement as the PodGroup annotation writes it: its
// tier, and its S0s and (known) S1s, sorted.
func summarize(h *placement.Occupancy) PlannedPlacement {
	p := PlannedPlacement{Tier: placement.TierOf(len(h.Nodes), len(h.S0s), len(h.S1s)).String(), S0: []string{}, S1: []string{}}
	for id := range h.S0s {
		p.S0 = append(p.S0, string(id))
	}
	for id := range h.S1s {
		if id != "" {
			p.S1 = append(p.S1, string(id))
		}
	}
	sort.Strings(p.S0)
	sort.Strings(p.S1)
	return p
}

// indexLocked adds a reservation to the by-job index. Callers hold s.mu (or
// own s exclusively).
func (s *Session) indexLocked(r ledger.Reservation) {
	id := api.JobID(r.Job)
	m := s.byJob[id]
	if m == nil {
		m = map[string]ledger.Reservation{}
		s.byJob[id] = m
	}
	m[r.UID] = r
	delete(s.held, id)
}

// tierLimit returns the leaves a task of the job may use on node under its
// hard tier (nil: any), or false if the node itself is out of bounds.
func (s *Session) tierLimit(job *api.JobInfo, node string) (map[topology.S0ID]bool, bool) {
	c, _, _ := s.effectiveContract(job)
	mode, tier := c.Mode, c.HighestTier
	if mode != placement.ModeHard {
		return nil, true
	}
	h := s.occupancy(job.UID)
	if h.Empty() {
		return nil, true
	}
	switch tier {
	case placement.TierNode:
		// One node, its NICs under the leaves it holds.
		return h.S0s, h.Nodes[node]
	case placement.TierS0:
		return h.S0s, true
	case placement.TierS1:
		allowed := map[topology.S0ID]bool{}
		for s1 := range h.S1s {
			for _, id := range s.fabric.LeavesOf(s1) {
				allowed[id] = true
			}
		}
		return allowed, true
	}
	return nil, true
}

// setPlanned hands the Allocate handler the assignment chosen for a task.
func (s *Session) setPlanned(uid api.TaskID, a placement.Assignment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planned[uid] = a
}

// clearPlanned forgets planned assignments and pipelined tasks (after a
// commit or discard).
func (s *Session) clearPlanned() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planned = map[api.TaskID]placement.Assignment{}
	s.pipelined = map[api.JobID][]preemption.HoldTask{}
}

// Report notes the outcome of a gang's turn: placed by plan (f nil: its
// statement was committed; counted by tier and S0 count), or why it was
// not placed (f), shown on its PodGroup.
//
// The reason also becomes the job's fit error, so Volcano's own reports
// carry it where users look: the PodGroup's Unschedulable condition and
// event ("... Origin reason is: rdma-topology: ..."), and the pending pods'
// PodScheduled condition.
func (s *Session) Report(job *api.JobInfo, plan *placement.Plan, f *placement.Failure) {
	if f == nil {
		if plan != nil {
			observePlaced(plan)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[job.UID] = f
	job.JobFitErrors = PluginName + ": " + f.Message
}

// jobReady vetoes a job with an RDMA task allocated without NICs.
func (s *Session) jobReady(job *api.JobInfo) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, broken := s.broken[job.UID]
	return !broken
}
