// Realizing holds: the pods a hold keeps resources for are allocated where
// the hold keeps them, a preempting gang where its victims were
// (topology-preempt), the pods of a partial gang where their binds failed
// (topology-allocate). Both actions realize holds through SessionState.Apply
// (step.RealizeHolds), so a gang is allocated from a hold in one way only.

package rdmatopology

import (
	"fmt"
	"slices"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// realizeHolds realizes the holds applied in this session (realizeHold),
// by job name; only rebind holds when rebindOnly (step.RealizeHolds).
func (s *SessionState) realizeHolds(rebindOnly bool) {
	for _, h := range s.appliedHolds() {
		if rebindOnly && !h.Rebind {
			continue
		}
		s.realizeHold(h)
	}
}

// realizeHold allocates the hold's tasks on their nodes (an RDMA task on its
// held NICs) in one statement, committed when the gang is then ready, and
// returns the tasks allocated (nil when none was).
//
// It waits, keeping the hold, while a node lacks the idle resources its
// held tasks need (their releasing pods are still terminating) and, for a
// preemption hold, while a victim is still on a held node (victimOn). It drops
// the hold when a held task was placed otherwise in the session, when the
// predicates refuse a task or the gang is not ready once allocated (the
// gang then competes again), and, for a rebind hold, when a node will not
// have the resources even once its releasing pods are gone (the room was
// taken outside the scheduler's view: the gang plans the pods anew).
//
// The queue's share is not asked: a preempting gang was pipelined only
// where its queue could take every task, and its victims are gone for it; a
// rebind hold's pods were allocated within their queue's share, and the
// rest of their gang is running and waits for them. Proportion recomputes
// deserved shares every session; refusing the pods now would make the
// evictions futile, or leave a gang partial.
func (s *SessionState) realizeHold(h *preemption.Hold) []*api.TaskInfo {
	ssn := s.ssn
	jobID := api.JobID(h.Job)
	job := ssn.Jobs[jobID]
	if job == nil || !s.holdReady(h, job) {
		return nil
	}
	s.takeHold(jobID)
	defer s.clearPlanned()
	stmt := framework.NewStatement(ssn)
	placed, err := s.allocateHeld(stmt, h, job)
	if err == nil && job.CheckTaskReady() && job.IsReady() && ssn.JobReady(job) {
		stmt.Commit()
		s.dropHold(jobID, "gang allocated where it was held")
		if h.Rebind {
			klog.InfoS("Allocated the pods of a partial gang where their binds failed", "job", h.Name, "pods", len(h.Tasks),
				"waited", s.rt.Now().Sub(h.Since))
		} else {
			klog.InfoS("Allocated preempting gang where its victims were", "job", h.Name, "pods", len(h.Tasks),
				"waited", s.rt.Now().Sub(h.Since))
		}
		return placed
	}
	stmt.Discard()
	if err == nil {
		err = fmt.Errorf("gang is not ready")
	}
	s.dropHold(jobID, "held placement cannot be allocated: "+err.Error())
	klog.InfoS("Abandoned the hold of a gang", "job", h.Name, "rebind", h.Rebind, "err", err)
	return nil
}

// holdReady reports whether the hold can be realized now: its tasks are
// still pending, and its nodes have the idle resources for them (and, for
// a rebind hold, their KCNRs list no pod gone). It drops a hold that can
// never be realized: a task placed elsewhere, or a rebind hold's node
// without the resources even once its releasing pods are gone.
func (s *SessionState) holdReady(h *preemption.Hold, job *api.JobInfo) bool {
	jobID := api.JobID(h.Job)
	for _, t := range h.Tasks {
		if task := job.Tasks[api.TaskID(t.UID)]; task != nil && task.Status != api.Pending {
			// An earlier action placed the pod elsewhere this session (the
			// hold's NICs are not free to it, other capacity was).
			// Allocating the task again, and discarding that, would take
			// the node off a task already sent to bind.
			s.dropHold(jobID, "gang placed elsewhere")
			klog.V(3).InfoS("Dropped the hold of a gang placed elsewhere", "job", h.Name,
				"task", klog.KRef(task.Namespace, task.Name), "status", task.Status)
			return false
		}
	}
	need := map[string]*api.Resource{}
	var nodes []string
	for _, t := range h.Tasks {
		if need[t.Node] == nil {
			need[t.Node] = api.EmptyResource()
			nodes = append(nodes, t.Node)
		}
		need[t.Node].Add(resourceOf(t.Resreq))
	}
	for _, name := range nodes {
		node := s.ssn.Nodes[name]
		if node != nil && need[name].LessEqual(node.Idle, api.Zero) {
			continue
		}
		if h.Rebind && (node == nil || !need[name].LessEqual(node.FutureIdle(), api.Zero)) {
			s.dropHold(jobID, "node "+name+" no longer has the resources of the failed binds")
			klog.InfoS("Dropped the places of a partial gang's failed binds; planning the pods anew", "job", h.Name, "node", name)
			return false
		}
		klog.V(4).InfoS("Held gang waits for the resources of terminating pods", "job", h.Name, "node", name)
		return false
	}
	if h.Rebind {
		if c := h.Listed(s.fabric); c != "" {
			klog.V(4).InfoS("Held pods wait for the node's KCNR to drop a pod gone", "job", h.Name, "listed", c)
			return false
		}
	} else if v := s.victimOn(h, nodes); v != "" {
		klog.V(4).InfoS("Held gang waits for a victim to terminate", "job", h.Name, "victim", v)
		return false
	}
	return true
}

// victimOn returns a victim of the hold still terminating on one of nodes
// as "namespace/name", "" when none is. A node's idle count can cover the
// held pods while a victim still holds their zone (the node's other zones
// are free): bound then, a pod would find its zone taken, and the node
// agent would place it by its own choice, off the held NICs.
func (s *SessionState) victimOn(h *preemption.Hold, nodes []string) string {
	if len(h.Victims) == 0 {
		return ""
	}
	for _, name := range nodes {
		node := s.ssn.Nodes[name]
		if node == nil {
			continue
		}
		for _, t := range node.Tasks {
			// Releasing: a pod of the same name re-created by its job's
			// controller and placed again is not the victim.
			if key := t.Namespace + "/" + t.Name; t.Status == api.Releasing && slices.Contains(h.Victims, key) {
				return key
			}
		}
	}
	return ""
}

// allocateHeld allocates the hold's tasks where it holds them, through
// stmt, their NICs as held; it stops at the first the session refuses.
func (s *SessionState) allocateHeld(stmt *framework.Statement, h *preemption.Hold, job *api.JobInfo) ([]*api.TaskInfo, error) {
	var placed []*api.TaskInfo
	for _, t := range h.Tasks {
		task, node := job.Tasks[api.TaskID(t.UID)], s.ssn.Nodes[t.Node]
		if task == nil || node == nil {
			return placed, fmt.Errorf("task %s or node %s is gone", t.Name, t.Node)
		}
		if t.RDMA {
			s.setPlanned(task.UID, t.Assignment)
		}
		if err := s.ssn.PrePredicateFn(task); err != nil {
			return placed, err
		}
		if err := s.ssn.PredicateForAllocateAction(task, node); err != nil {
			return placed, err
		}
		if err := stmt.Allocate(task, node); err != nil {
			return placed, err
		}
		placed = append(placed, task)
	}
	return placed, nil
}
