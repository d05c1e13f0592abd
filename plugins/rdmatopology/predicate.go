package rdmatopology

// The plugin's predicate (Volcano's PredicateFn): NUMA-aligned NIC fit within
// the gang's hard tier, the resources other gangs' holds keep, and counts no
// quantity can hold.

import (
	"fmt"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// predicate admits an RDMA task on a node when a NUMA zone there has the
// free GPUs and NICs (after the ledger), within the job's hard tier.
func (s *SessionState) predicate(task *api.TaskInfo, node *api.NodeInfo) error {
	if !s.wantsRDMA(task) {
		return nil
	}
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	probing := s.probing[task.UID] > 0
	s.mu.Unlock()
	if probing {
		// The planner decides the NICs; the probe asks the other plugins.
		return nil
	}
	if planned && a.Node == node.Name {
		for _, nic := range a.NICs() {
			if holder, taken := s.state.Taken(node.Name, nic, string(task.UID)); taken {
				return s.fitError(task, node, fmt.Sprintf("planned NIC %s is held by pod %s (no unit left)", nic, holder))
			}
		}
		return nil
	}
	job := s.ssn.Jobs[task.Job]
	var allowed map[topology.S0ID]bool
	if job != nil {
		var ok bool
		if allowed, ok = s.tierLimit(job, node.Name); !ok {
			return s.fitError(task, node, ErrReasonTierLimit)
		}
	}
	if _, ok := s.state.Fit(node.Name, s.Shape(task), allowed); !ok {
		if allowed != nil {
			return s.fitError(task, node, ErrReasonNoNICFit+" under the gang's S0s")
		}
		return s.fitError(task, node, ErrReasonNoNICFit)
	}
	return nil
}

// WithoutNICCheck runs fn (a walk of the session's predicate chain for
// task) with this plugin's checks answering "fits" for task: its NIC and
// tier checks, and its hold check (the resources other gangs' preemption
// holds keep on a node, which depend on the task's own job and requests).
// What the other plugins (taints, selectors, affinity, ports, pod counts,
// volumes) admit is then known apart from what the planner and the
// caller's own count of holds decide, and the same for every pod the
// other plugins cannot tell apart. Calls may nest; other tasks are checked
// as usual. On a nil SessionState (no rdma-topology plugin) it runs fn.
func (s *SessionState) WithoutNICCheck(task *api.TaskInfo, fn func()) {
	if s == nil {
		fn()
		return
	}
	s.mu.Lock()
	if s.probing == nil {
		s.probing = map[api.TaskID]int{}
	}
	s.probing[task.UID]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.probing[task.UID]--; s.probing[task.UID] <= 0 {
			delete(s.probing, task.UID)
		}
		s.mu.Unlock()
	}()
	fn()
}

func (s *SessionState) fitError(task *api.TaskInfo, node *api.NodeInfo, reason string) error {
	return api.NewFitErrWithStatus(task, node, &api.Status{Code: api.Unschedulable, Reason: reason, Plugin: PluginName})
}

// holdPredicate refuses a task of another job on a node where an applied
// hold keeps resources the task would need: what the node will have free
// once its releasing pods are gone, less what the holds keep there and
// what the room kept for other gangs' lost pods keeps (replace.go). It
// holds for every pod, with RDMA or without: the free view keeps a
// replacement's NICs from other RDMA pods, and this keeps its GPUs and
// CPUs from every pod. A hold also keeps its pods' host ports: a pod that
// declares one of them is refused on the node.
func (s *SessionState) holdPredicate(task *api.TaskInfo, node *api.NodeInfo) error {
	if task.InitResreq == nil {
		return nil
	}
	kept, holder, ports := s.keptOn(task, node.Name)
	if !ports {
		return s.fitError(task, node, "host ports on the node are held for gang "+holder)
	}
	room, gang := s.RoomKeptOn(task.Job, node.Name)
	if kept == nil && room == nil {
		return nil
	}
	need := task.InitResreq.Clone()
	if kept != nil {
		need.Add(kept)
		if !need.LessEqual(node.FutureIdle(), api.Zero) {
			return s.fitError(task, node, "resources on the node are held for preempting gang "+holder)
		}
	}
	if room != nil && !need.Add(room).LessEqual(node.FutureIdle(), api.Zero) {
		return s.fitError(task, node, ErrReasonReplacementRoom+gang)
	}
	return nil
}

// predicateWithHolds is the plugin's predicate: a pod with a quantity the
// scheduler cannot count fits no node; then holds, then NIC fit.
func (s *SessionState) predicateWithHolds(task *api.TaskInfo, node *api.NodeInfo) error {
	if err := s.uncountableError(task, node); err != nil {
		return err
	}
	s.mu.Lock()
	probing := s.probing[task.UID] > 0
	s.mu.Unlock()
	if probing {
		// A walk for the other plugins only (WithoutNICCheck): what holds
		// keep depends on the task's own job and requests, which the
		// caller counts.
		return nil
	}
	if err := s.holdPredicate(task, node); err != nil {
		return err
	}
	return s.predicate(task, node)
}

// uncountableError is the predicate's answer for a task with an
// uncountable quantity; nil for any other.
func (s *SessionState) uncountableError(task *api.TaskInfo, node *api.NodeInfo) error {
	q := s.uncountable[task.UID]
	if q == nil {
		return nil
	}
	return s.fitError(task, node, ErrReasonUncountable+": "+q.Field()+": "+q.Message)
}

// tierLimit returns the leaves a task of the job may use on node under its
// hard tier (nil: any), or false if the node itself is out of bounds.
func (s *SessionState) tierLimit(job *api.JobInfo, node string) (map[topology.S0ID]bool, bool) {
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
