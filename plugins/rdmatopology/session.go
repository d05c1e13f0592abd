package rdmatopology

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// SessionState is the plugin's state in one scheduling session. The
// topology-allocate action reads it through ForSession to plan gangs and to
// hand each task its planned NICs before allocating it.
//
// Invariant: every RDMA task allocated in the session holds exactly one
// ledger reservation, indexed in byJob, and the State reflects it;
// Deallocate undoes all three.
type SessionState struct {
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
	// the session's nodes (SessionState.domains); made on first use.
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
func (s *SessionState) wantsRDMA(task *api.TaskInfo) bool {
	return requestsRDMA(task, s.args.RDMAResource)
}

// isRDMAJob reports whether any task of the job asks for RDMA NICs.
func (s *SessionState) isRDMAJob(job *api.JobInfo) bool {
	for _, t := range job.Tasks {
		if s.wantsRDMA(t) {
			return true
		}
	}
	return false
}

// Shape is the task's per-pod need.
func (s *SessionState) Shape(task *api.TaskInfo) placement.Shape {
	return ShapeOf(task.Pod, task.InitResreq, v1.ResourceName(s.args.GPUResource), v1.ResourceName(s.args.RDMAResource))
}

// occupancy returns the placement the job's further pods are planned next to:
// Realized, except that a hard gang the nodes placed otherwise than
// planned keeps the leaves (and S1s) of its plan. Hard mode bounds what
// the scheduler plans, not what the nodes did: the leaves a node added
// are its doing, and counting them would leave no leaf that holds the
// gang's remaining pods within its tier.
func (s *SessionState) occupancy(jobID api.JobID) *placement.Occupancy {
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
func (s *SessionState) realized(jobID api.JobID) *placement.Occupancy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.occupancyLocked(jobID)
}

func (s *SessionState) occupancyLocked(jobID api.JobID) *placement.Occupancy {
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
func (s *SessionState) indexLocked(r ledger.Reservation) {
	id := api.JobID(r.Job)
	m := s.byJob[id]
	if m == nil {
		m = map[string]ledger.Reservation{}
		s.byJob[id] = m
	}
	m[r.UID] = r
	delete(s.held, id)
}
