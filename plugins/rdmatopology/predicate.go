package rdmatopology

// The plugin's filter and score: NUMA-aligned NIC fit within the gang's
// hard tier, and node order towards the plan and the gang's leaves.

import (
	"fmt"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// predicate admits an RDMA task on a node when a NUMA zone there has the
// free GPUs and NICs (after the ledger), within the job's hard tier.
func (s *Session) predicate(task *api.TaskInfo, node *api.NodeInfo) error {
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
// as usual. On a nil Session (no rdma-topology plugin) it runs fn.
func (s *Session) WithoutNICCheck(task *api.TaskInfo, fn func()) {
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

func (s *Session) fitError(task *api.TaskInfo, node *api.NodeInfo, reason string) error {
	return api.NewFitErrWithStatus(task, node, &api.Status{Code: api.Unschedulable, Reason: reason, Plugin: PluginName})
}

// Node scores: the planned node first, then nodes the gang already uses,
// then nodes under the gang's leaves.
const (
	scorePlanned  = 100
	scoreHeldNode = 50
	scoreHeldLeaf = 25
)

// nodeOrder prefers the job's planned nodes, then nodes close to what the
// job already holds.
func (s *Session) nodeOrder(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	if !s.wantsRDMA(task) {
		return 0, nil
	}
	w := float64(s.args.Weight)
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	s.mu.Unlock()
	if planned && a.Node == node.Name {
		return scorePlanned * w, nil
	}
	h := s.occupancy(task.Job)
	if h.Nodes[node.Name] {
		return scoreHeldNode * w, nil
	}
	if n, ok := s.fabric.Node(node.Name); ok {
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				if h.S0s[nic.S0] {
					return scoreHeldLeaf * w, nil
				}
			}
		}
	}
	return 0, nil
}
