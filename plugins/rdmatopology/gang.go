package rdmatopology

// The actions' side of a session, before a statement: which of a job's pods
// request RDMA NICs, the gang's request and contract, its plan on the free
// view, and the report of its turn (apply.go takes a plan through a
// Statement).

import (
	"errors"
	"slices"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
)

// Gang is what the actions need to know of the job in this session: its
// pods that request RDMA NICs, for an RDMA gang the contract it is planned
// with now, and, when pending is given (the job's pending RDMA tasks the
// action places), the planner request for them (Job.Request). The error
// is the contract's (an invalid annotation), or the request's (an invalid
// rank annotation); both wrap placement.ErrInvalidContract, and such a
// gang is never placed under a contract it does not have.
func (s *SessionState) Gang(job *api.JobInfo, pending ...*api.TaskInfo) (placement.Job, error) {
	j := s.RDMAOf(job)
	if !j.IsRDMA() {
		return j, nil
	}
	c, relaxed, err := s.effectiveContract(job)
	j.Contract, j.Relaxed = c, relaxed
	if err != nil || len(pending) == 0 {
		return j, err
	}
	j.Request, err = s.gangRequest(job, c, pending)
	return j, err
}

// RDMAOf is Gang without the contract: which pods of the job request RDMA
// NICs (Job.IsRDMA, Job.Requests). The actions ask it of every job in
// every session, most of them running; a contract is read only for a gang
// an action plans.
func (s *SessionState) RDMAOf(job *api.JobInfo) placement.Job {
	s.mu.Lock()
	rdma, ok := s.rdmaPods[job.UID]
	s.mu.Unlock()
	if !ok {
		rdma = map[string]bool{}
		for _, t := range job.Tasks {
			if s.wantsRDMA(t) {
				rdma[string(t.UID)] = true
			}
		}
		s.mu.Lock()
		if s.rdmaPods == nil {
			s.rdmaPods = map[api.JobID]map[string]bool{}
		}
		s.rdmaPods[job.UID] = rdma
		s.mu.Unlock()
	}
	return placement.Job{RDMA: rdma}
}

// gangRequest turns the job's pending RDMA tasks into a planner request
// under contract c, the pods in rank order. Ranks number the whole gang,
// the pods it holds included, and the occupancy carries theirs, so that
// late pods go next to their rank neighbours and into their segments
// (rankGang). It fails on an invalid rank annotation (an error wrapping
// placement.ErrInvalidContract).
func (s *SessionState) gangRequest(job *api.JobInfo, c placement.Contract, rdma []*api.TaskInfo) (placement.Gang, error) {
	g := placement.Gang{Job: string(job.UID), Mode: c.Mode, HighestTier: c.HighestTier,
		Exclude: map[string]bool{}, Segment: c.Segment}
	for _, t := range rdma {
		g.Pods = append(g.Pods, placement.Pod{UID: string(t.UID), Name: t.Namespace + "/" + t.Name, Shape: s.Shape(t)})
	}
	occ, members, err := s.rankGang(job, rdma, g.Pods)
	g.Occupancy, g.Members = occ, members
	return g, err
}

// Plan plans gang g on the session's free view (evicted nil) or on a
// what-if copy of it in which the pods of the evicted reservations (none,
// for an empty slice) are gone, their NICs, GPUs and CPUs free: what
// evicting them would let the gang do. A plan on the free view is timed
// (rdmatopo_plan_duration_seconds); what-if plans are not.
func (s *SessionState) Plan(g placement.Gang, evicted []ledger.Reservation) (*placement.Plan, *placement.Failure) {
	g = s.withHome(g)
	if evicted == nil {
		start := time.Now()
		defer func() { observePlan(time.Since(start)) }()
		// The room kept for the gang's lost pods is the gang's to plan.
		rooms := s.releaseReplacements(api.JobID(g.Job))
		plan, fail := s.state.Plan(g)
		if plan == nil {
			s.keepReplacements(api.JobID(g.Job), rooms)
		}
		return plan, fail
	}
	st := s.state.Clone()
	// The room kept for the gang's lost pods is the gang's in a what-if
	// plan too: a replacement planned with evictions (topology-preempt)
	// goes back where its gang's room is before it takes a victim's place.
	s.mu.Lock()
	rooms := slices.Clone(s.replaceHeld[api.JobID(g.Job)])
	s.mu.Unlock()
	for _, r := range rooms {
		st.RemoveHold(r.holder, r.a)
	}
	for _, r := range evicted {
		st.Release(r.UID, placement.AssignmentOf(r))
	}
	return st.Plan(g)
}

// errIdle marks a node whose idle resources do not hold the task.
var errIdle = errors.New("idle resources")

// Report notes the outcome of a gang's turn: placed by plan (f nil: its
// statement was committed; counted by tier and S0 count), or why it was
// not placed (f), shown on its PodGroup.
//
// The reason also becomes the job's fit error, so Volcano's own reports
// carry it where users look: the PodGroup's Unschedulable condition and
// event ("... Origin reason is: rdma-topology: ..."), and the pending pods'
// PodScheduled condition.
func (s *SessionState) Report(job *api.JobInfo, plan *placement.Plan, f *placement.Failure) {
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
